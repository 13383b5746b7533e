"""Frozen where it says frozen (issue 35): a compiled program, its machine and its transfers
cannot be changed after they are made, and routing a machine leaves the record as it was (what
routing finds is kept outside it)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conftest import compiled

SEED = "schedules/seed/nvlink_2x8.sched"


def test_a_program_is_frozen():
    program = compiled(SEED).program
    with pytest.raises(dataclasses.FrozenInstanceError):
        program.alpha = 0  # type: ignore[misc]


def test_a_topology_is_frozen_and_routing_leaves_it_unchanged():
    session = compiled(SEED)
    topology = session.program.topology
    with pytest.raises(dataclasses.FrozenInstanceError):
        topology.policy = "first"  # type: ignore[misc]
    before = {name: id(value) for name, value in vars(topology).items()}
    ids = {d.name: d.id for d in topology.devices}
    # A route inside a host (NVLink through the host's switch) and one across hosts (rail 0).
    inside = topology.route(ids["node[0].g[0]"], ids["node[0].g[1]"], None)
    across = topology.route(ids["node[0].g[0]"], ids["node[1].g[0]"], None)
    assert topology.route(ids["node[0].g[0]"], ids["node[0].g[1]"], None) is inside  # once
    assert len(inside.shares) == 2 and len(across.shares) == 2  # g -> switch -> g; g -> rail -> g
    after = {name: id(value) for name, value in vars(topology).items()}
    assert after == before  # no attribute was added or replaced by routing


def test_replacing_a_field_derives_the_routing_tables_anew():
    topology = compiled(SEED).program.topology
    first = dataclasses.replace(topology, policy="first")
    assert first.policy == "first" and first.host_key is not topology.host_key
    assert np.array_equal(first.host_key, topology.host_key)


def test_a_batch_s_arrays_are_read_only():
    schedule = compiled(SEED).schedule("ring")
    batch = schedule.rounds[0].batches[0]
    for array in (batch.src, batch.dst, batch.off, batch.length):
        assert not array.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            array[0] = array[0]
    taken = batch.take(np.arange(2))
    assert not taken.src.flags.writeable and len(taken) == 2


def test_a_machine_s_route_cache_goes_with_it():
    import gc

    from schedc.model import route_cache
    copy = dataclasses.replace(compiled(SEED).program.topology)
    ids = {d.name: d.id for d in copy.devices}
    copy.route(ids["node[0].g[0]"], ids["node[1].g[0]"], None)
    key = id(copy)
    assert key in route_cache.CACHES
    del copy
    gc.collect()
    assert key not in route_cache.CACHES

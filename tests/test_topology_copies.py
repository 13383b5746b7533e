"""The instances of a host family after the first, copied from it (`elaborate/replicate.py`):
the same devices, resources, hops, host names, shared resources and family tables, in the
same order, as elaborating the body once per instance; and every instance elaborated where
copying would not be the same."""

from __future__ import annotations

import pytest
from conftest import ROOT, write

import schedc.elaborate.topology as topology
from schedc.session import Session

MACHINES = sorted((ROOT / "schedules" / "machines").glob("*.sched"))
SCALE = [ROOT / "schedules" / "scale" / "ring_1024.sched",
         ROOT / "schedules" / "seed" / "nvlink_hosts.sched"]

# Bodies that copying must reproduce: shared resources inside a host, `via` a machine-wide
# shared resource, links to devices outside the host and between two of them, lets, a
# reducing switch, a single (unindexed) member, a one-way and a half-duplex link.
CRAFTED = """
param B = 100 GB/s
param L = 1 us
topology {
  switch spine
  switch edge[2]
  shared uplink bw B
  host node[5] {
    let w = 2
    gpu g[4]
    nic n
    switch sw reduces
    shared pcie bw B / w latency L
    link g[i] <-> sw bw B class nvlink for i in 0..3
    link g[i] -> n bw B via pcie for i in 0..3
    link n <-> spine bw B via uplink half
    link edge[0] <-> edge[1] bw B
  }
  link node[h].n <-> edge[h % 2] bw B for h in 0..4
}
let ranks = [node[h].g[i] for h in 0..4 for i in 0..3]
allgather 1 MiB over ranks
"""
# A body naming its own family: instance k's `node[0].g[0]` is instance 0's GPU.
OWN_NAME = """
param B = 100 GB/s
topology {
  host node[3] {
    gpu g[2]
    link g[1] <-> node[0].g[0] bw B
  }
}
let ranks = [node[h].g[i] for h in 0..2 for i in 0..1]
allgather 1 MiB over ranks
"""


def _machine(path) -> tuple:
    """Everything the topology builder made, spans included."""
    program = Session.open(path).program
    t = program.topology

    def tables(families, path=()):
        for name, family in families.items():
            yield (*path, name), family.kind, None if family.table is None else family.table.tolist()
            yield from tables(family.children, (*path, name))

    return ([(d, d.span) for d in t.devices], [(r, r.span) for r in t.resources],
            [(h, h.span) for h in t.hops], t.host_names, t.pinned,
            list(tables(program.names.namespace.root)))


def _both(path, monkeypatch) -> tuple[tuple, tuple, int]:
    """The machine with copies, the machine without, and how many families were copied."""
    copied = []
    original = topology.copy_instances

    def counted(*args):
        copied.append(args[0].name.name)
        original(*args)

    monkeypatch.setattr(topology, "copy_instances", counted)
    with_copies = _machine(path)
    monkeypatch.setattr(topology, "copyable", lambda *args: False)
    return with_copies, _machine(path), len(copied)


@pytest.mark.parametrize("path", [*MACHINES, *SCALE], ids=lambda p: p.name)
def test_shipped_machines_are_the_same_copied(path, monkeypatch):
    with_copies, without, copied = _both(path, monkeypatch)
    assert with_copies == without
    hosts = len(without[3])
    assert copied == (1 if hosts > 1 else 0), (path, hosts)  # one host family, copied


def test_what_copying_must_move_is_moved(tmp_path, monkeypatch):
    """Ids inside the instance move by its size, those outside (spine, edge, uplink) do not;
    names move from node[0]. to node[k]. in devices and in both ends of a link's name."""
    path = write(tmp_path, "crafted.sched", CRAFTED)
    with_copies, without, copied = _both(path, monkeypatch)
    assert copied == 1
    assert with_copies == without
    names = [r.name for r, _ in without[1]]
    assert "node[4].n<->spine" in names and "node[3].pcie (forward)" in names
    assert names.count("edge[0]->edge[1]") == 5  # one link per instance, between the same two


def test_a_body_naming_its_own_family_is_elaborated_per_instance(tmp_path, monkeypatch):
    path = write(tmp_path, "own.sched", OWN_NAME)
    with_copies, without, copied = _both(path, monkeypatch)
    assert copied == 0
    assert with_copies == without
    hops = {(without[0][h.src][0].name, without[0][h.dst][0].name) for h, _ in without[2]}
    assert ("node[2].g[1]", "node[0].g[0]") in hops  # instance 2's link goes to instance 0

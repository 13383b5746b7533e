"""`whatif` times only the failures that change a route of a schedule, each on its failed
machine with the unchanged routes carried over (issue 36: memory and time proportional to
the input, not to failures × transfers). Every outcome is checked against the same
machine failed and routed anew from scratch (`changes.apply` with no route carried over)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ONE_TRANSFER, ROOT, rail_machine, write
from repro_inputs import gather_round as gather

import schedc
from schedc.errors import TopologyError
from schedc.limits import MAX_FAILURE_WORK
from schedc.model.changes import apply
from schedc.session import Session

# Machines of every routing rule: ECMP split evenly (rails) and unevenly (a torus), `routing
# first` (the fat tree), a shared slot (`via`), host-local tiers by link class, pinned routes.
SHIPPED = [
    ("schedules/seed/nvlink_2x8.sched", "nic"),
    ("schedules/seed/nvlink_2x8.sched", "switch"),
    ("schedules/seed/pcie_2x4.sched", "pcie"),
    ("schedules/algorithms/torus_4x4.sched", "ici"),
    ("schedules/algorithms/torus_4x4.sched", "chip"),
    ("schedules/algorithms/fat_tree_4x8.sched", "spine"),
    ("schedules/algorithms/rail_spines_4x8.sched", "nic"),
    ("schedules/algorithms/shared_nic_2x8.sched", "nic"),
]

# `routing first` inside a host, with two links from g[0] to switch a, pcie declared first:
# the host's routes try nvlink links first, so g[0] -> g[1] leaves over the nvlink one to a,
# the first neighbour in g[0]'s order (by each neighbour's first link: a, then b). Failing
# the pcie link, which no route crosses, moves a after b, and the route takes b (20 GB/s, not
# 30 GB/s). (Topology.route_depends_on counts every out-link of a device the path passes.)
FIRST_CLASSES = """param V = 1 MB
topology {
  routing first
  host node[1] {
    gpu g[4]
    switch a
    switch b
    switch c
    link g[0] <-> a bw 10 GB/s class pcie
    link g[0] <-> b bw 20 GB/s class nvlink
    link g[0] <-> a bw 30 GB/s class nvlink
    link a <-> c bw 40 GB/s class nvlink
    link b <-> c bw 50 GB/s class nvlink
    link g[i] <-> c bw 60 GB/s class nvlink for i in 1..3
  }
}
allreduce V over [node[0].g[i] for i in 0..3]
schedule s {
  round { copy part(0 of 4) from node[0].g[0] to node[0].g[1] }
  round { copy part(1 of 4) from node[0].g[2] to node[0].g[3] }
  round { copy part(2 of 4) from node[0].g[1] to node[0].g[0] }
}
"""

# Two pinned routes, one over parallel links (ECMP splits them), and an unpinned pair.
PINNED = """param V = 1 MB
topology {
  gpu g[3]
  switch s[3]
  link g[i] <-> s[j] bw 10 GB/s for i in 0..2 for j in 0..2
  link g[0] <-> s[0] bw 15 GB/s
  route g[0] -> g[1] via s[0]
  route g[1] -> g[2] via s[2]
}
allreduce V over [g[0], g[1], g[2]]
schedule one {
  round { copy part(0 of 3) from g[0] to g[1]; copy part(1 of 3) from g[1] to g[2] }
  round { copy part(2 of 3) from g[2] to g[0] }
}
"""


def recomputed(session: Session, item, schedule: str):
    """(time, formula) of `schedule` with `item` failed, on a machine routed from scratch
    (`changes.apply` with no route carried over), or None when a transfer has no route."""
    try:
        timing = session.on(apply(session.program.topology, [item], [])).timing(schedule)
    except TopologyError:
        return None
    return timing.time, timing.cost.formula


def assert_as_recomputed(path: str | Path, cls: str) -> schedc.WhatIf:
    session = schedc.load(path)
    result = schedc.whatif(session, cls, verify=False)
    for item in result.items:
        for name in result.schedules:
            outcome = result.outcomes[(item.name, name)]
            expected = recomputed(session, item, name)
            got = None if outcome.time is None else (outcome.time, outcome.formula)
            assert got == expected, (path, item.name, name)
    return result


@pytest.mark.parametrize(("path", "cls"), SHIPPED)
def test_every_outcome_is_the_failed_machine_routed_anew(path, cls):
    assert_as_recomputed(ROOT / path, cls)


@pytest.mark.parametrize("cls", ["pcie", "nvlink", "switch"])
def test_routing_first_reordered_by_a_failed_link_it_never_crossed(tmp_path, cls):
    path = write(tmp_path, "first.sched", FIRST_CLASSES)
    result = assert_as_recomputed(path, cls)
    if cls == "pcie":  # g[0]'s route moves to b: 1/4 MB at 20 GB/s, not at 30 GB/s
        session = schedc.load(path)
        topology = session.program.topology
        pcie = result.items[0]
        before = topology.describe_route(0, 1, None)
        after = apply(topology, [pcie], []).describe_route(0, 1, None)
        assert before == "node[0].g[0] -> node[0].a -> node[0].c -> node[0].g[1]"
        assert after == "node[0].g[0] -> node[0].b -> node[0].c -> node[0].g[1]"
        assert result.outcomes[(pcie.name, "s")].time != result.base["s"]


@pytest.mark.parametrize("cls", ["switch", "link"])
def test_pinned_routes(tmp_path, cls):
    assert_as_recomputed(write(tmp_path, "pinned.sched", PINNED), cls)


def counted_machines(monkeypatch) -> list[int]:
    made: list[int] = []
    on = Session.on

    def counting(self, topology, params=None):
        made.append(1)
        return on(self, topology, params)
    monkeypatch.setattr(Session, "on", counting)
    return made


def test_failures_off_every_route_are_not_timed(tmp_path, monkeypatch):
    """One transfer node[0].g[0] -> node[1].g[0] crosses node[0].g[0] -> rail[0] ->
    node[1].g[0] only (GPUs do not forward): of the 48 NIC links of 6 hosts, only those two
    change its route. Machines made: those two failures, and the weakest item derated."""
    path = write(tmp_path, "m6.sched", rail_machine(6, ONE_TRANSFER))
    made = counted_machines(monkeypatch)
    result = schedc.whatif(schedc.load(path), "nic", verify=False)
    assert len(result.items) == 48 and len(made) == 3
    base = result.base["s"]
    changed = {item for (item, _), o in result.outcomes.items() if o.time != base}
    assert changed == {"node[0].g[0]<->rail[0]", "node[1].g[0]<->rail[0]"}


def test_the_limit_counts_the_failures_that_change_a_route(run, tmp_path):
    """A gather over 200 hosts puts a transfer on each of the 1,600 NICs: each failure
    changes a route, so 1,600 × (1,809 devices + 6,416 links + 1,592 transfers) units
    (200 × 8 GPUs + 200 NVSwitches + 9 switches; 2 × (1,600 + 1,600 + 8) link directions;
    199 hosts × 8 GPUs sending)."""
    path = write(tmp_path, "g200.sched", rail_machine(200, gather(200)))
    code, _, err = run("whatif", path, "--class", "nic", "--no-verify")
    assert code == 2, err
    work = 1600 * (1809 + 6416 + 1592)
    assert f"would time 1,600 failures" in err and f"{work:,} units of work" in err
    assert f"the limit is {MAX_FAILURE_WORK:,}" in err


# ---- Topology.route_depends_on on random machines ---------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from schedc.model.changes import Item  # noqa: E402


@st.composite
def machines(draw) -> str:
    """A machine of 3-4 GPUs and 2-4 switches in one host (so the host's routes try link
    classes in turn), random links of random classes (parallel ones too), either policy."""
    gpus, switches = draw(st.integers(3, 4)), draw(st.integers(2, 4))
    names = [f"g[{i}]" for i in range(gpus)] + [f"s[{i}]" for i in range(switches)]
    pairs = st.tuples(st.integers(0, len(names) - 1), st.integers(gpus, len(names) - 1))
    links = draw(st.lists(st.tuples(pairs, st.sampled_from(["nvlink", "pcie", "nic"]),
                                    st.integers(1, 9)), min_size=3, max_size=14))
    lines = [f"    link {names[a]} <-> {names[b]} bw {bw} GB/s class {cls}"
             for (a, b), cls, bw in links if a != b]
    policy = draw(st.sampled_from(["ecmp", "first"]))
    return (f"param V = 1 MB\ntopology {{\n  routing {policy}\n  host node[1] {{\n"
            f"    gpu g[{gpus}]\n    switch s[{switches}]\n" + "\n".join(lines) + "\n  }\n}\n")


@settings(max_examples=60, deadline=None)
@given(machines())
def test_a_route_keeps_its_loads_when_a_link_it_does_not_depend_on_fails(tmp_path_factory, text):
    """For every routed GPU pair and every hop outside `route_depends_on`, the machine without
    that hop, routed from scratch, loads the same resources with the same shares."""
    path = write(tmp_path_factory.mktemp("m"), "m.sched", text)
    topology = schedc.load(path).program.topology
    gpus = [d.id for d in topology.devices if d.kind == "gpu"]
    for a in gpus:
        for b in gpus:
            if a == b:
                continue
            try:
                loads = dict(topology.route_resources(a, b, None))
            except TopologyError:
                continue
            depends = topology.route_depends_on(a, b)
            for hop in set(range(len(topology.hops))) - depends:
                failed = apply(topology, [Item("x", "link", frozenset({hop}), ())], [])
                assert dict(failed.route_resources(a, b, None)) == loads, (text, a, b, hop)

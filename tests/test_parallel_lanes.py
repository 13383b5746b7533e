"""`parallel for` run as lanes, one lane per iteration (`elaborate.schedule._parallel_for`):
the same rounds, with the same transfers in the same order, the same work counted and the
same errors as the iterations elaborated one at a time and zipped."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from conftest import write
from test_language import MACHINE

import schedc.elaborate.schedule as elaboration
from schedc.elaborate.loader import load_program
from schedc.errors import SchedcError
from schedc.limits import Limits
from schedc.model.ir import Series
from schedc.model.values import Devices, take_lanes

RING = """
schedule ring_rs(g, r = all) {
  let k = len(g)
  for s in 0..k-2 round {
    for j in 0..k-1: reduce part((j - s - 1) % k of k) of r from g[j] to g[(j + 1) % k]
  }
}
schedule ring_ag(g, r = all) {
  let k = len(g)
  for s in 0..k-2 round {
    for j in 0..k-1: copy part((j - s) % k of k) of r from g[j] to g[(j + 1) % k]
  }
}
schedule ring_ar(g, r = all) {
  ring_rs(g, r)
  ring_ag(g, r)
}
"""

# name -> (schedule body, whether its `parallel for`s run as lanes)
CASES = {
    # calls of calls, a group per branch, a region per branch, defaults
    "rings": ("parallel for h in 0..1: ring_ar([g[4*h + j] for j in 0..3], part(h of 2))", True),
    # a branch's group as a slice of a list of groups, lets and an if all branches share
    "groups": ("parallel for G in [[g[0], g[1], g[2]], [g[3], g[4], g[5]]] {\n"
               "  let n = len(G)\n  if n == 3: ring_rs(G)\n  ring_ag(G)\n}", True),
    # transfers that only some branches make: a branch without a batch in a loop
    "filtered": ("parallel for h in 0..3 {\n  for s in 0..2 round {\n"
                 "    if h % 2 == 0 and s != 1: copy part(h of 4) from g[h] to g[h + 4]\n"
                 "    if h > 0: reduce part(s of 4) from g[h + 4] to g[h]\n  }\n}", True),
    # loops as long as the branch number: one iteration at a time, zipped
    "uneven": ("parallel for h in 0..2 {\n  for t in 0..h round {\n"
               "    copy part(h of 4) from g[h] to g[(h + t + 1) % 8]\n  }\n}", False),
    # an if that differs between branches, outside any round
    "branching": ("parallel for h in 0..1 {\n  if h == 0: ring_rs([g[0], g[1]])\n"
                  "  ring_ag([g[2*h + 4], g[2*h + 5]])\n}", False),
    # a round written out, and a parallel loop inside a parallel loop
    "round": ("parallel for h in 0..1 {\n  round { copy all from g[h] to g[h + 2] }\n}", False),
    "nested": ("parallel for h in 0..1 {\n  parallel for i in 0..1: ring_rs([g[4*h + 2*i], g[4*h + 2*i + 1]])\n}",
               False),
}


IN_LANES = elaboration._IN_LANES  # none of them: every parallel loop one iteration at a time


def _program(tmp_path, body: str, lanes: bool, monkeypatch, limits: Limits | None = None):
    monkeypatch.setattr(elaboration, "_IN_LANES", IN_LANES if lanes else ())
    directory = tmp_path / str(lanes)
    directory.mkdir(exist_ok=True)
    text = MACHINE.replace("allreduce", "allgather") + RING + "schedule x {\n" + body + "\n}\n"
    path = write(directory, "case.sched", text)
    return load_program(path, limits=limits) if limits else load_program(path)


def _listed(schedule) -> list[list[tuple]]:
    return [[(t.op, t.src, t.dst, t.region, t.into, t.bytes) for t in r.transfers()]
            for r in schedule.rounds]


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("at_once", [1 << 20, 1, 9])
def test_lanes_make_the_rounds_of_one_iteration_at_a_time(tmp_path, monkeypatch, case, at_once):
    """Also when the branches run a few at a time, their groups zipped (`at_once` transfers:
    one branch at a time, or a few, by the first branch's count)."""
    monkeypatch.setattr(elaboration, "BRANCH_TRANSFERS", at_once)
    body, runs_as_lanes = CASES[case]
    one_at_a_time = []  # the parallel loops elaborated one iteration at a time
    iterations = elaboration._iterations
    monkeypatch.setattr(elaboration, "_iterations", lambda stmt, env, ctx: (
        one_at_a_time.append(stmt) if isinstance(stmt, elaboration.st.ParallelFor) else None)
        or iterations(stmt, env, ctx))
    a = _program(tmp_path, body, True, monkeypatch).schedule("x")
    if at_once == 1 << 20:  # (a branch alone makes loops of one length)
        assert (not one_at_a_time) == runs_as_lanes
    b = _program(tmp_path, body, False, monkeypatch).schedule("x")
    assert _listed(a) == _listed(b)
    assert a.transfer_count == b.transfer_count
    if runs_as_lanes:
        assert all(isinstance(p, Series) for p in a.rounds.parts)


def test_the_rings_by_hand(tmp_path, monkeypatch):
    """Two rings of 4, each over half the buffer: 3 + 3 rounds of 2·4 transfers, each moving
    1/8 of the buffer (a quarter of a half); in round 0, g[0] sends part 3 of 8 on."""
    program = _program(tmp_path, CASES["rings"][0], True, monkeypatch)
    schedule = program.schedule("x")
    names = [d.name for d in program.topology.devices]
    assert [len(r) for r in schedule.rounds] == [8] * 6
    first = list(schedule.rounds[0].transfers())
    assert [(names[t.src], names[t.dst]) for t in first] == [
        ("g[0]", "g[1]"), ("g[1]", "g[2]"), ("g[2]", "g[3]"), ("g[3]", "g[0]"),
        ("g[4]", "g[5]"), ("g[5]", "g[6]"), ("g[6]", "g[7]"), ("g[7]", "g[4]")]
    assert first[0].region == (Fraction(3, 8), Fraction(4, 8))


@pytest.mark.parametrize("steps", range(1, 40))
def test_work_is_counted_as_one_iteration_at_a_time_counts_it(tmp_path, monkeypatch, steps):
    """Under every step limit, the lanes refuse or accept as the iterations one at a time do,
    with the same message."""
    outcomes = []
    for lanes in (True, False):
        try:
            _program(tmp_path, CASES["rings"][0], lanes, monkeypatch, Limits(steps=steps)).schedule("x")
            outcomes.append("ok")
        except SchedcError as error:
            outcomes.append(error.render().replace(str(tmp_path / str(lanes)), "<dir>"))
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("body, words", [
    # iteration h = 3 reaches g[8]
    ("parallel for h in 0..3: ring_rs([g[h], g[h + 5]])", "8"),
    # iteration h = 2 sends from g[2] to itself
    ("parallel for h in 0..3: ring_rs([g[h], g[2]])", "g[2] to itself"),
])
def test_an_error_is_the_one_its_iteration_makes(tmp_path, monkeypatch, body, words):
    messages = []
    for lanes in (True, False):
        with pytest.raises(SchedcError) as caught:
            _program(tmp_path, body, lanes, monkeypatch).schedule("x")
        messages.append((caught.value.message, str(caught.value.span).split(":", 1)[1],
                         caught.value.notes))
    assert messages[0] == messages[1]
    assert words in messages[0][0]


def test_groups_shared_by_lanes_are_kept_once():
    """A branch's group carried into a round's lanes is not copied per lane: the lanes index
    one table, and read as the groups they stand for."""
    groups = Devices(np.array([[0, 1, 2, 3], [4, 5, 6, 7]]), True)
    lanes = take_lanes(groups, np.array([0, 0, 1, 1, 1]))
    assert lanes.table is groups.table and lanes.rows.tolist() == [0, 0, 1, 1, 1]
    assert lanes.ids.tolist() == [[0, 1, 2, 3]] * 2 + [[4, 5, 6, 7]] * 3
    assert len(lanes) == 4 and lanes.rank == 1
    assert lanes.pick(np.array([0, 3, 1, 2, 0])).tolist() == [0, 3, 5, 6, 4]
    assert lanes.pick(2).tolist() == [2, 2, 6, 6, 6]
    again = take_lanes(lanes, np.array([4, 0]))
    assert again.table is groups.table and again.ids.tolist() == [[4, 5, 6, 7], [0, 1, 2, 3]]

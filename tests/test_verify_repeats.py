"""Verification skips periods that repeat a fixed point (`analysis.verify.repeats`): the same
verdicts, failures and conflicts as running every step, on schedules that repeat themselves
(loops of calls with the same arguments), that stop repeating, and that never settle."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import ROOT, flat_machine, write

import schedc.analysis.verify.repeats as repeats
from schedc.analysis.verify import verdict
from schedc.analysis.verify.dataflow import Items, Steps, grouped
from schedc.analysis.verify.verdict import verify_schedule
from schedc.session import Session

LIBRARY = ROOT / "schedules" / "lib" / "ring.sched"
G = "[g[i] for i in 0..7]"

# name -> (collective, schedule body, whether periods are skipped)
CASES = {
    # 40 all-gathers: settled after the first
    "repeated": ("allgather", f"for t in 0..39 {{\n  ring_allgather({G})\n}}", True),
    # then something else: a last call over half the buffer, and a broken copy
    # (9 periods compared at once: the blocks before the other rounds are skipped; those
    # reduce, which the all-gather does not expect)
    "then other": ("allgather", f"for t in 0..39 {{\n  ring_allgather({G})\n}}\n"
                   "for s in 0..6 round {\n"
                   "  for j in 0..7: reduce part((j - s - 1) % 8 of 8) from g[j] to g[(j + 1) % 8]\n"
                   "}", True),
    # (a copy that breaks the ring's symmetry: every column runs, and they skip nothing)
    "then broken": ("allgather", f"for t in 0..39 {{\n  ring_allgather({G})\n}}\n"
                    "reduce part(1 of 8) from g[2] to g[5]", False),
    # every call is missing its last round: settled, and wrong at the end
    "wrong": ("allgather", "for t in 0..39 {\n  for s in 0..5 round {\n"
              "    for j in 0..7: copy part((j - s) % 8 of 8) from g[j] to g[(j + 1) % 8]\n"
              "  }\n}", True),
    # a conflict in the first period: two copies into one place in a round
    "conflict": ("allgather", "for t in 0..39 {\n  round {\n    copy part(0 of 8) from g[0] to g[2]\n"
                 "    copy part(1 of 8) from g[1] to g[2]\n    copy part(1 of 8) from g[3] to g[2]\n"
                 "  }\n}", False),
    # reductions add up again every period: never settles, every step runs
    "reducing": ("reduce_scatter", f"for t in 0..39 {{\n  ring_reduce_scatter({G})\n}}", False),
}


def _schedule(tmp_path, kind: str, body: str):
    text = (f'import "{LIBRARY}"\n' + flat_machine(8) + f"{kind} V over ranks\n"
            "schedule x {\n" + body + "\n}\n")
    session = Session.open(write(tmp_path, "case.sched", text))
    names = [d.name for d in session.program.topology.devices]
    return session.schedule("x"), names


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("method", ["exact", "fingerprint"])
def test_skipping_repeats_gives_the_verdict_of_every_step(tmp_path, monkeypatch, case, method):
    kind, body, skips = CASES[case]
    schedule, names = _schedule(tmp_path, kind, body)
    skipped = []
    chunks = repeats.chunks

    def spied(parts, state, block):
        for chunk in chunks(parts, state, block):
            if len(chunk) and not len(chunk.items):
                skipped.append(len(chunk))
            yield chunk

    monkeypatch.setattr(repeats, "chunks", spied)
    monkeypatch.setattr(verdict, "BLOCK_TRANSFERS", 64)
    fast = verify_schedule(schedule, names, method, seed=5)
    assert bool(skipped) == skips
    monkeypatch.setattr(repeats, "period_of", lambda steps: None)
    every = verify_schedule(schedule, names, method, seed=5)
    assert (fast.ok, fast.method, fast.segments, fast.failure) == \
        (every.ok, every.method, every.segments, every.failure)
    assert fast.ok == (case == "repeated")
    if case == "repeated":  # periods 2 .. 39 of 7 steps each, skipped
        assert sum(skipped) == 38 * 7


def _items(*cells: int) -> Items:
    """A step's items: copies between the cells given (a stand-in for a round's)."""
    ints = np.array(cells, dtype=np.int64)
    return Items(ints, ints + 1, ints * 0, np.ones(len(ints), dtype=bool), ints * 0, ints * 0)


def test_the_period_is_the_first_recurrence_of_the_first_step():
    a, b, c = _items(1), _items(2), _items(3, 4)
    assert repeats.period_of(Steps.of([a, b, c] * 6)) == 3
    assert repeats.period_of(Steps.of([a] * 6)) == 1
    assert repeats.period_of(Steps.of([a, b, a, c] * 6)) is None  # a recurs inside the period
    assert repeats.period_of(Steps.of([a, b, c] * 4)) is None  # too few periods to be worth it
    assert repeats.period_of(Steps.of([Items.empty()] * 10)) is None
    assert repeats.period_of(Steps.of([a, _items(1, 2), a] * 6)) is None  # (a's start, not a)


@pytest.mark.parametrize("start, limit", [(0, 4), (0, 1), (3, 100), (2, 5), (6, 2)])
def test_steps_in_groups_as_grouped_makes_them(start, limit):
    items = [_items(*range(n)) for n in (1, 2, 3, 9, 1, 1, 1, 4)]
    steps = Steps.of(items)
    made = [g.cuts.tolist() for g in steps.groups(start, limit)]
    assert made == [Steps.of(g).cuts.tolist() for g in grouped(items[start:], limit)]


def test_a_block_repeats_a_period_only_when_every_field_does():
    one = Steps.of([_items(1), _items(2, 3)])
    assert repeats._repeats(Steps.of([_items(1), _items(2, 3)] * 3), one, 3)
    assert not repeats._repeats(Steps.of([_items(1), _items(2, 3)] * 2 + [_items(1), _items(2, 4)]),
                                one, 3)
    assert not repeats._repeats(Steps.of([_items(1), _items(2), _items(3)] * 2), one, 2)

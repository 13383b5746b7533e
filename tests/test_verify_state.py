"""The verifier's state (`analysis.state`): applying steps together, when none reads what an
earlier one writes, ends in the same state (and finds the same conflict) as applying them
one by one."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from schedc.analysis.verify.dataflow import Items, Steps
from schedc.analysis.verify.state import (
    MIXED,
    State,
    _apply_arrays,
    _apply_one,
    _independent_runs,
    apply_round,
    apply_steps,
)

CELLS = 10


def _state(seed: int) -> State:
    rng = np.random.default_rng(seed)
    state = State.start(CELLS, rng.integers(0, 2**63, size=(6, 2), dtype=np.uint64))
    state.shift[rng.integers(0, CELLS, 2)] = MIXED
    state.shift[rng.integers(0, CELLS, 2)] = 3
    return state


def _items(draw, sources: list[int]) -> Items:
    n = draw(st.integers(0, 5))
    src = np.array([draw(st.sampled_from(sources)) for _ in range(n)], dtype=np.int64)
    dst = np.array([draw(st.integers(0, CELLS - 1)) for _ in range(n)], dtype=np.int64)
    copy = np.array([draw(st.booleans()) for _ in range(n)], dtype=bool)
    shift = np.array([draw(st.sampled_from([0, 0, 0, 3, -3])) for _ in range(n)], dtype=np.int64)
    zeros = np.zeros(n, np.int64)
    return Items(src, dst, shift, copy, zeros, zeros)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_steps_applied_together_or_one_by_one_agree(data):
    # Reading mostly from a few cells that are rarely written makes runs of independent steps
    # common; the rest of the time the runs are cut short, as they must be.
    sources = data.draw(st.sampled_from([[0, 1], [0, 1, 2, 3], list(range(CELLS))]))
    steps = [_items(data.draw, sources) for _ in range(data.draw(st.integers(1, 12)))]
    seed = data.draw(st.integers(0, 3))
    together, apart = _state(seed), _state(seed)
    conflict = apply_steps(together, Steps.of(steps))
    expected = None
    for k, it in enumerate(steps):
        if len(it):
            cell = apply_round(apart, it)
            if cell is not None:
                expected = (k, cell)
                break
    assert conflict == expected
    for name in ("payload", "total", "shift"):
        np.testing.assert_array_equal(getattr(together, name), getattr(apart, name))


def test_runs_end_where_a_step_reads_what_an_earlier_one_wrote():
    def step(src, dst):
        n = len(src)
        zeros = np.zeros(n, np.int64)
        return Items(np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64), zeros,
                     np.zeros(n, bool), zeros, zeros)

    # 0 → 5 and 1 → 6 are independent; then 5 → 7 reads what the first wrote, and 6 → 8 what
    # the second did, but not what the third wrote; the empty step joins any run.
    steps = [step([0], [5]), step([1], [6]), step([5], [7]), step([], []), step([6], [8])]
    assert _independent_runs(Steps.of(steps)) == [(0, 2), (2, 5)]


@settings(max_examples=200, deadline=None)
@given(st.integers(0, CELLS - 1), st.integers(0, CELLS - 1), st.booleans(),
       st.sampled_from([0, 3, -3]), st.integers(0, 3))
def test_a_round_of_one_item_on_scalars_as_on_arrays(src, dst, copy, shift, seed):
    one, arrays = _state(seed), _state(seed)
    one.total[src] = arrays.total[src] = 2**32 - 1  # near the cap, sometimes
    it = Items(np.array([src]), np.array([dst]), np.array([shift]), np.array([copy]),
               np.zeros(1, np.int64), np.zeros(1, np.int64))
    _apply_one(one, it)
    assert _apply_arrays(arrays, it) is None
    for name in ("payload", "total", "shift"):
        np.testing.assert_array_equal(getattr(one, name), getattr(arrays, name))


def test_blocks_halved_for_memory_verify_alike(monkeypatch):
    """Items are made for a block of rounds at once, halving the block while it holds more
    than BLOCK_ITEMS of them: a tiny bound gives the same verdicts, failures included."""
    from conftest import ROOT

    from schedc.analysis.verify import dataflow
    from schedc.analysis.verify.verdict import verify_schedule
    from schedc.elaborate.loader import load_program

    for path in (ROOT / "schedules/seed/nvlink_2x8.sched",
                 ROOT / "tests/fixtures/broken/dropped.sched"):
        program = load_program(path)
        names = [d.name for d in program.topology.devices]
        for result in program.results:
            schedule = program.schedule(result.name)
            whole = verify_schedule(schedule, names, seed=1, symmetry=False)
            monkeypatch.setattr(dataflow, "BLOCK_ITEMS", 7)
            halved = verify_schedule(schedule, names, seed=1, symmetry=False)
            monkeypatch.undo()
            assert (halved.ok, repr(halved.failure)) == (whole.ok, repr(whole.failure))

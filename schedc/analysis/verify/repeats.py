"""Steps that repeat themselves, run once they stop changing the state.

A loop of calls of one schedule with the same arguments (20,000 ring all-gathers in a row)
gives the same steps again and again: period after period of identical items. A step's
effect depends on its items and the state alone, so once one period leaves the state as it
found it, every identical period after it does too, and none of them can conflict (a
conflict depends on the items alone, and the first period had none). Those periods are
checked identical, block by block, and skipped; anything else runs as usual.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from .dataflow import Items, Steps
from .state import State

MAX_PERIOD = 4096  # steps: longer periods are not looked for
TRIES = 3  # periods run, after the first, waiting for one that changes nothing
_FIELDS = ("src", "dst", "shift", "copy", "batch", "transfer")


def _repeats(block: Steps, one: Steps, times: int) -> bool:
    """Whether `block` is the steps of `one`, `times` over."""
    width = int(one.cuts[-1])
    cuts = np.append((one.cuts[:-1][None, :] + width * np.arange(times)[:, None]).reshape(-1),
                     width * times)
    return np.array_equal(block.cuts, cuts) and all(
        np.array_equal(getattr(block.items, f), np.tile(getattr(one.items, f), times))
        for f in _FIELDS)


def period_of(steps: Steps) -> int | None:
    """The least P such that step P's items are step 0's, when the first two periods are the
    same and there are at least TRIES + 2 periods; else None. (The rest is checked as it runs.)"""
    sizes = np.diff(steps.cuts)
    limit = min(MAX_PERIOD, len(steps) // (TRIES + 2))
    if not limit or not sizes[0]:
        return None
    first = steps.cuts[1:limit + 1]  # (where steps 1 .. limit start)
    items = steps.items
    alike = (sizes[1:limit + 1] == sizes[0]) & \
        (items.src[first.clip(max=len(items) - 1)] == items.src[0]) & \
        (items.dst[first.clip(max=len(items) - 1)] == items.dst[0])
    for period in (np.flatnonzero(alike) + 1).tolist():
        if _repeats(steps.part(period, period + 1), steps.part(0, 1), 1):
            # (only the first recurrence of step 0: it may recur inside a period)
            return period if _repeats(steps.part(period, 2 * period), steps.part(0, period), 1) \
                else None
    return None


def _snapshot(state: State) -> tuple[np.ndarray, ...]:
    return state.payload.copy(), state.total.copy(), state.shift.copy()


def _unchanged(state: State, before: tuple[np.ndarray, ...]) -> bool:
    return all(np.array_equal(now, then) for now, then in
               zip((state.payload, state.total, state.shift), before))


def chunks(parts: list[Steps], state: State, block: int) -> Iterator[Steps]:
    """The steps of `parts` (consecutive steps each, one after another) in chunks of
    consecutive ones (of about `block` items), as the verifier applies them to `state` one by
    one; periods that a fixed point of `state` would repeat come as chunks of no items (as
    many steps)."""
    for steps in parts:
        yield from _chunks(steps, state, block)


def _chunks(steps: Steps, state: State, block: int) -> Iterator[Steps]:
    period = period_of(steps)
    start, total = 0, len(steps)
    if period is not None:
        one = steps.part(0, period)
        yield one
        start = period
        times = max(1, block // max(int(one.cuts[-1]), 1))  # periods compared at once
        for _ in range(TRIES):
            if start + period > total or not _repeats(steps.part(start, start + period), one, 1):
                break
            before = _snapshot(state)
            yield one
            start += period
            if not _unchanged(state, before):
                continue
            while start + period <= total:  # a fixed point: skip what repeats it
                count = min(times, (total - start) // period)
                if not _repeats(steps.part(start, start + count * period), one, count):
                    break
                yield Steps(Items.empty(), np.zeros(count * period + 1, dtype=np.int64))
                start += count * period
            break
    yield from steps.groups(start, block)

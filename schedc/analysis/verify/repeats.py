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

from .dataflow import Items, Steps, grouped
from .state import State

MAX_PERIOD = 4096  # steps: longer periods are not looked for
TRIES = 3  # periods run, after the first, waiting for one that changes nothing
_FIELDS = ("src", "dst", "shift", "copy", "batch", "transfer")


def _same(a: Items, b: Items) -> bool:
    return len(a) == len(b) and all(np.array_equal(getattr(a, f), getattr(b, f)) for f in _FIELDS)


def period_of(items: list[Items]) -> int | None:
    """The least P such that step P's items are step 0's, when the first two periods are the
    same and there are at least TRIES + 2 periods; else None. (The rest is checked as it runs.)"""
    if not items or not len(items[0]):
        return None
    for period in range(1, min(MAX_PERIOD, len(items) // (TRIES + 2)) + 1):
        if _same(items[period], items[0]):
            if all(_same(items[period + k], items[k]) for k in range(1, period)):
                return period
            return None  # (only the first candidate: a period's first step may recur inside it)
    return None


def _repeats(block: Steps, one: Steps, times: int) -> bool:
    """Whether `block` is the steps of `one`, `times` over."""
    width = int(one.cuts[-1])
    cuts = np.append((one.cuts[:-1][None, :] + width * np.arange(times)[:, None]).reshape(-1),
                     width * times)
    return np.array_equal(block.cuts, cuts) and all(
        np.array_equal(getattr(block.items, f), np.tile(getattr(one.items, f), times))
        for f in _FIELDS)


def _snapshot(state: State) -> tuple[np.ndarray, ...]:
    return state.payload.copy(), state.total.copy(), state.shift.copy()


def _unchanged(state: State, before: tuple[np.ndarray, ...]) -> bool:
    return all(np.array_equal(now, then) for now, then in
               zip((state.payload, state.total, state.shift), before))


def chunks(items: list[Items], state: State, block: int) -> Iterator[Steps]:
    """The steps' items in chunks of consecutive steps (groups of about `block` items), as the
    verifier applies them to `state` one by one; periods that a fixed point of `state` would
    repeat come as chunks of no items (as many steps)."""
    period = period_of(items)
    start = 0
    if period is not None:
        one = Steps.of(items[:period])
        width = int(one.cuts[-1])
        yield one
        start = period
        times = max(1, block // max(width, 1))  # periods compared at once
        for _ in range(TRIES):
            if start + period > len(items) or not _repeats(Steps.of(items[start:start + period]),
                                                           one, 1):
                break
            before = _snapshot(state)
            yield one
            start += period
            if not _unchanged(state, before):
                continue
            while start + period <= len(items):  # a fixed point: skip what repeats it
                count = min(times, (len(items) - start) // period)
                steps = Steps.of(items[start:start + count * period])
                if not _repeats(steps, one, count):
                    break
                yield Steps(Items.empty(), np.zeros(count * period + 1, dtype=np.int64))
                start += count * period
            break
    yield from (Steps.of(group) for group in grouped(items[start:], block))

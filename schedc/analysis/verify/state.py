"""The verifier's state, and how rounds change it.

Per (rank, segment) cell: the payload (the sum of one row per contribution held), the total
multiplicity (saturating at CAP) and the displacement of the data (MIXED once data of
different positions meet); see `verify` for what they guarantee.

A round is applied as array work on its items (`apply_round`). A schedule of many small
rounds would pay that work's fixed cost per round, so consecutive rounds are applied
together when none of them reads a cell that an earlier one of them writes: every read then
sees the state from before them all, and each cell written ends with its last copy (or its
value before) plus the reductions after it (`apply_steps`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .dataflow import Items, Steps

MIXED = np.iinfo(np.int64).min  # the displacement of a cell mixing data of different positions
CAP = 2**32  # the total multiplicity saturates here (no postcondition asks for as much)


@dataclass
class State:
    payload: np.ndarray  # cells × width
    total: np.ndarray  # cells: the multiplicity, saturating at CAP
    shift: np.ndarray  # cells: the displacement, or MIXED
    stamp: np.ndarray  # scratch, to find cells written twice in a round without sorting

    @classmethod
    def start(cls, cells: int, held: np.ndarray) -> State:
        """`cells` cells, the first holding one contribution each (`held`: their rows)."""
        payload = np.zeros((cells, held.shape[1]), dtype=held.dtype)
        payload[:len(held)] = held
        total = np.zeros(cells, np.int64)
        total[:len(held)] = 1
        return cls(payload, total, np.zeros(cells, np.int64), np.zeros(cells, np.int64))


def apply_steps(s: State, steps: Steps) -> tuple[int, int] | None:
    """Apply consecutive steps; (which step, cell) of the first conflict, else None."""
    for start, end in _independent_runs(steps):
        if end - start > 1 and _apply_together(s, steps, start, end):
            continue
        for k in range(start, end):
            it = steps[k]
            if len(it):
                conflict = apply_round(s, it)
                if conflict is not None:
                    return k, conflict
    return None


def _independent_runs(steps: Steps) -> list[tuple[int, int]]:
    """The steps cut into runs in which no step reads a cell an earlier one writes."""
    n = len(steps)
    if n == 1 or not steps.cuts[-1]:
        return [(0, n)]
    owner, it = steps.owner, steps.items
    writes = np.sort(it.dst * n + owner)
    # For each read, the last earlier step that writes its cell (-1: none does).
    below = np.searchsorted(writes, it.src * n + owner) - 1
    found = writes[below.clip(0)]
    last = np.where((below >= 0) & (found // n == it.src), found % n, -1)
    latest = np.full(n, -1)
    np.maximum.at(latest, owner, last)
    runs, begin = [], 0
    for k in np.flatnonzero(latest >= 0).tolist():  # (a step that reads no write starts none)
        if latest[k] >= begin:
            runs.append((begin, k))
            begin = k
    runs.append((begin, n))
    return runs


def _apply_together(s: State, steps: Steps, start: int, end: int) -> bool:
    """Apply steps none of which reads what an earlier one writes; false (and nothing
    written) when some step may conflict, which `apply_round` then reports."""
    lo, hi = int(steps.cuts[start]), int(steps.cuts[end])
    if lo == hi:
        return True
    it = steps.items.part(lo, hi)
    owner = steps.owner[lo:hi]
    src, dst, copy = it.src, it.dst, it.copy
    # A cell that a copy writes along with another transfer of its round: left to apply_round.
    key = np.sort(owner * len(s.total) + dst)
    twice = np.flatnonzero(key[1:] == key[:-1])
    if len(twice) and copy.any():
        clashing = np.isin(owner * len(s.total) + dst, key[twice])
        if (clashing & copy).any():
            return False
    values, totals, shifts = s.payload[src], s.total[src], s.shift[src]
    shifts = np.where(shifts != MIXED, shifts + it.shift, shifts)
    order = np.lexsort((owner, dst))  # by cell, and in a cell by step
    cell = dst[order]
    starts = np.empty(len(cell), dtype=bool)  # (np.r_ costs ~20 µs a call; runs are many)
    starts[0] = True
    np.not_equal(cell[1:], cell[:-1], out=starts[1:])
    first = np.flatnonzero(starts)
    cells = cell[first]
    counts = np.empty_like(first)
    counts[:-1] = first[1:] - first[:-1]
    counts[-1] = len(cell) - first[-1]
    copy, values, totals, shifts = copy[order], values[order], totals[order], shifts[order]
    place = np.arange(len(cell))
    last_copy = np.maximum.reduceat(np.where(copy, place, -1), first)
    adds = ~copy & (place > np.repeat(last_copy, counts))  # the reductions after it
    copied = last_copy >= 0
    at = last_copy.clip(0)
    base = np.where(copied[:, None], values[at], s.payload[cells])
    base_total = np.where(copied, totals[at], s.total[cells])
    base_shift = np.where(copied, shifts[at], s.shift[cells])
    zero = np.zeros((), dtype=values.dtype)
    s.payload[cells] = base + np.add.reduceat(np.where(adds[:, None], values, zero), first,
                                              axis=0)
    s.total[cells] = np.minimum(base_total + np.add.reduceat(np.where(adds, totals, 0), first),
                                CAP)
    differs = adds & (shifts != np.repeat(base_shift, counts))
    s.shift[cells] = np.where(np.add.reduceat(differs, first) > 0, MIXED, base_shift)
    return True


def apply_round(s: State, it: Items) -> int | None:
    """One round: read every source, then write. A cell that a copy writes along with another
    transfer is a conflict: its cell is returned, and nothing is written."""
    if len(it) == 1:
        _apply_one(s, it)
        return None
    return _apply_arrays(s, it)


def _apply_arrays(s: State, it: Items) -> int | None:
    values, totals, shifts = s.payload[it.src], s.total[it.src], s.shift[it.src]
    if it.moved:
        shifts = np.where(shifts != MIXED, shifts + it.shift, shifts)
    order = np.arange(len(it))
    s.stamp[it.dst] = order
    once = bool((s.stamp[it.dst] == order).all())  # no cell is written twice
    copies = it.copy.any()
    if not once and copies:
        ordered = np.sort(it.dst)
        clash = np.intersect1d(ordered[1:][ordered[1:] == ordered[:-1]], it.dst[it.copy])
        if len(clash):
            return int(clash[0])
    if copies:
        c = it.copy
        s.payload[it.dst[c]] = values[c]
        s.total[it.dst[c]] = totals[c]
        s.shift[it.dst[c]] = shifts[c]
        if c.all():
            return None
        r = ~c
        dst, values, totals, shifts = it.dst[r], values[r], totals[r], shifts[r]
    else:
        dst = it.dst
    if once:
        s.payload[dst] += values
        s.total[dst] = np.minimum(s.total[dst] + totals, CAP)
        s.shift[dst] = np.where(s.shift[dst] == shifts, shifts, MIXED)
        return None
    np.add.at(s.payload, dst, values)
    np.add.at(s.total, dst, totals)
    cells, inverse = np.unique(dst, return_inverse=True)
    s.total[cells] = np.minimum(s.total[cells], CAP)
    low, high = s.shift[cells], s.shift[cells].copy()
    np.minimum.at(low, inverse, shifts)
    np.maximum.at(high, inverse, shifts)
    s.shift[cells] = np.where(low == high, low, MIXED)
    return None


def _apply_one(s: State, it: Items) -> None:
    """A round of one item (a chain's step, as the columns of a symmetric ring make them), on
    scalars: the array path's fixed cost is most of such a round's."""
    src, dst = int(it.src[0]), int(it.dst[0])
    shift = int(s.shift[src])
    if shift != MIXED:
        shift += int(it.shift[0])
    if it.copy[0]:
        s.payload[dst] = s.payload[src]
        s.total[dst] = s.total[src]
        s.shift[dst] = shift
        return
    s.payload[dst] += s.payload[src]
    s.total[dst] = min(int(s.total[dst]) + int(s.total[src]), CAP)
    if int(s.shift[dst]) != shift:
        s.shift[dst] = MIXED

"""Where verification cuts the buffer: every region boundary a schedule and its collective
use (`geometry`), closed under `into` moves, and each device's slot; refused past MAX_CELLS
cells (`check_cells`), from the declaration alone when it shows that (`check_declared`).
The rest of the data-flow model is `dataflow`."""

from __future__ import annotations

from math import lcm

import numpy as np

from ...errors import LimitError, Span
from ...limits import MAX_CELLS
from ...model.collectives import KINDS
from ...model.ir import Batch, Collective, Schedule, distinct, joined
from .dataflow import (
    GROUP,
    MARKED_SCALE,
    MAX_SCALE,
    NO_VERIFY_HINT,
    Geometry,
    Ran,
    endpoint_batches,
    grouped,
    ran_batches,
    step_rounds,
)


def geometry(schedule: Schedule, devices: int, ran: Ran | None = None) -> Geometry:
    """Cut the buffer at every boundary in use; cuts are closed under `into` moves, so a
    moved region lands on whole segments. `ran`: the schedule's steps, when known."""
    coll = schedule.collective
    p = len(coll.ranks)
    ran = step_rounds(schedule) if ran is None else ran
    whole = [b for b in ran_batches(ran) if b.op != "send"]
    # A series' batches come whole: cut into pieces whose arrays stay in the cache.
    batches = [b.take(slice(lo, lo + GROUP)) if len(b) > GROUP else b
               for b in whole for lo in range(0, len(b), GROUP)]
    scale = lcm(p, *{b.den for b in batches})
    if scale > MAX_SCALE:
        raise LimitError(f"regions are cut too finely to verify (1/{scale} of the buffer)"
                         f"{NO_VERIFY_HINT}", schedule.span)
    bounds, moves = _bounds(batches, scale, coll, any(b.into_off is not None for b in whole))
    if moves:
        bounds = _close_under_moves(bounds, np.unique(np.concatenate(moves), axis=0), schedule)
    slot, in_network = _slots(ran, coll, devices)
    check_cells(p, len(in_network), len(bounds) - 1, schedule.span)
    return Geometry(slot, bounds, scale, p, in_network)


def _bounds(batches: list[Batch], scale: int, coll: Collective, relocating: bool
            ) -> tuple[np.ndarray, list[np.ndarray]]:
    """The boundaries in use, in units of 1/`scale` of the buffer, and the `into` moves
    (start, length, landing place) whose landing places are cut too (`relocating`: any)."""
    p = len(coll.ranks)
    # Points are marked group by group of batches (no array of every transfer's ends at once)
    # while a mark per position is small; past that they are collected and sorted.
    mark = np.zeros(scale + 1, dtype=bool) if scale <= MARKED_SCALE else None
    cuts = [np.array([0, scale], dtype=np.int64)]
    if KINDS[coll.kind].by_parts:  # its start or end state differs from part to part
        cuts.append(np.arange(p + 1, dtype=np.int64) * (scale // p))
    moves = []
    full = False  # every position is a boundary already (a ring's p parts): no more to mark
    for k, group in enumerate(grouped(batches, GROUP)):
        if full and not relocating:
            break
        ends = []
        for b in group:
            if b.into_off is not None:  # where a moved region lands is cut too
                g = scale // b.den
                ends += [b.into_off * g, (b.into_off + b.length) * g]
                moves.append(np.stack([b.off * g, b.length * g, b.into_off * g], axis=1))
        if not full:
            factors = {scale // b.den for b in group}
            f: int | np.ndarray = factors.pop() if len(factors) == 1 else \
                np.repeat([scale // b.den for b in group], [len(b) for b in group])
            start, length = joined([b.off for b in group]), joined([b.length for b in group])
            if not isinstance(f, int) or f != 1:
                start, length = start * f, length * f
            ends += [start, start + length]
        if mark is None:
            cuts += ends
        else:
            for points in ends:
                mark[points] = True
            full = full or (k % 64 == 63 and bool(mark.all()))
    if mark is None:
        return distinct(np.concatenate(cuts)), moves
    for points in cuts:
        mark[points] = True
    return np.flatnonzero(mark), moves


def _slots(ran: Ran, coll: Collective, devices: int) -> tuple[np.ndarray, tuple[int, ...]]:
    """Each device's slot: the ranks 0..p-1 in the collective's order, then the switches that
    are endpoints (elaboration admits only ranks and reducing switches), in device order."""
    p = len(coll.ranks)
    used = np.zeros(devices, dtype=bool)
    for b in endpoint_batches(ran):
        used[b.src] = True
        used[b.dst] = True
    slot = np.full(devices, -1, dtype=np.int64)
    slot[list(coll.ranks)] = np.arange(p)
    in_network = tuple(int(d) for d in np.flatnonzero(used & (slot < 0)))
    slot[list(in_network)] = p + np.arange(len(in_network))
    return slot, in_network


def _close_under_moves(bounds: np.ndarray, moves: np.ndarray, schedule: Schedule) -> np.ndarray:
    """Add the cuts that `copy r into r'` carries from r to r' and back, until none is new."""
    moves = moves[moves[:, 0] != moves[:, 2]]
    start, length, into = moves.T
    while True:
        new = [bounds]
        for lo, shift in ((start, into - start), (into, start - into)):
            first = np.searchsorted(bounds, lo, side="right")
            count = np.searchsorted(bounds, lo + length, side="left") - first
            which = np.repeat(np.arange(len(lo)), count)
            index = first[which] + np.arange(len(which)) - np.repeat(np.cumsum(count) - count, count)
            new.append(bounds[index] + shift[which])
        grown = distinct(np.concatenate(new))
        if len(grown) == len(bounds):
            return bounds
        if len(grown) > MAX_CELLS:
            raise LimitError("the regions moved by 'into' cut the buffer too finely to verify"
                             + NO_VERIFY_HINT, schedule.span)
        bounds = grown


def check_cells(ranks: int, switches: int, pieces: int, span: Span | None) -> None:
    """Refuse a verification of more than MAX_CELLS cells: (ranks + reducing switches) × pieces
    of the buffer."""
    if (ranks + switches) * pieces > MAX_CELLS:
        raise LimitError(f"verifying this needs {ranks:,} ranks × {pieces:,} pieces of the "
                         f"buffer; the limit is {MAX_CELLS:,} in all{NO_VERIFY_HINT}", span)


def check_declared(collective: Collective, span: Span | None) -> None:
    """Before the schedule `span` is compiled, refuse what its verification will refuse from
    its collective's declaration alone: every rank, and the p parts of the buffer whose start
    or end states differ (an all-gather's or a reduce-scatter's: `geometry` cuts there
    whatever the schedule does), else the whole buffer as one piece."""
    if collective.layout is None:  # (an MSCCL layout's tables are checked as it is read)
        p = len(collective.ranks)
        check_cells(p, 0, p if KINDS[collective.kind].by_parts else 1, span)

"""The data-flow model shared by verification and its counterexamples.

The buffer is cut into *segments* at every region boundary a schedule and its collective use,
so every transfer moves whole segments; ranks are *slots* 0..p-1 in the collective's order;
a *cell* is one (slot, segment), numbered slot * segments + segment. A round becomes *items*:
one per (transfer, segment moved), as arrays.

A `Spec` states a collective's start and end states per cell; `model.collectives` has the
rule of each collective.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import lcm

import numpy as np

from ..errors import LimitError
from ..limits import MAX_CELLS
from ..model.collectives import KINDS, Cells, Spec
from ..model.ir import Round, Schedule

MAX_SCALE = 2**62  # the common denominator of all region boundaries
_SKIP = " (--no-verify reports on the schedule without verifying it)"


@dataclass(frozen=True, eq=False)
class Geometry:
    """Ranks as slots 0..p-1 (collective order); the buffer as segments of [0, scale)."""

    slot: np.ndarray  # device id -> slot, -1 for devices outside the collective
    bounds: np.ndarray  # segment boundaries, 0 .. scale, in units of 1/scale of the buffer
    scale: int
    ranks: int
    # Switches that reduce in the network, as slots p, p+1, ...: they start holding nothing.
    in_network: tuple[int, ...] = ()

    @property
    def segments(self) -> int:
        return len(self.bounds) - 1

    @property
    def slots(self) -> int:
        return self.ranks + len(self.in_network)

    def device(self, slot: int, ranks: tuple[int, ...]) -> int:
        """The device id of a slot."""
        return ranks[slot] if slot < self.ranks else self.in_network[slot - self.ranks]


@dataclass(frozen=True, eq=False)
class Items:
    """One round's transfers cut into segments: one entry per (transfer, segment moved)."""

    src: np.ndarray  # the cell read
    dst: np.ndarray  # the cell written
    shift: np.ndarray  # source position - destination position (`into`), 1/scale units
    copy: np.ndarray  # bool: copy (else reduce)
    batch: np.ndarray  # which batch of the round, and which transfer of it
    transfer: np.ndarray

    def __len__(self) -> int:
        return len(self.src)

    @property
    def moved(self) -> bool:
        """Some item lands at another position than it left (`into`)."""
        return bool(self.shift.any())


# ---- segments ---------------------------------------------------------------------------------


def geometry(schedule: Schedule, devices: int) -> Geometry:
    """Cut the buffer at every boundary in use; cuts are closed under `into` moves, so a
    moved region lands on whole segments."""
    coll = schedule.collective
    p = len(coll.ranks)
    batches = [b for _, r in steps(schedule) for b in r.batches if b.op != "send"]
    scale = lcm(p, *{b.den for b in batches})
    if scale > MAX_SCALE:
        raise LimitError(f"regions are cut too finely to verify (1/{scale} of the buffer){_SKIP}",
                         schedule.span)
    cuts = [np.array([0, scale], dtype=np.int64), np.arange(p + 1, dtype=np.int64) * (scale // p)]
    moves = []
    for b in batches:
        f = scale // b.den
        cuts += [b.off * f, (b.off + b.length) * f]
        if b.into_off is not None:  # where a moved region lands is cut too
            cuts += [b.into_off * f, (b.into_off + b.length) * f]
            moves.append(np.stack([b.off * f, b.length * f, b.into_off * f], axis=1))
    bounds = _distinct(np.concatenate(cuts), scale)
    if moves:
        bounds = _close_under_moves(bounds, np.unique(np.concatenate(moves), axis=0), schedule)
    slot = np.full(devices, -1, dtype=np.int64)
    slot[list(coll.ranks)] = np.arange(p)
    # Elaboration admits only ranks and reducing switches as endpoints.
    ends = np.unique(np.concatenate([np.zeros(0, np.int64)] + [x for b in batches
                                                                for x in (b.src, b.dst)]))
    in_network = tuple(int(d) for d in ends if slot[d] < 0)
    slot[list(in_network)] = p + np.arange(len(in_network))
    if (p + len(in_network)) * (len(bounds) - 1) > MAX_CELLS:
        raise LimitError(f"verifying this needs {p:,} ranks × {len(bounds) - 1:,} pieces of the "
                         f"buffer; the limit is {MAX_CELLS:,} in all{_SKIP}", schedule.span)
    return Geometry(slot, bounds, scale, p, in_network)


def _distinct(points: np.ndarray, scale: int) -> np.ndarray:
    """The sorted distinct points: by marking when the scale is small (fast), else by sorting."""
    if scale > 2**24:
        return np.unique(points)
    mark = np.zeros(scale + 1, dtype=bool)
    mark[points] = True
    return np.flatnonzero(mark)


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
        grown = np.unique(np.concatenate(new))
        if len(grown) == len(bounds):
            return bounds
        if len(grown) > MAX_CELLS:
            raise LimitError("the regions moved by 'into' cut the buffer too finely to verify"
                             + _SKIP, schedule.span)
        bounds = grown


def steps(schedule: Schedule) -> list[tuple[int, Round]]:
    """What runs, in order, as (round number from 1, transfers): each round, then each of its
    local phases (copies within a rank) as a step of its own under the same number; local
    phases before the first round are numbered 0."""
    out = [(0, Round(phase)) for phase in schedule.prologue]
    for number, rnd in enumerate(schedule.rounds, 1):
        out.append((number, rnd))
        out += [(number, Round(phase)) for phase in rnd.local]
    return out


def round_items(rnd: Round, geo: Geometry) -> Items:
    parts = []
    for k, b in enumerate(rnd.batches):
        if b.op == "send":
            continue
        f = geo.scale // b.den
        start = b.off * f
        first = np.searchsorted(geo.bounds, start)
        count = np.searchsorted(geo.bounds, start + b.length * f) - first
        if b.into_off is None:
            landing, shift = first, np.zeros(len(b), np.int64)
        else:
            landing = np.searchsorted(geo.bounds, b.into_off * f)
            shift = start - b.into_off * f
        src = geo.slot[b.src] * geo.segments + first
        dst = geo.slot[b.dst] * geo.segments + landing
        which = np.arange(len(b))
        if not np.all(count == 1):  # a transfer of several segments: one item per segment
            which = np.repeat(which, count)
            step = np.arange(len(which)) - np.repeat(np.cumsum(count) - count, count)
            src, dst, shift = src[which] + step, dst[which] + step, shift[which]
        parts.append((src, dst, shift, np.full(len(which), b.op == "copy"),
                      np.full(len(which), k), which))
    if len(parts) == 1:
        return Items(*parts[0])
    if not parts:
        empty = np.zeros(0, np.int64)
        return Items(empty, empty, empty, empty.astype(bool), empty, empty)
    return Items(*(np.concatenate(column) for column in zip(*parts)))


# ---- the collective ---------------------------------------------------------------------------


def collective_spec(schedule: Schedule, geo: Geometry) -> Spec:
    """The collective's start state and postcondition on this geometry's cells."""
    coll = schedule.collective
    p, segments = geo.ranks, geo.segments
    kind = KINDS[coll.kind]
    if coll.layout is not None:  # separate buffers: the tables give the spec per chunk
        layout = coll.layout
        chunk = geo.bounds[:-1] * layout.chunks // geo.scale
        return Spec(layout.start[:, chunk], layout.required[:, chunk], kind.reduces,
                    layout.owner[:, chunk], layout.shift[:, chunk] * (geo.scale // layout.chunks))
    part = np.broadcast_to(geo.bounds[:-1] // (geo.scale // p), (p, segments))  # j of p
    root = None if coll.root is None else int(geo.slot[coll.root])
    return kind.flow(Cells(p, part, geo.scale // p, root))

"""Verification up to symmetry: one column of the buffer per orbit.

Without `into`, an item moves cell (slot a, segment s) to (slot b, segment s): each *column*
(one segment, every slot) evolves on its own, and a schedule computes its collective iff
every column ends as the postcondition asks. Many schedules are symmetric: renaming the
ranks by some permutation π and permuting the segments by some τ maps the transfers of every
round onto the transfers of the same round (the ring: every rank one further on, every part
one further on). Then column τ(s) runs exactly as column s does with every slot and every
contribution renamed by π; when the collective's start state and postcondition are
unchanged by that renaming (see `CollectiveKind.rotates`), column τ(s) ends right iff
column s does. So one column per orbit of τ is run: the ring over p ranks runs one column
instead of p, and the hierarchical all-reduce over h hosts one in h.

Finding the symmetry. The renamings tried are the rotations of the collective's order by
each divisor g of p, smallest first, then the `hints` (the machine's shift of every host to
the next), each on the first rounds; τ is read off the transfers: a transfer of one segment
s whose renamed image is a transfer of segment s' says τ(s) = s'. Then every round is
checked: the renamed image of each of its transfers must be a transfer of the same round,
the two matched one to one (the entries rotate onto each other in a fixed order, batch by
batch, or by their endpoints), and move τ's image of its segments. The checks are exact, on
every transfer (`renaming`); when one fails the schedule is verified whole, as when there is
no symmetry.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...model.collectives import KINDS
from ...model.ir import Round, Schedule
from .dataflow import Geometry, Items, Steps, ran_batches
from .renaming import Block, Symmetry, blocks, order, rotation_of

SCREEN = 8  # rounds a candidate rotation must pass before the whole schedule is checked
PENDING = 1 << 22  # transfers kept for their items until τ is whole; past it, read again


@dataclass(frozen=True, eq=False)
class Reduction:
    """The columns to run (one per orbit, ascending) and each step's items on them: cell
    slot * len(columns) + the column's index."""

    columns: np.ndarray
    steps: list[Steps]  # every step's, a block of consecutive steps at a time


def reduce_columns(schedule: Schedule, geo: Geometry, rounds: Sequence[Round],
                   hints: tuple[np.ndarray, ...] = ()) -> Reduction | None:
    """The columns that stand for all the others, or None when the schedule has no symmetry
    that saves work (or uses what the argument does not cover: `into`, switches that reduce,
    separate buffers, a root). `hints`: more renamings of devices to try (device id → device
    id), such as the machine's shift of every host to the next one."""
    coll = schedule.collective
    rotates = KINDS[coll.kind].rotates
    if rotates is None or coll.layout is not None or geo.in_network or geo.ranks < 2:
        return None
    moving = [b for b in ran_batches(rounds) if b.op != "send"]
    if not moving or any(b.into_off is not None for b in moving):
        return None
    p = geo.ranks
    ranks = np.asarray(coll.ranks)
    # Each candidate with its order (how many columns one stands for, at most): the larger
    # first, so that the ring's rotation by one wins over the machine's shift of hosts.
    candidates = [(p // g, rotation_of(len(geo.slot), ranks, g)) for g in range(1, p)
                  if p % g == 0] + [(order(turn, int(ranks[0])), turn) for turn in hints]
    screen = list(blocks(rounds[:SCREEN], geo))
    for _, turn in sorted(candidates, key=lambda c: -c[0]):
        if np.array_equal(np.sort(geo.slot[turn[ranks]]), np.arange(p)) and \
                all(Symmetry(geo, turn).holds(bl) for bl in screen):
            break
    else:
        return None
    symmetry = Symmetry(geo, turn)
    taken = _Taken(geo, len(rounds))
    for bl in blocks(rounds, geo):
        if not symmetry.holds(bl):
            return None
        if taken.columns is None and symmetry.known() and not taken.fix(symmetry.permutation()):
            return None
        taken.add(bl, symmetry.single)
    tau = symmetry.permutation()
    if tau is None or not symmetry.ranges_hold(tau):
        return None
    if rotates == "parts":  # the postcondition moves with the parts: τ must move them too
        part = geo.bounds[:-1] // (geo.scale // p)
        if not np.array_equal(part[tau], geo.slot[turn[ranks[part]]]):
            return None
    if taken.columns is None and not taken.fix(tau):
        return None
    return taken.reduction(rounds)


def _orbit_representatives(tau: np.ndarray) -> np.ndarray:
    """The least segment of each orbit of τ."""
    least = np.arange(len(tau))
    image = tau.copy()
    while True:  # after j rounds, least = min over the first 2^j steps of each orbit
        lowered = np.minimum(least, least[image])
        if np.array_equal(lowered, least):
            break
        least, image = lowered, image[image]
    return np.flatnonzero(least == np.arange(len(tau)))


class _Taken:
    """Each step's items on the chosen columns, taken block by block as the check goes
    once τ, and so the columns, are known; the blocks before that are kept (or, past
    PENDING transfers, read again at the end)."""

    def __init__(self, geo: Geometry, steps: int) -> None:
        self.geo = geo
        self.steps = steps
        self.taken: dict[int, Steps] = {}  # each block's steps, by its first step
        self.columns: np.ndarray | None = None
        self.chosen = np.zeros(0, dtype=bool)  # per segment: is it a chosen column
        self.before = np.zeros(0, dtype=np.int64)  # chosen columns before each segment
        self.pending: list[Block] | None = []  # None: too many to keep

    def fix(self, tau: np.ndarray | None) -> bool:
        """Choose the columns from τ; false when τ is no permutation or saves too little."""
        if tau is None:
            return False
        self.columns = _orbit_representatives(tau)
        if 2 * len(self.columns) > self.geo.segments:
            return False  # not worth it
        self.chosen = np.zeros(self.geo.segments + 1, dtype=bool)
        self.chosen[self.columns] = True
        self.before = np.cumsum(np.r_[False, self.chosen[:-1]])
        for bl in self.pending or ():
            self._take(bl, False)
        return True

    def add(self, bl: Block, single: bool) -> None:
        """A block checked; `single`: each of its transfers moves one segment."""
        if self.columns is not None:
            self._take(bl, single)
        elif self.pending is not None:
            self.pending.append(bl)
            if sum(b.src.size for b in self.pending) > PENDING:
                self.pending = None

    def reduction(self, rounds: Sequence[Round]) -> Reduction:
        assert self.columns is not None
        if self.pending is None:  # the blocks before τ was whole, read again
            for bl in blocks(rounds, self.geo):
                if bl.start not in self.taken:
                    self._take(bl, False)
        parts, at = [], 0
        for start in sorted(self.taken):  # steps no block holds have no items
            parts += [Steps(Items.empty(), np.zeros(start - at + 1, dtype=np.int64))] * (start > at)
            parts.append(self.taken[start])
            at = start + len(self.taken[start])
        if at < self.steps:
            parts.append(Steps(Items.empty(), np.zeros(self.steps - at + 1, dtype=np.int64)))
        return Reduction(self.columns, parts)

    def _take(self, bl: Block, single: bool) -> None:
        geo, before = self.geo, self.before
        if single:  # one segment each: the transfers of a chosen column
            pick = np.flatnonzero(self.chosen[bl.first])
            column = before[bl.first.reshape(-1)[pick]]
        else:
            low = before[bl.first]
            count = (before[bl.end] - low).reshape(-1)
            keep = np.flatnonzero(count)
            pick = np.repeat(keep, count[keep])
            step = np.arange(len(pick)) - np.repeat(np.cumsum(count[keep]) - count[keep],
                                                    count[keep])
            column = low.reshape(-1)[pick] + step
        row, at = np.divmod(pick, bl.src.shape[1])
        width = int(before[-1])
        src = geo.slot[bl.src[row, at]] * width + column
        dst = geo.slot[bl.dst[row, at]] * width + column
        self.taken[bl.start] = Steps(Items(src, dst, np.zeros(len(src), np.int64), bl.copy[at],
                                           bl.batch[at], bl.transfer[at]),
                                     np.searchsorted(row, np.arange(bl.rounds + 1)))

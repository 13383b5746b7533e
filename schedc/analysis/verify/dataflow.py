"""The data-flow model shared by verification and its counterexamples.

The buffer is cut into *segments* at every region boundary a schedule and its collective use,
so every transfer moves whole segments; ranks are *slots* 0..p-1 in the collective's order;
a *cell* is one (slot, segment), numbered slot * segments + segment. A round becomes *items*:
one per (transfer, segment moved), as arrays.

A `Spec` states a collective's start and end states per cell; `model.collectives` has the
rule of each collective.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence, Sized
from dataclasses import dataclass
from functools import cached_property
from typing import TypeVar

import numpy as np

from ...model.collectives import KINDS, Cells, Spec
from ...model.ir import Batch, Round, Rounds, Schedule, Series, joined

T = TypeVar("T", bound=Sized)
MAX_SCALE = 2**62  # the common denominator of all region boundaries
NO_VERIFY_HINT = " (--no-verify reports on the schedule without verifying it)"
MARKED_SCALE = 2**24  # up to this scale, a point's segment is found in a table of every position


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

    @cached_property
    def _segment_at(self) -> np.ndarray | None:
        if self.scale > MARKED_SCALE:
            return None
        at = np.zeros(self.scale + 1, dtype=np.int64)
        at[self.bounds[1:]] = 1
        return np.cumsum(at)

    def segment(self, points: np.ndarray) -> np.ndarray:
        """The index of each of `points` (boundaries) among the boundaries: the segment that
        starts there. The points themselves when every position is a boundary (a ring's p
        parts), else a table lookup while the scale allows one."""
        if len(self.bounds) == self.scale + 1:
            return points
        at = self._segment_at
        return np.searchsorted(self.bounds, points) if at is None else at[points]

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

    def part(self, start: int, end: int) -> Items:
        return Items(self.src[start:end], self.dst[start:end], self.shift[start:end],
                     self.copy[start:end], self.batch[start:end], self.transfer[start:end])

    @staticmethod
    def empty() -> Items:
        none = np.zeros(0, np.int64)
        return Items(none, none, none, none.astype(bool), none, none)


@dataclass(frozen=True, eq=False)
class Steps:
    """Consecutive steps' items, one step after another in the same arrays: step k's are
    `items.part(cuts[k], cuts[k + 1])`, so many small steps make no object each."""

    items: Items
    cuts: np.ndarray  # int64, one more than the steps

    def __len__(self) -> int:
        return len(self.cuts) - 1

    def __getitem__(self, k: int) -> Items:
        return self.items.part(int(self.cuts[k]), int(self.cuts[k + 1]))

    @cached_property
    def owner(self) -> np.ndarray:
        """The step of each item (made once: each run of steps applied together slices it)."""
        return np.repeat(np.arange(len(self)), np.diff(self.cuts))

    def part(self, start: int, end: int) -> Steps:
        """Steps start .. end - 1."""
        lo = int(self.cuts[start])
        return Steps(self.items.part(lo, int(self.cuts[end])), self.cuts[start:end + 1] - lo)

    def groups(self, start: int, limit: int) -> Iterator[Steps]:
        """Steps from `start` on, consecutive ones together until they hold `limit` items (as
        `grouped` groups them)."""
        cuts, k = self.cuts, start
        while k < len(self):
            end = min(max(int(np.searchsorted(cuts, cuts[k] + limit)), k + 1), len(self))
            yield self.part(k, end)
            k = end

    @classmethod
    def of(cls, items: list[Items]) -> Steps:
        """Steps of these items each."""
        cuts = np.zeros(len(items) + 1, dtype=np.int64)
        cuts[1:] = np.cumsum([len(it) for it in items])
        return cls(_joined_items(items), cuts)

    @classmethod
    def joined(cls, parts: list[Steps]) -> Steps:
        """The steps of `parts`, one after another."""
        ends = np.cumsum([0] + [int(p.cuts[-1]) for p in parts])
        cuts = np.concatenate([parts[0].cuts[:1]] + [p.cuts[1:] + e for p, e in zip(parts, ends)])
        return cls(_joined_items([p.items for p in parts]), cuts)


def _joined_items(parts: list[Items]) -> Items:
    return Items(*(np.concatenate([getattr(it, name) for it in parts]) for name in
                   ("src", "dst", "shift", "copy", "batch", "transfer")))


# ---- segments ---------------------------------------------------------------------------------


GROUP = 4096  # transfers of consecutive batches worked on together


def grouped(things: Sequence[T], limit: int) -> Iterator[list[T]]:
    """Consecutive things (batches, rounds, steps' items), grouped until a group's lengths
    add up to `limit`: one array operation for many small ones."""
    group: list[T] = []
    held = 0
    for thing in things:
        group.append(thing)
        held += len(thing)
        if held >= limit:
            yield group
            group, held = [], 0
    if group:
        yield group


def steps(schedule: Schedule) -> list[tuple[int, Round]]:
    """What runs, in order, as (round number from 1, transfers): each round, then each of its
    local phases (copies within a rank) as a step of its own under the same number; local
    phases before the first round are numbered 0."""
    out = [(0, Round(phase)) for phase in schedule.prologue]
    for number, rnd in enumerate(schedule.rounds, 1):
        out.append((number, rnd))
        out += [(number, Round(phase)) for phase in rnd.local]
    return out


Ran = Sequence[Round]  # the transfers of each step, in order: `Rounds` when steps are rounds


def step_rounds(schedule: Schedule) -> Ran:
    """The transfers of each step of `steps`, in order."""
    if schedule.prologue or any(rnd.local for part in schedule.rounds.parts
                                if not isinstance(part, Series) for rnd in part):
        return [rnd for _, rnd in steps(schedule)]
    return schedule.rounds


def endpoint_batches(ran: Ran) -> Iterator[Batch]:
    """Batches that move data between every pair of devices the steps' do: of a series whose
    rounds all join the same pairs, its first round's."""
    for part in ran.parts if isinstance(ran, Rounds) else (tuple(ran),):
        if isinstance(part, Series):
            batches = part.round(0).batches if part.same_pairs else part.batches
        else:
            batches = tuple(b for r in part for b in r.batches)
        yield from (b for b in batches if b.op != "send")


def ran_batches(ran: Ran) -> Iterator[Batch]:
    """Every batch of the steps, in order."""
    return ran.batches() if isinstance(ran, Rounds) else (b for r in ran for b in r.batches)


def step_chunks(ran: Ran, geo: Geometry, limit: int) -> Iterator[Steps]:
    """The steps' items, in chunks of consecutive steps of about `limit` transfers (a round
    larger than that is a chunk of its own): the rounds of a series are cut into items
    straight from its batches."""
    for part in ran.parts if isinstance(ran, Rounds) else (ran,):
        if not isinstance(part, Series):
            yield from (items_by_round(group, geo) for group in grouped(part, limit))
            continue
        held = np.cumsum(part.sizes()) // limit
        ends = np.append(np.flatnonzero(np.diff(held)) + 1, len(part)).tolist()
        for lo, hi in zip([0, *ends[:-1]], ends):
            yield _series_items(part, lo, hi, geo)


def round_items(rnd: Round, geo: Geometry) -> Items:
    return items_by_round([rnd], geo)[0]


BLOCK_ITEMS = 1 << 20  # items made for a block of rounds at once; a larger block is split


def items_by_round(rounds: Sequence[Round], geo: Geometry) -> Steps:
    """The items of each round, from one pass of array work over all their transfers, so a
    schedule of many small rounds costs a few array operations per block of rounds rather
    than per round."""
    made = _block_items(rounds, geo, bounded=len(rounds) > 1)
    if made is not None:
        return made
    half = len(rounds) // 2  # bounded memory: halve the block
    return Steps.joined([items_by_round(rounds[:half], geo), items_by_round(rounds[half:], geo)])


def _block_items(rounds: Sequence[Round], geo: Geometry, bounded: bool = True) -> Steps | None:
    """The rounds' items in batch order, or None when `bounded` and they are too many."""
    batches = [(r, k, b) for r, rnd in enumerate(rounds) for k, b in enumerate(rnd.batches)
               if b.op != "send"]
    sizes = np.array([len(b) for _, _, b in batches], dtype=np.int64)
    which = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    batch = np.repeat(np.array([k for _, k, _ in batches], dtype=np.int64), sizes)
    owner = np.repeat(np.array([r for r, _, _ in batches], dtype=np.int64), sizes)
    return _cut(geo, len(rounds), [b for _, _, b in batches], None, batch, which, owner, bounded)


def _series_items(series: Series, lo: int, hi: int, geo: Geometry) -> Steps:
    """The items of a series' rounds lo .. hi - 1, in the order `_block_items` gives them."""
    starts = series.starts[:, lo:hi + 1]
    counts = np.diff(starts, axis=1)
    position = np.cumsum(counts > 0, axis=0) - 1  # a batch's place in each round's batches
    taken = [(j, b.take(slice(int(starts[j, 0]), int(starts[j, -1]))))
             for j, b in enumerate(series.batches) if b.op != "send" and starts[j, -1] > starts[j, 0]]
    each = [len(b) for _, b in taken]
    rounds = [series.round_of(j, lo, hi) for j, _ in taken]
    owner = joined(rounds)
    batch = joined([position[j][r] for (j, _), r in zip(taken, rounds)])
    which = joined([np.arange(len(b)) + starts[j, 0] - starts[j][r] for (j, b), r in zip(taken, rounds)])
    order = None
    if len(taken) > 1:  # round by round, batch after batch within a round
        order = np.argsort(owner * len(series.batches) + np.repeat([j for j, _ in taken], each),
                           kind="stable")
        owner, batch, which = owner[order], batch[order], which[order]
    made = _cut(geo, hi - lo, [b for _, b in taken], order, batch, which, owner, False)
    assert made is not None  # (unbounded)
    return made


def _cut(geo: Geometry, count: int, batches: list[Batch], order: np.ndarray | None,
         batch: np.ndarray, which: np.ndarray, owner: np.ndarray, bounded: bool) -> Steps | None:
    """Items of `count` steps from the transfers of `batches` one after another (`order`
    reorders them; `batch`, `which` and `owner` are already in that order): one item per
    (transfer, segment moved), or None when `bounded` and they would be more than BLOCK_ITEMS."""
    if not batches:
        return Steps(Items.empty(), np.zeros(count + 1, dtype=np.int64))

    def flat(values: np.ndarray) -> np.ndarray:
        return values if order is None else values[order]

    each = [len(b) for b in batches]

    def per_transfer(values: list) -> np.ndarray:
        return np.repeat(np.array(values, dtype=np.int64), each)

    f = flat(per_transfer([geo.scale // b.den for b in batches]))
    start = flat(joined([b.off for b in batches])) * f
    end = start + flat(joined([b.length for b in batches])) * f
    first = geo.segment(start)
    segments = geo.segment(end) - first
    if bounded and int(segments.sum()) > BLOCK_ITEMS:
        return None
    if any(b.into_off is not None for b in batches):
        moved = flat(per_transfer([b.into_off is not None for b in batches])).astype(bool)
        into = flat(joined([b.off if b.into_off is None else b.into_off for b in batches])) * f
        landing = np.where(moved, geo.segment(into), first)
        shift = np.where(moved, start - into, 0)
    else:
        landing, shift = first, np.zeros(len(first), np.int64)
    src = geo.slot[flat(joined([b.src for b in batches]))] * geo.segments + first
    dst = geo.slot[flat(joined([b.dst for b in batches]))] * geo.segments + landing
    copy = flat(per_transfer([b.op == "copy" for b in batches])).astype(bool)
    if not np.all(segments == 1):  # a transfer of several segments: one item per segment
        pick = np.repeat(np.arange(len(src)), segments)
        step = np.arange(len(pick)) - np.repeat(np.cumsum(segments) - segments, segments)
        src, dst, shift = src[pick] + step, dst[pick] + step, shift[pick]
        copy, batch, which, owner = copy[pick], batch[pick], which[pick], owner[pick]
    cuts = np.searchsorted(owner, np.arange(count + 1))
    return Steps(Items(src, dst, shift, copy, batch, which), cuts)


# ---- the collective ---------------------------------------------------------------------------


def collective_spec(schedule: Schedule, geo: Geometry, columns: np.ndarray | None = None) -> Spec:
    """The collective's start state and postcondition on this geometry's cells, or on the
    given columns (segments) only."""
    coll = schedule.collective
    p = geo.ranks
    starts = geo.bounds[:-1] if columns is None else geo.bounds[columns]
    kind = KINDS[coll.kind]
    if coll.layout is not None:  # separate buffers: the tables give the spec per chunk
        layout = coll.layout
        chunk = starts * layout.chunks // geo.scale
        return Spec(layout.start[:, chunk], layout.required[:, chunk], kind.reduces,
                    layout.owner[:, chunk], layout.shift[:, chunk] * (geo.scale // layout.chunks))
    part = np.broadcast_to(starts // (geo.scale // p), (p, len(starts)))  # j of p
    root = None if coll.root is None else int(geo.slot[coll.root])
    return kind.flow(Cells(p, part, geo.scale // p, root))

"""Counterexamples: why a schedule fails, in terms a person can act on.

`explain` replays the schedule exactly, with true multisets, but only the transfers that
can influence the failing cell (found by walking the rounds backwards from it), and reports
what the cell holds against what it should and the transfers that last wrote it. A
contribution is (whose, displacement): slot q < p is rank q's data, q >= p the uninitialised
contents of rank q - p; the displacement says from how far along the buffer it was moved.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ...errors import Span
from ...model.ir import Region, Schedule
from ...model.region_text import buffer_text
from .dataflow import Geometry, Items, Spec, round_items, steps


@dataclass(frozen=True)
class Write:
    """A transfer that wrote the failing place."""

    round: int  # counting from 1
    op: str
    src: str
    dst: str
    region: Region
    into: Region | None
    span: Span
    origin: str = ""  # what wrote it, when the span alone does not say (an XML step)



@dataclass(frozen=True)
class WrongResult:
    """A rank ends holding the wrong contributions on a region."""

    rank: str
    region: Region
    holds: tuple[tuple[str, int], ...]  # (contribution, times held), in rank order
    expected: tuple[tuple[str, int], ...]
    everyone: bool  # expected: every rank's data once
    missing: tuple[tuple[str, int], ...]
    duplicated: tuple[tuple[str, int], ...]  # expected, but held more often
    unexpected: tuple[tuple[str, int], ...]  # not expected at all
    writes: tuple[Write, ...]  # the last writes, latest first



@dataclass(frozen=True)
class Conflict:
    """Two transfers of one round write one place and one is a copy: the result is undefined."""

    round: int
    rank: str
    region: Region
    writes: tuple[Write, ...]



# ---- building them ----------------------------------------------------------------------------

LAST_WRITES = 3  # how many of the latest writes a counterexample lists


def explain(schedule: Schedule, geo: Geometry, spec: Spec, slot: int, first: int, end: int,
            names: list[str]) -> WrongResult:
    """The counterexample for cells (slot, first..end-1), which end wrong in the same way."""
    cell = slot * geo.segments + first
    held, writes = replay(schedule, geo, spec, cell)
    ran = steps(schedule)
    if spec.everyone:
        expected = Counter({(q, int(spec.shift[slot, first])): 1 for q in range(geo.ranks)})
    else:
        expected = Counter({(int(spec.owner[slot, first]), int(spec.shift[slot, first])): 1})
    region = (Fraction(int(geo.bounds[first]), geo.scale), Fraction(int(geo.bounds[end]), geo.scale))
    # Name where data came from when a position is at stake (a `copy ... into`).
    positions = any(d for _, d in held) or any(d for _, d in expected)
    show = _namer(schedule, geo, names, region, positions)
    short = expected - held
    surplus = held - expected
    return WrongResult(
        rank=names[schedule.collective.ranks[slot]], region=region,
        holds=show(held), expected=show(expected), everyone=spec.everyone, missing=show(short),
        duplicated=show(Counter({c: n for c, n in surplus.items() if c in expected})),
        unexpected=show(Counter({c: n for c, n in surplus.items() if c not in expected})),
        writes=tuple(_write(ran, w, names) for w in reversed(writes[-LAST_WRITES:])))


def conflict_at(schedule: Schedule, geo: Geometry, index: int, cell: int, items: Items,
                names: list[str]) -> Conflict:
    """The counterexample for transfers of round `index` that write `cell` together."""
    hits = np.flatnonzero(items.dst == cell)
    ran = steps(schedule)
    writes = tuple(_write(ran, (index, int(items.batch[i]), int(items.transfer[i])), names)
                   for i in hits)
    landed = [w.into or w.region for w in writes]  # where each write lands at the rank
    region = (max(r[0] for r in landed), min(r[1] for r in landed))
    device = geo.device(cell // geo.segments, schedule.collective.ranks)
    return Conflict(ran[index][0], names[device], region,
                    writes)


def replay(schedule: Schedule, geo: Geometry, spec: Spec, cell: int):
    """What `cell` holds at the end, exactly, and every write into it as (step, batch,
    transfer), in order (a step of `dataflow.steps`). Only transfers that can reach the cell
    are replayed."""
    plan = []
    needed = np.zeros(geo.slots * geo.segments, dtype=bool)
    needed[cell] = True
    ran = steps(schedule)
    for index in range(len(ran) - 1, -1, -1):
        items = round_items(ran[index][1], geo)
        relevant = np.flatnonzero(needed[items.dst])
        if len(relevant):
            needed[items.src[relevant]] = True
            plan.append((index, items, relevant))
    start = spec.start.reshape(-1)
    state: dict[int, Counter] = {}

    def held(c: int) -> Counter:
        if c not in state:  # an in-network switch's cell (after the ranks') starts empty
            state[c] = Counter({(int(start[c]), 0): 1}) if c < len(start) else Counter()
        return state[c]

    writes = []
    for index, items, relevant in reversed(plan):
        reads = []  # every source is read before any write of the round lands
        for i in relevant.tolist():
            shift = int(items.shift[i])
            source = held(int(items.src[i]))
            reads.append((i, Counter({(c, d + shift): n for (c, d), n in source.items()})))
        for i, value in reads:
            target = int(items.dst[i])
            if target == cell:
                writes.append((index, int(items.batch[i]), int(items.transfer[i])))
            state[target] = value if items.copy[i] else held(target) + value
    return held(cell), writes


def _write(ran: list, where: tuple[int, int, int], names: list[str]) -> Write:
    index, k, t = where
    number, rnd = ran[index]
    batch = rnd.batches[k]
    transfer = batch.transfer(t)
    assert transfer.region is not None  # sends move no part of the buffer, so write nothing
    return Write(number, transfer.op, names[transfer.src], names[transfer.dst], transfer.region,
                 transfer.into, transfer.span, batch.origin)


def _namer(schedule: Schedule, geo: Geometry, names: list[str], region: Region,
           positions: bool):
    """Contributions → ((text, count), ...) in rank order, for cells covering `region`; with
    `positions`, each names the region of the buffer its data came from."""
    ranks = schedule.collective.ranks
    p = geo.ranks

    def text(whose: int, shift: int) -> str:
        name = names[ranks[whose % p]]
        base = name if whose < p else f"uninitialised data of {name}"
        if not positions:
            return base
        moved = Fraction(shift, geo.scale)
        source = buffer_text((region[0] + moved, region[1] + moved), schedule.collective.layout)
        return f"{name}'s {source}" if whose < p else f"{base} at {source}"

    def show(contributions: Counter) -> tuple[tuple[str, int], ...]:
        return tuple((text(c, d), n) for (c, d), n in sorted(contributions.items()) if n > 0)

    return show

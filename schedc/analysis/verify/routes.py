"""A schedule can only compute its collective if the machine carries every transfer: the first
transfer (in round order) between devices with no route is the verdict's cause, before any
data flow is run (a missing route would otherwise show as data that never arrives, or pass).

Each distinct (source, destination) pair of the schedule is routed once (`Topology.route`
keeps the routes it finds, which lowering then reuses); a series whose rounds repeat their
pairs (a ring's) is represented by its first round. Only when a pair has no route are the
rounds searched for the first transfer between it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import Span, TopologyError
from ...model.ir import Batch, Part, Region, Schedule, Series, distinct, joined
from ...model.topology import Topology


@dataclass(frozen=True)
class NoRoute:
    """A transfer between devices the machine does not connect: the schedule cannot run."""

    round: int  # counting from 1
    op: str
    src: str
    dst: str
    region: Region | None  # None for a `send`
    span: Span
    reason: str  # "no route from A to B"
    notes: tuple[str, ...]  # what the source is linked to, ...
    origin: str = ""  # what made the transfer, when the span alone does not say (an XML step)


def missing_route(schedule: Schedule, topology: Topology) -> NoRoute | None:
    """The first transfer of `schedule` that `topology` has no route for, else None."""
    n = len(topology.devices)
    codes = [_codes(b, n) for part in schedule.rounds.parts for b in _batches(part)]
    failing: dict[int, TopologyError] = {}
    for code in distinct(joined(codes)).tolist() if codes else []:
        src, dst = divmod(code, n)
        if src != dst:  # (a transfer to itself is no route question; elaboration refuses it)
            try:
                topology.route(src, dst, None)
            except TopologyError as error:
                failing[code] = error
    return _first(schedule, topology, failing) if failing else None


def _batches(part: Part) -> list[Batch]:
    """The batches whose pairs are the part's: a series whose rounds all have the first one's
    pairs (a ring's) stands for itself with its first round."""
    if not isinstance(part, Series):
        return [b for rnd in part for b in rnd.batches]
    if part.same_pairs:
        return list(part.round(0).batches)
    return list(part.batches)


def _codes(batch: Batch, n: int) -> np.ndarray:
    return batch.src * n + batch.dst


def _first(schedule: Schedule, topology: Topology, failing: dict[int, TopologyError]) -> NoRoute:
    """The first transfer, in round order, whose pair is one of the `failing` ones."""
    n, bad = len(topology.devices), np.array(sorted(failing), dtype=np.int64)
    first = 0  # the index of the part's first round
    for part in schedule.rounds.parts:
        found: list[tuple[int, int, Batch, int]] = []  # (round, batch in the round, batch, k)
        if isinstance(part, Series):
            for j, batch in enumerate(part.batches):
                hits = np.flatnonzero(np.isin(_codes(batch, n), bad))
                if len(hits):
                    k = int(hits[0])
                    found.append((first + int(part.round_of(j)[k]), j, batch, k))
        else:
            for r, rnd in enumerate(part):
                for j, batch in enumerate(rnd.batches):
                    hits = np.flatnonzero(np.isin(_codes(batch, n), bad))
                    if len(hits):
                        found.append((first + r, j, batch, int(hits[0])))
                        break
                if found:
                    break
        if found:
            r, _, batch, k = min(found, key=lambda f: (f[0], f[1]))
            t = batch.transfer(k)
            error = failing[t.src * n + t.dst]
            names = topology.devices
            return NoRoute(r + 1, t.op, names[t.src].name, names[t.dst].name, t.region, t.span,
                           error.message, error.notes, batch.origin)
        first += len(part)
    raise AssertionError("a failing pair is some transfer's")

"""Where the data of each source goes: the points a data-flow relation reaches from its
sources, exactly (isl), or None when isl cannot say it is exact.

Every edge of the data flow keeps a point's cell (a transfer moves cell x of one rank to
cell x of another, a kept cell stays), so the flow falls apart by the value of any cell
coordinate: over a level of a constant k parts whose part no transfer picks by its round
(NCCL's channels: channel q moves part q in every round), the k slices are read one by one
and their union is the whole, exactly. Each slice is a smaller relation, which isl closes
far faster (an 8-channel ring over 8·n ranks: under a second per slice, where the whole did
not finish in minutes). A level whose part moves with the round (a ring's reduce-scatter,
part (j - s - 1) % k in round s) is not sliced: fixing the part there ties the round to
the rank, and isl closes such a slice exactly less often than the whole.
"""

from __future__ import annotations

import islpy as isl

from .affine import Cons, Lin, const, ge
from .sets import ordered, set_text

MAX_SLICES = 64  # a level of more constant parts is read whole
# A segment of a constant number of rounds up to this is applied round by round; a longer
# one (a 72-GPU rack's ring: 71 rounds) by its closure first, round by round if inexact.
ROUND_BY_ROUND = 8


def reach(flow, edges: isl.Map, sources: isl.Map) -> isl.Map | None:
    """Everything `sources` (label -> point) reaches over `edges`, slice by slice along the
    first cell level of a constant number of parts (up to MAX_SLICES), or whole."""
    level = next((m for m, k in enumerate(flow.levels)
                  if k.is_const and 1 < k.const <= MAX_SLICES and _fixed_in_time(flow, m)), None)
    if level is None:
        return _whole(flow, edges, sources)
    out = None
    for value in range(flow.levels[level].const):
        at = isl.Set(set_text(flow.point, (Cons(Lin.var(flow.cells[level]) - const(value), True),),
                              flow.start))
        part = _whole(flow, edges.intersect_domain(at).coalesce(), sources.intersect_range(at))
        if part is None:
            return None
        out = part if out is None else out.union(part)
    return out


def _fixed_in_time(flow, level: int) -> bool:
    """No transfer picks its part at `level` by a variable its round depends on."""
    return all(len(f.cells) <= level or not f.cells[level].names & f.time.names
               for f in flow.sym.families)


def _whole(flow, edges: isl.Map, sources: isl.Map) -> isl.Map | None:
    """Segment by segment between the rounds where statements start: a segment of a
    constant number of rounds by applying the flow round by round, any other by isl's
    transitive closure (which must say it is exact); failing that, by the closure of the
    whole flow."""
    cuts = ordered(set(flow.sym.boundaries) | {Lin(), flow.sym.rounds}, flow.start)
    reached = None if cuts is None else _segments(flow, edges, sources, cuts)
    if reached is not None:
        return reached
    closure, exact = edges.transitive_closure()
    return sources.union(sources.apply_range(closure)) if exact else None


def _at(flow, t: Lin, upto: Lin | None = None) -> isl.Set:
    """The points of round t (or of rounds t..upto-1)."""
    cons = (Cons(Lin.var("t") - t, True),) if upto is None else (
        ge(Lin.var("t"), t), ge(upto - const(1), Lin.var("t")))
    return isl.Set(set_text(flow.point, cons, flow.start))


def _segments(flow, edges: isl.Map, sources: isl.Map, cuts: list[Lin]) -> isl.Map | None:
    """Everything `sources` (label -> point, at any round) reaches, segment by segment;
    the frontier holds what has reached a segment's first round."""
    reached = sources
    frontier = sources.intersect_range(_at(flow, cuts[0]))
    for a, b in zip(cuts, cuts[1:]):
        during = edges.intersect_domain(_at(flow, a, b))
        closure, exact = None, False
        if not (b - a).is_const or (b - a).const > ROUND_BY_ROUND:
            closure, exact = during.transitive_closure()
            if not exact and not (b - a).is_const:
                return None
        if not exact:  # a constant number of rounds, as few or not closed exactly
            step = frontier
            for k in range((b - a).const):
                if k:
                    step = step.union(sources.intersect_range(_at(flow, a + const(k))))
                step = step.apply_range(during).coalesce()
                reached = reached.union(step)
            frontier = step.union(sources.intersect_range(_at(flow, b))).coalesce()
            continue
        assert closure is not None  # (exact)
        begun = frontier.union(sources.intersect_range(_at(flow, a + const(1), b)))
        step = begun.apply_range(closure)
        reached = reached.union(step)
        frontier = frontier.union(step).union(sources).intersect_range(_at(flow, b)).coalesce()
    return reached

"""The loads of a finite fabric (a rail-to-spine link, an oversubscribed spine) for every n:
the part of `portloads` for resources that belong to no rank.

On a machine uniform in its copies (hypothesis 2 of docs/scale.md) a route between ranks of
two different copies loads, beyond the two ends' ports, the same fabric resources for
every pair of copies: they depend only on the two ranks' local positions (GPU i of one host
to GPU j of another climbs rail i, the spine and rail j). `ports` reads that set,
`portloads.FabricLink.pairs`, on two instances. A fabric resource then carries, in round t, the
bytes of every transfer across copies whose local positions are one of its pairs: for each
family of transfers (one statement, one case) and each pair, the set of (t, source's
coordinates) it occupies (the map is injective: `portloads` checked it), made disjoint, must
be a union of boxes, each a set of rounds times a box of copies with ends affine in n; a box
of k copies adds k times the family's size to each of its rounds. The rounds are refined by
these loads as `portloads` refines them by the ports'. Anything else is `Unproved`.
"""

from __future__ import annotations

import islpy as isl
import sympy

from ..forall.affine import PARAM, Cons, const, eq
from ..forall.model import Family
from .orbits import invariant, representatives, used_pairs
from .portloads import FabricLink, Unproved, _affine, _bounds, _occupied, _refine

__all__ = ["fabric_loads", "invariant", "representatives", "used_pairs"]


def _interval(one: isl.Set, everywhere: isl.Set, n: sympy.Symbol) -> tuple[sympy.Expr, sympy.Expr]:
    low_at, low = _affine(one.dim_min(0), "first copy", n)
    high_at, high = _affine(one.dim_max(0), "last copy", n)
    if not (everywhere.is_subset(low_at) and everywhere.is_subset(high_at)):
        raise Unproved("the copies a fabric link serves are not an interval affine in n")
    return low, high


def _size(sources: isl.Set, dims: int, everywhere: isl.Set, n: sympy.Symbol) -> sympy.Expr:
    """|sources| as a function of n: a union of boxes with ends affine in n."""
    total = sympy.Integer(0)
    for piece in sources.make_disjoint().get_basic_sets():
        piece = piece.remove_redundancies()
        whole = isl.Set.from_basic_set(piece)
        if piece.dim(isl.dim_type.div) or not everywhere.is_subset(whole.params()):
            raise Unproved("the copies crossing a fabric link are not boxes (a stride), or "
                           "none for some n")
        box, count = None, sympy.Integer(1)
        for d in range(dims):
            one = whole.project_out(isl.dim_type.set, d + 1, dims - d - 1).project_out(
                isl.dim_type.set, 0, d)
            low, high = _interval(one, everywhere, n)
            count *= high - low + 1
            box = one if box is None else box.flat_product(one)
        if box is None or not whole.is_equal(box):
            raise Unproved("the copies crossing a fabric link are not a box")
        total += count
    return sympy.expand(total)


def _boxes(points: isl.Set, dims: int, start: int, stop: int | None, n: sympy.Symbol):
    """(rounds, how many sources in each round) that `points` ((t, source) pairs) is made
    of: a set of rounds times a set of sources, or failing that, piece by piece."""
    everywhere = isl.Set(f"[{PARAM}] -> {{ : {' and '.join(_bounds(start, stop))} }}")
    points = points.coalesce()
    rounds = points.project_out(isl.dim_type.set, 1, dims)
    sources = points.project_out(isl.dim_type.set, 0, 1)
    if points.is_equal(rounds.flat_product(sources)):
        yield rounds, _size(sources, dims, everywhere, n)
        return
    for piece in points.make_disjoint().get_basic_sets():
        whole = isl.Set.from_basic_set(piece)
        rounds = whole.project_out(isl.dim_type.set, 1, dims)
        sources = whole.project_out(isl.dim_type.set, 0, 1)
        if not whole.is_equal(rounds.flat_product(sources)):
            raise Unproved("which copies cross a fabric link depends on the round")
        yield rounds, _size(sources, dims, everywhere, n)


MAX_FABRIC_CHECKS = 10_000  # bounded work: past it the piece stays checked, said why


def fabric_loads(cross: list[tuple[Family, tuple[Cons, ...], sympy.Expr]],
                 links: tuple[FabricLink, ...], dims: int, start: int, stop: int | None,
                 n: sympy.Symbol, local: tuple[int, int] | None = None
                 ) -> dict[tuple[sympy.Expr, sympy.Expr], isl.Set]:
    """(bandwidth, load) -> the rounds where some fabric link carries that load. `local`:
    (first, count) of the ranks' one local position when it is a constant range; then the
    links are read one per orbit of its cyclic shift, where the schedule allows (`orbits`)."""
    # The pairs each statement sends between (the others' checks would find nothing).
    used = [used_pairs(family, case, start, stop) if dims == 2 else None
            for family, case, _ in cross]

    def checks() -> int:
        return sum(len(link.pairs if pairs is None else link.pairs & pairs)
                   for pairs in used for link in links)
    if checks() and local is not None and dims == 2 and len(links) > 1 and invariant(
            cross, *local, start, stop):
        links = representatives(links, *local)
    if checks() > MAX_FABRIC_CHECKS:  # ~1 ms of isl each: GB200's 28,791 took 27 s of 250
        raise Unproved(f"the fabric's loads need {checks():,} checks of a (link, pair) of ranks, "
                       f"more than the {MAX_FABRIC_CHECKS:,} a proof may take")
    present: dict[tuple[sympy.Expr, sympy.Expr], isl.Set] = {}
    def add(old, new):
        return new if old is None else sympy.cancel(old + new)
    for link in links:
        # The (round, source) points of the transfers crossing the link, by the load each
        # brings (several statements may send from one source in one round), ...
        points: list[tuple[isl.Set, object]] = []
        for (family, case, size), pairs in zip(cross, used):
            for here, there in sorted(link.pairs if pairs is None else link.pairs & pairs):
                where = (*case, *(eq(s, const(a)) for s, a in zip(family.src[1:], here)),
                         *(eq(d, const(b)) for d, b in zip(family.dst[1:], there)))
                found = _occupied(family, where, family.src, dims, start, stop)
                if not found.is_empty():
                    points = _refine(points, found, size, add)
        # ... joined where the load is the same (a statement's cases make one box), then
        # the rounds, by the sum of the loads of their points.
        by_load: dict[object, isl.Set] = {}
        for region, size in points:
            by_load[size] = by_load[size].union(region) if size in by_load else region
        regions: list[tuple[isl.Set, object]] = []
        for size, region in by_load.items():
            for rounds, k in _boxes(region, dims, start, stop, n):
                regions = _refine(regions, rounds, sympy.expand(size * k * link.share), add)
        for rounds, load in regions:
            key = (link.bandwidth, load)
            present[key] = present[key].union(rounds) if key in present else rounds
    return present

"""The round classes of a schedule on a port machine, for every n at once, as Presburger
sets in n (isl): the cost behind a `proved` piece of `analysis.scale`.

Input: the transfer `Family`s of the symbolic elaboration (`analysis.forall.symbolic`: a
domain of loop variables, round, source and destination rank affine in them and n) and a
`PortRule`: on a port machine (`ports`) every resource with a bandwidth is a port of
one rank (one direction of one link of its domain), and a transfer from a to b loads exactly
a's out-port and b's in-port of each link class the rule names for the pair (one set of
classes for ranks of the same copy of the repeated host, one for the others), with all of
its bytes.

Method, each step exact for every n in [start, stop]:

1. Each family is split by the rule's case (same copy or not); in each case the map from
   its domain to (round, source) must be injective (isl), and so to (round, destination):
   a rank then sends (receives) at most one transfer of that case per round, and the set
   of (round, port) it occupies carries exactly the family's size, V / Π part counts.
2. Per port kind, the occupied sets of all families are refined into disjoint regions
   (a Venn diagram by isl's intersection and difference); a region's load is the sum of
   the sizes of the families covering it.
3. Per round, the loads present in each bandwidth group are the regions meeting it: the
   rounds are refined the same way into classes by the set of loads present.
4. Each class's rounds are counted without counting machinery: the class, made disjoint,
   must be a union of intervals in t whose ends are single affine functions of n (no
   quotient left), each non-empty for every n in the range; the count is Σ (hi - lo + 1).

Anything else raises `Unproved` with what failed; nothing is sampled.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl
import sympy

from ..forall.affine import PARAM, Cons, Lin, const, eq, ge
from ..forall.model import Family, Symbolic


class Unproved(Exception):
    """A hypothesis of the argument fails here (the message says which)."""


@dataclass(frozen=True)
class PortRule:
    """Which link classes a transfer between two ranks loads (the source's out-port and the
    destination's in-port of each): `same` for ranks of one copy (equal coordinate
    `copy_coord`), `cross` for the others; each class's bandwidth."""

    copy_coord: int | None  # None: no two ranks share a copy
    same: tuple[str, ...] | None
    cross: tuple[str, ...]
    bandwidth: dict[str, sympy.Expr]  # link class -> effective bandwidth
    fabric: tuple[FabricLink, ...] = ()  # resources of no rank, crossed between copies
    groups: dict[str, int] = field(default_factory=dict)  # class -> ranks sharing each port
    shares: dict[str, sympy.Expr] = field(default_factory=dict)  # class -> 1/k: bundles of k


@dataclass(frozen=True)
class FabricLink:
    """A fabric resource (`fabric`): its name, bandwidth, and the (source, destination)
    local positions of the pairs of ranks of different copies whose routes cross it."""

    name: str
    bandwidth: sympy.Expr  # a function of n where the source writes it so (`uniform`)
    pairs: frozenset[tuple[tuple[int, ...], tuple[int, ...]]]
    share: sympy.Expr = sympy.Integer(1)  # of each crossing transfer's bytes (equal-cost routes)


@dataclass(frozen=True)
class RoundClass:
    count: sympy.Expr  # rounds of the class: a function of n, exact in the range
    loads: frozenset[tuple[sympy.Expr, sympy.Expr]]  # (bandwidth, load / collective size)


def _lin(lin: Lin, n: sympy.Symbol) -> sympy.Expr:
    if lin.names - {PARAM}:
        raise Unproved(f"a part count varies with a loop variable ({lin.text()})")
    return sympy.Integer(lin.const) + sympy.Integer(dict(lin.terms).get(PARAM, 0)) * n


def _bounds(start: int, stop: int | None) -> list[str]:
    return [f"{PARAM} >= {start}"] + ([] if stop is None else [f"{PARAM} <= {stop}"])


def _domain(family: Family, case: tuple[Cons, ...], start: int, stop: int | None) -> isl.Set:
    cons = [*family.domain.cons, *case]
    inner = sorted({v for c in cons for v in c.lin.names} - set(family.domain.vars) - {PARAM})
    body = " and ".join([*_bounds(start, stop), *(c.isl() for c in cons)])
    if inner:
        body = f"exists ({', '.join(inner)} : {body})"
    return isl.Set(f"[{PARAM}] -> {{ [{', '.join(family.domain.vars)}] : {body} }}")


def family_map(family: Family, case: tuple[Cons, ...], outs: tuple[str, ...],
               ends: tuple[Lin, ...], start: int, stop: int | None) -> isl.Map:
    """The family's points (one case) -> (t, *ends): its round and the coordinates `ends`,
    named `outs` (the first is t), for hosts from `start` to `stop`."""
    cons = [*family.domain.cons, *case, Cons(Lin.var("t") - family.time, True),
            *(Cons(Lin.var(o) - e, True) for o, e in zip(outs[1:], ends))]
    inner = sorted({v for c in cons for v in c.lin.names} - set(family.domain.vars)
                   - set(outs) - {PARAM})
    body = " and ".join([*_bounds(start, stop), *(c.isl() for c in cons)])
    if inner:
        body = f"exists ({', '.join(inner)} : {body})"
    return isl.Map(f"[{PARAM}] -> {{ [{', '.join(family.domain.vars)}] -> "
                   f"[{', '.join(outs)}] : {body} }}")


def _occupied(family: Family, case: tuple[Cons, ...], ends: tuple[Lin, ...], dims: int,
              start: int, stop: int | None) -> isl.Set:
    """{(t, port coordinates)} that the family's transfers of one case occupy; raises
    unless each point is occupied by one transfer only (the map is injective)."""
    mapping = family_map(family, case, ("t", *(f"c{k}" for k in range(dims))), ends, start,
                         stop)
    if not mapping.is_injective():
        raise Unproved(f"{family.span.source.path}:{family.span.line}: a rank takes part in more "
                       "than one transfer of this statement in one round")
    return mapping.range()


def _group_points(family: Family, case: tuple[Cons, ...], ends: tuple[Lin, ...], dims: int,
                  start: int, stop: int | None, g: int) -> list[isl.Set]:
    """The (round, port) points the family occupies, a port of a group of g ranks being
    (copy, local // g): one set per local position's residue mod g, each occupied by one
    transfer per point (a group's port carries the sum of its members')."""
    if g == 1:
        return [_occupied(family, case, ends, dims, start, stop)]
    quotient = Lin.var(f"g{id(family) % 10**6}")
    return [_occupied(family, (*case, Cons(ends[1] - quotient.scale(g) - const(r), True)),
                      (ends[0], quotient), dims, start, stop) for r in range(g)]


def _refine(regions: list[tuple[isl.Set, object]], new: isl.Set, label,
            join) -> list[tuple[isl.Set, object]]:
    """Disjoint regions (set, label) refined by `new`: where they meet, `join(old, label)`."""
    out: list[tuple[isl.Set, object]] = []
    rest = new
    for region, old in regions:
        both = region.intersect(new)
        if not both.is_empty():
            out.append((both.coalesce(), join(old, label)))
        only = region.subtract(new)
        if not only.is_empty():
            out.append((only.coalesce(), old))
        rest = rest.subtract(region)
    if not rest.is_empty():
        out.append((rest.coalesce(), join(None, label)))
    return out


def _affine(pw: isl.PwAff, what: str, n: sympy.Symbol) -> tuple[isl.Set, sympy.Expr]:
    pieces = pw.get_pieces()
    if len(pieces) != 1:
        raise Unproved(f"the {what} of a round class is piecewise in n")
    domain, aff = pieces[0]
    if aff.dim(isl.dim_type.div):
        raise Unproved(f"the {what} of a round class has a quotient in n")
    k = aff.get_coefficient_val(isl.dim_type.param, 0).to_python()
    c = aff.get_constant_val().to_python()
    return domain, sympy.Integer(k) * n + sympy.Integer(c)


def count(rounds: isl.Set, start: int, stop: int | None, n: sympy.Symbol) -> sympy.Expr:
    """|rounds| as a function of n, exact for every n in [start, stop]."""
    everywhere = isl.Set(f"[{PARAM}] -> {{ : {' and '.join(_bounds(start, stop))} }}")
    total = sympy.Integer(0)
    for piece in rounds.make_disjoint().get_basic_sets():
        piece = piece.remove_redundancies()
        if piece.dim(isl.dim_type.div):
            raise Unproved("a round class is not a union of intervals of rounds (a stride)")
        if not everywhere.is_subset(piece.params()):
            raise Unproved("a round class is empty for some n of the range")
        low_at, low = _affine(isl.Set.from_basic_set(piece).dim_min(0), "first round", n)
        high_at, high = _affine(isl.Set.from_basic_set(piece).dim_max(0), "last round", n)
        if not (everywhere.is_subset(low_at) and everywhere.is_subset(high_at)):
            raise Unproved("the ends of a round class are not affine in n over the range")
        total += high - low + 1
    return sympy.expand(total)


def _port_points(sym: Symbolic, rule: PortRule, dims: int, start: int, stop: int | None,
                 n: sympy.Symbol):
    """(side, class) -> the (round, port) points the transfers occupy, each with its size;
    and the transfers across copies, for the fabric's loads."""
    k = rule.copy_coord
    occupied: dict[tuple[str, str], list[tuple[isl.Set, sympy.Expr]]] = {}
    cross: list[tuple[Family, tuple[Cons, ...], sympy.Expr]] = []  # for the fabric's loads
    for family in sym.families:
        size = sympy.Integer(1)
        for c in family.counts:
            size = size / _lin(c, n)
        cases: list[tuple[bool, tuple[Cons, ...]]] = [(False, ())]  # (same copy, case)
        if k is not None:
            s, d = family.src[k], family.dst[k]
            cases = [(True, (eq(s, d),)), (False, (ge(s - d, const(1)),)),
                     (False, (ge(d - s, const(1)),))]
        for same, case in cases:
            if _domain(family, case, start, stop).is_empty():
                continue
            loaded = rule.same if same else rule.cross
            if not same:
                cross.append((family, case, size))
            if loaded is None:
                raise Unproved("a transfer between two ranks of one copy, which the "
                               "machine joins by no port of its own")
            for direction, ends in (("out", family.src), ("in", family.dst)):
                for cls in loaded:
                    for points in _group_points(family, case, ends, dims, start, stop,
                                                rule.groups.get(cls, 1)):
                        occupied.setdefault((direction, cls), []).append((points, size))
    return occupied, cross


def round_classes(sym: Symbolic, rule: PortRule, start: int, stop: int | None,
                  n: sympy.Symbol) -> list[RoundClass]:
    """The schedule's round classes for every n in [start, stop] (see the module doc)."""
    assert sym.ranks is not None
    dims = len(sym.ranks.path)
    occupied, cross = _port_points(sym, rule, dims, start, stop, n)
    # Per bandwidth group: load -> the rounds where some port of the group carries it.
    present: dict[tuple[sympy.Expr, sympy.Expr], isl.Set] = {}
    for (_, cls), sets in sorted(occupied.items()):
        regions: list[tuple[isl.Set, object]] = []
        for points, size in sets:
            regions = _refine(regions, points, size,
                              lambda old, new: new if old is None else sympy.cancel(old + new))
        for region, load in regions:
            rounds = region.project_out(isl.dim_type.set, 1, dims)
            key = (rule.bandwidth[cls], sympy.cancel(load * rule.shares.get(cls, 1)))
            present[key] = present[key].union(rounds) if key in present else rounds
    if rule.fabric:
        from .fabric import fabric_loads  # (it builds on this module)
        order = sym.ranks
        local = (order.lows[1].const, order.highs[1].const - order.lows[1].const + 1) if (
            dims == 2 and rule.copy_coord == 0 and order.lows[1].is_const
            and order.highs[1].is_const) else None
        for key, rounds in fabric_loads(cross, rule.fabric, dims, start, stop, n,
                                        local).items():
            present[key] = present[key].union(rounds) if key in present else rounds
    total = sym.rounds
    every = isl.Set(f"[{PARAM}] -> {{ [t] : 0 <= t and t <= {(total - const(1)).isl()} and "
                    f"{' and '.join(_bounds(start, stop))} }}")
    classes: list[tuple[isl.Set, object]] = [(every, frozenset())]
    for key, rounds in present.items():
        split: list[tuple[isl.Set, object]] = []
        for region, loads in classes:
            both, only = region.intersect(rounds), region.subtract(rounds)
            if not both.is_empty():
                split.append((both.coalesce(), loads | {key}))  # type: ignore[operator]
            if not only.is_empty():
                split.append((only.coalesce(), loads))
        classes = split
    return [RoundClass(count(region, start, stop, n), loads)  # type: ignore[arg-type]
            for region, loads in classes]

"""Data that arrives twice, and writes that clash: the checks of the data flow beside its
reach. A copy that lands where another write of its round lands is a conflict (as the
verifier counts them); a reduce that brings a contribution its target holds already, or
two reduces that bring the same one, merge it twice (`merges`), which the end state must
not hold."""

from __future__ import annotations

import islpy as isl

from .model import Family
from .witness import Bad, failure


def conflicts(flow, copies: isl.Map, reduces: isl.Map) -> Bad | None:
    """A point two writes of one round land on, one of them a copy."""
    writes = copies.union(reduces).reverse()  # written point -> source point
    pairs = copies.reverse().range_product(writes)
    same = isl.Map.identity(copies.domain().get_space().map_from_set()).wrap()
    clash = pairs.subtract_range(same).domain().union(copies.intersect(reduces).range())
    if clash.is_empty():
        return None
    return failure(flow, "conflict", clash, flow.primed(), "a copy lands where another write "
                   "of its round lands")


def repeated(flow, families: list[tuple[Family, isl.Map]], empty: isl.Map
             ) -> tuple[Bad | None, isl.Map]:
    """The same transfer made twice in one round, by two points of one statement or by
    two statements: with a copy, a conflict (as the verifier counts them); reduces, the
    edges made twice (their data arrives twice)."""
    names = ("t", *flow.rank_dims, *(r + "p" for r in flow.rank_dims), *flow.cells)
    doubled = empty
    for k, (family, edges) in enumerate(families):
        points = flow.points_to_edges(family)
        twice = points.apply_range(points.reverse()).subtract(
            isl.Map.identity(points.domain().get_space().map_from_set()))
        if not twice.is_empty():
            if family.op == "copy":
                made = points.intersect_domain(twice.domain()).range()
                return failure(flow, "conflict", made, names, "a statement makes the same copy "
                               "twice in one round", family.span), doubled
            doubled = doubled.union(edges.intersect_domain(
                points.intersect_domain(twice.domain()).range().apply(_edge_source(flow))))
        for other, edges2 in families[k + 1:]:
            both = edges.intersect(edges2)
            if both.is_empty():
                continue
            if "copy" in (family.op, other.op):
                return failure(flow, "conflict", both.wrap(), (*flow.point, *flow.primed()),
                               "two statements make the same copy", other.span), doubled
            doubled = doubled.union(both)
    return None, doubled


def _edge_source(flow) -> isl.Map:
    """(t, src, dst, cells) -> (t, src, cells)."""
    dst = tuple(r + "p" for r in flow.rank_dims)
    return isl.Map(f"{{ [t, {', '.join(flow.rank_dims + dst + flow.cells)}] -> "
                   f"[t, {', '.join(flow.rank_dims + flow.cells)}] }}") if flow.rank_dims \
        else isl.Map("{}")


def merges(flow, reduces: isl.Map, doubled: isl.Map, held: isl.Map) -> isl.Map:
    """c -> (t, b, x) where b's cell x, before round t's writes land, takes contribution
    c twice: a reduce bringing what b holds already, two reduces bringing the same, a
    reduce made twice. (`reduces` and `doubled` end at round t, not t+1.)"""
    sides = reduces.wrap().unwrap()
    into = sides.range_map()  # [src -> dst] -> dst
    found = sides.domain_map().apply_range(held).intersect(into.apply_range(held))
    out = found.reverse().apply_range(into)
    pairs = reduces.reverse().range_product(reduces.reverse())  # dst -> [a1 -> a2]
    same = isl.Map.identity(reduces.domain().get_space().map_from_set()).wrap()
    pairs = pairs.subtract_range(same)
    sources = pairs.range().unwrap()
    shared = sources.domain_map().apply_range(held).intersect(
        sources.range_map().apply_range(held))  # [a1 -> a2] -> c
    out = out.union(pairs.apply_range(shared).reverse())
    doubled = doubled.apply_range(isl.Map(
        f"{{ [{', '.join(flow.point)}] -> [t - 1, {', '.join(flow.point[1:])}] }}"))
    return out.union(held.reverse().apply_range(doubled))

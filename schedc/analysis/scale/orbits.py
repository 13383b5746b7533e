"""The fabric's links read orbit by orbit: one representative per orbit of the cyclic shift
of the ranks' local positions (GPU i -> GPU i+1, the last to the first), when the schedule
does not tell the shifted transfers from the others.

The load `fabric.fabric_loads` reads on a fabric link in round t is a function of the link's
pairs, share and bandwidth and of the schedule's transfers across copies in round t: the
sum over its pairs (a, b) of the bytes sent from local position a of one copy to b of
another. Let σ shift local positions by one, cyclically. If

1. the transfers across copies, as a multiset of (round, source, destination, bytes), are
   mapped onto themselves by σ applied to both ends (checked here for every n of the piece
   with isl: each statement makes each (t, source, destination) at most once, and the
   disjoint regions of those points labelled by the bytes they carry in all are each
   mapped onto themselves), and
2. link L' has the share and bandwidth of L and pairs(L') = σ^k(pairs(L)) for some k,

then in every round L' carries exactly the load of L (each pair (a, b) of L brings what
(σ^k a, σ^k b) of L' brings, by 1 applied k times), so the loads present in a round, which
is all a round class needs, are read on one link per orbit. When 1 fails (a schedule that
treats GPU 0 apart, a ring that leaves each rack from its last GPU) every link is read.

Independently, a pair (a, b) that a statement never sends between, at any n of the piece
(`used_pairs`, enumerated from isl), adds nothing to any link for that statement: its check
is skipped. On GB200 NVL72 (288 rail uplinks of 71 pairs each: 122,688 checks per
schedule in all) this is what brings the shipped schedules under the limit: the contiguous
rings cross racks from GPU 71 to GPU 0 only (24 checks), the hierarchical schedule's rail
rings send between equal positions, which no uplink carries (none). The orbits serve
schedules that are their own shift and do cross the uplinks (GPU i to GPU i+1 of the next
rack: every pair (i, i+1) is sent between, and on one link per orbit, 2 of the 288, one
pair each).
"""

from __future__ import annotations

import islpy as isl

from ..forall.affine import PARAM, Cons
from ..forall.model import Family
from .portloads import FabricLink, _refine, family_map

Pair = tuple[tuple[int, ...], tuple[int, ...]]


def _transfers(family: Family, case: tuple[Cons, ...], dims: int, start: int,
               stop: int | None) -> isl.Map:
    """The family's points (one case) -> (t, source's coordinates, destination's)."""
    outs = ("t", *(f"s{k}" for k in range(dims)), *(f"d{k}" for k in range(dims)))
    return family_map(family, case, outs, (*family.src, *family.dst), start, stop)


def _shift(low: int, length: int) -> isl.Map:
    """σ on (t, s0, s1, d0, d1): both local positions one place on, cyclically."""
    step = " and ".join(f"{y} = ({x} - {low} + 1) mod {length} + {low} and "
                        f"{low} <= {x} < {low + length}" for x, y in (("s1", "s1p"), ("d1", "d1p")))
    return isl.Map(f"[{PARAM}] -> {{ [t, s0, s1, d0, d1] -> [t, s0, s1p, d0, d1p] : {step} }}")


def invariant(cross: list[tuple[Family, tuple[Cons, ...], object]], low: int, length: int,
              start: int, stop: int | None) -> bool:
    """Condition 1 of the module doc: the transfers across copies, with their bytes summed
    where several land on one (round, source, destination), are their own image under σ."""
    regions: list[tuple[isl.Set, object]] = []
    for family, case, size in cross:
        made = _transfers(family, case, 2, start, stop)
        if not made.is_injective():  # a (t, source, destination) made twice: not counted here
            return False
        regions = _refine(regions, made.range(), size,
                          lambda old, new: new if old is None else old + new)
    shift = _shift(low, length)
    by_bytes: dict[object, isl.Set] = {}
    for region, size in regions:
        by_bytes[size] = by_bytes[size].union(region) if size in by_bytes else region
    return all(region.apply(shift).is_equal(region) for region in by_bytes.values())


def representatives(links: tuple[FabricLink, ...], low: int, length: int
                    ) -> tuple[FabricLink, ...]:
    """One link per orbit (condition 2): the others' pairs are a shift of its pairs, with
    its share and bandwidth."""
    def moved(pairs: frozenset[Pair], k: int) -> frozenset[Pair]:
        def one(end: tuple[int, ...]) -> tuple[int, ...]:
            return tuple((c - low + k) % length + low for c in end)
        return frozenset((one(a), one(b)) for a, b in pairs)
    out: list[FabricLink] = []
    covered: set[tuple] = set()
    for link in links:
        key = (str(link.bandwidth), str(link.share), link.pairs)
        if key in covered:
            continue
        out.append(link)
        covered.update((key[0], key[1], moved(link.pairs, k)) for k in range(length))
    return tuple(out)


def used_pairs(family: Family, case: tuple[Cons, ...], start: int, stop: int | None
               ) -> frozenset[Pair] | None:
    """The (source, destination) local positions one case of a family sends between, at
    any n of the piece (a pair outside it loads no link for that family: its check is
    skipped, exactly); None when that set is not bounded."""
    found = _transfers(family, case, 2, start, stop).range()
    locals_ = found.project_out(isl.dim_type.set, 3, 1).project_out(
        isl.dim_type.set, 0, 2).project_out(isl.dim_type.param, 0, 1)  # (s1, d1), any n
    if not locals_.is_bounded():
        return None
    out: list[Pair] = []
    locals_.foreach_point(lambda p: out.append((
        (p.get_coordinate_val(isl.dim_type.set, 0).to_python(),),
        (p.get_coordinate_val(isl.dim_type.set, 1).to_python(),))))
    return frozenset(out)

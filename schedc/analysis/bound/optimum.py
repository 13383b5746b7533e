"""The exact optimum of a collective's bandwidth term: the binding cut over *all* cuts.

All-gather (each of N ranks starts with V/N): data must enter every set S of devices that
holds a rank, |ranks outside S|·V/N of it, over the bandwidth into S, B⁻(S). So

    T*(allgather) = max over S of |ranks \\ S|·(V/N) / B⁻(S),

and this is reachable (Edmonds' arborescence packing, extended to switches by edge
splitting: Bang-Jensen, Frank and Jackson 1995; used for collectives by ForestColl, Zhao et
al. 2024, arXiv 2402.06787): packed out-trees from every rank, pipelined, approach it as the
chunks shrink. Reduce-scatter is all-gather on the reversed machine (B⁺ for B⁻); broadcast
and reduce are one rank's packing, T* = V / min over ranks v of maxflow(root, v) (Edmonds).
All-reduce is reported as reduce-scatter then all-gather, T*(rs) + T*(ag), which a schedule
reaches; whether an all-reduce can do better is left to the cut-set and end-host bounds.

How the maximum over the exponentially many S is found: put a source s with an edge of
capacity r into every rank. A cut with rank c on its far side T costs r·|ranks ∩ T| + B⁻(T),
so every such cut is at least r·N exactly when r ≤ B⁻(T)/|ranks \\ T| for every T holding c.
Starting from an r above the optimum, each round solves one max-flow per rank (one per
orbit of the host shift); a cut below r·N gives a smaller ratio B⁻(T)/|ranks \\ T|, which
becomes the next r (Dinkelbach's method: the ratios fall strictly, and at most N values of
|ranks \\ T| exist). When no cut is below r·N, r is the optimum and the last T is its cut.
Capacities are exact integers (as in `cuts`), r an exact fraction: the optimum is exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import networkx as nx
import numpy as np
import sympy

from ...choices import PACKED
from ...model.collectives import KINDS
from ...model.ir import Collective, LinearBytes, linear_expr, linear_scale, linear_value
from ...model.symmetry import HostShift, index_shift
from ...model.topology import Topology
from .cuts import RankCuts
from .naming import SideNames

_SOURCE = "optimum-source"


@dataclass(frozen=True)
class OptimalCut:
    """The binding cut of one packing: the devices of its far side (the side data enters,
    or leaves for a reduction) and what crosses it."""

    kind: str  # allgather | reduce_scatter | broadcast | reduce | allreduce (`in_network`)
    inside: frozenset[int]  # the devices of the side that data must enter (leave: reductions)
    ranks_inside: tuple[int, ...]  # the collective's ranks on that side, in rank order
    bytes: LinearBytes  # what must cross
    resources: tuple[int, ...]  # the resources cut
    bandwidth: sympy.Expr
    time: sympy.Expr  # bytes / bandwidth
    value: Fraction  # seconds at the nominal point
    solved: int  # max-flow problems solved to find it


@dataclass(frozen=True)
class Optimum:
    """The exact optimum of a collective's bandwidth term (α = 0), and the cuts that set it
    (one; all-reduce: reduce-scatter's and all-gather's)."""

    kind: str
    parts: tuple[OptimalCut, ...]
    time: sympy.Expr
    value: Fraction

    @property
    def is_bound(self) -> bool:
        """Whether no schedule does better: every packing's optimum, and all-reduce's own
        cut (`in_network_optimum`); not reduce-scatter's plus all-gather's, which is reached
        but bounds nothing."""
        return self.kind != "allreduce" or self.parts[0].kind == "allreduce"


def optimum(finder: RankCuts, collective: Collective, nominal: dict) -> Optimum | None:
    """The exact optimum of `collective` on the machine of `finder`; None for a collective
    that is not a packing (all-to-all, neighbour exchanges) or has fewer than two ranks."""
    if collective.kind not in PACKED or len(collective.ranks) < 2:
        return None
    if collective.kind != "allreduce":
        parts: tuple[OptimalCut | None, ...] = (_packing(finder, collective, collective.kind, nominal),)
    else:  # on a symmetric machine, reduce-scatter's cut is all-gather's, run backwards
        gather = _packing(finder, collective, "allgather", nominal)
        known = gather.inside if gather is not None and finder.network.symmetric else None
        parts = (_packing(finder, collective, "reduce_scatter", nominal, known), gather)
    if any(p is None for p in parts):
        return None  # some rank is unreachable: `bound` says so through its cuts
    found = tuple(p for p in parts if p is not None)
    return Optimum(collective.kind, found, sympy.Add(*[p.time for p in found]),
                   sum((p.value for p in found), Fraction(0)))


def side_names(finder: RankCuts, parts: tuple[OptimalCut, ...]) -> tuple[str, ...]:
    """Each optimal cut as `inside | rest`, its ranks named as the families' cuts are."""
    namer = SideNames(finder.topology, [(name, frozenset(m)) for _, name, m in finder.groups],
                      finder.ranks)
    return tuple(namer.sides(frozenset(part.ranks_inside)) for part in parts)


def _packing(finder: RankCuts, collective: Collective, kind: str, nominal: dict,
             known: frozenset | None = None) -> OptimalCut | None:
    """The binding cut of one packing; `known`: its far side, already found (a mirror)."""
    network = finder.network
    reverse = KINDS[kind].reduces  # reductions pack in-trees: all-gather on the reversed machine
    graph = network.graph.reverse(copy=False) if reverse else network.graph
    ranks = collective.ranks
    share = Fraction(1) if KINDS[kind].rooted else None
    if known is not None:
        found: tuple[frozenset, int] | None = (known, 0)
    elif share is not None:
        found = _rooted(graph, collective.root, ranks)
    else:
        shifts = (finder.shift, index_shift(finder.topology, ranks))
        found = _all_ranks(graph, ranks, tuple(s for s in shifts if s is not None))
    if found is None:
        return None
    inside, solved = found
    if share is None:
        share = Fraction(len([r for r in ranks if r not in inside]), len(ranks))
    return cut_into(finder, graph, collective, kind, frozenset(inside), share, solved, nominal)


def cut_into(finder: RankCuts, graph: nx.DiGraph, collective: Collective, kind: str,
         inside: frozenset, share: Fraction, solved: int, nominal: dict) -> OptimalCut:
    """The cut whose far side is `inside`, which `share` of the collective's size must enter."""
    ranks = collective.ranks
    crossing = linear_scale(collective.size, share)
    resources = _cut_resources(graph, inside)
    topology: Topology = finder.topology
    bandwidth = sympy.Add(*[topology.resources[r].effective_bandwidth for r in resources])
    capacity = Fraction(sum(_capacity(graph, inside)), finder.network.scale)
    value = linear_value(crossing, nominal) / capacity
    position = {r: k for k, r in enumerate(ranks)}
    return OptimalCut(kind, inside,
                      tuple(sorted((r for r in ranks if r in inside), key=position.__getitem__)),
                      crossing, resources, bandwidth, linear_expr(crossing) / bandwidth, value,
                      solved)


def _all_ranks(graph: nx.DiGraph, ranks: tuple[int, ...], shifts: tuple[HostShift, ...]):
    """(the binding T, max-flows solved), by Dinkelbach's method (see the module
    docstring); None if some rank cannot be reached at all."""
    n = len(ranks)
    sinks = _representatives(ranks, shifts)
    total = sum(d.get("capacity", 0) for _, _, d in graph.edges(data=True))
    ratio = Fraction(total + 1)  # above every finite B⁻(T)/|ranks \ T| (at least 1 rank out)
    best: frozenset | None = None
    solved = 0
    while True:
        flow_graph = _with_source(graph, ranks, ratio)
        improved = None
        for sink in sinks:
            solved += 1
            value, (_, far) = nx.minimum_cut(flow_graph, _SOURCE, sink)
            # value = r·|ranks ∩ T|·q + B⁻(T)·q, all integers (r = p/q, scaled by q)
            inside = frozenset(far)
            held = sum(1 for r in ranks if r in inside)
            if held == n:
                continue  # every rank inside: no data need enter (value = r·N·q exactly)
            cut = Fraction(value, ratio.denominator) - ratio * held  # B⁻(T), graph units
            candidate = cut / (n - held)
            if candidate < ratio and (improved is None or candidate < improved[0]):
                improved = (candidate, inside)
        if improved is None:
            break
        ratio, best = improved
    if best is None or ratio == 0:
        return None
    return best, solved


def _rooted(graph: nx.DiGraph, root: int | None, ranks: tuple[int, ...]):
    """(the far side of the narrowest cut from the root to a rank, max-flows solved); None
    if some rank cannot be reached."""
    if root is None:
        return None
    return narrowest(graph, [(root, sink) for sink in ranks if sink != root])


def narrowest(graph: nx.DiGraph, pairs: list[tuple[int, int]]):
    """(the sink's side of the narrowest cut between any of the (source, sink) pairs, max-
    flows solved); None if some sink cannot be reached at all."""
    best = None
    for source, sink in pairs:
        try:
            value, (_, far) = nx.minimum_cut(graph, source, sink)
        except nx.NetworkXUnbounded:
            continue  # an unlimited path: this pair binds nothing
        if best is None or value < best[0]:
            best = (value, frozenset(far))
    if best is None or best[0] == 0:
        return None
    return best[1], len(pairs)


def _with_source(graph: nx.DiGraph, ranks: tuple[int, ...], ratio: Fraction) -> nx.DiGraph:
    """The machine scaled by r's denominator q, with a source feeding every rank r·q."""
    q = ratio.denominator
    scaled = nx.DiGraph()
    scaled.add_nodes_from(graph.nodes)
    for u, v, data in graph.edges(data=True):
        if "capacity" in data:
            scaled.add_edge(u, v, capacity=data["capacity"] * q)
        else:
            scaled.add_edge(u, v)  # unlimited
    for r in ranks:
        scaled.add_edge(_SOURCE, r, capacity=ratio.numerator)
    return scaled


def _representatives(ranks: tuple[int, ...], shifts: tuple[HostShift, ...]) -> list[int]:
    """One rank per orbit of the shifts' group (its cuts are the others' images), in the
    ranks' order; every rank without shifts."""
    orbit = {r: r for r in ranks}

    def find(r: int) -> int:
        while orbit[r] != r:
            r = orbit[r]
        return r

    for shift in shifts:
        for r, image in zip(ranks, shift.devices.power(1, np.asarray(ranks)).tolist()):
            if image in orbit:
                orbit[find(r)] = find(image)
    kept, seen = [], set()
    for r in ranks:
        if find(r) not in seen:
            seen.add(find(r))
            kept.append(r)
    return kept


def _capacity(graph: nx.DiGraph, inside: frozenset) -> list[int]:
    return [d["capacity"] for u, v, d in graph.edges(data=True)
            if u not in inside and v in inside and "capacity" in d]


def _cut_resources(graph: nx.DiGraph, inside: frozenset) -> tuple[int, ...]:
    return tuple(sorted(r for u, v, d in graph.edges(data=True)
                        if u not in inside and v in inside for r in d["resources"]))

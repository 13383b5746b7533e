"""Routes for a packing, where schedc's own routes stop below the optimum.

The optimum counts every path through forwarding devices; schedc routes a pair of ranks over
its best routes only (NVLink first inside a host, fewest links), so on some machines — two
GPUs that share a PCIe switch but talk over NVLink, NICs that could loop back through a leaf
— no tree of routed transfers reaches the optimum (`packing.pack` says by how much). Here the
pricing may choose any path: the cheapest path between two ranks under the LP's resource
duals is a shortest path (Dijkstra, SciPy's csgraph, on a graph where a device that does not
forward is only an end), so each round prices a tree over the metric closure. The paths the
packing uses become `route A -> B via ...` pins, one path per ordered pair (`pinned_paths`
says how a pair split over several gets one), and `pack` then runs on the pinned machine:
what it reaches is what the written file, pins included, reaches.

Over the group of the machine's shifts (`group.machine_group`) one root per orbit is priced
and a pair's path stands for its orbit's, so one GB200 NVL72 rack (72 ranks, one orbit) is
searched in under a second; the work a round of pricing takes is bounded (`MAX_PATH_WORK`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from ...model.collectives import KINDS
from ...model.routing import pinned
from ...model.symmetry import HostShift
from ...model.topology import PinnedRoute, Topology
from .arborescence import min_arborescence
from .group import Group, machine_group, trivial_group
from .lp import master, prune
from .packing import MAX_ITERATIONS, Tree

_PASSES = 16  # fixing passes; each fixes one pair still split
# The search runs while a round of pricing is at most this many arborescence entries (ranks²
# per root priced): 32 ranks without a symmetry, as before (rail_4x8 so: 7.2 s of CPU), or
# two GB200 racks' 144 with one orbit (3.3 s); one rack's 72 priced root by root is past it.
MAX_PATH_WORK = 32**3
_TIE = 1e-9  # added to every leg's price: of paths priced alike, the one with fewest legs


def pinned_paths(topology: Topology, nominal: dict, ranks: tuple[int, ...], kind: str,
                 root: int | None, optimum_rate: float, seeds: tuple[Tree, ...] = (),
                 shifts: tuple[HostShift, ...] = ()
                 ) -> dict[tuple[int, int], tuple[int, ...]]:
    """Per ordered pair of ranks (as device ids, in the transfer's direction), the devices of
    the path its trees' transfers should take, where that differs from schedc's route (the
    caller keeps `search_work` within `MAX_PATH_WORK`). `seeds`, trees over schedc's routes (a
    packing's), start the search where they stopped (without a symmetry only: their routes
    are not known to map onto each other).

    With the shifts' group (`group.machine_group`), one root per orbit is priced, the LP has
    a row per orbit of resources (as `packing.pack`'s), and a pair's path stands for its
    orbit's: the pins found are closed under the group, so the pinned machine keeps it.

    A pinned route is one path per pair, and the free packing may split a pair over several:
    each pass fixes one split pair (orbit), the one whose lighter path carries most, to that
    path (or to its heavier one if the packing then reaches less) and packs again, until no
    pair is split; after `_PASSES` passes every pair left takes its heaviest path."""
    inward = KINDS[kind].reduces
    group = _group(topology, ranks, kind, shifts)
    roots = [ranks.index(root)] if KINDS[kind].rooted else group.representatives()
    legs = _Legs(topology, nominal, ranks, inward, group)
    fixed: dict[tuple[int, int], tuple[int, ...]] = {}  # (a, b) tree edge -> its path
    position = {device: k for k, device in enumerate(ranks)}
    for src, dst in topology.pinned:  # the machine's own pins stay: its route, `()`
        if src in position and dst in position:
            a, b = position[src], position[dst]
            fixed[group.canonical(*((b, a) if inward else (a, b)))[1]] = ()
    seeds = seeds if group.trivial else ()
    best, carried = _pack_paths(legs, roots, optimum_rate, fixed, seeds)
    for _ in range(_PASSES):
        split = {edge: sorted(by_path, key=lambda p: (by_path[p], p))
                 for edge, by_path in carried.items() if len(by_path) > 1}
        if not split:
            break
        # The split pair whose lighter path carries most takes that path; if the packing
        # then reaches less, it takes its heavier path instead.
        edge = max(sorted(split), key=lambda e: carried[e][split[e][-2]])
        fixed[edge] = split[edge][-2]
        rate, found = _pack_paths(legs, roots, optimum_rate, fixed, seeds)
        if rate < best * (1 - 1e-9):
            fixed[edge] = split[edge][-1]
            rate, found = _pack_paths(legs, roots, optimum_rate, fixed, seeds)
        best, carried = rate, found
    else:  # out of passes: every pair still split takes the path carrying most of its weight
        for edge, by_path in carried.items():
            fixed.setdefault(edge, max(sorted(by_path), key=lambda p: by_path[p]))
    used = {edge: fixed.get(edge, next(iter(by_path))) for edge, by_path in carried.items()}
    return _pins(topology, ranks, inward, group, used)


def search_work(topology: Topology, ranks: tuple[int, ...], kind: str,
                shifts: tuple[HostShift, ...]) -> int:
    """What one round of the search's pricing costs, in dense arborescence entries: ranks²
    per root priced (one per orbit of the group, or the root of a rooted collective)."""
    roots = 1 if KINDS[kind].rooted else len(_group(topology, ranks, kind, shifts).representatives())
    return roots * len(ranks) ** 2


def _group(topology: Topology, ranks: tuple[int, ...], kind: str, shifts) -> Group:
    """The shifts' group; a rooted collective's one root is priced alone, without it."""
    if KINDS[kind].rooted:
        return trivial_group(topology, ranks)
    return machine_group(topology, ranks, shifts)


def _pins(topology: Topology, ranks: tuple[int, ...], inward: bool, group: Group,
          used: dict) -> dict[tuple[int, int], tuple[int, ...]]:
    """Each used (representative) edge's path, moved to every pair of its orbit, as pins by
    device ids in the transfer's direction; none where it is schedc's own route."""
    pins = {}
    for edge, path in sorted(used.items()):
        if not path:
            continue
        for k, a, b in group.images(edge):
            pair = (ranks[b], ranks[a]) if inward else (ranks[a], ranks[b])
            moved = group.path(k, path)
            if not _routed_over(topology, pair, moved):
                pins[pair] = moved
    return dict(sorted(pins.items()))


def _pack_paths(legs: _Legs, roots: list[int], optimum_rate: float, fixed: dict,
                seeds: tuple[Tree, ...]) -> tuple[float, dict[tuple[int, int], dict[tuple, float]]]:
    """Column generation over trees whose edges take any path (the `fixed` edges their
    path; `()` is schedc's own route), over orbits of the legs' group: its rate, and per
    (representative) tree edge used, the weight each (representative) path carries."""
    group, orbit_of = legs.group, legs.orbit_of
    rows = int(orbit_of.max()) + 1
    per_resource = group.order / np.bincount(orbit_of, minlength=rows)[orbit_of]
    scale = float(legs.capacity.max())
    capacity = np.zeros(rows)
    capacity[orbit_of] = legs.capacity / scale
    trees: list[tuple[int, tuple]] = []
    columns: list[np.ndarray] = []
    seen: set = set()

    def add(c: int, edges: tuple) -> None:
        if (c, edges) not in seen:
            seen.add((c, edges))
            trees.append((c, edges))
            columns.append(np.bincount(orbit_of, weights=legs.tree_load(edges) * per_resource,
                                       minlength=rows))

    def priced(c: int, closure: _Closure) -> float:
        parent = min_arborescence(closure.cost, c)
        add(c, tuple((int(p), v, closure.path(int(p), v)) for v, p in enumerate(parent) if p >= 0))
        return float(sum(closure.cost[p, v] for v, p in enumerate(parent) if p >= 0))

    for tree in seeds:
        add(tree.root, tuple((a, b, fixed.get((a, b), ())) for a, b in tree.edges))
    first = legs.closure(scale / legs.capacity, fixed)
    for c in roots:
        priced(c, first)
    target = optimum_rate / scale
    ones = np.ones(len(roots))  # the group acts freely: one tree of a root's per image
    for _ in range(MAX_ITERATIONS):
        rate, weights, y, z = master(columns, trees, roots, ones, capacity)
        if rate >= target * (1 - 1e-9):
            break
        before = len(trees)
        closure = legs.closure(y[orbit_of] * per_resource, fixed)
        prices = [priced(c, closure) for c in roots]
        if len(trees) == before or all(p >= zc * (1 - 1e-9) for p, zc in zip(prices, z)):
            break
        if len(columns) > 8 * (rows + len(roots)):  # as `pack` keeps its LP small
            prune(trees, columns, seen, weights, y, dict(zip(roots, z)))
    else:  # out of rounds: the weights of the trees kept, after the last pruning
        rate, weights, y, z = master(columns, trees, roots, ones, capacity)
    return rate, _carried(legs, trees, weights)


def _carried(legs: _Legs, trees: list, weights) -> dict[tuple[int, int], dict[tuple, float]]:
    """Per representative tree edge, the weight each of its paths carries (moved to the
    representative pair; schedc's own route as `()` when there is no symmetry)."""
    carried: dict[tuple[int, int], dict[tuple[int, ...], float]] = {}
    for (_, edges), w in zip(trees, weights):
        if w > 1e-12:
            for a, b, path in edges:
                k, edge = legs.group.canonical(a, b)
                path = legs.canonical(a, b, path) if legs.group.trivial else \
                    legs.group.path(k, path)
                by_path = carried.setdefault(edge, {})
                by_path[path] = by_path.get(path, 0.0) + float(w)
    return carried


def with_pins(topology: Topology, pins: dict[tuple[int, int], tuple[int, ...]], span) -> Topology:
    """The machine with these routes pinned as `route A -> B via ...` pins them (every
    parallel link of each leg), and its routes found afresh."""
    added = {pair: PinnedRoute(path, _legs_of(topology, path), span) for pair, path in pins.items()}
    kept = {f.name: getattr(topology, f.name) for f in fields(topology)
            if f.init and not f.name.startswith("_")}
    return Topology(**{**kept, "pinned": {**topology.pinned, **added}})


def _legs_of(topology: Topology, path: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(i for i, h in enumerate(topology.hops) if (h.src, h.dst) == (u, v))
                 for u, v in zip(path, path[1:]))


def _routed_over(topology: Topology, pair: tuple[int, int], path: tuple[int, ...]) -> bool:
    """Whether schedc's own route for the pair puts its bytes on the path's links alone."""
    along = pinned(pair[0], pair[1], _legs_of(topology, path), path, topology.policy == "first")
    return dict(topology.route(pair[0], pair[1], None).shares) == dict(along.shares)


class _Legs:
    """The machine as legs (all parallel links from one device to the next), their loads on
    the resources with a bandwidth, and shortest paths between ranks priced by resource;
    `orbit_of` numbers each resource's orbit under the group."""

    def __init__(self, topology: Topology, nominal: dict, ranks: tuple[int, ...], inward: bool,
                 group: Group):
        from scipy.sparse import csr_array  # type: ignore[import-untyped]  # no types

        self.topology, self.ranks, self.inward, self.group = topology, ranks, inward, group
        self._own: dict[tuple, bool] = {}  # (a, b, path): the path is schedc's own route
        self.devices = len(topology.devices)
        first = topology.policy == "first"
        limited = [r for r in topology.resources if r.effective_bandwidth is not None]
        self.column = column = {r.id: k for k, r in enumerate(limited)}
        self.capacity = np.array([float(r.effective_bandwidth.xreplace(nominal))  # type: ignore[union-attr]
                                  for r in limited])
        self.orbit_of = group.resource_orbits([r.id for r in limited])
        parallel: dict[tuple[int, int], list[int]] = {}
        for index, hop in enumerate(topology.hops):
            parallel.setdefault((hop.src, hop.dst), []).append(index)
        self.pairs = sorted(parallel)
        self.leg_of = {pair: k for k, pair in enumerate(self.pairs)}
        rows, cols, values = [], [], []
        for k, pair in enumerate(self.pairs):
            hops = parallel[pair][:1] if first else parallel[pair]
            for h in hops:
                for r in topology.hops[h].resources:
                    if r in column:
                        rows.append(k)
                        cols.append(column[r])
                        values.append(1.0 / len(hops))
        self.shares = csr_array((values, (rows, cols)), shape=(len(self.pairs), len(limited)))
        self.forwarding = sorted(topology.forwarding)

    def canonical(self, a: int, b: int, path: tuple[int, ...]) -> tuple[int, ...]:
        """`()` for a path that is schedc's own route between the edge's ranks (so the two
        are one path, not a split), else the path."""
        if path:
            key = (a, b, path)
            if key not in self._own:
                src, dst = ((self.ranks[b], self.ranks[a]) if self.inward
                            else (self.ranks[a], self.ranks[b]))
                self._own[key] = _routed_over(self.topology, (src, dst), path)
            if self._own[key]:
                return ()
        return path

    def edge_load(self, a: int, b: int, path: tuple[int, ...]) -> np.ndarray:
        """Per resource, the share of a tree edge's bytes it carries over `path` (`()`:
        over schedc's own route between the ranks)."""
        return self.tree_load(((a, b, path),))

    def tree_load(self, edges) -> np.ndarray:
        """Per resource, the bytes a tree's edges (a, b, path) put on it per byte sent:
        each leg counted as often as the tree's paths take it."""
        legs = [self.leg_of[(u, v)] for _, _, path in edges for u, v in zip(path, path[1:])]
        counts = np.bincount(legs, minlength=len(self.pairs)).astype(float)
        load = self.shares.T @ counts
        for a, b, path in edges:
            if not path:  # schedc's own route between the ranks
                src, dst = ((self.ranks[b], self.ranks[a]) if self.inward
                            else (self.ranks[a], self.ranks[b]))
                for r, share in self.topology.route_resources(src, dst, None):
                    if r in self.column:
                        load[self.column[r]] += float(share)
        return load

    def closure(self, y: np.ndarray, fixed: dict) -> _Closure:
        """Shortest paths between ranks with each leg priced by the duals `y` (per resource,
        the same on each orbit): from one rank per orbit, the others' moved from theirs."""
        from scipy.sparse import csr_array
        from scipy.sparse.csgraph import dijkstra  # type: ignore[import-untyped]

        d, group = self.devices, self.group  # node u: device u sending; d + u: receiving
        # Duals are ≥ 0; the LP's may come back as -1e-17, and Dijkstra needs no negative.
        price = self.shares @ np.maximum(y, 0.0) + _TIE
        heads = np.array([d + v for _, v in self.pairs], dtype=np.int64)
        tails = np.array([u for u, _ in self.pairs], dtype=np.int64)
        through = np.array(self.forwarding, dtype=np.int64)  # received, then sent on
        graph = csr_array((np.concatenate([price, np.full(len(through), _TIE)]),
                           (np.concatenate([tails, d + through]), np.concatenate([heads, through]))),
                          shape=(2 * d, 2 * d))
        ranks = np.asarray(self.ranks, dtype=np.int64)
        reps = np.asarray(group.representatives(), dtype=np.int64)
        dist, pred = dijkstra(graph, directed=True, indices=ranks[reps], return_predecessors=True)
        row = np.searchsorted(reps, group.rep)  # each rank's representative's row
        # [i, j] = shortest from rank i to rank j = from rep(i) to j moved as i is.
        cost = dist[:, d + ranks][row[:, None], group.ranks[group.to_rep]]
        if self.inward:
            cost = cost.T  # edge a → b of an in-tree: the transfer from rank b to rank a
        cost = cost.copy()
        np.fill_diagonal(cost, np.inf)
        for (a, b), path in fixed.items():  # a fixed edge (and its images) costs its path
            cost[group.ranks[:, a], group.ranks[:, b]] = \
                float(self.edge_load(a, b, path) @ y) + _TIE * max(len(path) - 1, 1)
        return _Closure(cost, pred, row, self, fixed)


@dataclass(frozen=True)
class _Closure:
    """Priced shortest paths between ranks: `cost[a, b]` per tree edge, and its path."""

    cost: np.ndarray
    pred: np.ndarray  # per representative rank (rows), Dijkstra's predecessors
    row: np.ndarray  # each rank's representative's row of `pred`
    legs: _Legs
    fixed: dict

    def path(self, a: int, b: int) -> tuple[int, ...]:
        """The devices of tree edge a → b's path, in the transfer's direction."""
        group, ranks = self.legs.group, self.legs.ranks
        k, edge = group.canonical(a, b)
        if edge in self.fixed:
            return group.path(int(group.inverse[k]), self.fixed[edge])
        i, j = (b, a) if self.legs.inward else (a, b)
        k = int(group.to_rep[i])
        d = self.legs.devices
        found = _walk(self.pred[self.row[i]], ranks[int(group.rep[i])],
                      d + ranks[int(group.ranks[k, j])], d)
        return group.path(int(group.inverse[k]), found)


def _walk(pred: np.ndarray, source: int, target: int, d: int) -> tuple[int, ...]:
    """The devices of the shortest path to `target` (a receiving node), source first."""
    devices = []
    node = target
    while node != source:
        if node >= d:
            devices.append(node - d)
        node = int(pred[node])
    return (source, *reversed(devices))

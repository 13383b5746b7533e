"""Weighted trees that carry a collective at (or near) the machine's exact optimum.

All-gather is N broadcasts, one per rank's shard, and a broadcast at rate w along an
out-tree loads each resource e by w × (how many of the tree's edges route over e). The
trees are over the collective's ranks: an edge u → v is a transfer from u to v, loading the
resources of schedc's route from u to v, so every tree is a schedule schedc runs as it is
(ranks relay; switches forward as routing says). The fractional packing

    maximise r  subject to  Σ_{trees T of root c} w_T ≥ r          for every rank c
                            Σ_T w_T · load_T[e] ≤ B_e               for every resource e

is solved by column generation: the restricted LP over the trees found so far (HiGHS, via
SciPy), whose duals price a new tree for root c as Σ_{edges} Σ_e y_e·share(u, v, e); the
cheapest is a minimum spanning arborescence rooted at c (Chu–Liu/Edmonds, `arborescence`). A
tree cheaper than its root's dual z_c improves the LP; none left means the LP is optimal.
It stops early once r reaches the exact optimum of `bound.optimum` (no packing can exceed
it), which certifies the trees; a packing that stops below it says by how much.

Trees deeper than two levels (a pipeline fills in depth - 1 rounds) are replaced, where
trees of two levels reach the same rate, by those whose stages balance (`_shallower`).

Reduce-scatter packs in-trees (the same on the reversed routes), broadcast and reduce one
root's trees. The weights are floats from the LP; `write` rounds them to whole units of a
shard and the compiler then gives the exact time of what was written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import progress
from ...errors import LimitError, TopologyError
from ...model.collectives import KINDS
from ...model.symmetry import HostShift
from ...model.topology import Topology
from .arborescence import min_arborescence, shallowest, two_level
from .group import pricing_symmetry, route_orbits
from .lp import EPS, master, prune, staged_master

MAX_ITERATIONS = 400  # rounds of pricing; each adds at most one tree per root
# Rounds of pricing two-level trees at the staged LP's duals: each only lowers the stages'
# loads a little more (fewer chunks), and without symmetry one round is an LP over every
# root's trees (a rail 4x8 priced root by root took 111 rounds, 60 s, unbounded).
MAX_BALANCING = 16


@dataclass(frozen=True)
class Tree:
    """One tree of a packing: its root (a rank's index), its edges as (parent, child) rank
    indices in breadth-first order, and its weight (a share of the root's data per second,
    in units of the largest bandwidth)."""

    root: int
    edges: tuple[tuple[int, int], ...]
    weight: float

    def depths(self) -> dict[int, int]:
        depth = {self.root: 0}
        for parent, child in self.edges:
            depth[child] = depth[parent] + 1
        return depth


@dataclass(frozen=True)
class Packing:
    """Trees per root; `rate` is the LP's r (bytes of a root's data per second, over all its
    trees), `reached` its ratio to the exact optimum's rate (1.0: the optimum)."""

    kind: str
    trees: tuple[Tree, ...]
    rate: float
    reached: float
    iterations: int
    loads: np.ndarray  # per tree, per resource: load_T[e] / B_e (seconds per byte it carries)
    resources: tuple[int, ...]  # the resources with a bandwidth, in the rows' order
    edge_rows: dict  # (parent, child) -> its row of `edge_seconds`
    edge_seconds: Any  # sparse (SciPy), edges × resources: share / B_e (seconds per byte)
    # When the shifts' group moves rank 0 to each rank in exactly one way: row c is the
    # element taking 0 to c (on rank indices), so root c's trees are root 0's, moved by it.
    images: np.ndarray | None = None

    def edge_load(self, parent: int, child: int) -> np.ndarray:
        """Seconds per byte that one edge's transfer costs each resource."""
        return self.edge_seconds[[self.edge_rows[(parent, child)]]].toarray().ravel()


def pack(topology: Topology, nominal: dict, ranks: tuple[int, ...], kind: str,
         root: int | None, optimum_rate: float, span=None, shifts: tuple[HostShift, ...] = ()
         ) -> Packing:
    """The packing for `kind` over `ranks` (rank indices in trees are positions in `ranks`);
    `optimum_rate` is the exact optimum's rate (bytes of one root's data per second).

    With shifts (of hosts, of a family's index; they commute) that map every route onto a
    route (checked edge by edge), the LP is solved over orbits of the group they make: a
    symmetric optimum exists (the average of an optimum's images), so one variable stands for
    a tree and its |G| images, one row for an orbit of resources, and only one root per orbit
    is priced — up to |G| times fewer rows, columns and arborescences.

    Where the trees found are deeper than two levels, the same rate is then sought with
    trees of two levels (`_shallower`): a pipeline fills in depth - 1 rounds."""
    problem = _problem(topology, nominal, ranks, kind, root, span, shifts)
    pool = _Pool(problem)
    start = problem.cost_matrix(1.0 / problem.capacity)  # the first trees: by bandwidth alone
    for c in problem.roots:
        pool.add(c, problem.tree(c, start))
    target = optimum_rate / problem.scale
    ticker = progress.ticker(f"synthesize: {kind} trees", MAX_ITERATIONS)
    rate, weights, iterations = _generate(problem, pool, target, problem.tree, ticker.advance)
    ticker.finish()
    if _depth(pool, weights, rate) > 2:
        shallow = _shallower(problem, pool, min(rate, target))
        if shallow is not None:
            pool, rate, weights, more = shallow
            iterations += more
    return _packing(problem, kind, pool, weights, rate, target, iterations)


@dataclass(frozen=True, eq=False)
class _Problem:
    """What the LP is over: the tree edges and the shares of their bytes on each resource,
    the resources' bandwidths and orbits, the group's elements on ranks and the roots priced."""

    topology: Topology
    ranks: tuple[int, ...]
    span: Any
    edges: np.ndarray
    shares: Any  # sparse, edges × resources
    resources: tuple[int, ...]
    capacity: np.ndarray
    row_of: dict  # (parent, child) -> its row of `shares`
    sigma: np.ndarray  # the group's elements on rank indices
    orbit_of: np.ndarray  # each resource's orbit (a row of the LP)
    roots: list[int]
    weight_of_root: np.ndarray

    @property
    def scale(self) -> float:
        return float(self.capacity.max())

    @property
    def rows(self) -> int:
        return int(self.orbit_of.max()) + 1

    @property
    def per_resource(self) -> np.ndarray:
        """A price's weight on each resource of an orbit: |G| / the orbit's size."""
        return len(self.sigma) / np.bincount(self.orbit_of, minlength=self.rows)[self.orbit_of]

    @property
    def orbit_capacity(self) -> np.ndarray:
        capacity = np.zeros(self.rows)
        capacity[self.orbit_of] = self.capacity / self.scale
        return capacity

    def cost_matrix(self, y_resources: np.ndarray) -> np.ndarray:
        """Each tree edge's cost under per-resource prices (inf: no edge)."""
        n = len(self.ranks)
        matrix = np.full((n, n), np.inf)
        matrix[self.edges[:, 0], self.edges[:, 1]] = self.shares @ y_resources
        return matrix

    def tree(self, c: int, matrix: np.ndarray) -> tuple[tuple[int, int], ...]:
        """The cheapest tree from root c under `matrix`, each node as near the root as the
        price allows."""
        try:
            parent = min_arborescence(matrix, c)
        except ValueError:
            raise TopologyError(f"not every rank can be reached from "
                                f"{self.topology.devices[self.ranks[c]].name}", self.span) from None
        return _breadth_first(shallowest(matrix, parent, c, 1e-12), c)

    def two_levels(self, c: int, matrix: np.ndarray) -> tuple[tuple[int, int], ...] | None:
        """A cheap tree from root c of depth at most 2 (None: there is none)."""
        parent = two_level(matrix, c)
        return None if parent is None else \
            _breadth_first(shallowest(matrix, parent, c, 1e-12), c)

    def load(self, found) -> np.ndarray:
        return np.asarray(self.shares[[self.row_of[e] for e in found]].sum(axis=0)).ravel()

    def column(self, found) -> np.ndarray:
        """A tree's column of the LP: the load of it and its images, per orbit."""
        return np.bincount(self.orbit_of, weights=self.load(found) * self.per_resource,
                           minlength=self.rows)

    def stages(self, c: int, found) -> tuple[np.ndarray, np.ndarray]:
        """A tree's column split by stage: its edges into depth 1, and the others."""
        depth = Tree(c, found, 0.0).depths()
        return (self.column([e for e in found if depth[e[1]] == 1]),
                self.column([e for e in found if depth[e[1]] != 1]))


def _problem(topology: Topology, nominal: dict, ranks: tuple[int, ...], kind: str,
             root: int | None, span, shifts: tuple[HostShift, ...]) -> _Problem:
    rooted = KINDS[kind].rooted
    edges, shares, resources, capacity = _routes(topology, nominal, ranks, KINDS[kind].reduces,
                                                 span)
    row_of = {(int(a), int(b)): k for k, (a, b) in enumerate(edges)}
    sigma, orbit_of, roots, weight_of_root = pricing_symmetry(
        None if rooted else route_orbits(shifts, ranks, resources, row_of, edges, shares),
        len(ranks), len(resources), ranks.index(root) if rooted else None)
    return _Problem(topology, ranks, span, edges, shares, resources, capacity, row_of, sigma,
                    orbit_of, roots, weight_of_root)


class _Pool:
    """The trees found so far (root, edges) and their columns of the LP (per orbit of
    resources: the load of the tree and its images)."""

    def __init__(self, problem: _Problem, trees=()) -> None:
        self.problem = problem
        self.trees: list[tuple[int, tuple[tuple[int, int], ...]]] = []
        self.columns: list[np.ndarray] = []
        self.seen: set = set()
        for c, found in trees:
            self.add(c, found)

    def add(self, c: int, found: tuple[tuple[int, int], ...]) -> bool:
        if (c, found) in self.seen:
            return False
        self.seen.add((c, found))
        self.trees.append((c, found))
        self.columns.append(self.problem.column(found))
        return True


def _generate(problem: _Problem, pool: _Pool, target: float, pricer, advance=None):
    """Column generation: solve the LP over the pool, price a tree per root at its duals
    with `pricer` (root, cost matrix → edges, or None), add those cheaper than the root's
    dual, until the rate reaches `target` or no tree improves it: (rate, weights, rounds)."""
    roots, weight_of_root = problem.roots, problem.weight_of_root
    capacity, per_resource = problem.orbit_capacity, problem.per_resource
    iterations = 0
    while True:
        iterations += 1
        if advance is not None:
            advance()
        rate, weights, y, z = master(pool.columns, pool.trees, roots, weight_of_root, capacity)
        if rate >= target * (1 - 1e-9) or iterations >= MAX_ITERATIONS:
            return rate, weights, iterations
        matrix = problem.cost_matrix(y[problem.orbit_of] * per_resource)
        added = 0
        for c, zc in zip(roots, z * weight_of_root):
            found = pricer(c, matrix)
            if found is None:
                continue
            price = float(sum(matrix[e] for e in found))
            if price < zc - EPS * max(1.0, zc):
                added += pool.add(c, found)
        if not added:
            return rate, weights, iterations
        if len(pool.columns) > 8 * (problem.rows + len(roots)):  # keep the LP small
            prune(pool.trees, pool.columns, pool.seen, weights, y,
                   dict(zip(roots, z * weight_of_root)))


def _depth(pool: _Pool, weights, rate: float) -> int:
    """The deepest tree the LP gives weight."""
    return max((max(Tree(c, found, 0.0).depths().values())
                for (c, found), w in zip(pool.trees, weights) if w > EPS * max(rate, EPS)),
               default=0)


def _shallower(problem: _Problem, pool: _Pool, goal: float):
    """The rate `goal` with trees of depth at most 2: the pool's, and trees priced by
    `arborescence.two_level` (a greedy, so this may stop short: then None, and the deeper
    trees stay). Else (the pool, rate, weights, rounds of pricing)."""
    shallow = _Pool(problem, [(c, found) for c, found in pool.trees
                              if max(Tree(c, found, 0.0).depths().values()) <= 2])
    start = problem.cost_matrix(1.0 / problem.capacity)
    first = [(c, problem.two_levels(c, start)) for c in problem.roots]
    if any(found is None for _, found in first):
        return None  # some root reaches not every rank in two levels
    for c, found in first:
        shallow.add(c, found)  # type: ignore[arg-type]  # (not None: checked)
    rate, weights, iterations = _generate(problem, shallow, goal, problem.two_levels)
    if rate < goal * (1 - 1e-9):
        return None
    balanced = _balanced(problem, shallow, rate)
    if balanced is not None:
        weights, more = balanced
        iterations += more
    return shallow, rate, weights, iterations


def _balanced(problem: _Problem, pool: _Pool, rate: float):
    """At `rate`, the weights of trees of two levels whose stages' busiest loads add up
    least (`lp.staged_master`: the fewer chunks the pipeline needs), with trees priced by
    `two_level` at its duals, each stage's edges at that stage's prices: (weights, rounds
    of pricing), or None if its LP does not solve (the weights found stay)."""
    stages = [problem.stages(c, found) for c, found in pool.trees]
    scaled = problem.per_resource
    for iterations in range(1, MAX_BALANCING + 1):
        solved = staged_master(stages, pool.trees, problem.roots, problem.weight_of_root,
                               problem.orbit_capacity, rate * (1 - 1e-9))
        if solved is None:
            return None
        weights, y_first, y_second, y_both, z = solved
        first = problem.cost_matrix((y_first + y_both)[problem.orbit_of] * scaled)
        second = problem.cost_matrix((y_second + y_both)[problem.orbit_of] * scaled)
        added = 0
        for c, zc in zip(problem.roots, z * problem.weight_of_root):
            matrix = second.copy()
            matrix[c] = first[c]  # the root's edges are the first stage's
            found = problem.two_levels(c, matrix)
            if found is not None and float(sum(matrix[e] for e in found)) < \
                    zc - EPS * max(1.0, zc) and pool.add(c, found):
                stages.append(problem.stages(c, found))
                added += 1
        if not added:
            break
    return weights, iterations


def _packing(problem: _Problem, kind: str, pool: _Pool, weights, rate: float, target: float,
             iterations: int) -> Packing:
    """The trees the LP weighs, with their images, and what `plan` needs of them."""
    sigma, n = problem.sigma, len(problem.ranks)
    packed = _expanded(pool.trees, weights, sigma, rate)
    seconds = problem.shares.multiply(1.0 / (problem.capacity[None, :])).tocsr()
    loads = np.array([problem.load(t.edges) / problem.capacity for t in packed]) if packed \
        else np.zeros((0, len(problem.resources)))
    regular = len(sigma) == n and len(set(sigma[:, 0].tolist())) == n
    scale = problem.scale
    return Packing(kind, packed, rate * scale, rate / target if target else 1.0, iterations,
                   loads, problem.resources, problem.row_of, seconds,
                   sigma[np.argsort(sigma[:, 0])] if regular and n > 1 else None)


def _expanded(trees: list, weights, sigma: np.ndarray, rate: float) -> tuple[Tree, ...]:
    """Each tree the LP weighs and its shifts, at its weight, in a fixed order."""
    expanded: dict[tuple, float] = {}
    for k, w in enumerate(weights):
        if w > EPS * max(rate, EPS):
            c, found = trees[k]
            for image in sigma:
                key = (int(image[c]), tuple((int(image[a]), int(image[b])) for a, b in found))
                expanded[key] = expanded.get(key, 0.0) + float(w)
    return tuple(Tree(c, found, w) for (c, found), w in sorted(expanded.items()))


def _routes(topology: Topology, nominal: dict, ranks: tuple[int, ...], inward: bool, span):
    """The tree edges (parent, child) that have a route, as an array; per edge the shares of
    its bytes each resource carries (rows of a sparse matrix; for in-trees the transfer runs
    child → parent); the resources' ids and nominal bandwidths."""
    from scipy.sparse import csr_array  # type: ignore[import-untyped]  # no types

    index: dict[int, int] = {}
    ids: list[int] = []
    bandwidth: list[float] = []
    edges: list[tuple[int, int]] = []
    rows: list[int] = []
    cols: list[int] = []
    values: list[float] = []
    for a, u in enumerate(ranks):
        for b, v in enumerate(ranks):
            if a == b:
                continue
            src, dst = (v, u) if inward else (u, v)
            try:
                shares = topology.route_resources(src, dst, span)
            except TopologyError:
                continue  # no route: not an edge of any tree
            for r, share in shares:
                if r not in index:
                    index[r] = len(ids)
                    ids.append(r)
                    bw = topology.resources[r].effective_bandwidth
                    bandwidth.append(float(bw.xreplace(nominal)))  # type: ignore[union-attr]
                rows.append(len(edges))
                cols.append(index[r])
                values.append(float(share))
            edges.append((a, b))
    if not ids:
        raise LimitError("no resource with a bandwidth joins the ranks: nothing to pack", span)
    matrix = csr_array((values, (rows, cols)), shape=(len(edges), len(ids)))
    return np.array(edges, dtype=np.int64), matrix, tuple(ids), np.array(bandwidth)


def _breadth_first(parent: np.ndarray, root: int) -> tuple[tuple[int, int], ...]:
    """A tree's edges (parent, child), parents before children, children by index."""
    children: dict[int, list[int]] = {}
    for v, p in enumerate(parent.tolist()):
        if p >= 0:
            children.setdefault(p, []).append(v)
    order, frontier = [], [root]
    while frontier:
        nxt = []
        for a in frontier:
            for b in children.get(a, ()):
                order.append((a, b))
                nxt.append(b)
        frontier = nxt
    return tuple(order)

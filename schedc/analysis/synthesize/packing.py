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
from .arborescence import min_arborescence, shallowest

MAX_ITERATIONS = 400  # rounds of pricing; each adds at most one tree per root
_EPS = 1e-9


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
    is priced — up to |G| times fewer rows, columns and arborescences."""
    inward = KINDS[kind].reduces
    n = len(ranks)
    rooted = KINDS[kind].rooted
    edges, shares, resources, capacity = _routes(topology, nominal, ranks, inward, span)
    row_of = {(int(a), int(b)): k for k, (a, b) in enumerate(edges)}
    sigma, orbit_of, roots, weight_of_root = _symmetry(
        None if rooted else _orbits(shifts, ranks, resources, row_of, edges, shares),
        n, len(resources), ranks.index(root) if rooted else None)
    order = len(sigma)
    rows = int(orbit_of.max()) + 1
    orbit_size = np.bincount(orbit_of, minlength=rows)
    scale = float(capacity.max())
    orbit_capacity = np.zeros(rows)
    orbit_capacity[orbit_of] = capacity / scale
    per_resource = order / orbit_size[orbit_of]  # a price's weight on each resource of an orbit
    trees: list[tuple[int, tuple[tuple[int, int], ...]]] = []
    columns: list[np.ndarray] = []
    seen: set = set()

    def cost_matrix(y_resources: np.ndarray) -> np.ndarray:
        matrix = np.full((n, n), np.inf)
        matrix[edges[:, 0], edges[:, 1]] = shares @ y_resources
        return matrix

    def tree(c: int, matrix: np.ndarray) -> tuple[tuple[int, int], ...]:
        try:
            parent = min_arborescence(matrix, c)
        except ValueError:
            raise TopologyError(f"not every rank can be reached from "
                                f"{topology.devices[ranks[c]].name}", span) from None
        return _breadth_first(shallowest(matrix, parent, c, 1e-12), c)

    def load(found) -> np.ndarray:
        return np.asarray(shares[[row_of[e] for e in found]].sum(axis=0)).ravel()

    def add(c: int, found: tuple[tuple[int, int], ...]) -> bool:
        if (c, found) in seen:
            return False
        seen.add((c, found))
        trees.append((c, found))
        columns.append(np.bincount(orbit_of, weights=load(found) * per_resource, minlength=rows))
        return True

    start = cost_matrix(1.0 / capacity)  # the first trees: the cheapest by bandwidth alone
    for c in roots:
        add(c, tree(c, start))
    target = optimum_rate / scale
    iterations = 0
    ticker = progress.ticker(f"synthesize: {kind} trees", MAX_ITERATIONS)
    while True:
        iterations += 1
        ticker.advance()
        rate, weights, y, z = _master(columns, trees, roots, weight_of_root, orbit_capacity)
        if rate >= target * (1 - 1e-9) or iterations >= MAX_ITERATIONS:
            break
        matrix = cost_matrix(y[orbit_of] * per_resource)
        added = 0
        for c, zc in zip(roots, z * weight_of_root):
            found = tree(c, matrix)
            price = float(sum(matrix[e] for e in found))
            if price < zc - _EPS * max(1.0, zc):
                added += add(c, found)
        if not added:
            break
        if len(columns) > 8 * (rows + len(roots)):  # keep the LP small: drop priced-out trees
            _prune(trees, columns, seen, weights, y, dict(zip(roots, z * weight_of_root)))
    ticker.finish()
    packed = _expanded(trees, weights, sigma, rate)
    seconds = shares.multiply(1.0 / (capacity[None, :])).tocsr()
    loads = np.array([load(t.edges) / capacity for t in packed]) if packed else \
        np.zeros((0, len(resources)))
    regular = len(sigma) == n and len(set(sigma[:, 0].tolist())) == n
    return Packing(kind, packed, rate * scale, rate / target if target else 1.0, iterations,
                   loads, resources, row_of, seconds,
                   sigma[np.argsort(sigma[:, 0])] if regular and n > 1 else None)


def _symmetry(orbits, n: int, resources: int, root: int | None):
    """(σ^k per shift, each resource's orbit, the roots to price, how many trees of the
    orbits each root's row counts); without orbits, every rank (or the root) alone."""
    sigma, orbit_of = orbits if orbits is not None else (
        np.arange(n)[None, :], np.arange(resources))
    roots = [root] if root is not None else sorted({int(sigma[:, a].min()) for a in range(n)})
    weight_of_root = np.array([len(sigma) / len({int(x) for x in sigma[:, c]}) for c in roots])
    return sigma, orbit_of, roots, weight_of_root


def _expanded(trees: list, weights, sigma: np.ndarray, rate: float) -> tuple[Tree, ...]:
    """Each tree the LP weighs and its shifts, at its weight, in a fixed order."""
    expanded: dict[tuple, float] = {}
    for k, w in enumerate(weights):
        if w > _EPS * max(rate, _EPS):
            c, found = trees[k]
            for image in sigma:
                key = (int(image[c]), tuple((int(image[a]), int(image[b])) for a, b in found))
                expanded[key] = expanded.get(key, 0.0) + float(w)
    return tuple(Tree(c, found, w) for (c, found), w in sorted(expanded.items()))


def _prune(trees: list, columns: list, seen: set, weights, y, z_of: dict) -> None:
    """Drop the trees the last LP gave no weight and priced out (before the next LP, so its
    weights always index the trees kept); they may come back when priced in again."""
    old = len(weights)  # the trees the LP saw; those added since are kept
    slack = [float(col @ y) - z_of[c] for col, (c, _) in zip(columns[:old], trees[:old])]
    keep = [k for k in range(len(columns)) if k >= old or weights[k] > 0 or slack[k] <= _EPS]
    for k in set(range(len(columns))) - set(keep):
        seen.discard(trees[k])
    trees[:] = [trees[k] for k in keep]
    columns[:] = [columns[k] for k in keep]


def _orbits(shifts: tuple[HostShift, ...], ranks: tuple[int, ...], resources: tuple[int, ...],
            row_of: dict, edges: np.ndarray, shares) -> tuple[np.ndarray, np.ndarray] | None:
    """(each element of the group the shifts make, on rank indices; each resource's orbit),
    from the shifts that map the ranks onto themselves and every edge's route onto the image
    edge's route (the others are left out); None if none does."""
    generators = [g for g in (_generator(s, ranks, resources, row_of, edges, shares)
                              for s in shifts) if g is not None]
    if not generators:
        return None
    sigma = np.arange(len(ranks))[None, :]
    parent = np.arange(len(resources))  # union-find over the generators' resource maps

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = int(parent[x])
        return x

    for powers, rho in generators:  # shifts commute: the group is every product of powers
        sigma = np.unique(np.concatenate([p[sigma] for p in powers]), axis=0)
        for e, image in enumerate(rho.tolist()):
            parent[find(e)] = find(image)
    roots = [find(e) for e in range(len(resources))]
    _, orbit_of = np.unique(roots, return_inverse=True)
    return sigma, orbit_of.ravel()


def _generator(shift: HostShift, ranks, resources, row_of, edges, shares):
    """(σ^k on rank indices for k = 0..order-1, ρ on resource indices) for one shift, if it
    keeps the ranks and carries every edge's loads onto its image edge's; else None."""
    position = {d: k for k, d in enumerate(ranks)}
    ids = np.asarray(ranks, dtype=np.int64)
    try:
        powers = np.array([[position[int(d)] for d in shift.devices.power(k, ids)]
                           for k in range(shift.order)])
    except KeyError:
        return None
    local = {r: k for k, r in enumerate(resources)}
    try:
        rho = np.array([local[int(r)] for r in shift.resources.power(1, np.asarray(resources))])
    except KeyError:
        return None
    image_rows = [row_of.get((int(powers[1, a]), int(powers[1, b]))) for a, b in edges]
    if any(r is None for r in image_rows):
        return None
    moved = shares[image_rows].toarray()  # the image edges' loads, as rows
    mapped = np.zeros_like(moved)
    mapped[:, rho] = shares.toarray()  # each edge's loads carried to the images of resources
    if not np.allclose(moved, mapped, rtol=1e-12, atol=0):
        return None
    return powers, rho


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


def _master(columns, trees, roots, weight_of_root, capacity):
    """The restricted LP: (r, tree weights, resource duals y, root duals z); a root's row
    counts each of its trees `weight_of_root` times (its shifts that root there)."""
    from scipy.optimize import linprog  # type: ignore[import-untyped]  # no types
    from scipy.sparse import csr_array, hstack, vstack

    m, t = len(capacity), len(columns)
    row_of = {c: k for k, c in enumerate(roots)}
    loads = csr_array(np.column_stack(columns))  # resources × trees
    owner = np.zeros((len(roots), t))
    for k, (c, _) in enumerate(trees):
        owner[row_of[c], k] = -weight_of_root[row_of[c]]
    a_ub = vstack([hstack([loads, csr_array((m, 1))]),
                   hstack([csr_array(owner), csr_array(np.ones((len(roots), 1)))])])
    b_ub = np.concatenate([capacity, np.zeros(len(roots))])
    objective = np.zeros(t + 1)
    objective[-1] = -1.0
    result = linprog(objective, A_ub=a_ub, b_ub=b_ub, bounds=(0, None), method="highs")
    if result.status != 0:
        raise LimitError(f"the packing LP did not solve: {result.message}")
    marginals = -np.asarray(result.ineqlin.marginals)
    return float(result.x[-1]), np.asarray(result.x[:-1]), marginals[:m], marginals[m:]

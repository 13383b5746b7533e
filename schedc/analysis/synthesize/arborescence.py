"""Minimum spanning arborescences on a dense cost matrix (Chu–Liu/Edmonds), for pricing.

networkx's `minimum_spanning_arborescence` took 27 ms for 16 ranks and 94 % of a packing's
time (benchmarks/synthesis.py); on a dense matrix each contraction is a few NumPy
operations, and a packing prices thousands of trees.
"""

from __future__ import annotations

import numpy as np


def min_arborescence(cost: np.ndarray, root: int) -> np.ndarray:
    """parent[v] of the spanning out-tree from `root` of least Σ cost[parent[v], v]
    (parent[root] = -1). `cost[u, v]` is the cost of edge u → v, inf where there is none;
    raises ValueError if some node cannot be reached.

    Each level takes every node's cheapest entering edge; if they form cycles, all of them
    are contracted at once (an edge into a cycle costs less the edge it replaces) and the
    smaller problem is solved the same way, then expanded. With many equal costs (a
    packing's prices are mostly 0) many cycles form per level, so few levels are needed."""
    n = len(cost)
    w = cost.astype(float, copy=True)
    np.fill_diagonal(w, np.inf)
    w[:, root] = np.inf
    parent = np.argmin(w, axis=0)
    best = w[parent, np.arange(n)]
    best[root] = 0.0
    if np.isinf(best).any():
        raise ValueError("some node has no edge into it")
    parent[root] = -1
    cycles = _cycles(parent, root)
    if not cycles:
        return parent
    group = np.full(n, -1)  # node -> its node in the contracted problem
    for k, cycle in enumerate(cycles):
        group[cycle] = k
    alone = np.flatnonzero(group < 0)
    group[alone] = len(cycles) + np.arange(len(alone))
    size = len(cycles) + len(alone)
    in_cycle = group < len(cycles)
    reduced = w - np.where(in_cycle, best, 0.0)[None, :]  # entering a cycle replaces its edge
    order = np.argsort(group, kind="stable")
    starts = np.searchsorted(group[order], np.arange(size))
    rows = np.minimum.reduceat(reduced[order], starts, axis=0)  # group × node
    small = np.minimum.reduceat(rows[:, order], starts, axis=1)  # group × group
    np.fill_diagonal(small, np.inf)
    contracted = min_arborescence(small, int(group[root]))
    # Expand: into each group, the edge its contracted parent edge stands for — the target
    # of least reduced cost from the parent group, and the cheapest source there.
    above = contracted[group]  # each node's group's parent group (-1: the root's)
    entering = np.where(above >= 0, rows[above.clip(0), np.arange(n)], np.inf)
    by_group = np.lexsort((entering, group))
    firsts = by_group[np.searchsorted(group[by_group], np.arange(size))]
    targets = firsts[contracted[group[firsts]] >= 0]
    sources = contracted[group[targets]]
    costs = np.where(group[:, None] == sources[None, :], reduced[:, targets], np.inf)
    result = parent.copy()
    result[~in_cycle] = -1
    result[targets] = np.argmin(costs, axis=0)  # a cycle keeps its other edges
    result[root] = -1
    return result


def _cycles(parent: np.ndarray, root: int) -> list[list[int]]:
    """Every cycle of the parent pointers (the nodes on each, in order)."""
    state = [0] * len(parent)  # 0 new, 1 on the current walk, 2 done
    state[root] = 2
    up = parent.tolist()
    found = []
    for start in range(len(up)):
        walk = []
        v = start
        while state[v] == 0:
            state[v] = 1
            walk.append(v)
            v = up[v]
        if state[v] == 1:  # came back to the walk: a cycle
            found.append(walk[walk.index(v):])
        for x in walk:
            state[x] = 2
    return found


def shallowest(cost: np.ndarray, parent: np.ndarray, root: int, tolerance: float) -> np.ndarray:
    """A tree as cheap as `parent` with every node as near the root as it can be: each node
    may take any parent whose edge costs no more than its own edge (plus `tolerance`), and
    a breadth-first search over those edges picks the nearest (the lowest index on a tie).
    Pipelined, a tree of depth D costs D - 1 rounds of fill, so shallow trees are worth it."""
    n = len(cost)
    own = cost[parent.clip(0), np.arange(n)]
    allowed = cost <= own[None, :] + tolerance
    np.fill_diagonal(allowed, False)
    allowed[:, root] = False
    result = np.full(n, -1)
    reached = np.zeros(n, dtype=bool)
    reached[root] = True
    frontier = [root]
    while frontier:
        nxt = []
        for u in frontier:
            for v in np.flatnonzero(allowed[u] & ~reached):
                reached[v] = True
                result[v] = u
                nxt.append(int(v))
        frontier = nxt
    return result if reached.all() else parent


def two_level(cost: np.ndarray, root: int) -> np.ndarray | None:
    """parent[v] of a cheap spanning out-tree from `root` of depth at most 2, or None if
    there is none (some node reached neither from the root nor from a child of it).

    Which children of the root relay to which nodes is a facility location problem (a
    relay costs its edge from the root and serves nodes more cheaply than the root does),
    so this is a greedy, not a minimum: starting from the star, it makes the node whose
    relaying saves most a relay, and moves to it each node it serves more cheaply, while
    that saves anything."""
    n = len(cost)
    w = cost.astype(float, copy=True)
    np.fill_diagonal(w, np.inf)
    w[:, root] = np.inf
    finite = w[np.isfinite(w)]
    if not len(finite):
        return None
    big = (float(np.abs(finite).max()) + 1.0) * 4 * n  # no edge: dearer than any tree
    w[~np.isfinite(w)] = big
    parent = np.full(n, root)
    parent[root] = -1
    paid = w[root].copy()
    paid[root] = 0.0
    relay = np.zeros(n, dtype=bool)
    relay[root] = True
    tolerance = 1e-12 * max(float(np.abs(paid).sum()), 1e-300)
    for _ in range(n):
        movable = ~relay
        saving = np.maximum(paid[None, :] - w, 0.0) * movable[None, :]  # [relay u, node v]
        gain = saving.sum(axis=1) - (w[root] - paid)  # u itself then hangs from the root
        gain[relay] = -np.inf
        u = int(np.argmax(gain))
        if gain[u] <= tolerance:
            break
        relay[u], parent[u], paid[u] = True, root, w[root, u]
        served = ~relay & (w[u] < paid)
        parent[served], paid[served] = u, w[u, served]
    return None if (paid >= big).any() else parent

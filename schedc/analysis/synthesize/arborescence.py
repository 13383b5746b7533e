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
    raises ValueError if some node cannot be reached."""
    n = len(cost)
    w = cost.astype(float, copy=True)
    np.fill_diagonal(w, np.inf)
    w[:, root] = np.inf
    parent = np.argmin(w, axis=0)
    best = w[parent, np.arange(n)]
    if np.isinf(np.delete(best, root)).any():
        raise ValueError("some node has no edge into it")
    parent[root] = -1
    cycle = _cycle(parent, root)
    if cycle is None:
        return parent
    # Contract the cycle into one node (the last index) and solve the smaller problem.
    inside = np.zeros(n, dtype=bool)
    inside[cycle] = True
    outside = np.flatnonzero(~inside)
    m = len(outside)
    small = np.full((m + 1, m + 1), np.inf)
    small[:m, :m] = w[np.ix_(outside, outside)]
    entering = w[np.ix_(outside, cycle)] - best[cycle]  # u → v in the cycle, less v's edge
    enter_at = np.argmin(entering, axis=1)
    small[:m, m] = entering[np.arange(m), enter_at]
    leaving = w[np.ix_(cycle, outside)]
    leave_from = np.argmin(leaving, axis=0)
    small[m, :m] = leaving[leave_from, np.arange(m)]
    contracted = min_arborescence(small, int(np.flatnonzero(outside == root)[0]))
    result = parent.copy()
    for k, v in enumerate(outside):
        p = contracted[k]
        result[v] = -1 if p < 0 else (outside[p] if p < m else cycle[leave_from[k]])
    into = int(contracted[m])  # the cycle's parent in the contracted tree
    v_in = cycle[enter_at[into]]
    result[v_in] = outside[into]
    return result


def _cycle(parent: np.ndarray, root: int) -> list[int] | None:
    """A cycle of the parent pointers, if any (the nodes on it, in order)."""
    state = np.zeros(len(parent), dtype=np.int8)  # 0 new, 1 on the current walk, 2 done
    state[root] = 2
    for start in range(len(parent)):
        walk = []
        v = start
        while state[v] == 0:
            state[v] = 1
            walk.append(v)
            v = parent[v]
        if state[v] == 1:  # came back to the walk: a cycle
            return walk[walk.index(v):]
        for x in walk:
            state[x] = 2
    return None


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

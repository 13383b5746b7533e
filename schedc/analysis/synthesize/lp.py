"""The LPs of a packing, over the trees found so far (columns), solved by HiGHS (SciPy).

`master` maximises the rate r every root gets; `staged_master`, for trees of two levels at
a given rate, minimises the busiest resource's load in the first stage plus that in the
second: a pipeline of K chunks then costs the steady state plus that excess over K
(`plan.Plan.bandwidth_time`), so it needs fewer chunks.
"""

from __future__ import annotations

import numpy as np

from ...errors import LimitError

EPS = 1e-9


def master(columns, trees, roots, weight_of_root, capacity):
    """The restricted LP: (r, tree weights, resource duals y, root duals z); a root's row
    counts each of its trees `weight_of_root` times (its shifts that root there)."""
    from scipy.optimize import linprog  # type: ignore[import-untyped]  # no types
    from scipy.sparse import csr_array, hstack, vstack  # type: ignore[import-untyped]

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


def staged_master(stages, trees, roots, weight_of_root, capacity, goal: float):
    """min t1 + t2 subject to each stage's loads within t_d of every capacity, the loads of
    both within it, and every root at `goal`: (weights, duals of stage 1, of stage 2, of
    the capacities, of the roots), or None if the LP did not solve. `stages` holds each
    tree's two columns (its edges into depth 1, into depth 2)."""
    from scipy.optimize import linprog
    from scipy.sparse import csr_array, hstack, vstack

    m, t = len(capacity), len(stages)
    first = csr_array(np.column_stack([s[0] for s in stages]))
    second = csr_array(np.column_stack([s[1] for s in stages]))
    row_of = {c: k for k, c in enumerate(roots)}
    owner = np.zeros((len(roots), t))
    for k, (c, _) in enumerate(trees):
        owner[row_of[c], k] = -weight_of_root[row_of[c]]
    column = csr_array(capacity[:, None])
    none = csr_array((m, 1))
    a_ub = vstack([hstack([first, -column, none]), hstack([second, none, -column]),
                   hstack([first + second, none, none]),
                   hstack([csr_array(owner), csr_array((len(roots), 2))])])
    b_ub = np.concatenate([np.zeros(2 * m), capacity, np.full(len(roots), -goal)])
    objective = np.concatenate([np.zeros(t), [1.0, 1.0]])
    result = linprog(objective, A_ub=a_ub, b_ub=b_ub, bounds=(0, None), method="highs")
    if result.status != 0:
        return None
    y = -np.asarray(result.ineqlin.marginals)
    return np.asarray(result.x[:t]), y[:m], y[m:2 * m], y[2 * m:3 * m], y[3 * m:]


def prune(trees: list, columns: list, seen: set, weights, y, z_of: dict) -> None:
    """Drop the trees the last LP gave no weight and priced out (before the next LP, so its
    weights always index the trees kept); they may come back when priced in again."""
    old = len(weights)  # the trees the LP saw; those added since are kept
    slack = [float(col @ y) - z_of[c] for col, (c, _) in zip(columns[:old], trees[:old])]
    keep = [k for k in range(len(columns)) if k >= old or weights[k] > 0 or slack[k] <= EPS]
    for k in set(range(len(columns))) - set(keep):
        seen.discard(trees[k])
    trees[:] = [trees[k] for k in keep]
    columns[:] = [columns[k] for k in keep]

"""The full formula of one instance with every term kept, for the fit in n.

`cost.formula` keeps, per round and bandwidth group, only the largest load: the right time at
that instance, but a load that is smaller there (a side link's V/64 next to a ring's V/p at
p = 8) is gone, and a fit over n cannot see that it binds from p = 65 on. Here each round
class keeps every distinct load of every bandwidth group as a term of its Max, and rounds
are grouped by all of them, so the fitted formula has every argument any n can need, and the
point where another argument takes over is a condition solved exactly (`ends.dominance`).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import sympy

from ...cost.lower import Loads
from ...model.topology import Topology
from .fitting import Shape, linear_shape

ONE = Fraction(1)


def full_shape(loads: Loads, topology: Topology, alpha) -> Shape:
    """Per round class (in order of its first round): its count, start-up, and per term the
    bandwidth, the size symbols and their coefficients, largest load first in each group."""
    # A bandwidth c·B with c rational is grouped with B, and c is a slot of its term: a
    # fabric link of bandwidth n·B/2 (written in n) is one term V·k(n)/(c(n)·B) at every n,
    # k and c fitted on their own (their quotient may be outside the basis: 1/n²).
    groups: dict = {}
    group_of = np.full(len(topology.resources), -1, dtype=np.int64)
    factor: dict[int, Fraction] = {}
    split: dict = {}  # bandwidth -> (c, B), once per distinct bandwidth
    for r in topology.resources:
        bandwidth = r.effective_bandwidth
        if bandwidth is not None:
            if bandwidth not in split:  # (a SymPy expression here: scale keeps formulas)
                c, rest = sympy.sympify(bandwidth).as_coeff_Mul()
                split[bandwidth] = (Fraction(int(c.p), int(c.q)), rest) \
                    if c.is_Rational and c > 0 else (ONE, bandwidth)
            factor[r.id], bandwidth = split[bandwidth]
            group_of[r.id] = groups.setdefault(bandwidth, len(groups))
    bandwidths = list(groups)
    n_shapes = len(loads.shape_cross)
    per_shape: list[dict[int, set[tuple]]] = [{} for _ in range(n_shapes)]
    entry_group = group_of[loads.resource]
    for shape, g, vector, r in zip(loads.shape.tolist(), entry_group.tolist(),
                                   loads.amount.tolist(), loads.resource.tolist()):
        if g >= 0 and any(vector):
            per_shape[shape].setdefault(g, set()).add((tuple(vector), factor.get(r, ONE)))

    def exact(vector: tuple[int, ...], c: Fraction) -> tuple[Fraction, ...]:
        """The load over c, then c (each distinct entry once: the entries are many)."""
        return (*(Fraction(x, d) / c for x, d in zip(vector, loads.denominators)), c)
    signature = [(loads.shape_latency[s], tuple(
        (g, tuple(sorted((exact(*e) for e in per_shape[s][g]), reverse=True)))
        for g in sorted(per_shape[s]))) for s in range(n_shapes)]
    classes: dict[tuple, list[int]] = {}  # signature -> [count, first round]
    for round_index, shape in enumerate(loads.shape_of.tolist()):
        entry = classes.setdefault(signature[shape], [0, round_index])
        entry[0] += 1
    key, slots = [], []
    seen: dict[tuple, int] = {}
    for (latency, terms), (count, _) in sorted(classes.items(), key=lambda item: item[1][1]):
        startup = linear_shape(alpha + latency)
        term_key, coefficients = [], []
        for g, vectors in terms:
            for *vector, c in vectors:  # the load over c, then c
                load = [(s, a * c) for s, a in zip(loads.basis, vector) if a]
                term_key.append((bandwidths[g], tuple(s for s, _ in load), "c"))
                coefficients += [*(a for _, a in load), c]
        kind = (startup.key, tuple(term_key))
        seen[kind] = seen.get(kind, -1) + 1
        key.append((kind, seen[kind]))
        slots += [Fraction(count), *startup.slots, *coefficients]
    return Shape(("classes", tuple(key)), tuple(slots))

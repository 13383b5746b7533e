"""Loads → time: T = Σ_r (α + max_e V[r,e]/B[e]) as a SymPy formula, and its regime form.

Resources with the same bandwidth expression compete in one term, so a round's time is α
plus the Max over bandwidth groups of (largest load in the group)/bandwidth. Rounds with the
same terms form a *class*; SymPy objects are built per class, never per round or transfer.

The regime form picks, at the nominal point, the dominating term of every class, and states
the conditions under which that choice holds (e.g. B_L >= B_N).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import sympy

from .ir import LinearBytes, linear_expr
from .lower import Loads
from .topology import Topology


@dataclass(frozen=True)
class Term:
    """One candidate of a round's Max: the largest load of a bandwidth group over its bandwidth."""

    load: LinearBytes
    bandwidth: sympy.Expr
    resources: tuple[int, ...]  # the resources carrying that load in the class's first round

    @property
    def expr(self) -> sympy.Expr:
        return linear_expr(self.load) / self.bandwidth


@dataclass(frozen=True)
class RoundClass:
    count: int
    first: int  # index of its first round
    startup: sympy.Expr
    terms: tuple[Term, ...]  # no term is a constant multiple of another
    dominant: int | None  # index of the term that dominates at the nominal point

    @property
    def time(self) -> sympy.Expr:
        if not self.terms:
            return self.startup
        if len(self.terms) == 1:
            return self.startup + self.terms[0].expr
        # Unevaluated: the terms are already irredundant, and SymPy's own pairwise
        # comparisons would only cost time.
        return self.startup + sympy.Max(*[t.expr for t in self.terms], evaluate=False)

    @property
    def regime_time(self) -> sympy.Expr:
        if self.dominant is None:
            return self.startup
        return self.startup + self.terms[self.dominant].expr


@dataclass(frozen=True)
class Cost:
    formula: sympy.Expr
    regime_formula: sympy.Expr
    conditions: tuple[sympy.Expr, ...]  # relations under which the regime form holds
    classes: tuple[RoundClass, ...]
    rounds: int
    cross_rounds: int
    bytes_cross: LinearBytes
    bytes_logical: LinearBytes


def cost(loads: Loads, topology: Topology, alpha: sympy.Expr,
         nominal: dict[sympy.Symbol, sympy.Expr]) -> Cost:
    groups, group_of = _bandwidth_groups(topology)
    entry_group = group_of[loads.resource]
    signatures = _shape_signatures(loads, entry_group, len(groups))
    shape_count = np.bincount(loads.shape_of, minlength=len(signatures))
    _, shape_first = np.unique(loads.shape_of, return_index=True)
    by_signature: dict[tuple, list[int]] = {}
    for shape, signature in enumerate(signatures):
        by_signature.setdefault(signature, []).append(shape)
    classes = []
    for signature, shapes in by_signature.items():
        first_shape = shapes[0]
        terms = _irredundant([Term(loads.form(vector), groups[g],
                                   _carriers(loads, entry_group, first_shape, g, vector))
                              for g, vector in signature])
        values = [t.expr.xreplace(nominal) for t in terms]
        dominant = max(range(len(terms)), key=lambda k: (values[k], -k)) if terms else None
        count = int(sum(shape_count[s] for s in shapes))
        classes.append(RoundClass(count, int(shape_first[first_shape]), alpha, terms, dominant))
    classes.sort(key=lambda c: c.first)
    formula = sympy.Add(*[c.count * c.time for c in classes])
    regime = sympy.Add(*[c.count * c.regime_time for c in classes])
    return Cost(formula, regime, _conditions(classes), tuple(classes), loads.rounds,
                int(loads.cross_rounds.sum()), loads.bytes_cross, loads.bytes_logical)


def _bandwidth_groups(topology: Topology) -> tuple[list[sympy.Expr], np.ndarray]:
    """Resources with equal bandwidth expressions share a group (-1: no bandwidth)."""
    groups: list[sympy.Expr] = []
    index: dict[sympy.Expr, int] = {}
    group_of = np.full(len(topology.resources), -1, dtype=np.int64)
    for r in topology.resources:
        if r.bandwidth is not None:
            group_of[r.id] = index.setdefault(r.bandwidth, len(groups))
            if group_of[r.id] == len(groups):
                groups.append(r.bandwidth)
    return groups, group_of


def _shape_signatures(loads: Loads, entry_group: np.ndarray, n_groups: int) -> list[tuple]:
    """Per round shape, its terms: ((group, vector), ...), a vector being the largest load (per
    size symbol) in that bandwidth group; with several size symbols, every undominated one."""
    n_shapes = len(loads.shape_cross)
    if loads.amount.dtype != object and loads.amount.shape[1] <= 1:
        peak = np.zeros((n_shapes, n_groups), dtype=np.int64)
        if loads.amount.shape[1]:
            np.maximum.at(peak, (loads.shape, entry_group), loads.amount[:, 0])
        return [tuple((int(g), (int(row[g]),)) for g in np.flatnonzero(row)) for row in peak]
    per_shape: list[dict[int, set]] = [{} for _ in range(n_shapes)]
    for shape, g, vector in zip(loads.shape.tolist(), entry_group.tolist(), loads.amount.tolist()):
        per_shape[shape].setdefault(g, set()).add(tuple(int(x) for x in vector))
    return [tuple((g, v) for g in sorted(by_group) for v in sorted(_pareto(by_group[g])))
            for by_group in per_shape]


def _irredundant(terms: list[Term]) -> tuple[Term, ...]:
    """Drop a term that is a constant fraction (<= 1) of another: it can never dominate."""
    kept: list[Term] = []
    for term in terms:
        ratios = [sympy.cancel(term.expr / k.expr) for k in kept]
        if any(r.is_number and r <= 1 for r in ratios):
            continue
        kept = [k for k, r in zip(kept, ratios) if not (r.is_number and r > 1)] + [term]
    return tuple(kept)


def _pareto(vectors: set[tuple]) -> list[tuple]:
    return [v for v in vectors
            if not any(w != v and all(a >= b for a, b in zip(w, v)) for w in vectors)]


def _carriers(loads: Loads, entry_group: np.ndarray, shape: int, group: int, vector) -> tuple[int, ...]:
    return tuple(int(loads.resource[k]) for k in loads.entries(shape)
                 if entry_group[k] == group and tuple(int(x) for x in loads.amount[k]) == tuple(vector))


def _conditions(classes) -> tuple[sympy.Expr, ...]:
    """For each class, dominant term >= every other term, as simple relations, deduplicated."""
    seen: dict[str, sympy.Expr] = {}
    for c in classes:
        if c.dominant is None:
            continue
        winner = c.terms[c.dominant].expr
        for k, term in enumerate(c.terms):
            if k == c.dominant:
                continue
            numerator, denominator = sympy.fraction(sympy.cancel(winner / term.expr))
            relation = sympy.Ge(numerator, denominator)
            if relation is sympy.true:
                continue
            seen.setdefault(str(relation), relation)
    return tuple(seen.values())


def nominal_value(expr: sympy.Expr, nominal: dict) -> Fraction:
    """The exact value of an expression at the nominal point."""
    value = expr.xreplace(nominal)
    if value.is_Rational:
        return Fraction(int(value.p), int(value.q))
    return Fraction(float(value))

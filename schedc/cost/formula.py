"""Loads → time: T = Σ_r (α + max_e V[r,e]/B[e]) as a SymPy formula, and its regime form.

Resources with the same bandwidth expression compete in one term, so a round's time is α
plus the Max over bandwidth groups of (largest load in the group)/bandwidth. Rounds with the
same terms form a *class*; SymPy objects are built per class, never per round or transfer.

The regime form picks, at the nominal point, the dominating term of every class, and states
the conditions under which that choice holds (e.g. B_L >= B_N).

Latency and windows. A round's start-up is α plus the largest route latency of its transfers
(a Max when routes differ); a resource with an in-flight window has the effective bandwidth
Min(B, window/latency). Both stay plain SymPy; the regime form resolves each Min and Max to
its branch at the nominal point and adds the conditions for that choice. A class whose
dominating resource is held to window/latency is *window-limited*.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import sympy

from ..model.ir import LinearBytes, linear_expr
from ..model.topology import Topology
from ..model.values import from_rational
from .lower import Loads
from .regimes import at_least


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
    startup: sympy.Expr  # α plus the largest route latency
    terms: tuple[Term, ...]  # no term is a constant multiple of another
    dominant: int | None  # index of the term that dominates at the nominal point
    regime_time: sympy.Expr  # start-up + dominant term, every Min/Max resolved at the nominal point
    window_limited: bool = False  # the dominant term's bandwidth is window/latency
    tied: tuple[int, ...] = ()  # the other terms exactly as large as the dominant one, nominally
    overlapped: bool = False  # `step cost max`: max(start-up, terms), else start-up + max(terms)
    startup_bound: bool = False  # overlapped, and the start-up outlasts every term, nominally

    @property
    def time(self) -> sympy.Expr:
        return step_time(self.startup, [t.expr for t in self.terms], self.overlapped)


def step_time(startup: sympy.Expr, terms: list[sympy.Expr], overlapped: bool) -> sympy.Expr:
    """One round: α + max(terms) (`step cost sum`), or max(α, terms) (`step cost max`).
    Unevaluated Max: the terms are already irredundant, and SymPy's own pairwise
    comparisons would only cost time.

    >>> a, x, y = sympy.symbols("a x y", positive=True)
    >>> step_time(a, [x, y], False), step_time(a, [x], True), step_time(sympy.Integer(0), [x], True)
    (a + Max(x, y), Max(a, x), x)
    """
    if overlapped and startup != 0 and terms:
        return sympy.Max(startup, *terms, evaluate=False)
    if not terms:
        return startup
    body = terms[0] if len(terms) == 1 else sympy.Max(*terms, evaluate=False)
    return body if overlapped else startup + body


@dataclass(frozen=True)
class ProtocolTime:
    """A schedule's time under one protocol (see `cost.protocols`)."""

    name: str
    formula: sympy.Expr
    value: Fraction  # seconds at the nominal point


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
    protocol: str | None = None  # with protocols: the one that wins at the nominal point
    protocol_times: tuple[ProtocolTime, ...] = ()  # with protocols: each one's time
    chunk: sympy.Expr | None = None  # `step cost pipelined chunk Q`: Q (bytes)
    chunks: sympy.Expr | None = None  # ... and C = max(1, size/Q), the chunks of the call


def cost(loads: Loads, topology: Topology, alpha: sympy.Expr,
         nominal: dict[sympy.Symbol, sympy.Expr], overlapped: bool = False,
         apart: frozenset[str] = frozenset()) -> Cost:
    """The time of the rounds `loads`; `overlapped`: each round costs max(α, its transfer)
    (`step cost max`), else their sum. `apart`: link classes that a protocol gives a share or
    cap of their own, whose terms are never merged with or dropped for another class's (what
    dominates depends on the protocol)."""
    groups, group_of = _bandwidth_groups(topology, apart)
    entry_group = group_of[loads.resource]
    signatures = _shape_signatures(loads, entry_group, len(groups))
    shape_count = np.bincount(loads.shape_of, minlength=len(signatures))
    _, shape_first = np.unique(loads.shape_of, return_index=True)
    by_signature: dict[tuple, list[int]] = {}
    for shape, signature in enumerate(signatures):
        by_signature.setdefault((loads.shape_latency[shape], signature), []).append(shape)
    classes = []
    conditions: dict[str, sympy.Expr] = {}
    for (latency, signature), shapes in by_signature.items():
        first_shape = shapes[0]
        terms = _irredundant([Term(loads.form(vector), groups[g],
                                   _carriers(loads, entry_group, first_shape, g, vector))
                              for g, vector in signature], topology, apart)
        dominant = winner([t.expr for t in terms], nominal) if terms else None
        count = int(sum(shape_count[s] for s in shapes))
        startup = alpha + latency
        regime = step_time(startup, [] if dominant is None else [terms[dominant].expr],
                           overlapped)
        limited = dominant is not None and any(
            topology.resources[r].window_limited(nominal) for r in terms[dominant].resources)
        classes.append(RoundClass(count, int(shape_first[first_shape]), startup, terms, dominant,
                                  resolve(regime, nominal, conditions), limited,
                                  _tied(terms, dominant, nominal), overlapped,
                                  overlapped and _outlasts(startup, terms, dominant, nominal)))
        _dominance(terms, dominant, nominal, conditions)
    classes.sort(key=lambda c: c.first)
    formula = sympy.Add(*[c.count * c.time for c in classes])
    regime = sympy.Add(*[c.count * c.regime_time for c in classes])
    return Cost(formula, regime, tuple(conditions.values()), tuple(classes), loads.rounds,
                int(loads.cross_rounds.sum()), loads.bytes_cross, loads.bytes_logical)


def _bandwidth_groups(topology: Topology, apart: frozenset[str]
                      ) -> tuple[list[sympy.Expr], np.ndarray]:
    """Resources with equal bandwidth expressions (and, for a class in `apart`, of that
    class) share a group (-1: no bandwidth)."""
    groups: list[sympy.Expr] = []
    index: dict[tuple, int] = {}
    group_of = np.full(len(topology.resources), -1, dtype=np.int64)
    for r in topology.resources:
        bandwidth = r.effective_bandwidth
        if bandwidth is not None:
            key = (bandwidth, r.cls if r.cls in apart else None)
            group_of[r.id] = index.setdefault(key, len(groups))
            if group_of[r.id] == len(groups):
                groups.append(bandwidth)
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


def _irredundant(terms: list[Term], topology: Topology, apart: frozenset[str]
                 ) -> tuple[Term, ...]:
    """Drop a term that is a constant fraction (<= 1) of another of the same classes in
    `apart`: it can never dominate, under any protocol."""
    def key(term: Term) -> frozenset[str]:
        return frozenset(topology.resources[r].cls for r in term.resources) & apart

    kept: list[Term] = []
    for term in terms:
        ratios = [sympy.cancel(term.expr / k.expr) if key(k) == key(term) else None
                  for k in kept]
        if any(r is not None and r.is_number and r <= 1 for r in ratios):
            continue
        kept = [k for k, r in zip(kept, ratios)
                if r is None or not (r.is_number and r > 1)] + [term]
    return tuple(kept)


def _outlasts(startup: sympy.Expr, terms: tuple[Term, ...], dominant: int | None,
              nominal: dict) -> bool:
    return dominant is None or bool(startup.xreplace(nominal) >= terms[dominant].expr.xreplace(nominal))


def _tied(terms: tuple[Term, ...], dominant: int | None, nominal: dict) -> tuple[int, ...]:
    """The terms other than the dominant one with exactly its value at the nominal point (a
    NIC and an uplink both saturated, say): every one of them is a bottleneck of the class."""
    if dominant is None or len(terms) == 1:
        return ()
    best = terms[dominant].expr.xreplace(nominal)
    return tuple(k for k, t in enumerate(terms) if k != dominant and t.expr.xreplace(nominal) == best)


def _pareto(vectors: set[tuple]) -> list[tuple]:
    return [v for v in vectors
            if not any(w != v and all(a >= b for a, b in zip(w, v)) for w in vectors)]


def _carriers(loads: Loads, entry_group: np.ndarray, shape: int, group: int, vector) -> tuple[int, ...]:
    return tuple(int(loads.resource[k]) for k in loads.entries(shape)
                 if entry_group[k] == group and tuple(int(x) for x in loads.amount[k]) == tuple(vector))


def _dominance(terms: tuple[Term, ...], dominant: int | None, nominal: dict,
               conditions: dict[str, sympy.Expr]) -> None:
    """Add the relations under which the dominant term is >= every other term."""
    if dominant is None:
        return
    resolved = [resolve(t.expr, nominal, conditions) for t in terms]
    for k, term in enumerate(resolved):
        if k != dominant:
            _note(at_least(resolved[dominant], term), conditions)


def winner(candidates: list[sympy.Expr], nominal: dict, largest: bool = True) -> int:
    """The candidate that wins (is largest, or smallest) at the nominal point. On a tie, the
    first whose win the relations also state at the nominal point: with V = 0 every term
    V/B is 0, and only one of B_L >= B_N and B_N >= B_L is true."""
    values = [c.xreplace(nominal) for c in candidates]
    best = (max if largest else min)(values)
    tied = [k for k, v in enumerate(values) if v == best]
    for k in tied:
        relations = [at_least(candidates[k], c) if largest else at_least(c, candidates[k])
                     for j, c in enumerate(candidates) if j != k]
        if all(bool(r.xreplace(nominal)) for r in relations):
            return k
    return tied[0]


def resolve(expr: sympy.Expr, nominal: dict, conditions: dict[str, sympy.Expr]) -> sympy.Expr:
    """`expr` with every Min and Max replaced by its argument that wins at the nominal point;
    the relations under which each choice holds go into `conditions`."""

    def pick(node: sympy.Expr) -> sympy.Expr:
        largest = isinstance(node, sympy.Max)
        best = winner(list(node.args), nominal, largest)
        for k, other in enumerate(node.args):
            if k != best:
                _note(at_least(node.args[best], other) if largest else at_least(other, node.args[best]),
                      conditions)
        return node.args[best]

    return expr.replace(lambda e: isinstance(e, (sympy.Min, sympy.Max)), pick)


def _note(relation: sympy.Expr, conditions: dict[str, sympy.Expr]) -> None:
    if relation is not sympy.true:
        conditions.setdefault(str(relation), relation)


def nominal_value(expr: sympy.Expr, nominal: dict) -> Fraction:
    """The exact value of an expression at the nominal point."""
    value = expr.xreplace(nominal)
    if value.is_Rational:
        return from_rational(value)
    return Fraction(float(value))

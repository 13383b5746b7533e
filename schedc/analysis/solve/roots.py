"""Thresholds and crossovers: solve `left REL right` for one param, regime by regime.

With the other params at their nominal values, `regimes.pieces` cuts the positive axis where
any Max/Min of either side switches argument; on each piece both sides are rational
functions of x, so `left - right` has finitely many exact roots, and a root counts only if
it lies in its piece. Between consecutive roots one side is smaller throughout (poles of a
hand-written side also cut). With no root, the closest approach of the two sides is given.

Each root is then solved again symbolically — the piece's plain forms with every param a
symbol — so a threshold reads as a formula as well as a number. That step is optional: if
SymPy cannot do it within the time limit, the numeric answer stands alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise

import sympy

from ...cost.regimes import (
    NotRational,
    Piece,
    at_least,
    inside,
    key,
    pieces,
    poles,
    same,
    sample,
    zeros,
)
from ...deadline import OutOfTime, TimeLimit
from ...errors import SolveError, Span
from ...units import Dim, dim_name


@dataclass(frozen=True)
class Side:
    """One side of an equation: its value as a formula in the params."""

    name: str  # 'ring', or the side's text: 'time(ring, B_L = 32 GB/s)'
    expr: sympy.Expr
    dim: Dim
    span: Span


@dataclass(frozen=True)
class Regime:
    """Where a root was found: an interval of x and the plain form of each side there."""

    lo: sympy.Expr
    hi: sympy.Expr
    left: sympy.Expr
    right: sympy.Expr
    conditions: tuple[sympy.Expr, ...]  # the winning terms' inequalities, in all params


@dataclass(frozen=True)
class Root:
    value: sympy.Expr  # exact, with the other params at their nominal values
    expr: sympy.Expr | None  # in the other params, when SymPy found it in time
    regime: Regime


@dataclass(frozen=True)
class Interval:
    lo: sympy.Expr
    hi: sympy.Expr  # may be oo
    smaller: str  # "left", "right" or "equal"


@dataclass(frozen=True)
class Closest:
    """With no root: where the sides come closest — a point (lo = hi), a whole interval when
    their difference is constant there, or a limit (x → 0 or x → oo, lo = hi = that end)."""

    lo: sympy.Expr
    hi: sympy.Expr
    gap: sympy.Expr  # |left - right| there
    limit: bool = False


@dataclass(frozen=True)
class Solution:
    param: str
    relation: str
    left: Side
    right: Side
    roots: tuple[Root, ...]
    intervals: tuple[Interval, ...]
    closest: Closest | None
    notes: tuple[str, ...] = ()
    # schedule → the spans of the param on which each NCCL protocol wins (`schedc.solve` adds
    # them for the schedules that pick a protocol per size)
    switches: dict = field(default_factory=dict)

    def name(self, smaller: str) -> str:
        return {"left": self.left.name, "right": self.right.name}.get(smaller, "equal")

    def holds(self, interval: Interval) -> bool:
        """Whether the relation holds inside an interval (for <, <=, >, >=)."""
        return {"=": interval.smaller == "equal",
                "<=": interval.smaller in ("left", "equal"),
                "<": interval.smaller == "left",
                ">=": interval.smaller in ("right", "equal"),
                ">": interval.smaller == "right"}[self.relation]


def solve(left: Side, right: Side, relation: str, symbol: sympy.Symbol, nominal: dict,
          limit: TimeLimit, span: Span, param_span: Span) -> Solution:
    """Every solution of `left = right` for `symbol` on the positive axis; see the module doc."""
    if left.dim != right.dim:
        raise SolveError(f"the two sides have different units: {dim_name(left.dim)} on the "
                         f"left, {dim_name(right.dim)} on the right", span)
    if not (left.expr.has(symbol) or right.expr.has(symbol)):
        raise SolveError(f"'{symbol}' does not appear in this equation", param_span)
    values = {s: v for s, v in nominal.items() if s != symbol}
    try:
        with limit.running():
            regimes = pieces([left.expr, right.expr], symbol, values)
            found = _numeric(regimes, symbol, values)
    except OutOfTime:
        raise SolveError(f"could not finish within {limit}", span,
                         ("raise the limit with --timeout",)) from None
    except NotRational as exc:
        raise SolveError(f"cannot solve: the equation is not a rational function of {symbol} "
                         f"({exc.args[0]})", span) from None
    segments, roots = found
    notes: list[str] = []
    symbolic = []
    for value, piece in roots:
        expr = _symbolic(piece, symbol, values, value, limit)
        if expr is _TIMED_OUT:
            notes.append(f"symbolic forms: not found within {limit}")
            expr = None
        symbolic.append(Root(value, expr, _regime(piece)))
    closest = None
    if not roots and not any(s.smaller == "equal" for s in segments):
        try:
            with limit.running():
                closest = _closest(regimes, symbol, values)
        except OutOfTime:
            notes.append(f"closest approach: not found within {limit}")
    return Solution(str(symbol), relation, left, right, tuple(symbolic),
                    tuple(segments), closest, tuple(dict.fromkeys(notes)))


# ---- the numeric pass --------------------------------------------------------------------------


def _numeric(regimes: list[Piece], x, values) -> tuple[list[Interval], list[tuple]]:
    """(intervals with the smaller side, [(root, its piece)]) along the positive axis."""
    roots: list[tuple[sympy.Expr, Piece]] = []
    segments: list[tuple[sympy.Expr, sympy.Expr, str]] = []
    for piece in regimes:
        difference = (piece.plain[0] - piece.plain[1]).xreplace(values)
        found = zeros(difference, x)
        if found is None:  # the sides are the same function here
            segments.append((piece.lo, piece.hi, "equal"))
            continue
        for r in inside(found, piece.lo, piece.hi, closed=True):
            if key(r) > 0 and not any(same(r, known) for known, _ in roots):
                roots.append((r, piece))
        cuts = inside(found + poles(difference, x), piece.lo, piece.hi)
        for a, b in pairwise([piece.lo, *cuts, piece.hi]):
            d = difference.xreplace({x: sample(a, b)})
            segments.append((a, b, "left" if d < 0 else "right"))
    equal = [(lo, hi) for lo, hi, smaller in segments if smaller == "equal"]
    roots = [(r, p) for r, p in roots if not any(same(r, lo) or same(r, hi) for lo, hi in equal)]
    return _join(segments, [r for r, _ in roots]), roots


def _join(segments, roots) -> list[Interval]:
    """Merge neighbouring segments with the same smaller side unless a root separates them."""
    out: list[Interval] = []
    for lo, hi, smaller in segments:
        if out and out[-1].smaller == smaller and not any(same(lo, r) for r in roots):
            out[-1] = Interval(out[-1].lo, hi, smaller)
        else:
            out.append(Interval(lo, hi, smaller))
    return out


def _closest(regimes: list[Piece], x, values) -> Closest | None:
    """Where |left - right| is least: at a stationary point, a regime edge, or a limit."""
    candidates: list[Closest] = []
    for piece in regimes:
        difference = (piece.plain[0] - piece.plain[1]).xreplace(values)
        if not difference.has(x):  # constant: as close everywhere on the piece
            candidates.append(Closest(piece.lo, piece.hi, abs(difference)))
            continue
        for p in inside(zeros(sympy.diff(difference, x), x) or [], piece.lo, piece.hi):
            candidates.append(Closest(p, p, abs(difference.xreplace({x: p}))))
        for edge, direction in ((piece.lo, "+"), (piece.hi, "-")):
            if edge.is_infinite or edge == 0:
                gap = abs(sympy.limit(difference, x, edge, direction))
                candidates.append(Closest(edge, edge, gap, limit=True))
            else:
                candidates.append(Closest(edge, edge, abs(difference.xreplace({x: edge}))))
    finite = [c for c in candidates if c.gap.is_finite]
    if not finite:
        return None
    best = min(key(c.gap) for c in finite)
    # Among equally close places, the first along the axis, widened over constant stretches.
    ties = [c for c in finite if same(c.gap, best) or key(c.gap) == best]
    return min(ties, key=lambda c: (key(c.lo), -key(c.hi)))


# ---- the symbolic pass -------------------------------------------------------------------------


_TIMED_OUT = object()


def _symbolic(piece: Piece, x, values, root: sympy.Expr, limit: TimeLimit):
    """The root as a formula in the other params: a root of the piece's numerator polynomial
    in x (coefficients in the params) that matches the numeric root."""
    try:
        with limit.running():
            numerator, _ = sympy.fraction(sympy.cancel(sympy.together(
                piece.plain[0] - piece.plain[1])))
            candidates = sympy.roots(sympy.Poly(numerator, x))
            for c in candidates:
                value = c.xreplace(values)
                if value.is_number and same(value, root):
                    return _tidy(c)
    except OutOfTime:
        return _TIMED_OUT
    except (sympy.PolynomialError, NotImplementedError):  # SymPy gave up: the number stands alone
        return None
    return None


def _tidy(expr: sympy.Expr) -> sympy.Expr:
    """The shorter of a few equivalent forms."""
    forms = [expr, sympy.factor(expr), sympy.cancel(expr)]
    return min(forms, key=lambda e: (sympy.count_ops(e), len(str(e))))


def _regime(piece: Piece) -> Regime:
    conditions: dict[str, sympy.Expr] = {}
    for node, won in piece.choices:
        for other in node.args:
            if other == won:
                continue
            big, small = (won, other) if isinstance(node, sympy.Max) else (other, won)
            relation = at_least(big, small)
            if relation is not sympy.true:
                conditions.setdefault(str(relation), relation)
    return Regime(piece.lo, piece.hi, piece.plain[0], piece.plain[1], tuple(conditions.values()))

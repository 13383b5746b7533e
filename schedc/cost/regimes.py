"""Max/Min expressions of one variable, cut into regimes along an interval.

A time formula is a sum of round classes, each α + Max(terms); a latency/window model may
nest a Min inside a Max. With every param but one (x) fixed, a Max or Min switches argument
only where two of its arguments are equal, so the real roots of their differences cut the
axis into intervals on each of which every Max/Min is one plain argument — a *regime* — and
the expression is a rational function of x. Nested extrema are resolved innermost first,
interval by interval.

    >>> x = sympy.Symbol("x", positive=True)
    >>> [(p.lo, p.hi, p.plain) for p in pieces([sympy.Max(1/x, x)], x, {})]
    [(0, 1, (1/x,)), (1, oo, (x,))]

The algebra is exact (SymPy); algebraic numbers are ordered by 50-digit approximations.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations, pairwise

import sympy

_EXTREMA = (sympy.Max, sympy.Min)
_DIGITS = 50
_SAME = sympy.Float(10) ** -40  # relative distance under which two points are one


class NotRational(Exception):
    """Internal: an expression is not a rational function of the variable."""


@dataclass(frozen=True)
class Piece:
    """An interval of x on which every Max/Min of the inputs has one winning argument."""

    lo: sympy.Expr  # exact; may be -oo
    hi: sympy.Expr  # exact; may be oo
    plain: tuple[sympy.Expr, ...]  # the inputs with each Max/Min replaced by its winner
    choices: tuple[tuple[sympy.Expr, sympy.Expr], ...]  # (Max/Min, its winner), innermost first


def pieces(exprs, x: sympy.Symbol, values: dict, lo: sympy.Expr = sympy.S.Zero,
           hi: sympy.Expr = sympy.oo) -> list[Piece]:
    """The regimes of `exprs` (symbolic) for x in [lo, hi], the other symbols set to `values`."""
    inputs = sympy.Tuple(*[abs_as_max(sympy.sympify(e)) for e in exprs])
    values = {s: sympy.sympify(v) for s, v in values.items()}
    return _merge(_cut(inputs, x, values, sympy.sympify(lo), sympy.sympify(hi), ()))


def abs_as_max(expr: sympy.Expr) -> sympy.Expr:
    """|e| as Max(e, -e), so regimes treat it like any other extremum."""
    return expr.replace(lambda e: isinstance(e, sympy.Abs),
                        lambda e: sympy.Max(e.args[0], -e.args[0], evaluate=False))


def _cut(exprs: sympy.Tuple, x, values, lo, hi, choices) -> list[Piece]:
    nodes = _innermost(exprs)
    if not nodes:
        return [Piece(lo, hi, tuple(exprs), choices)]
    # Each node's own breakpoints and its winner between them; the pieces are cut where any
    # node switches, and a node's winner on a piece is looked up, not recomputed.
    switches, cuts = [], []
    for node in nodes:
        args = [a.xreplace(values) for a in node.args]
        own = [p for a in args for p in poles(a, x)]
        own += [p for a, b in combinations(args, 2) for p in zeros(a - b, x) or []]
        own = inside(own, lo, hi)
        winners = [winner(node, args, x, sample(a, b)) for a, b in pairwise([lo, *own, hi])]
        switches.append((node, own, winners))
        cuts += own
    points = inside(cuts, lo, hi)
    # Look-ups compare floats, unless two cut points are too close for floats to order.
    floats = [float(key(p)) for p in points]
    order = float if all(a < b for a, b in pairwise(floats)) else key
    switches = [(node, [order(key(p)) for p in own], winners) for node, own, winners in switches]
    out: list[Piece] = []
    for a, b in pairwise([lo, *points, hi]):
        t = order(key(sample(a, b)))
        pick = {node: winners[bisect_left(edges, t)] for node, edges, winners in switches}
        out += _cut(_substitute(exprs, pick), x, values, a, b, choices + tuple(pick.items()))
    return out


def _substitute(expr: sympy.Basic, pick: dict) -> sympy.Basic:
    """`expr.xreplace(pick)`, but outer Max/Min stay unevaluated: SymPy's own pairwise
    simplification of their arguments would cost more than all the rest."""
    if expr in pick:
        return pick[expr]
    if not expr.args or not expr.has(*_EXTREMA):
        return expr
    args = [_substitute(a, pick) for a in expr.args]
    if isinstance(expr, _EXTREMA):
        return expr.func(*args, evaluate=False)
    return expr.func(*args)


def _innermost(expr: sympy.Basic) -> list[sympy.Expr]:
    """Max/Min nodes with no Max/Min inside, in order of first appearance."""
    found: dict[sympy.Expr, None] = {}
    for node in sympy.preorder_traversal(expr):
        if isinstance(node, _EXTREMA) and not any(a.has(*_EXTREMA) for a in node.args):
            found.setdefault(node, None)
    return list(found)


def winner(node: sympy.Expr, args: list[sympy.Expr], x, t: sympy.Rational) -> sympy.Expr:
    """The argument of a Max (Min) that is largest (smallest) at x = t, given its arguments
    with the other params substituted. On a tie the argument that keeps the most params
    symbolic wins, so regime forms stay general."""
    sign = 1 if isinstance(node, sympy.Max) else -1
    ranks = [(sign * a.xreplace({x: t}), len(original.free_symbols))
             for a, original in zip(args, node.args)]
    best = 0
    for k in range(1, len(ranks)):
        if ranks[k] > ranks[best]:
            best = k
    return node.args[best]


def _merge(out: list[Piece]) -> list[Piece]:
    """Join neighbouring pieces that ended up in the same regime."""
    merged: list[Piece] = []
    for p in out:
        if merged and merged[-1].plain == p.plain and _winners(merged[-1]) == _winners(p):
            merged[-1] = Piece(merged[-1].lo, p.hi, p.plain, merged[-1].choices)
        else:
            merged.append(p)
    return merged


def _winners(p: Piece) -> tuple:
    return tuple(w for _, w in p.choices)


# ---- exact roots of rational functions ------------------------------------------------------


@lru_cache(maxsize=8192)  # the same differences recur on neighbouring intervals
def _fraction(expr: sympy.Expr, x) -> tuple[sympy.Poly, sympy.Poly]:
    """Numerator and denominator as coprime polynomials in x (polynomial gcd, not `cancel`,
    which spends its time on assumptions the exact coefficients do not need)."""
    numerator, denominator = expr.as_numer_denom()
    try:
        p, q = sympy.Poly(numerator, x), sympy.Poly(denominator, x)
    except sympy.PolynomialError:
        raise NotRational(expr) from None
    if p.is_zero:
        return p, sympy.Poly(1, x)
    g = p.gcd(q)
    return p.quo(g), q.quo(g)


def _real_roots(poly: sympy.Poly) -> list[sympy.Expr]:
    if poly.free_symbols - set(poly.gens):
        raise NotRational(poly.as_expr())
    if poly.degree() < 1:
        return []
    if poly.degree() == 1:  # the common case, without the root-isolation machinery
        c1, c0 = poly.all_coeffs()
        return [-c0 / c1]
    return sorted(set(poly.real_roots()), key=key)


def zeros(expr: sympy.Expr, x) -> list[sympy.Expr] | None:
    """The real zeros of a rational function of x, ascending; None if it is identically 0."""
    numerator, _ = _fraction(expr, x)
    if numerator.is_zero:
        return None
    return _real_roots(numerator)


def poles(expr: sympy.Expr, x) -> list[sympy.Expr]:
    """The real points where a rational function of x is undefined."""
    return _real_roots(_fraction(expr, x)[1])


# ---- points on the real line ------------------------------------------------------------------


@lru_cache(maxsize=8192)
def key(point: sympy.Expr) -> sympy.Float:
    """A 50-digit approximation that orders exact points (±oo included)."""
    if point in (sympy.oo, -sympy.oo):
        return sympy.Float(point)
    return sympy.N(point, _DIGITS)


def same(a: sympy.Expr, b: sympy.Expr) -> bool:
    if a == b:
        return True
    if a.is_infinite or b.is_infinite:
        return False
    ka, kb = key(a), key(b)
    # Relative only: with an absolute floor, all points below 1e-40 (1e-300 MiB in seconds
    # per byte, say) would be one point.
    return abs(ka - kb) <= _SAME * max(abs(ka), abs(kb))


def inside(points, lo, hi, closed: bool = False) -> list[sympy.Expr]:
    """The distinct points strictly between lo and hi (or on them, when closed), ascending."""
    kept: list[sympy.Expr] = []
    for p in sorted(points, key=key):
        on_edge = same(p, lo) or same(p, hi)
        if on_edge and not closed:
            continue
        if not on_edge and not key(lo) < key(p) < key(hi):
            continue
        if kept and same(kept[-1], p):
            continue
        kept.append(lo if same(p, lo) else hi if same(p, hi) else p)
    return kept


def sample(lo: sympy.Expr, hi: sympy.Expr) -> sympy.Rational:
    """A rational strictly between lo and hi."""
    if lo == -sympy.oo and hi == sympy.oo:
        return sympy.S.Zero
    if hi == sympy.oo:
        return sympy.floor(key(lo)) + 1
    if lo == -sympy.oo:
        return sympy.ceiling(key(hi)) - 1
    if lo.is_Rational and hi.is_Rational:
        return (lo + hi) / 2
    return sympy.Rational((key(lo) + key(hi)) / 2)


def at_least(big: sympy.Expr, small: sympy.Expr) -> sympy.Expr:
    """`big >= small` in a readable form: num >= den of their ratio when both are positive."""
    if big.is_positive and small.is_positive:
        numerator, denominator = sympy.fraction(sympy.cancel(big / small))
    else:
        numerator, denominator = sympy.cancel(big - small), sympy.S.Zero
    if (numerator - denominator).is_number:
        return sympy.true if numerator >= denominator else sympy.false
    return sympy.Ge(numerator, denominator, evaluate=False)  # deciding it would cost time

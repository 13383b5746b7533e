"""Are two formulas the same function of the params, not only equal at the nominal point?

`expect A = B` without `within` claims exactness, so it is decided on functions: every Max,
Min and abs on both sides is resolved to the argument that wins at the nominal point (the
regime form, as `cost.formula.resolve` does), which leaves two rational functions of the
params, and their difference must cancel to 0 exactly.

Why that decides it. Where no Max/Min ties at the nominal point, every choice holds strictly
there, so it holds on an open neighbourhood (the nominal regime); two rational functions
equal on an open set are identical, and identical ones agree on the whole regime. Where a
Max/Min ties at the nominal point (the PCIe ring at B_L = B_slot), several regimes meet there;
the sides agree if they agree on one of them, and a regime counts only when a point strictly
inside it, next to the nominal point, is found: a direction d with ∇g·d > 0 for every choice
g >= 0 that holds with equality (a small exact linear program), then an exact check of every
g > 0 at p + ε·d. Ties are thus decided to first order; an agreement found is always real.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import product

import sympy
from sympy.solvers.simplex import linprog

from ...cost.regimes import abs_as_max, same

_EXTREMA = (sympy.Max, sympy.Min)
MAX_REGIMES = 256  # regimes meeting at the nominal point that are tried, at most


class Undecided(Exception):
    """More tied regimes than MAX_REGIMES: the caller says so instead of guessing."""


def difference_near(left: sympy.Expr, right: sympy.Expr, nominal: dict) -> sympy.Expr | None:
    """None when `left` and `right` are the same function of the params on a regime at the
    nominal point; else their (nonzero) difference in the first regime tried."""
    first = None
    nominal = {symbol: sympy.sympify(value) for symbol, value in nominal.items()}
    sides = sympy.Tuple(abs_as_max(sympy.sympify(left)), abs_as_max(sympy.sympify(right)))
    for count, (plain, ties) in enumerate(_regimes(sides, nominal, ())):
        if count >= MAX_REGIMES:
            raise Undecided(f"more than {MAX_REGIMES} regimes meet at the nominal point")
        difference = _cancel(plain[0] - plain[1])
        if difference == 0 and _has_interior(ties, nominal):
            return None
        if first is None and difference != 0:
            first = difference
    return first  # None: 0 in every combination of tied choices, so in every regime there


def _cancel(expr: sympy.Expr) -> sympy.Expr:
    """0 exactly when a rational function is identically 0 (SymPy's simplify otherwise)."""
    difference = sympy.cancel(sympy.together(expr))
    if difference != 0 and not difference.is_rational_function(*difference.free_symbols):
        difference = sympy.simplify(difference)
    return difference


def _regimes(exprs: sympy.Tuple, nominal: dict, ties: tuple) -> Iterator[tuple]:
    """(the expressions with every Max/Min resolved, the tied choices made: g >= 0 each, 0 at
    the nominal point), for every combination of arguments that win at the nominal point."""
    nodes = [n for n in dict.fromkeys(sympy.preorder_traversal(exprs))
             if isinstance(n, _EXTREMA) and not any(a.has(*_EXTREMA) for a in n.args)]
    if not nodes:
        yield tuple(exprs), ties
        return
    options = [_winners(node, nominal) for node in nodes]
    for combo in product(*options):
        pick = {node: node.args[k] for node, k in zip(nodes, combo)}
        made = tuple(_margin(node, k, j) for node, k, tied in zip(nodes, combo, options)
                     for j in tied if j != k)
        yield from _regimes(exprs.xreplace(pick), nominal, ties + made)


def _winners(node: sympy.Expr, nominal: dict) -> list[int]:
    """The arguments of a Max (Min) that are largest (smallest) at the nominal point."""
    values = [a.xreplace(nominal) for a in node.args]
    best = (max if isinstance(node, sympy.Max) else min)(values)
    return [k for k, v in enumerate(values) if v == best or same(v, best)]


def _margin(node: sympy.Expr, k: int, j: int) -> sympy.Expr:
    """How much argument k wins over argument j (>= 0 while k is the choice)."""
    a, b = node.args[k], node.args[j]
    return a - b if isinstance(node, sympy.Max) else b - a


def _has_interior(ties: tuple, nominal: dict) -> bool:
    """Is there a point next to the nominal one where every tied choice holds strictly?"""
    margins = [g for g in ties if _cancel(g) != 0]  # equal arguments: either choice is one
    if not margins:
        return True
    symbols = sorted(set().union(*(g.free_symbols for g in margins)), key=str)
    scale = {s: abs(nominal.get(s, 1)) or 1 for s in symbols}  # steps relative to the values
    # Maximise t over (u_1 .. u_n, t) >= 0, with d = u - 1: t - ∇g·u <= -∇g·1 for each margin,
    # u_i <= 2 (so |d_i| <= 1), t <= 1. (linprog's default bounds, variables >= 0, are kept:
    # its `bounds` argument gave wrong optima in SymPy 1.14.)
    n = len(symbols)
    gradients = [[sympy.diff(g, s).xreplace(nominal) * scale[s] for s in symbols] for g in margins]
    rows = [[-c for c in gradient] + [1] for gradient in gradients]
    rows += [[int(i == k) for i in range(n + 1)] for k in range(n + 1)]
    limits = [-sum(gradient) for gradient in gradients] + [2] * n + [1]
    lowest, solution = linprog(sympy.Matrix([0] * n + [-1]).T, sympy.Matrix(rows),
                               sympy.Matrix(limits))
    if not -lowest > 0:
        return False
    direction = {s: (solution[i] - 1) * scale[s] for i, s in enumerate(symbols)}
    for k in range(1, 60):  # shrink the step until the first-order picture is exact
        point = {**nominal, **{s: nominal.get(s, 0) + direction[s] / 2**k for s in symbols}}
        if all(g.xreplace(point) > 0 for g in margins):
            return True
    return False

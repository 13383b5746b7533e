"""What a fitted piece says as n grows: its limit, the leading term of each coefficient, and
a knob's optimum (a stationary point of the form, with the integers around it compiled)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import sympy

if TYPE_CHECKING:
    from .forms import Scaler
    from .pieces import Piece


def tidy(expr: sympy.Expr) -> sympy.Expr:
    forms = [expr, sympy.factor(expr), sympy.cancel(expr)]
    return min(forms, key=lambda e: (sympy.count_ops(e), len(str(e))))


def limit(expr: sympy.Expr, n: sympy.Symbol) -> sympy.Expr | None:
    try:
        found = sympy.limit(expr, n, sympy.oo)
    except (NotImplementedError, ValueError, TypeError):
        return None
    return None if found.has(sympy.AccumBounds) else tidy(found)


def leading(coefficient: sympy.Expr, n: sympy.Symbol) -> tuple:
    """(k, f) of the leading term k·f(n) of a coefficient as n -> oo; (None, None) if none
    of n², n·log2 n, n, log2 n, 1 is it."""
    for scale in (n**2, n * sympy.log(n, 2), n, sympy.log(n, 2), sympy.Integer(1)):
        found = limit(coefficient / scale, n)
        if found is not None and found.is_finite and found != 0:
            return found, scale
    return None, None


def with_optimum(piece: Piece, scaler: Scaler, name: str) -> Piece:
    """A stationary point of the time inside the piece: the knob's optimum (`c*`), with the
    two integers around it (its floor and ceiling) compiled to find the best."""
    from ...errors import SchedcError
    from .pieces import Optimum
    assert piece.regime is not None  # called only on a piece with a closed form
    n = scaler.symbol
    x = sympy.Symbol(str(n), positive=True)  # solved over the reals, then rounded
    nominal = {s: v for s, v in scaler.session.program.nominal.items() if str(s) != str(n)}
    slope = sympy.diff(piece.regime.xreplace({n: x}), x)
    try:  # no checksol: each root is checked below at the nominal point, which is cheaper
        roots = sympy.solve(slope, x, check=False, simplify=False)
    except (NotImplementedError, ValueError):
        return piece
    for root in roots:
        value = root.xreplace(nominal)
        if not (value.is_real and value.is_positive):
            continue
        curvature = sympy.diff(slope, x).xreplace(nominal).xreplace({x: value})
        if not (curvature.is_real and curvature > 0) or abs(slope.xreplace(nominal).xreplace(
                {x: value})) > 1e-9 * abs(piece.regime.xreplace(nominal).xreplace({n: value})):
            continue  # not a minimum, or not a root after all
        centre = int(sympy.floor(value))
        reach = None if piece.last else piece.valid_to  # the last piece is tried beyond
        if centre < piece.valid_from or (reach is not None and centre > reach):
            continue
        around = [c for c in (centre, centre + 1)
                  if c >= piece.valid_from and (reach is None or c <= reach)]
        try:
            neighbours = tuple((c, scaler.observe(c, name).time) for c in around)
        except SchedcError:
            return piece
        form = piece.regime.xreplace(nominal)
        if any(form.xreplace({n: c}) != sympy.Rational(t.numerator, t.denominator)
               for c, t in neighbours):
            return replace(piece, notes=(*piece.notes, "a stationary point of the form lies "
                                         "where a compile disagrees with it: no optimum"))
        # Compiled and equal to the form there: the piece is checked up to them too.
        times = tuple(sorted({*piece.times, *neighbours}))
        best, best_time = min(neighbours, key=lambda item: (item[1], item[0]))
        return replace(piece, optimum=Optimum(tidy(root.xreplace({x: n})), value, best,
                                              best_time, neighbours),
                       times=times, valid_to=max(piece.valid_to or 0, *around),
                       check_points=tuple(sorted({*piece.check_points, *around})))
    return piece

"""The values of the elaborator's quantities: exact numbers (int, Fraction) or SymPy
expressions, and the few operations every stage needs on either, with SymPy imported only
when an expression is one.

A file compiled with formulas (the default) makes each param a SymPy symbol, so sizes,
bandwidths and start-ups are expressions in them; compiled without (`--no-formula`) every
param is its value, every such quantity an exact number, and SymPy is never imported
(`tests/test_start_up_imports.py`). The helpers below take either and give what SymPy would
give for a constant, so the stages need not ask which.

    >>> largest(3, Fraction(7, 2)), exact_value(Fraction(1, 3), {})
    (Fraction(7, 2), Fraction(1, 3))
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

Scalar = Any  # int | Fraction | sympy.Expr (Any: SymPy is not imported to name its type)


def is_plain(value: object) -> bool:
    """An exact number (not a bool, not a SymPy object)."""
    return isinstance(value, (int, Fraction)) and not isinstance(value, bool)


def symbols_of(value: Scalar) -> set:
    """The free symbols of an expression; a number has none."""
    return set() if is_plain(value) else value.free_symbols


def substitute(value: Scalar, nominal: dict) -> Scalar:
    """`value` at the nominal point (symbol → value); a number is itself."""
    return value if is_plain(value) else value.xreplace(nominal)


def rational(value: Scalar) -> Fraction | None:
    """The exact rational a constant stands for, else None (a symbol, or sqrt(2))."""
    if is_plain(value):
        return Fraction(value)
    if value.is_Rational:
        return Fraction(int(value.p), int(value.q))
    return None


def exact_value(value: Scalar, nominal: dict) -> Fraction:
    """An expression of the params (or a number) at the nominal point, exactly when it is
    rational there, else the nearest float as a Fraction."""
    found = substitute(value, nominal)
    exact = rational(found)
    return exact if exact is not None else Fraction(float(found))


def rationals_in(value: Scalar) -> list[Fraction]:
    """Every rational number written in an expression (its coefficients, its constants)."""
    if is_plain(value):
        return [Fraction(value)]
    import sympy
    return [Fraction(int(a.p), int(a.q)) for a in value.atoms(sympy.Rational)]


def quotient(a: Scalar, b: Scalar) -> Scalar:
    """a / b, exactly: two numbers make a Fraction (an int when whole), never a float."""
    if is_plain(a) and is_plain(b):
        found = Fraction(a) / Fraction(b)
        return int(found) if found.denominator == 1 else found
    return a / b


def largest(*values: Scalar) -> Scalar:
    """Max of the values: a number when all are numbers, else SymPy's Max."""
    if all(is_plain(v) for v in values):
        return max(values)
    import sympy
    return sympy.Max(*values)


def smallest(*values: Scalar) -> Scalar:
    """Min of the values: a number when all are numbers, else SymPy's Min."""
    if all(is_plain(v) for v in values):
        return min(values)
    import sympy
    return sympy.Min(*values)


def total(values: list[Scalar]) -> Scalar:
    """The sum: a number when all are numbers, else SymPy's Add (0 for none, as SymPy's)."""
    if all(is_plain(v) for v in values):
        return sum(values, 0)
    import sympy
    return sympy.Add(*values)


def magnitude(value: Scalar) -> Scalar:
    """|value|: a number's abs, else SymPy's Abs."""
    if is_plain(value):
        return abs(value)
    import sympy
    return sympy.Abs(value)


def to_sympy(value: Scalar) -> Any:
    """A number as a SymPy rational (an expression as itself): where a formula begins."""
    import sympy
    if isinstance(value, Fraction):
        return sympy.Rational(value.numerator, value.denominator)
    return sympy.Integer(value) if is_plain(value) else value

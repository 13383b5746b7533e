"""A `param` declaration's phases after its value is evaluated (`loader._Loader._param`):
whether it is structural, a `--set` override checked against it, α's sign, and the `Param`
record with the value its name is bound to (a SymPy symbol, or its value without formulas).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ..errors import ElaborationError, Span, UsageError
from ..language import syntax as ast
from ..model.values import Quantity, as_number, from_rational, normalize
from ..units import DIMENSIONLESS, SECONDS, Dim, dim_name, format_seconds
from .program import Override, Param, declared_at, source_of


def dim_of(value) -> Dim:
    return value.dim if isinstance(value, Quantity) else DIMENSIONLESS


def exact(value) -> Fraction:
    number = as_number(value)
    if number is not None:
        return Fraction(number)
    return from_rational(value.expr)


def is_structural(stmt: ast.ParamDecl, value, dim: Dim) -> bool:
    """A unitless param declared with an integer literal, `param hosts = 2`: it may size
    families and ranges, and is compiled per value. `param oversub = 1.0` stays a symbol in
    formulas, as every other param does."""
    return dim == DIMENSIONLESS and _integer_literal(stmt.value) and \
        exact(value).denominator == 1


def overridden(stmt: ast.ParamDecl, override: Override, new, dim: Dim, structural: bool):
    """`--set NAME=VALUE`'s value `new` for the param, checked: the same dimension, and an
    integer for a structural param."""
    if dim_of(new) != dim:
        raise UsageError(f"{stmt.name} is {dim_name(dim)}; the value given is "
                         f"{dim_name(dim_of(new))}", override.value.span)
    if structural and exact(new).denominator != 1:
        raise UsageError(f"{stmt.name} is a structural param (an integer), so "
                         f"{exact(new)} is not a value it can take",
                         override.value.span, (declared_at(stmt.name, stmt.span),))
    return new


def check_alpha(name: str, dim: Dim, nominal: Fraction, span: Span, by_option: bool) -> None:
    """α is a start-up per round: zero or more (`by_option`: given by --set, a usage error)."""
    if name == "alpha" and dim == SECONDS and nominal < 0:
        error = UsageError if by_option else ElaborationError
        raise error(f"'alpha' is the per-round start-up, so it must be zero or more; this one "
                    f"is {format_seconds(nominal)}", span)


def make_param(stmt: ast.ParamDecl, dim: Dim, nominal: Fraction, structural: bool,
               symbolic: bool) -> tuple[Param, Any, Any]:
    """The param's record, the value its name is bound to, and its value as a SymPy number
    for the nominal point (None without formulas: the param is its value, marked as a
    param's)."""
    name = stmt.name
    if not symbolic:
        bound = nominal.numerator if structural else \
            Quantity(normalize(nominal), dim, frozenset((name,)))
        return Param(name, None, dim, nominal, stmt.span, structural), bound, None
    import sympy
    if structural:
        symbol = sympy.Symbol(name, integer=True, **(
            {"positive": True} if nominal > 0 else {"nonnegative": True} if nominal == 0
            else {}))
        return (Param(name, symbol, dim, nominal, stmt.span, True), nominal.numerator,
                sympy.Integer(nominal.numerator))
    assumptions = {"positive": True} if nominal > 0 else {"nonnegative": True} if nominal == 0 \
        else {"real": True}
    symbol = sympy.Symbol(name, **assumptions)
    return (Param(name, symbol, dim, nominal, stmt.span), Quantity(symbol, dim),
            sympy.Rational(nominal.numerator, nominal.denominator))


def _integer_literal(expr: ast.Expr) -> bool:
    """`2` or `-3`, as written: digits only, no point, exponent or unit."""
    if isinstance(expr, ast.UnaryOp) and expr.op == "-":
        expr = expr.operand
    return isinstance(expr, ast.Number) and expr.unit is None and source_of(expr).isdigit()

"""Arithmetic and comparison on evaluated values: exact numbers, lane arrays, quantities.

The evaluator (`evaluate`) reduces an operator's operands to values and hands them here.
Lane arithmetic stays in int64 only while it provably cannot wrap around; otherwise
`NeedScalar` reruns the round one lane at a time on exact Python integers.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from .. import magnitude
from ..errors import ElaborationError, LimitError, Span, UnitError
from ..language import syntax as ast
from ..model.scalars import rationals_in, symbols_of
from ..model.values import (
    Devices,
    NeedScalar,
    Quantity,
    as_number,
    as_quantity,
    check_numeric,
    condition_note,
    is_condition,
    normalize,
    settle,
    span_text,
)
from ..units import BYTES, DIMENSIONLESS, RATE, SECONDS, Dim, dim_name

MAX_EXPONENT = 4096  # 2 ** 10**12 would never finish; refuse instead
INT64_SAFE = 2**62  # lane values stay below this, or the round runs on exact Python ints


def within_bound(value: object, span: Span) -> object:
    """Refuse an exact result beyond `magnitude.MAX_BITS` (operands within it make results of
    at most twice the bits, cheap to compute; `**` and `<<` are judged before they run)."""
    numbers: list[int | Fraction] | list[Fraction]
    if isinstance(value, Quantity):
        numbers = rationals_in(value.expr)
    else:
        numbers = [value] if isinstance(value, (int, Fraction)) else []
    if not all(magnitude.fits(n) for n in numbers):
        raise LimitError(magnitude.TOO_LARGE, span)
    return value


def apply_binop(op: str, left: Any, right: Any, node: ast.BinOp) -> object:
    # `Any`: numbers (ints, Fractions, lane arrays) once check_numeric has passed them
    _refuse_conditions(op, left, right, node)
    if isinstance(left, Quantity) or isinstance(right, Quantity):
        return _quantity_op(op, left, right, node)
    check_numeric(left, node.left.span)
    check_numeric(right, node.right.span)
    lanes = isinstance(left, np.ndarray) or isinstance(right, np.ndarray)
    if lanes and (isinstance(left, Fraction) or isinstance(right, Fraction)):
        raise NeedScalar
    if lanes and _may_overflow(op, left, right):
        raise NeedScalar  # int64 would wrap around silently; Python ints are exact
    if op in ("+", "-", "*"):
        result = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}[op](left, right)
        return normalize(result) if isinstance(result, Fraction) else result  # 0.5 * 2 is 1
    if op in ("/", "//", "%"):
        if np.any(np.asarray(right) == 0):
            raise ElaborationError("division by zero", node.right.span)
        if op == "//":
            return left // right
        if op == "%":
            return left % right
        if lanes:
            if np.any(np.asarray(left) % np.asarray(right)):
                raise NeedScalar
            return left // right
        return normalize(Fraction(left) / Fraction(right))
    if op == "**":
        return _power(left, right, node)
    for value, span in ((left, node.left.span), (right, node.right.span)):
        if isinstance(value, Fraction):
            raise ElaborationError(f"'{op}' needs integers, not {value}", span)
    if op in ("<<", ">>"):
        if np.any(np.asarray(right) < 0) or np.any(np.asarray(right) > MAX_EXPONENT):
            raise ElaborationError(f"shift count must be in 0..{MAX_EXPONENT}", node.right.span)
        if lanes and op == "<<" and np.any(np.asarray(right) > 62):
            raise NeedScalar
        if op == "<<" and not lanes and magnitude.bits(left) + right > magnitude.MAX_BITS:
            raise LimitError(magnitude.TOO_LARGE, node.span)
        return left << right if op == "<<" else left >> right
    return {"&": lambda a, b: a & b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b}[op](left, right)


def largest_magnitude(value) -> int:
    if isinstance(value, np.ndarray):  # (two reductions: no |value| array of lanes' size made)
        return max(int(value.max()), -int(value.min())) if value.size else 0
    return abs(int(value))


def _may_overflow(op: str, left, right) -> bool:
    """Whether lane arithmetic could leave int64, judged from the largest magnitudes."""
    a, b = largest_magnitude(left), largest_magnitude(right)
    return max(a, b) >= INT64_SAFE or (a * b if op == "*" else a + b) >= INT64_SAFE


def _power(base, exponent, node: ast.BinOp):
    if isinstance(exponent, Fraction):
        raise ElaborationError("an exponent must be an integer", node.right.span)
    if np.any(np.abs(np.asarray(exponent)) > MAX_EXPONENT):
        raise LimitError(f"exponent too large (the limit is {MAX_EXPONENT})", node.right.span)
    if isinstance(base, np.ndarray) or isinstance(exponent, np.ndarray):
        if np.any(np.asarray(exponent) < 0) or np.any(np.abs(np.asarray(base, dtype=float)) ** np.asarray(exponent) > 2.0**62):
            raise NeedScalar
        return np.asarray(base) ** np.asarray(exponent)
    if base == 0 and exponent < 0:
        raise ElaborationError("division by zero", node.span)
    if (magnitude.bits(base) - 1) * abs(exponent) > magnitude.MAX_BITS:
        raise LimitError(magnitude.TOO_LARGE, node.span)
    return normalize(Fraction(base) ** exponent)


_ZEROS = {DIMENSIONLESS: "0", BYTES: "0 B", SECONDS: "0 s", RATE: "0 B/s"}


def _refuse_conditions(op: str, left: object, right: object, node: ast.BinOp) -> None:
    """A condition in arithmetic (`(3<4)*5`) is refused, with the `if … else` that says it:
    `(5 if 3<4 else 0)` for a product, `(1 if 3<4 else 0)` otherwise."""
    for value, side, other, other_value in ((left, node.left, node.right, right),
                                            (right, node.right, node.left, left)):
        if is_condition(value):
            hint = None
            zero = ("0" if not isinstance(other_value, Quantity)
                    else _ZEROS.get(other_value.dim))  # `else 0` of the other's dimension
            if op == "*" and not is_condition(other_value) and zero:
                hint = f"({span_text(other.span)} if {span_text(side.span)} else {zero})"
            what = "a number or a quantity" if isinstance(other_value, Quantity) else "a number"
            raise ElaborationError(f"expected {what}, not a condition", side.span,
                                   (condition_note(side.span, hint),))


def _quantity_op(op: str, left: object, right: object, node: ast.BinOp) -> Quantity | int | Fraction:
    if isinstance(left, np.ndarray) or isinstance(right, np.ndarray):
        raise NeedScalar
    a = as_quantity(left, node.left.span)
    b = as_quantity(right, node.right.span)
    params = a.params | b.params  # (compiled without formulas: what the value depends on)
    if op in ("+", "-"):
        if a.dim != b.dim:
            verb = "add" if op == "+" else "subtract"
            raise UnitError(f"cannot {verb} {dim_name(a.dim)} and {dim_name(b.dim)}", node.span)
        return settle(Quantity(a.expr + b.expr if op == "+" else a.expr - b.expr, a.dim, params))
    if op == "*":
        return settle(Quantity(a.expr * b.expr, _dim_add(a.dim, b.dim, 1), params))
    if op == "/":
        if b.expr == 0:
            raise ElaborationError("division by zero", node.right.span)
        return settle(Quantity(_divide(a.expr, b.expr), _dim_add(a.dim, b.dim, -1), params))
    if op == "**":
        n = as_number(b) if b.dim == DIMENSIONLESS else None
        if not isinstance(n, int) or abs(n) > 64:
            raise ElaborationError("a quantity can only be raised to an integer power up to 64",
                                   node.right.span)
        if n < 0 and isinstance(a.expr, (int, Fraction)) and a.expr == 0:  # (SymPy: zoo)
            raise ElaborationError("division by zero", node.span)
        return settle(Quantity(_power_of(a.expr, n), (a.dim[0] * n, a.dim[1] * n), a.params))
    raise UnitError(f"'{op}' needs plain numbers, not {dim_name(a.dim)} and {dim_name(b.dim)}",
                    node.span)


def _divide(a, b):
    """a / b, exactly: two ints make a Fraction (Python's / would make a float)."""
    if isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool):
        return normalize(Fraction(a, b))
    result = a / b
    return normalize(result) if isinstance(result, Fraction) else result


def _power_of(base, n: int):
    """base ** n, exactly (an int to a negative power makes a Fraction, not a float)."""
    if isinstance(base, (int, Fraction)):
        return normalize(Fraction(base) ** n)
    return base**n


def _dim_add(a: Dim, b: Dim, sign: int) -> Dim:
    return (a[0] + sign * b[0], a[1] + sign * b[1])


_COMPARE: dict[str, Callable] = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}


def compare_values(op: str, left: object, right: object, span: Span) -> object:
    if isinstance(left, Devices) and isinstance(right, Devices):
        if op not in ("==", "!=") or left.rank or right.rank:
            raise ElaborationError("devices can only be compared with == and !=, one at a time", span)
        return _COMPARE[op](left.ids, right.ids)
    if isinstance(left, Quantity) or isinstance(right, Quantity):
        if isinstance(left, np.ndarray) or isinstance(right, np.ndarray):
            raise NeedScalar
        a, b = as_quantity(left, span), as_quantity(right, span)
        if a.dim != b.dim:
            raise UnitError(f"cannot compare {dim_name(a.dim)} with {dim_name(b.dim)}", span)
        if a.is_symbolic or b.is_symbolic:
            names = ", ".join(sorted({str(s) for s in symbols_of(a.expr - b.expr)}
                                     | a.params | b.params))
            raise ElaborationError(f"this comparison depends on params ({names}), so it has no "
                                   "single answer", span)
        return bool(_COMPARE[op](a.expr, b.expr))
    check_numeric(left, span)
    check_numeric(right, span)
    if (isinstance(left, np.ndarray) or isinstance(right, np.ndarray)) and (
            isinstance(left, Fraction) or isinstance(right, Fraction)):
        raise NeedScalar
    result = _COMPARE[op](left, right)
    return result if isinstance(result, np.ndarray) else bool(result)

"""How large an exact number schedc computes with: one bound for literals and arithmetic.

Numbers are exact (ints and Fractions), so `1e4000000` or `(3 ** 4096) ** 4096` would take
unbounded time and memory to compute. Every exact number is kept within `MAX_BITS` bits of
numerator and denominator (about 1e±1233, far beyond any physical quantity); a literal is
judged from its text before it is computed, an operation from its operands' sizes before it
is carried out, and anything beyond is refused with the position of the expression.
"""

from __future__ import annotations

import re
from fractions import Fraction

MAX_BITS = 4096  # numerator and denominator of every exact number
MAX_INDEX = 2**62  # indices, counts and range bounds: they must fit the 64-bit lane arrays

_LITERAL = re.compile(r"(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?")
_LOG2_10 = 3.3219280948873626
_MAX_DIGITS = 1240  # significant digits of a literal: more cannot fit MAX_BITS (and int()
# refuses strings of more than 4,300 digits)


def literal(text: str) -> Fraction | None:
    """The exact value of a number literal (`12.5e3`), or None when it is beyond the bound:
    the size is estimated from the digits and the exponent before any power of ten is made."""
    match = _LITERAL.fullmatch(text)
    if match is None:
        return None
    whole, exponent = match.group(1), match.group(3) or "0"
    fraction = (match.group(2) or "").rstrip("0")
    digits = (whole + fraction).lstrip("0")
    if not digits:
        return Fraction(0)
    if len(exponent.lstrip("+-")) > 6 or len(digits) > _MAX_DIGITS:
        return None
    scale = int(exponent) - len(fraction)  # value = int(digits) * 10**scale
    high = len(digits) + scale  # the value is below 10**high
    if abs(scale) * _LOG2_10 > 2 * MAX_BITS or abs(high) * _LOG2_10 > MAX_BITS:
        return None
    value = Fraction(int(digits)) * Fraction(10) ** scale
    return value if fits(value) else None


def fits(value: int | Fraction) -> bool:
    """Whether an exact number is within the bound."""
    if isinstance(value, int):
        return value.bit_length() <= MAX_BITS
    return value.numerator.bit_length() <= MAX_BITS and value.denominator.bit_length() <= MAX_BITS


def bits(value: int | Fraction) -> int:
    """The larger bit length of numerator and denominator."""
    value = Fraction(value)
    return max(value.numerator.bit_length(), value.denominator.bit_length())


TOO_LARGE = (f"a number beyond 2^{MAX_BITS} (about 1e1233) in size or in precision; "
             "schedc computes exactly and refuses numbers this large")

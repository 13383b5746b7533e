"""Integers where an expression needs one (an index, a part count, a range bound) and indices
checked against what they index: the checks `evaluate` and the topology's families share."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .. import magnitude
from ..errors import ElaborationError, LimitError, Span
from ..model.values import Devices, Quantity, as_number, kind_of
from ..units import format_number


def index_devices(devices: Devices, index, span: Span) -> Devices:
    n = len(devices)
    check_index(index, n, span, f"group of {n}")
    if devices.lanes:
        return Devices(devices.pick(index), True)
    return Devices(devices.ids[index], isinstance(index, np.ndarray))


def check_index(index, n: int, span: Span, what: str) -> None:
    if isinstance(index, np.ndarray):
        if not index.size or (index.min() >= 0 and index.max() < n):
            return
    elif 0 <= index < n:
        return
    given = np.asarray(index)
    outside = (given < 0) | (given >= n)
    bad = given[outside] if given.ndim else (given if outside else None)
    if bad is not None and np.size(bad):
        first = int(np.ravel(bad)[0])
        valid = f"0..{n - 1}" if n else "none"
        raise ElaborationError(f"index {first} out of range for a {what} (valid: {valid})", span)


def integer_value(value: object, span: Span, what: str):
    """`value` as an index, a count or a bound: an int within ±2^62 (or lanes of ints)."""
    if isinstance(value, np.ndarray) and value.dtype != bool:
        return value
    number = as_number(value) if isinstance(value, (int, Fraction, Quantity)) else None
    if isinstance(number, int):
        if abs(number) >= magnitude.MAX_INDEX:
            raise LimitError(f"{what} must lie within ±2^62, not {format_number(number)}", span)
        return number
    if isinstance(value, Quantity) and value.is_symbolic:
        raise ElaborationError(f"{what} must be a concrete integer, but this depends on params "
                               f"({', '.join(value.param_names)})", span)
    shown = kind_of(value) if number is None else str(number)
    if number is not None and len(shown) > 40:  # a fraction of huge terms
        shown = f"a fraction near {format_number(number)}"
    raise ElaborationError(f"{what} must be an integer, not {shown}", span)

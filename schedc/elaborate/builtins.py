"""The built-in functions of expressions: len, min, max, ceil, floor, log2, ceil_log2, abs.

Each takes the evaluated arguments and the call node (for error spans) and works on plain
numbers, on quantities, or lane-wise on NumPy arrays.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from ..errors import ElaborationError, UnitError
from ..model.scalars import largest, magnitude, smallest
from ..model.values import (
    Devices,
    Integers,
    IntRange,
    NeedScalar,
    Quantity,
    as_number,
    as_quantity,
    check_numeric,
    kind_of,
    settle,
)
from ..units import dim_name


def _len(args, node):
    (value,) = args
    if isinstance(value, Integers) or (isinstance(value, Devices) and value.rank >= 1):
        return len(value)
    if isinstance(value, IntRange):
        count = np.maximum(np.asarray(value.hi) - np.asarray(value.lo) + 1, 0)
        return int(count) if count.ndim == 0 else count
    raise ElaborationError(f"len() needs a group, a list or a range, not {kind_of(value)}",
                           node.args[0].span)


def _extremum(args, node):
    pick_max = node.func == "max"
    if any(isinstance(a, Quantity) for a in args):
        if any(isinstance(a, np.ndarray) for a in args):
            raise NeedScalar
        qs = [as_quantity(a, arg.span) for a, arg in zip(args, node.args)]
        if len({q.dim for q in qs}) > 1:
            raise UnitError(f"{node.func}() of {dim_name(qs[0].dim)} and "
                            f"{dim_name(next(q.dim for q in qs if q.dim != qs[0].dim))}", node.span)
        expr = (largest if pick_max else smallest)(*[q.expr for q in qs])
        return settle(Quantity(expr, qs[0].dim, frozenset().union(*[q.params for q in qs])))
    for a, arg in zip(args, node.args):
        check_numeric(a, arg.span)
    if any(isinstance(a, np.ndarray) for a in args):
        if any(isinstance(a, Fraction) for a in args):
            raise NeedScalar
        result = args[0]
        for a in args[1:]:
            result = np.maximum(result, a) if pick_max else np.minimum(result, a)
        return result
    return max(args) if pick_max else min(args)


def _rounding(args, node):
    (value,) = args
    if isinstance(value, Quantity):
        number = as_number(value)
        if number is None:
            raise ElaborationError(f"{node.func}() needs a plain number, not {kind_of(value)}",
                                   node.args[0].span)
        value = number
    check_numeric(value, node.args[0].span)
    if isinstance(value, np.ndarray):
        return value
    return math.ceil(value) if node.func == "ceil" else math.floor(value)


def _log2(args, node):
    (value,) = args
    check_numeric(value, node.args[0].span)
    values = np.asarray(value)
    if isinstance(value, Fraction) or np.any(values <= 0) or np.any(values & (values - 1)):
        bad = value if not isinstance(value, np.ndarray) else int(values[(values <= 0) | (values & (values - 1) != 0)][0])
        raise ElaborationError(f"log2({bad}) is not an integer; this needs a power of two",
                               node.args[0].span)
    if isinstance(value, np.ndarray):
        return np.log2(values).astype(np.int64)
    return int(value).bit_length() - 1


def _ceil_log2(args, node):
    """The smallest e with 2**e >= n: the rounds of a binomial tree over n ranks."""
    (value,) = args
    check_numeric(value, node.args[0].span)
    values = np.asarray(value)
    if isinstance(value, Fraction) or np.any(values < 1):
        bad = value if not isinstance(value, np.ndarray) else int(values[values < 1][0])
        raise ElaborationError(f"ceil_log2() needs a positive integer, not {bad}",
                               node.args[0].span)
    if isinstance(value, np.ndarray):
        return np.searchsorted(np.left_shift(1, np.arange(63, dtype=np.int64)), values)
    return (int(value) - 1).bit_length()


def _abs(args, node):
    (value,) = args
    if isinstance(value, Quantity):
        return settle(Quantity(magnitude(value.expr), value.dim, value.params))
    check_numeric(value, node.args[0].span)
    return abs(value)


BUILTINS: dict[str, tuple[int | None, Callable]] = {
    "len": (1, _len),
    "min": (None, _extremum),
    "max": (None, _extremum),
    "ceil": (1, _rounding),
    "floor": (1, _rounding),
    "log2": (1, _log2),
    "ceil_log2": (1, _ceil_log2),
    "abs": (1, _abs),
}

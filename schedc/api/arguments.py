"""The API's checks of its arguments, by kind (whole numbers in a range, time limits, names
among choices), applied by the options dataclasses (`options.py`) when the API is called, so
that a script and the command line meet the same refusal. The command line converts an
option to its type (click's `int`, `float`) and leaves its range to these checks; each
raises `UsageError` naming the option as the command line spells it (`--channels 0: must be
from 1 to 32`), which is also the keyword argument a script passed.

Imports nothing heavy: the command line reads the ranges below for its help.
"""

from __future__ import annotations

from numbers import Integral, Real

from ..deadline import MAX_TIMEOUT
from ..errors import UsageError


def whole(value: object, option: str, lo: int | None = 1, hi: int | None = None) -> int:
    """`value` as an int from `lo` to `hi` (both included; None: no end there, as for a
    value whose range a later stage says with more context). A bool or a float is refused,
    as the command line refuses `--channels 1.5`."""
    within = _range_text(lo, hi)
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise UsageError(f"{option} {value!r}: must be a whole number"
                         + (f" {within}" if within else ""))
    number = int(value)
    if (lo is not None and number < lo) or (hi is not None and number > hi):
        raise UsageError(f"{option} {number}: must be {within}")
    return number


def _range_text(lo: int | None, hi: int | None) -> str:
    if lo is None:
        return "" if hi is None else f"at most {hi:,}"
    return f"at least {lo:,}" if hi is None else f"from {lo:,} to {hi:,}"


def seconds(value: object, option: str = "--timeout") -> float:
    """A time limit in seconds the alarm can be set to: above 0 and at most MAX_TIMEOUT (NaN
    is neither; 1e308 or inf would overflow setitimer)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise UsageError(f"{option} {value!r}: must be a number of seconds above 0, at most "
                         f"{MAX_TIMEOUT:,.0f}")
    if not 0 < float(value) <= MAX_TIMEOUT:
        raise UsageError(f"{option} {float(value):g}: must be a number of seconds above 0, at "
                         f"most {MAX_TIMEOUT:,.0f}")
    return float(value)


def one_of(value: object, option: str, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise UsageError(f"{option} {value}: one of {', '.join(choices)}")
    return value



def share(value: object, option: str) -> float:
    """A fraction between 0 and 1, both excluded (1% is 0.01)."""
    if isinstance(value, bool) or not isinstance(value, Real) or not 0 < float(value) < 1:
        raise UsageError(f"{option} {value!r}: must be a fraction between 0 and 1 (1% = 0.01)")
    return float(value)

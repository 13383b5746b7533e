"""The API's checks of its arguments, by kind (whole numbers in a range, time limits, names
among choices), applied by the options dataclasses (`options.py`) when the API is called, so
that a script and the command line meet the same refusal. The command line converts an
option to its type (click's `int`, `float`) and leaves its range to these checks; each
raises `UsageError` naming the option as the command line spells it (`--channels 0: must be
from 1 to 32`), which is also the keyword argument a script passed.

Imports nothing heavy: the command line reads the ranges below for its help.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from numbers import Integral, Real

from ..deadline import MAX_TIMEOUT
from ..errors import UsageError
from ..units import BYTES, UNITS


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


_SIZE_TEXT = re.compile(r"\s*([+-]?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)\s*([A-Za-z]*)\s*")


def byte_count(value: object, option: str, lo: int = 0, hi: int | None = None) -> int:
    """A size in bytes: a whole number, or text with a size unit as a `.sched` file writes
    it ("192MiB", "4 KiB", "1.5GB", "4096"), exactly a whole number of bytes, from `lo` to
    `hi`."""
    if isinstance(value, str):
        match = _SIZE_TEXT.fullmatch(value)
        factor, dim = UNITS.get(match.group(2) or "B", (None, None)) if match else (None, None)
        exponent = re.search(r"[eE]([+-]?\d+)", match.group(1)) if match else None
        if exponent and abs(int(exponent.group(1))) > 30:  # (no size is near 1e30 B)
            match = None  # refused below, before an exact 10^huge is computed
        if match is None or factor is None or dim != BYTES:
            raise UsageError(f"{option} {value}: must be a size in bytes, as 4096, 192MiB or "
                             "1.5GB (units B, KB, MB, GB, TB, PB, KiB, MiB, GiB, TiB, PiB)")
        exact = Fraction(match.group(1)) * factor
        if exact.denominator != 1:
            raise UsageError(f"{option} {value}: must be a whole number of bytes, not {exact}")
        value = int(exact)
    return whole(value, option, lo, hi)


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



def above_one(value: object, option: str) -> float:
    """A ratio above 1, or inf (no limit): `--outlier-factor`, the larger of a row's two
    times over the smaller (`measure.noise`, whose words these are)."""
    number = float(value) if isinstance(value, Real) and not isinstance(value, bool) else None
    if number is None or math.isnan(number) or number <= 1:
        shown = f"{number:g}" if number is not None else repr(value)
        raise UsageError(f"{option} {shown}: must be above 1 (the larger of a row's two times "
                         "over the smaller; inf keeps every row)")
    return number


def share(value: object, option: str) -> float:
    """A fraction between 0 and 1, both excluded (1% is 0.01)."""
    if isinstance(value, bool) or not isinstance(value, Real) or not 0 < float(value) < 1:
        raise UsageError(f"{option} {value!r}: must be a fraction between 0 and 1 (1% = 0.01)")
    return float(value)

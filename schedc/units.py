"""Units and dimensions. Every quantity is kept in base units: bytes, seconds, bytes/second.

Prefixes are exact: KB/MB/GB/TB/PB step by 10^3, KiB/MiB/GiB/TiB/PiB by 2^10; a bit is 1/8
byte, so 1 Gbit/s is 1.25·10^8 bytes/s. A dimension is the pair (bytes exponent, seconds
exponent): a size is (1, 0), a duration (0, 1), a bandwidth (1, -1).
"""

from __future__ import annotations

import difflib
import math
import numbers
import re
from fractions import Fraction

Dim = tuple[int, int]

DIMENSIONLESS: Dim = (0, 0)
BYTES: Dim = (1, 0)
SECONDS: Dim = (0, 1)
RATE: Dim = (1, -1)

_DECIMAL = {"": 1, "K": 10**3, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15}
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50}


def _unit_table() -> dict[str, tuple[Fraction, Dim]]:
    table: dict[str, tuple[Fraction, Dim]] = {}
    sizes = {f"{p}B": Fraction(f) for p, f in {**_DECIMAL, **_BINARY}.items()}
    sizes.update({f"{p}bit": Fraction(f, 8) for p, f in _DECIMAL.items()})
    for name, factor in sizes.items():
        table[name] = (factor, BYTES)
        table[f"{name}/s"] = (factor, RATE)
    for name in [n for n in sizes if n.endswith("B")]:
        table[f"{name}ps"] = (sizes[name], RATE)
    for prefix, scale in _DECIMAL.items():
        if prefix:
            table[f"{prefix}bps"] = (Fraction(scale, 8), RATE)
    table.update({
        "s": (Fraction(1), SECONDS),
        "ms": (Fraction(1, 10**3), SECONDS),
        "us": (Fraction(1, 10**6), SECONDS),
        "\u00b5s": (Fraction(1, 10**6), SECONDS),  # micro sign
        "\u03bcs": (Fraction(1, 10**6), SECONDS),  # Greek mu
        "ns": (Fraction(1, 10**9), SECONDS),
        "%": (Fraction(1, 100), DIMENSIONLESS),
    })
    return table


UNITS: dict[str, tuple[Fraction, Dim]] = _unit_table()


def unit(name: str) -> tuple[Fraction, Dim]:
    """The exact factor to base units and the dimension of a unit name."""
    return UNITS[name]


# Near misses of the unit names: spelt-out seconds, and sizes whose `b` may mean bits or bytes.
_TIME_ALIASES = {"sec": "s", "secs": "s", "msec": "ms", "usec": "us", "\u00b5sec": "\u00b5s",
                 "nsec": "ns"}
_PER_SECOND = re.compile(r"(.+?)(?:/s|/sec|/secs|ps)$")
_SIZE = re.compile(r"([kKmMgGtTpP]?)(i?)(b|bits?|B|[bB]ytes?)")


def near_units(name: str) -> list[str]:
    """The units a misspelt unit may have meant, best first: 'Gb/s' → Gbit/s, GB/s."""
    compact = name.replace(" ", "")
    if compact in UNITS:  # `50 GB / s`: the unit split by spaces (or a known unit: nothing)
        return [compact] if compact != name else []
    per = _PER_SECOND.fullmatch(compact)
    stem, suffix = (per.group(1), "/s") if per else (compact, "")
    found = [_TIME_ALIASES[stem]] if stem in _TIME_ALIASES and not suffix else []
    size = _SIZE.fullmatch(stem)
    if size:
        prefix, binary, kind = size.groups()
        prefix = prefix.upper() if binary or prefix != "k" else prefix  # kB, but KiB
        if kind in ("b", "bit", "bits") and not binary:
            found.append(f"{prefix}bit{suffix}")
        if kind not in ("bit", "bits"):
            found.append(f"{prefix}{binary}B{suffix}")
    found = [u for u in dict.fromkeys(found) if u in UNITS and u != name]
    return found or difflib.get_close_matches(compact, list(UNITS), n=2, cutoff=0.7)


def unknown_unit(name: str) -> str:
    """The message for a unit schedc does not know, with the near misses it may have meant."""
    near = near_units(name)
    hint = f"; did you mean {' or '.join(near)}?" if near else ""
    return f"unknown unit '{name}'{hint}"


def dim_name(dim: Dim) -> str:
    """What a dimension is called in messages: 'a size (bytes)', 'a bandwidth (bytes/s)' …"""
    names = {
        DIMENSIONLESS: "a number",
        BYTES: "a size (bytes)",
        SECONDS: "a duration (seconds)",
        RATE: "a bandwidth (bytes/s)",
        (0, -1): "a rate (1/s)",
        (-1, 1): "an inverse bandwidth (s/byte)",
    }
    if dim in names:
        return names[dim]
    b, s = dim
    parts = [f"bytes^{b}" if b not in (0, 1) else "bytes" if b else "", f"s^{s}" if s else ""]
    return "a quantity in " + "·".join(p for p in parts if p)


def base_unit(dim: Dim) -> str:
    """The base unit of a dimension, as printed after a value ('B', 's', 'B/s', '')."""
    return {DIMENSIONLESS: "", BYTES: "B", SECONDS: "s", RATE: "B/s"}.get(dim, f"B^{dim[0]}·s^{dim[1]}")


# ---- printing: exact values beyond the float range are printed exactly in scientific
# notation (1e+403 B/s), never converted to a float that overflows; a float that is already
# infinite prints as inf.


def to_float(value: Fraction | float) -> float:
    """A value as a float: ±inf beyond the float range, never an OverflowError."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _beyond_floats(value: Fraction | float, v: float) -> bool:
    """Whether an exact nonzero value overflows or underflows as the float `v`."""
    return (type(value) is not float  # a float is never exact, and the ABC check is slow
            and isinstance(value, numbers.Rational) and (math.isinf(v) or (v == 0 and value != 0)))


def _scientific(exact: Fraction, digits: int) -> str:
    """An exact value as d.dddde±N without converting it whole to a float."""
    sign, exact = ("-" if exact < 0 else ""), abs(exact)
    power = int((exact.numerator.bit_length() - exact.denominator.bit_length()) * 0.30103)
    mantissa = exact / Fraction(10) ** power
    while mantissa >= 10:
        mantissa, power = mantissa / 10, power + 1
    while mantissa < 1:
        mantissa, power = mantissa * 10, power - 1
    text = f"{float(mantissa):.{digits}g}"
    if float(text) >= 10:  # 9.999996 rounds up to 10
        text, power = "1", power + 1
    return f"{sign}{text}e{power:+03d}"


def format_number(value: Fraction | float, digits: int = 5) -> str:
    """A plain number, five significant digits: '1,024', '0.5', '1e+400'."""
    return _significant(value, digits)


def _significant(value: Fraction | float, digits: int = 5) -> str:
    v = to_float(value)
    if _beyond_floats(value, v):
        return _scientific(Fraction(value), digits)
    text = f"{v:.{digits}g}"
    if "e" in text:
        return text
    sign, digits_text = ("-", text[1:]) if text.startswith("-") else ("", text)
    whole, _, frac = digits_text.partition(".")
    grouped = f"{int(whole):,}" if whole.isdigit() else whole
    if not frac and grouped == "0":  # -0.0 prints as 0; -0.5 keeps its sign ("-0" has no frac)
        sign = ""
    return sign + grouped + ("." + frac if frac else "")


def format_bytes(value: Fraction | float) -> str:
    """Bytes in the largest binary unit that keeps them exact, else in SI units.

    >>> format_bytes(720 * 2**20)
    '720 MiB'
    >>> format_bytes(128 * 10**9)
    '128 GB'
    """
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value} B"
    exact = Fraction(value)
    if exact < 0:
        return "-" + format_bytes(-exact)
    if exact.denominator == 1 and 2**10 <= exact < 2**80:
        for prefix, factor in sorted(_BINARY.items(), key=lambda kv: -kv[1]):
            # Binary only for sizes that are binary in nature: a whole number of MiB (or KiB
            # below a MiB); 128 GB is 125,000,000 KiB, but nobody would call it that.
            if exact >= factor and exact % factor == 0 and (factor >= 2**20 or exact < 2**20):
                return f"{int(exact // factor):,} {prefix}B"
    return _scaled(exact, "B", [("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("K", 1e3)])


def format_rate(value: Fraction | float) -> str:
    """Bytes per second in SI units: '450 GB/s'."""
    return _scaled(value, "B/s", [("T", 1e12), ("G", 1e9), ("M", 1e6), ("K", 1e3)])


def format_seconds(value: Fraction | float) -> str:
    """A duration in s, ms, µs or ns, five significant digits: '7.5746 ms'."""
    v = to_float(value)
    if _beyond_floats(value, v) or not math.isfinite(v):
        return f"{_significant(value)} s"
    for name, factor in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if abs(v) >= factor:
            return f"{_significant(v / factor)} {name}"
    return f"{_significant(v / 1e-9)} ns" if v else "0 s"


def format_quantity(value: Fraction | float, dim: Dim) -> str:
    """A value in base units, printed in a readable unit for its dimension."""
    if dim == BYTES:
        return format_bytes(value)
    if dim == RATE:
        return format_rate(value)
    if dim == SECONDS:
        return format_seconds(value)
    unit_name = base_unit(dim)
    return _significant(value) + (f" {unit_name}" if unit_name else "")


def _scaled(value: Fraction | float, unit_name: str, prefixes: list[tuple[str, float]]) -> str:
    v = to_float(value)
    if _beyond_floats(value, v) or not math.isfinite(v):
        return f"{_significant(value)} {unit_name}"
    value = v
    for prefix, factor in prefixes:
        if abs(value) >= factor:
            return f"{_significant(value / factor)} {prefix}{unit_name}"
    return f"{_significant(value)} {unit_name}"

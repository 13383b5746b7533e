"""Sweeps: each schedule's time over a range of one param, from the compiled formula.

The formula is compiled once (the other params at their nominal values) into a NumPy
function with `sympy.lambdify`, then evaluated on the whole grid at once — no recompiling,
no SymPy per point. `--vary B_L=10GB/s:500GB/s:25` reads like a `--set`: each end is an
expression with units, parsed from its own text so errors point inside it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from ...cost.numeric import NumericTiming
from ...elaborate.evaluate import evaluate
from ...elaborate.lanes import Env
from ...elaborate.program import Param, Program
from ...errors import SchedcError, SourceFile, Span, UsageError, did_you_mean
from ...language.parser import parse_expression
from ...limits import DEFAULT_POINTS
from ...measure.bandwidth import GB, busbw_factor, factor_text
from ...model.scalars import rational
from ...model.values import Quantity, as_number, check_float_range
from ...session import Session
from ...units import DIMENSIONLESS, base_unit, dim_name, format_quantity

if TYPE_CHECKING:  # (SymPy: imported by the sweep of a formula, not by a structural one)
    from ...cost.timing import Timing

MAX_POINTS = 1_000_000
MAX_COMPILES = 200  # a sweep of a structural param compiles once per distinct integer


@dataclass(frozen=True)
class Vary:
    """`--vary NAME=LO:HI[:N]`, or `NAME=LO:HI:xK`: LO, LO·K, LO·K², ... up to HI, as
    nccl-tests' `-b LO -e HI -f K` steps its sizes (`factor` K; `points` then counts them)."""

    param: Param
    lo: Fraction
    hi: Fraction
    points: int
    factor: int | None = None


@dataclass(frozen=True)
class Sweep:
    param: Param
    spacing: str  # "log" or "linear"
    values: np.ndarray  # the param, in base units
    times: dict[str, np.ndarray]  # schedule name -> seconds at each value
    compiles: int | None = None  # structural param: the distinct values compiled
    # nccl-tests' terms (measure.bandwidth), per schedule: algbw and busbw in GB/s at each
    # value (busbw None: no factor for its collective), the factor (one, or one per value
    # when the ranks change with a structural param) and what it is, in words
    algbw: dict[str, np.ndarray] = field(default_factory=dict)
    busbw: dict[str, np.ndarray | None] = field(default_factory=dict)
    busbw_factor: dict[str, tuple[float, ...] | None] = field(default_factory=dict)
    factors: dict[str, str] = field(default_factory=dict)


def parse_vary(text: str, program: Program) -> Vary:
    """Parse `NAME=LO:HI[:N]` against the program's params."""
    name, sep, rest = text.partition("=")
    name = name.strip()
    source = SourceFile(f"--vary {name}", rest)
    if not sep or not name.isidentifier():
        raise UsageError(f"--vary expects NAME=LO:HI[:N] (e.g. --vary B_L=10GB/s:500GB/s), got {text!r}")
    param = program.params.get(name)
    if param is None:
        raise UsageError(f"--vary {name}: no param named '{name}'"
                         + did_you_mean(name, list(program.params), "params"))
    parts = rest.split(":")
    if len(parts) not in (2, 3):
        raise UsageError("--vary expects NAME=LO:HI or NAME=LO:HI:N", _whole(source))
    lo, hi = parse_range(":".join(parts[:2]), param, program, source)
    points = DEFAULT_POINTS
    if len(parts) == 3 and parts[2].strip().startswith("x"):
        span = Span(source, 1, len(parts[0]) + len(parts[1]) + 3, 1, len(rest) + 1)
        return _stepped(param, lo, hi, parts[2].strip()[1:], span)
    if len(parts) == 3:
        span = Span(source, 1, len(parts[0]) + len(parts[1]) + 3, 1, len(rest) + 1)
        if not parts[2].strip().isdigit() or not 2 <= int(parts[2]) <= MAX_POINTS:
            raise UsageError(f"the number of points must be an integer in 2..{MAX_POINTS:,}",
                             span)
        points = int(parts[2])
    return Vary(param, lo, hi, points)


def _stepped(param: Param, lo: Fraction, hi: Fraction, factor: str, span: Span) -> Vary:
    """`xK`: every LO·K^i up to HI (nccl-tests' `-f K`: `size = size*stepfactor` while
    `size <= maxbytes`, src/common.cu:936), so HI itself only when it is such a step."""
    if not factor.isdigit() or not 2 <= int(factor) <= 1024:
        raise UsageError("a step factor is xK with K an integer in 2..1024 (x2: powers of two)",
                         span)
    if lo <= 0:
        raise UsageError(f"a stepped sweep starts above 0; {param.name} starts at {float(lo):g}",
                         span)
    k = int(factor)
    steps = 1
    while lo * k ** steps <= hi:
        steps += 1
        if steps > MAX_POINTS:
            raise UsageError(f"this sweep has more than {MAX_POINTS:,} steps", span)
    return Vary(param, lo, hi, steps, k)


def grid_of(vary: Vary, spacing: str) -> np.ndarray:
    """The sweep's values: stepped (exact LO·K^i), log- or linearly spaced."""
    if vary.factor is not None:
        return np.array([float(vary.lo * vary.factor ** i) for i in range(vary.points)])
    if spacing == "log":
        if vary.lo <= 0:
            raise UsageError(f"a log sweep needs a positive range; {vary.param.name} starts at "
                             f"{float(vary.lo):g} {base_unit(vary.param.dim)} (use --linear)")
        return _significant(np.geomspace(float(vary.lo), float(vary.hi), vary.points), 12)
    return _significant(np.linspace(float(vary.lo), float(vary.hi), vary.points), 12)


def parse_range(text: str, param: Param, program: Program,
                source: SourceFile) -> tuple[Fraction, Fraction]:
    """`LO:HI` (the text of `source`, from its start) as a rising range of the param."""
    parts = text.split(":")
    if len(parts) != 2:
        raise UsageError("expected a range LO:HI", _whole(source))
    spans, start = [], 0
    for part in parts:
        spans.append(Span(source, 1, start + 1, 1, start + len(part) + 1))
        start += len(part) + 1
    lo, hi = (_end(part, span, param, program) for part, span in zip(parts, spans))
    if not lo < hi:
        raise UsageError(f"the range must rise: {parts[0].strip()} is not below {parts[1].strip()}",
                         _whole(source))
    return lo, hi


def _whole(source: SourceFile) -> Span:
    return Span(source, 1, 1, 1, max(2, len(source.text) + 1))


def _end(text: str, span: Span, param: Param, program: Program) -> Fraction:
    """One end of the range: a constant of the param's dimension, in base units."""
    piece = SourceFile(span.source.path, text)
    try:
        value = evaluate(parse_expression(piece), Env(program.names))
    except SchedcError as exc:  # re-anchor the position inside the whole --vary text
        where = exc.span
        shifted = Span(span.source, 1, span.col + (where.col - 1 if where else 0), 1,
                       span.col + (where.end_col - 1 if where else len(text)))
        raise UsageError(exc.message, shifted) from None
    if isinstance(value, Quantity):
        number: int | Fraction | None = None if value.is_symbolic else rational(value.expr)
        dim = value.dim
    else:
        number, dim = as_number(value), DIMENSIONLESS
    if number is None:
        raise UsageError("an end of the range must be a constant", span)
    check_float_range(number, span, "an end of the range")
    if dim != param.dim:
        raise UsageError(f"{param.name} is {dim_name(param.dim)}; this is {dim_name(dim)}", span)
    if param.structural and Fraction(number).denominator != 1:
        raise UsageError(f"{param.name} is a structural param (an integer); {number} is not an "
                         "integer", span)
    nonnegative = param.nominal >= 0 if param.symbol is None else param.symbol.is_nonnegative
    if nonnegative and number < 0:
        raise UsageError(f"{param.name} cannot be negative (its nominal value is "
                         f"{format_quantity(param.nominal, param.dim)})", span)
    return Fraction(number)


def sweep(program: Program, timings: list[Timing], vary: Vary, spacing: str = "log") -> Sweep:
    """Evaluate every timing's formula over the grid."""
    for end in (vary.lo, vary.hi):
        check_float_range(end, None, f"{vary.param.name} in a sweep (or a report's curves)")
    grid = grid_of(vary, spacing)
    import sympy
    x = vary.param.symbol
    others = {s: v for s, v in program.nominal.items() if s != x}
    times: dict[str, np.ndarray] = {}
    evaluated: dict[sympy.Expr, np.ndarray] = {}  # schedules of one formula share its array
    for t in timings:
        formula = t.cost.formula.xreplace(others)
        if formula in evaluated:
            times[t.name] = evaluated[formula]
            continue
        function = sympy.lambdify(x, formula, modules="numpy")
        try:
            with np.errstate(divide="ignore", invalid="ignore"):  # 1/0 is checked just below
                times[t.name] = evaluated[formula] = np.broadcast_to(
                    np.asarray(function(grid), dtype=float), grid.shape)
        except OverflowError:  # a constant of the formula is beyond the float range
            raise UsageError(f"the time of '{t.name}' is beyond the range of floating point, "
                             f"in which a sweep computes ({t.cost.formula})") from None
        infinite = np.flatnonzero(~np.isfinite(times[t.name]))
        if len(infinite):
            at = format_quantity(grid[infinite[0]], vary.param.dim)
            raise UsageError(f"with {vary.param.name} = {at} the time of '{t.name}' is infinite "
                             "(a bandwidth of 0?); start the range above it")
    found: dict[str, Bandwidths] = {}
    for t in timings:
        size = np.zeros_like(grid)
        for symbol, coeff in t.schedule.collective.size:  # the size, at each value of the grid
            size += float(coeff) * (grid if symbol == x else float(
                1 if symbol == 1 else others[symbol]))
        found[t.name] = _bandwidths(t, size, times[t.name],
                                    np.array([len(t.schedule.collective.ranks)]))
    return _with_bandwidths(Sweep(vary.param, _spacing(vary, spacing), grid, times), found)


# A schedule's sweep in nccl-tests' terms: algbw, busbw, the factor(s) and their words.
Bandwidths = tuple[np.ndarray, "np.ndarray | None", "tuple[float, ...] | None", str]


def _with_bandwidths(sweep: Sweep, found: dict[str, Bandwidths]) -> Sweep:
    from dataclasses import replace
    return replace(sweep, algbw={n: f[0] for n, f in found.items()},
                   busbw={n: f[1] for n, f in found.items()},
                   busbw_factor={n: f[2] for n, f in found.items()},
                   factors={n: f[3] for n, f in found.items()})


def _bandwidths(t: Timing | NumericTiming, size: np.ndarray, seconds: np.ndarray,
                ranks: np.ndarray) -> Bandwidths:
    """algbw = size / time and busbw = algbw × nccl-tests' factor at `ranks` (one count, or
    one per value), in GB/s per value, and what the factor is."""
    kind = t.schedule.collective.kind
    algbw = size / seconds / GB
    if busbw_factor(kind, int(ranks[0])) is None:
        return algbw, None, None, factor_text(kind, int(ranks[0]))
    factors = np.array([busbw_factor(kind, int(n)) for n in ranks], dtype=float)
    text = factor_text(kind, int(ranks[0]))
    if len(set(ranks.tolist())) > 1:
        text = text.replace(f"= {factors[0]:.6g} ", "").replace(f"n = {ranks[0]}", "n per value")
    return (algbw, algbw * (factors if len(ranks) > 1 else factors[0]),
            tuple(float(f) for f in factors), text)


def _spacing(vary: Vary, spacing: str) -> str:
    return spacing if vary.factor is None else f"x{vary.factor}"


def _significant(grid: np.ndarray, digits: int) -> np.ndarray:
    """Each value rounded to `digits` significant decimal digits, as arrays (8e9, not
    geomspace's 8000000000.000003): the digits as an exact integer, then one correctly
    rounded scaling by an exact power of ten, so a value is the float nearest its decimal.
    In blocks that stay in the cache (three times faster than whole arrays at 10^6 points)."""
    rounded = np.empty_like(grid)
    for start in range(0, len(grid), BLOCK):
        rounded[start:start + BLOCK] = _significant_block(grid[start:start + BLOCK], digits)
    return rounded


BLOCK = 16_384
_POWERS_OF_TEN = np.array([float(10**n) for n in range(24)])  # exact up to 10^22


def _significant_block(grid: np.ndarray, digits: int) -> np.ndarray:
    with np.errstate(divide="ignore"):
        exponent = np.floor(np.log10(np.abs(grid)))
    shift = np.where(np.isfinite(exponent), digits - 1 - exponent, 0).astype(np.int64)
    size = np.abs(shift)
    scale = _POWERS_OF_TEN[np.minimum(size, 23)]  # beyond 10^22 the value stays as it is
    up = shift >= 0
    if up.all():
        rounded = np.round(grid * scale) / scale
    elif not up.any():
        rounded = np.round(grid / scale) * scale
    else:
        rounded = np.where(up, np.round(grid * scale) / scale, np.round(grid / scale) * scale)
    far = size > 22
    return np.where(far, grid, rounded) if far.any() else rounded


def integer_points(vary: Vary, spacing: str = "log") -> list[int]:
    """The distinct integers of a structural param's sweep: the grid rounded, both ends kept."""
    lo, hi = int(vary.lo), int(vary.hi)
    if vary.factor is not None:
        points = [lo * vary.factor ** i for i in range(vary.points)]
        if len(points) > MAX_COMPILES:
            raise UsageError(f"this sweep compiles {vary.param.name} at {len(points):,} values; "
                             f"the limit is {MAX_COMPILES}")
        return points
    if spacing == "log" and lo <= 0:
        raise UsageError(f"a log sweep needs a positive range; {vary.param.name} starts at {lo} "
                         "(use --linear)")
    grid = (np.geomspace(lo, hi, vary.points) if spacing == "log"
            else np.linspace(lo, hi, vary.points))
    points = sorted({lo, hi, *(int(round(v)) for v in grid)})
    if len(points) > MAX_COMPILES:
        raise UsageError(f"this sweep compiles {vary.param.name} at {len(points):,} values; the "
                         f"limit is {MAX_COMPILES} (ask for fewer points)")
    return points


def instance_sweep(session: Session, vary: Vary, spacing: str,
                   timings_at: Callable[[Session], Sequence[Timing | NumericTiming]]) -> Sweep:
    """A structural param's sweep: one compile per distinct integer value (`Session.at`)."""
    points = integer_points(vary, spacing)
    rows = [timings_at(session.at({vary.param.name: n})) for n in points]
    names = [t.name for t in rows[0]]
    times = {name: np.array([float(row[k].time) for row in rows]) for k, name in enumerate(names)}
    found: dict[str, Bandwidths] = {}
    for k, name in enumerate(names):  # the size and the ranks may change with the param
        at = [row[k] for row in rows]
        size = np.array([float(t.bytes_value(t.schedule.collective.size)) for t in at])
        ranks = np.array([len(t.schedule.collective.ranks) for t in at])
        found[name] = _bandwidths(at[0], size, times[name], ranks)
    return _with_bandwidths(Sweep(vary.param, _spacing(vary, spacing),
                                  np.array(points, dtype=float), times, len(points)), found)

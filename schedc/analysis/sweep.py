"""Sweeps: each schedule's time over a range of one param, from the compiled formula.

The formula is compiled once (the other params at their nominal values) into a NumPy
function with `sympy.lambdify`, then evaluated on the whole grid at once — no recompiling,
no SymPy per point. `--vary B_L=10GB/s:500GB/s:25` reads like a `--set`: each end is an
expression with units, parsed from its own text so errors point inside it.
"""

from __future__ import annotations

import csv
import io
import os
import tempfile
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np
import sympy

from ..cost.timing import Timing
from ..elaborate.evaluate import evaluate
from ..elaborate.lanes import Env
from ..elaborate.program import Param, Program
from ..errors import SchedcError, SourceFile, Span, UsageError, did_you_mean
from ..language.parser import parse_expression
from ..model.values import Quantity, as_number, from_rational
from ..units import DIMENSIONLESS, base_unit, dim_name, format_quantity

DEFAULT_POINTS = 20
MAX_POINTS = 1_000_000


@dataclass(frozen=True)
class Vary:
    """`--vary NAME=LO:HI[:N]`."""

    param: Param
    lo: Fraction
    hi: Fraction
    points: int


@dataclass(frozen=True)
class Sweep:
    param: Param
    spacing: str  # "log" or "linear"
    values: np.ndarray  # the param, in base units
    times: dict[str, np.ndarray]  # schedule name -> seconds at each value


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
    spans, start = [], 0
    for part in parts:
        spans.append(Span(source, 1, start + 1, 1, start + len(part) + 1))
        start += len(part) + 1
    lo, hi = (_end(part, span, param, program) for part, span in zip(parts[:2], spans[:2]))
    points = DEFAULT_POINTS
    if len(parts) == 3:
        if not parts[2].strip().isdigit() or not 2 <= int(parts[2]) <= MAX_POINTS:
            raise UsageError(f"the number of points must be an integer in 2..{MAX_POINTS:,}",
                             spans[2])
        points = int(parts[2])
    if not lo < hi:
        raise UsageError(f"the range must rise: {parts[0].strip()} is not below {parts[1].strip()}",
                         _whole(source))
    return Vary(param, lo, hi, points)


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
        exact = value.expr.is_Rational and not value.is_symbolic
        number = from_rational(value.expr) if exact else None
        dim = value.dim
    else:
        number, dim = as_number(value), DIMENSIONLESS
    if number is None:
        raise UsageError("an end of the range must be a constant", span)
    if dim != param.dim:
        raise UsageError(f"{param.name} is {dim_name(param.dim)}; this is {dim_name(dim)}", span)
    if param.symbol.is_nonnegative and number < 0:
        raise UsageError(f"{param.name} cannot be negative (its nominal value is "
                         f"{format_quantity(param.nominal, param.dim)})", span)
    return Fraction(number)


def sweep(program: Program, timings: list[Timing], vary: Vary, spacing: str = "log") -> Sweep:
    """Evaluate every timing's formula over the grid."""
    if spacing == "log":
        if vary.lo <= 0:
            raise UsageError(f"a log sweep needs a positive range; {vary.param.name} starts at "
                             f"{float(vary.lo):g} {base_unit(vary.param.dim)} (use --linear)")
        grid = np.geomspace(float(vary.lo), float(vary.hi), vary.points)
    else:
        grid = np.linspace(float(vary.lo), float(vary.hi), vary.points)
    # 12 significant digits: 8e9, not geomspace's 8000000000.000003.
    grid = np.array([float(f"{v:.12g}") for v in grid])
    x = vary.param.symbol
    others = {s: v for s, v in program.nominal.items() if s != x}
    times = {}
    for t in timings:
        formula = t.cost.formula.xreplace(others)
        function = sympy.lambdify(x, formula, modules="numpy")
        try:
            with np.errstate(divide="ignore", invalid="ignore"):  # 1/0 is checked just below
                times[t.name] = np.broadcast_to(np.asarray(function(grid), dtype=float),
                                                grid.shape)
        except OverflowError:  # a constant of the formula is beyond the float range
            raise UsageError(f"the time of '{t.name}' is beyond the range of floating point, "
                             f"in which a sweep computes ({t.cost.formula})") from None
        infinite = np.flatnonzero(~np.isfinite(times[t.name]))
        if len(infinite):
            at = format_quantity(grid[infinite[0]], vary.param.dim)
            raise UsageError(f"with {vary.param.name} = {at} the time of '{t.name}' is infinite "
                             "(a bandwidth of 0?); start the range above it")
    return Sweep(vary.param, spacing, grid, times)


def write_csv(result: Sweep, path: Path) -> None:
    """The sweep as CSV in base units, written atomically (a temporary file, then rename)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    unit = base_unit(result.param.dim)
    writer.writerow([f"{result.param.name} ({unit})" if unit else result.param.name,
                     *[f"{name} (s)" for name in result.times]])
    for k, value in enumerate(result.values):
        writer.writerow([repr(float(value)), *[repr(float(t[k])) for t in result.times.values()]])
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=directory)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(buffer.getvalue())
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, path)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask

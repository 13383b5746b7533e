"""What `schedc report` shows, computed: curves of each schedule's time over a param with the
crossovers `solve` finds between them, and each schedule's busy map (rounds × resources).

Curves come from `sweep` (the compiled formula through NumPy), crossovers from `solve`
(regime by regime, exact), so a plot marks exactly the thresholds `schedc solve` prints.
The busy map is the model's own picture of a round: resource e is busy V[r,e]/B[e] of the
round's α + max_e V[r,e]/B[e]; 1 is the resource the round waits for.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations

import numpy as np
import sympy

from .. import progress
from ..cost.timing import Timing
from ..deadline import TimeLimit
from ..elaborate.program import Param, Program
from ..errors import SchedcError, UsageError
from ..model.ir import Collective
from ..model.values import FLOAT_MAX
from ..session import Session
from ..units import BYTES, RATE, SECONDS, Dim
from .bound.bounds import Bounds, bound
from .check import ProgramCheck, check_program
from .solve.roots import Side, Solution, solve
from .solve.sweep import Sweep, Vary, sweep
from .verify.verdict import Verdict, verdicts

CURVE_POINTS = 161
MAX_BINS = 240  # a busy map shows at most this many round columns, and resource rows
SPAN = 1e6  # crossovers beyond nominal × / ÷ SPAN are listed, not plotted


@dataclass(frozen=True)
class Crossover:
    """Where two schedules' times are equal, as `schedc solve 'time(a) = time(b)'` finds it."""

    left: str
    right: str
    value: sympy.Expr  # the param's value there (exact)
    time: float  # seconds, both sides
    expr: sympy.Expr | None  # in the other params, when SymPy found it


@dataclass(frozen=True)
class Curves:
    param: Param
    sweep: Sweep
    crossovers: tuple[Crossover, ...]  # those inside the plotted range
    equal: tuple[tuple[str, str, sympy.Expr, sympy.Expr], ...]  # (a, b, lo, hi): equal there
    notes: tuple[str, ...]  # crossovers outside the range, solves that failed


@dataclass(frozen=True)
class Busy:
    """fraction[r, k]: how busy resource `resources[k]` is in round column r, 0..1."""

    name: str
    fraction: np.ndarray  # columns of rounds × rows of resources
    rounds: np.ndarray  # first round (0-based) of each column; one round per column unless binned
    resources: tuple[int, ...]  # resource ids, grouped by class (first member of a binned row)
    classes: tuple[tuple[str, int, int], ...]  # (class, first row, end row)
    binned: bool


def groups(session: Session, names: list[str]) -> list[tuple[Collective, list[str]]]:
    """The schedules by the collective they compute, in order of first appearance."""
    found: dict[Collective, list[str]] = {}
    for name in names:
        found.setdefault(session.program.result(name).collective, []).append(name)
    return list(found.items())


def plotted_params(program: Program, collective: Collective, timings: list[Timing]) -> list[Param]:
    """The collective's size params, then every bandwidth param some time depends on."""
    used = set().union(*(t.cost.formula.free_symbols for t in timings)) if timings else set()
    sizes = {s for s, _ in collective.size}
    chosen = [p for p in program.params.values() if p.symbol in sizes and p.dim == BYTES]
    chosen += [p for p in program.params.values() if p.dim == RATE and p.symbol in used]
    return [p for p in chosen if p.symbol in used and p.nominal > 0]


def curves(session: Session, timings: list[Timing], param: Param, timeout: float) -> Curves:
    """Every schedule's time over a wide log range of `param`, and the crossovers of each pair."""
    program = session.program
    nominal = Fraction(param.nominal)
    found: list[Crossover] = []
    equal: list[tuple[str, str, sympy.Expr, sympy.Expr]] = []
    notes: list[str] = []
    pairs = list(combinations(timings, 2))
    ticker = progress.ticker(f"report: crossovers in {param.name}", len(pairs))
    for a, b in pairs:
        ticker.advance()
        if not (a.cost.formula.has(param.symbol) or b.cost.formula.has(param.symbol)):
            continue
        span = program.result(a.name).definition.span
        try:
            solution = solve(Side(a.name, a.cost.formula, SECONDS, span),
                             Side(b.name, b.cost.formula, SECONDS, span), "=", param.symbol,
                             program.nominal, TimeLimit(timeout), span, span)
        except SchedcError as exc:
            notes.append(f"{a.name} = {b.name}: {exc.message}")
            continue
        equal += [(a.name, b.name, i.lo, i.hi) for i in solution.intervals
                  if i.smaller == "equal"]
        for root in solution.roots:
            at = {**program.nominal, param.symbol: root.value}
            found.append(Crossover(a.name, b.name, root.value,
                                   float(a.cost.formula.xreplace(at)), root.expr))
    ticker.finish()
    lo, hi = nominal / 4096, nominal * 64
    inside = []
    for c in found:  # compared as fractions: a value beyond the float range is no error here
        try:
            value: Fraction | None = Fraction(float(c.value))
        except (OverflowError, ValueError):
            value = None
        if value is not None and nominal / int(SPAN) <= value <= nominal * int(SPAN):
            inside.append(c)
            lo, hi = min(lo, value / 2), max(hi, value * 2)
        else:
            shown = f"{float(value):.5g}" if value is not None else f"{sympy.Float(c.value, 5)}"
            notes.append(f"{c.left} = {c.right} at {param.name} = {shown}, outside the plot")
    hi = min(hi, max(FLOAT_MAX / 2**64, 2 * lo))  # near the float limit: room for the axes
    result = sweep(program, timings, Vary(param, lo, hi, CURVE_POINTS), "log")
    return Curves(param, result, tuple(inside), tuple(equal), tuple(notes))


@dataclass(frozen=True)
class SideCurves:
    """The two sides of a solved equation over the solved param, and the solutions."""

    param: Param
    values: np.ndarray
    sides: dict[str, np.ndarray]
    dim: Dim  # of the sides
    roots: tuple[tuple[float, float], ...]  # (param, side) at each solution


def side_curves(program: Program, solution: Solution) -> SideCurves:
    """Both sides over a log range that holds the nominal value and every solution."""
    param = program.params[solution.param]
    x = param.symbol
    others = {s: v for s, v in program.nominal.items() if s != x}
    centre = [float(param.nominal)] + [float(r.value) for r in solution.roots]
    centre = [c for c in centre if c > 0]
    if not centre:
        raise UsageError(f"--plot: {param.name} has no positive value to plot around")
    grid = np.geomspace(min(centre) / 16, max(centre) * 16, CURVE_POINTS)
    sides = {}
    for side, name in ((solution.left, solution.left.name), (solution.right, solution.right.name)):
        function = sympy.lambdify(x, side.expr.xreplace(others), modules="numpy")
        with np.errstate(divide="ignore", invalid="ignore"):
            values = np.broadcast_to(np.asarray(function(grid), dtype=float), grid.shape)
        sides[name if name not in sides else f"{name} (right)"] = values
    roots = tuple((float(r.value), float(solution.left.expr.xreplace({**others, x: r.value})))
                  for r in solution.roots)
    return SideCurves(param, grid, sides, solution.left.dim, roots)


def busy(session: Session, name: str) -> Busy:
    """The busy fraction of every resource with a bandwidth in every round, at the nominal
    point. Over MAX_BINS rounds, a column is consecutive rounds (busy time over elapsed
    time); over MAX_BINS resources, a row is neighbours of one class (the busiest of them)."""
    program = session.program
    topology, nominal = program.topology, program.nominal
    loads = session.loads(name)
    classes: dict[str, list[int]] = {}
    bandwidth = np.zeros(len(topology.resources))
    for r in topology.resources:
        if r.effective_bandwidth is not None:
            classes.setdefault(r.cls, []).append(r.id)
            bandwidth[r.id] = float(r.effective_bandwidth.xreplace(nominal))
    order = [r for members in classes.values() for r in members]
    row_of = np.full(len(topology.resources), -1)
    row_of[order] = np.arange(len(order))
    per_byte = np.array([float(s.xreplace(nominal)) / d
                         for s, d in zip(loads.basis, loads.denominators)])
    shapes = len(loads.shape_cross)
    seconds = np.zeros((shapes, len(order)))
    if loads.amount.size:
        moved = loads.amount.astype(float) @ per_byte
        keep = row_of[loads.resource] >= 0
        np.add.at(seconds, (loads.shape[keep], row_of[loads.resource[keep]]),
                  moved[keep] / bandwidth[loads.resource[keep]])
    alpha = float(program.alpha.xreplace(nominal))
    startup = alpha + np.array([float(x.xreplace(nominal)) for x in loads.shape_latency])
    round_time = startup + (seconds.max(axis=1) if order else 0.0)
    columns = _bins(loads.rounds)
    rows: list[tuple[int, int]] = []
    spans = []
    for cls, members in classes.items():
        start = len(rows)
        first = int(row_of[members[0]])
        rows += [(first + a, first + b) for a, b in _chunks(len(members), len(order))]
        spans.append((cls, start, len(rows)))
    fraction = np.zeros((len(columns), len(rows)))
    if columns and rows:
        # How many rounds of each shape fall in each column: the columns' busy and elapsed
        # times are then products with the per-shape ones (no rounds × resources array).
        column_of = np.repeat(np.arange(len(columns)), [b - a for a, b in columns])
        counts = np.zeros((len(columns), shapes))
        np.add.at(counts, (column_of, loads.shape_of), 1.0)
        time = counts @ round_time
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(time[:, None] > 0, (counts @ seconds) / time[:, None], 0.0)
        # A binned row shows its busiest resource: one NIC that every round waits for
        # stays visible among many idle ones.
        fraction = np.maximum.reduceat(share, [a for a, _ in rows], axis=1)
    return Busy(name, fraction, np.array([a for a, _ in columns], dtype=np.int64),
                tuple(order[a] for a, _ in rows), tuple(spans),
                len(columns) < loads.rounds or len(rows) < len(order))


def _bins(count: int) -> list[tuple[int, int]]:
    """[start, end) of at most MAX_BINS consecutive, nearly equal groups of `count` items."""
    parts = min(count, MAX_BINS)
    edges = [count * k // parts for k in range(parts + 1)] if parts else [0]
    return list(zip(edges[:-1], edges[1:]))


def _chunks(members: int, total: int) -> list[tuple[int, int]]:
    """A class's share of MAX_BINS rows (at least one), as [start, end) within the class."""
    if total <= MAX_BINS:
        return [(k, k + 1) for k in range(members)]
    parts = max(1, members * MAX_BINS // total)
    edges = [members * k // parts for k in range(parts + 1)]
    return list(zip(edges[:-1], edges[1:]))


@dataclass(frozen=True)
class Group:
    """One collective of the file and its schedules, with everything the report shows."""

    collective: Collective
    timings: tuple[Timing, ...]
    curves: tuple[Curves, ...]
    busy: tuple[Busy, ...]
    bounds: Bounds


@dataclass(frozen=True)
class Overview:
    groups: tuple[Group, ...]
    verdicts: tuple[Verdict, ...]
    check: ProgramCheck  # the file's reports and expects


def overview(session: Session, timings: list[Timing], timeout: float, max_cuts: int) -> Overview:
    """Everything `schedc report` shows about the (verified) `timings` of a session."""
    by_name = {t.name: t for t in timings}
    chosen = groups(session, list(by_name))
    work = sum(len(plotted_params(session.program, c, [by_name[n] for n in names])) + len(names)
               for c, names in chosen)
    ticker = progress.ticker("report", work + 1)
    built = []
    for collective, names in chosen:
        members = [by_name[n] for n in names]
        plots = []
        for param in plotted_params(session.program, collective, members):
            plots.append(curves(session, members, param, timeout))
            ticker.advance()
        maps = []
        for name in names:
            maps.append(busy(session, name))
            ticker.advance()
        built.append(Group(collective, tuple(members), tuple(plots), tuple(maps),
                           bound(session, collective, names, max_cuts)))
    checked = check_program(session, timeout)
    ticker.finish()
    return Overview(tuple(built), tuple(verdicts(session, tuple(by_name))), checked)

"""Analyses of times: `solve`, `sensitivity`, `sweep`, `bound`, `scale`; and a file's own checks,
`evaluate` (its `report`s) and `check` (its `expect`s).

Each verifies the schedules it reports on first (`verify=False` skips that) and bounds its
symbolic work by `timeout` seconds, as the commands of the same names do.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ..deadline import DEFAULT_TIMEOUT
from ..limits import MAX_CUTS
from .compiling import LoadOptions, load, verified_timings, work_limits
from .options import Options, count, counts, switch, time_limit

if TYPE_CHECKING:
    import sympy

    from ..analysis.bound.bounds import Bounds
    from ..analysis.check import FileCheck
    from ..analysis.scale.forms import Scaling
    from ..analysis.solve.instances import IntegerSearch
    from ..analysis.solve.protocols import ProtocolSpan
    from ..analysis.solve.reports import ReportValue
    from ..analysis.solve.roots import Solution
    from ..analysis.solve.sensitivity import Sensitivity
    from ..analysis.solve.sweep import Sweep
    from ..language import syntax
    from ..session import Session


@dataclass(frozen=True)
class TimedOptions(Options):
    """`solve`, `sensitivity`, `eval`, `check`: the seconds SymPy work may take."""

    timeout: float = time_limit(DEFAULT_TIMEOUT)


@dataclass(frozen=True)
class SweepOptions(Options):
    linear: bool = switch("--linear")


@dataclass(frozen=True)
class BoundOptions(Options):
    max_cuts: int = count(MAX_CUTS, "--max-cuts")


@dataclass(frozen=True)
class ScaleOptions(Options):
    start: int = count(2, "--from")
    at: tuple[int, ...] = counts("--at")


def _timed(session: Session, equation: str) -> tuple[syntax.Relation, list[str]]:
    """The parsed equation and the schedules it names, each checked against the file (an
    unknown name points into the equation)."""
    from ..analysis.solve.equations import name_span
    from ..errors import SourceFile
    from ..language.parser import parse_equation
    from ..language.syntax import TimeOf, walk
    relation = parse_equation(SourceFile("equation", equation))
    timed: dict[str, TimeOf] = {}
    for node in walk(relation):
        if isinstance(node, TimeOf):
            timed.setdefault(node.schedule, node)
    for name, node in timed.items():
        session.program.result(name, name_span(node.span, name))
    return relation, list(timed)


def solve(session: Session, equation: str, param: str, *, timeout: float = TimedOptions.timeout,
          verify: bool = True, plot: str | Path | None = None) -> Solution | IntegerSearch:
    """Every solution of `equation` for `param`, regime by regime, and which side is smaller
    in between: a `Solution`, with `.switches`: for each schedule the equation names that
    picks an NCCL protocol per size, the spans of `param` where each protocol wins. A
    structural param (a host count: `param hosts = 2`) is searched over the integers instead,
    compiling the file at each value: an `IntegerSearch`. The schedules the equation names
    are verified first; `timeout` seconds bound the whole. `plot`: also draw both sides
    against `param` into this SVG or PNG file (not for a structural param: no curve).

        >>> found = schedc.solve(session, "time(hierarchical) = time(ring)", "B_L")
        >>> [float(r.value) / 1e9 for r in found.roots]   # GB/s
        [...]
        >>> hosts = schedc.load("schedules/seed/nvlink_hosts.sched")
        >>> schedc.solve(hosts, "time(hierarchical) = time(ring)", "hosts").roots
        (1,)
    """
    from dataclasses import replace

    from ..analysis.solve.equations import Equations
    from ..deadline import OutOfTime, TimeLimit
    from ..errors import SolveError, SourceFile, Span
    timeout = TimedOptions(timeout).timeout
    if plot is not None:
        from ..files import check_output
        check_output(plot)  # (before any work; the command line checked it as it parsed)
    relation, timed = _timed(session, equation)
    limit = TimeLimit(timeout)  # one budget: deriving the times, then solving
    try:
        with limit.running():
            verified_timings(session, timed, verify)
    except OutOfTime:
        raise SolveError(f"could not derive the times within {limit}", relation.span,
                         ("raise the limit with --timeout",)) from None
    param_span = Span(SourceFile("--for", param), 1, 1, 1, len(param) + 1)
    equations = Equations(session, limit)
    if equations.param(param.strip(), param_span).structural:  # a search over the integers
        from ..analysis.solve.instances import search
        return search(session, relation, param.strip(), param_span, timeout,
                      lambda at: verified_timings(at, timed, verify))
    solution = equations.solve(relation, param.strip(), param_span)
    solution = replace(solution, switches=protocol_switches(session, equation, solution.param))
    if plot is not None:
        plot_solution(session, solution, plot)
    return solution


def protocol_switches(session: Session, equation: str, param: str
                      ) -> dict[str, list[ProtocolSpan]]:
    """For each schedule `equation` names that picks an NCCL protocol per size, the spans of
    `param` on which each protocol wins (schedules without protocols are left out)."""
    from ..analysis.solve.protocols import protocol_spans
    _, timed = _timed(session, equation)
    symbol = session.program.params[param.strip()].symbol
    return {name: spans for name in timed
            if (spans := protocol_spans(session.timing(name), symbol))}


def plot_solution(session: Session, solution: Solution, path: str | Path) -> None:
    """Draw both sides of a solved equation against its param into an SVG or PNG file."""
    from ..analysis.overview import side_curves
    from ..render.plot import save, solve_figure
    save(solve_figure(side_curves(session.program, solution)), Path(path))


class Sensitivities(NamedTuple):
    """One schedule's time at the nominal point and its sensitivity to every param."""

    name: str
    time: sympy.Expr
    params: list[Sensitivity]


def sensitivity(session: Session, schedules: Iterable[str] = (), *,
                timeout: float = TimedOptions.timeout, verify: bool = True) -> list[Sensitivities]:
    """dT/dp and the elasticity (p/T)·dT/dp of each schedule's time for every param.

        >>> rows = schedc.sensitivity(session, ["ring"])
        >>> [s.param.name for s in rows[0].params]
        ['alpha', 'B_L', 'B_N', 'V']
    """
    from ..analysis.solve.sensitivity import sensitivities
    from ..deadline import TimeLimit
    timeout = TimedOptions(timeout).timeout
    program = session.program
    return [Sensitivities(t.name, t.cost.formula.xreplace(program.nominal),
                          sensitivities(program, t, TimeLimit(timeout)))
            for t in verified_timings(session, session.selected(tuple(schedules)), verify)]


def sweep(session: Session, vary: str, schedules: Iterable[str] = (), *,
          linear: bool = SweepOptions.linear, verify: bool = True,
          csv: str | Path | None = None, plot: str | Path | None = None) -> Sweep:
    """Each schedule's time over a range of one param, `vary` as `--vary` takes it
    ("NAME=LO:HI[:N]", with units), at N log-spaced points (or linear ones), or
    "NAME=LO:HI:xK": LO, LO·K, LO·K², ... up to HI, as nccl-tests' `-f K` steps (x2: powers of
    two). A structural param is compiled at each (integer) point. Beside each time, nccl-tests'
    algbw and busbw in GB/s (`.algbw`, `.busbw`). `csv`: also write the sweep to this CSV file
    (base units; floats as Python's repr, so they read back exactly), `plot`: draw it into
    this SVG or PNG file; both are checked before any work and written whole or not at all.

        >>> swept = schedc.sweep(session, "B_L=100GB/s:900GB/s:5")
        >>> len(swept.values)
        5
    """
    from ..analysis.solve.sweep import instance_sweep, parse_vary
    from ..analysis.solve.sweep import sweep as sweep_formula
    from ..files import check_output
    for path in (csv, plot):  # before any work (the command line's parse checked them too)
        if path is not None:
            check_output(path)
    program = session.program
    plan = parse_vary(vary, program)
    if plan.factor is not None and linear:
        from ..errors import UsageError
        raise UsageError(f"--vary {vary} steps by x{plan.factor}; --linear is another spacing: "
                         "give one of them")
    names = session.selected(tuple(schedules))
    spacing = "linear" if SweepOptions(linear).linear else "log"
    if not program.symbolic:  # `--no-formula` (`load(..., formula=False)`)
        result = _numeric_sweep(session, plan, spacing, names, verify)
    elif plan.param.structural:  # another machine or schedule at every point: compile each
        result = instance_sweep(session, plan, spacing,
                                lambda at: verified_timings(at, names, verify))
    else:
        result = sweep_formula(program, verified_timings(session, names, verify), plan, spacing)
    if csv is not None:
        from ..render.sweep import sweep_csv
        from ..render.files import write_atomically
        write_atomically(Path(csv), sweep_csv(result))
    if plot is not None:
        from ..render.plot import save, sweep_figure
        save(sweep_figure(result), Path(plot))
    return result


def _numeric_sweep(session: Session, plan, spacing: str, names: list[str], verify: bool) -> Sweep:
    """A sweep without formulas: a structural param's, compiled at each point and timed from
    the loads (no SymPy); any other param's sweep evaluates a formula."""
    from ..analysis.solve.sweep import instance_sweep
    from .compiling import numeric_times
    if not plan.param.structural:
        from ..errors import UsageError
        raise UsageError(f"--no-formula sweeps a structural param (compiled at each point); "
                         f"{plan.param.name} is swept through the formula: leave out --no-formula")
    return instance_sweep(session, plan, spacing, lambda at: numeric_times(at, names,
                                                                           verify=verify))


def bound(session: Session, schedules: Iterable[str] = (), *, max_cuts: int = BoundOptions.max_cuts,
          verify: bool = True) -> list[Bounds]:
    """Cut-set and end-host lower bounds of each collective, and each schedule against them
    (a machine file without schedules gives its cuts). Refuses a collective that needs more
    than `max_cuts` max-flow problems.

        >>> [b.collective.kind for b in schedc.bound(session)]
        ['allreduce']
    """
    from ..analysis.bound.bounds import bound_all
    max_cuts = BoundOptions(max_cuts).max_cuts
    names = session.selected(tuple(schedules), required=False)
    groups = bound_all(session, names, max_cuts)  # bad input before verification
    verified_timings(session, names, verify)
    return groups


def scale(session: Session, param: str, schedules: Iterable[str] = (), *,
          start: int = ScaleOptions.start,
          bounds: bool = True, verify: bool = True, at: Iterable[int] = ScaleOptions.at,
          extrapolate: bool = False) -> list[Scaling]:
    """Each schedule's time as a formula in the structural `param`, piece by piece from
    `param` = `start` up, with its bounds (unless `bounds=False`), the limits as `param`
    grows, and a knob's optimum. Each piece says its status: `checked` (fitted exactly on
    compiled instances and equal to the compiles at `checked_at`; beyond the last piece's
    `valid_to` an extrapolation) or `proved`. A piece ends where a condition of its regime
    form fails (solved exactly in `param`) or at a boundary read from the source. Every
    instance compiled is verified first unless `verify=False`. Each value of `at` is
    evaluated from the form of the piece holding it, else compiled there (or, with
    `extrapolate`, taken from the last form and labelled so): `Scaling.at`.

        >>> hosts = schedc.load("schedules/seed/nvlink_hosts.sched")
        >>> [s.name for s in schedc.scale(hosts, "hosts", bounds=False)]
        ['ring', 'hierarchical']
    """
    from dataclasses import replace

    from ..analysis.scale.forms import Scaler
    from ..errors import UsageError
    if session.program.step_rule != "sum":  # its shapes are α + max(terms) per round class
        raise UsageError(f"scale: closed forms in {param.strip()} are built for `step cost "
                         f"sum`; this file declares `step cost {session.program.step_rule}`")
    options = ScaleOptions(start, tuple(at))
    start, values = options.start, options.at
    names = session.selected(tuple(schedules))
    scaler = Scaler(session, param.strip(), names, start, bounds,
                    lambda at, name: verified_timings(at, [name], verify))
    results = [scaler.scale(name) for name in names]
    return [replace(r, at=tuple(scaler.evaluate(r, n, extrapolate) for n in values))
            for r in results]


def evaluate(session: Session, *, timeout: float = TimedOptions.timeout) -> tuple[ReportValue, ...]:
    """Every `report NAME = EXPR` of the file, evaluated at the nominal point, in order.

        >>> [r.name for r in schedc.evaluate(session)]
        [...]
    """
    from ..analysis.solve.equations import Equations
    return Equations(session, TimedOptions(timeout).timeout).reports().values


def check(paths: str | Path | Iterable[str | Path], sets: Iterable[str] = (), *,
          timeout: float = TimedOptions.timeout,
          max_transfers: int | None = LoadOptions.max_transfers,
          max_rounds: int | None = LoadOptions.max_rounds, machine: str | Path | None = None,
          ranks: str | None = None) -> list[FileCheck]:
    """`schedc check`: compile and verify every `.sched` file in `paths` (files or
    directories), evaluate its reports and its expects. A file with bad input gives its
    error in its `FileCheck` (`.error`); `.failed` says whether a verdict or expect failed.

        >>> [f.failed for f in schedc.check("schedules/seed")]
        [False, False, False, False]
    """
    from ..analysis.check import check_file, sched_files
    if isinstance(paths, (str, Path)):
        paths = [paths]
    timeout = TimedOptions(timeout).timeout
    limits = work_limits(max_transfers, max_rounds)
    machine_path = None if machine is None else Path(machine)
    return [check_file(path, timeout, limits, tuple(sets), machine_path, ranks)
            for path in sched_files([Path(p) for p in paths])]


__all__ = ["bound", "check", "evaluate", "load", "plot_solution", "protocol_switches", "scale",
           "sensitivity", "solve", "sweep"]

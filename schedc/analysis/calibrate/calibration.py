"""Fit a machine's params to measured times (nccl-tests logs) and compare prediction with
measurement.

The model is the schedule's closed-form time T(V; θ) (with protocols, the minimum over them).
θ are the fitted params — by default every param the time depends on except the size. The
fit minimises Σ_i log(T(V_i; θ) / t_i)² over the *fit rows* (least squares on log time, so
that 8 B and 16 GiB weigh alike), with scipy.optimize.least_squares, each param searched in
log space (so it stays positive) and a protocol's share of a link's bandwidth at most 1. The
other rows are *held out*: their error checks the fit on sizes it did not see.

A param the fit rows cannot determine — its column of the Jacobian is zero (a protocol that
wins on none of them), or it moves only together with others (the Jacobian is
rank-deficient) — is reported as undetermined, and so is a fit that did not converge.

Errors are T_model / T_measured - 1; their geomean is over |error| (the issue's measure).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import sympy

from ...errors import SchedcError, UsageError
from ...measure.nccl_tests import Row, Table
from ...session import Session
from ...units import DIMENSIONLESS

# nccl-tests' binary per collective of the language.
COLLECTIVE_BINARIES = {"allreduce": "all_reduce", "reduce_scatter": "reduce_scatter",
                       "allgather": "all_gather", "broadcast": "broadcast", "reduce": "reduce",
                       "alltoall": "alltoall"}
DEFAULT_EVERY = 4


class CalibrationError(SchedcError):
    """A calibration cannot be set up (a log that does not fit the machine, a bad param)."""


@dataclass(frozen=True)
class Point:
    size: int  # bytes
    measured: float  # seconds
    fit: bool  # used for the fit (else held out)
    log: str


@dataclass(frozen=True)
class FittedParam:
    name: str
    value: float  # base units
    initial: float
    dim: tuple
    determined: bool


@dataclass(frozen=True)
class Comparison:
    """Predicted against measured, row by row."""

    schedule: str
    logs: tuple[str, ...]
    points: tuple[Point, ...]
    predicted: tuple[float, ...]
    protocols: tuple[str | None, ...]  # the winning protocol per row, when there are any

    @property
    def errors(self) -> tuple[float, ...]:
        return tuple(p / m.measured - 1 for p, m in zip(self.predicted, self.points))

    def geomean(self, fit: bool | None) -> float | None:
        """Geomean |error| over fit rows (True), held-out rows (False) or all (None)."""
        chosen = [abs(e) for e, p in zip(self.errors, self.points) if fit is None or p.fit == fit]
        if not chosen:
            return None
        return math.exp(sum(math.log(max(e, 1e-15)) for e in chosen) / len(chosen))

    def mean(self, fit: bool | None) -> float | None:
        """Mean |error|: unlike the geomean, not pulled down by a few near-exact rows."""
        chosen = [abs(e) for e, p in zip(self.errors, self.points) if fit is None or p.fit == fit]
        return sum(chosen) / len(chosen) if chosen else None

    @property
    def worst(self) -> tuple[Point, float]:
        k = max(range(len(self.points)), key=lambda i: abs(self.errors[i]))
        return self.points[k], self.errors[k]


@dataclass(frozen=True)
class Calibration:
    comparison: Comparison
    params: tuple[FittedParam, ...]
    converged: bool
    message: str  # the optimiser's
    evaluations: int
    every: int

    @property
    def undetermined(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params if not p.determined)


# ---- set-up -----------------------------------------------------------------------------------


def size_symbol(session: Session, schedule: str) -> sympy.Symbol:
    """The one param that is the collective's size (the log's size column)."""
    collective = session.program.result(schedule).collective
    if len(collective.size) != 1 or collective.size[0][1] != 1:
        raise CalibrationError("the collective's size must be one param (e.g. 'allreduce V over "
                               "ranks') to set it from the log's sizes", collective.span)
    return collective.size[0][0]


def check_table(session: Session, schedule: str, table: Table, log: str) -> None:
    """The log must be of the machine's collective and rank count, where it says."""
    collective = session.program.result(schedule).collective
    binary = COLLECTIVE_BINARIES[collective.kind]
    if table.collective is not None and table.collective != binary:
        raise CalibrationError(f"{log} measures {table.collective}, but schedule '{schedule}' "
                               f"computes {collective.kind} ({binary}_perf)", collective.span)
    if table.ranks is not None and table.ranks != len(collective.ranks):
        raise CalibrationError(f"{log} ran on {table.ranks} ranks, but schedule '{schedule}' is "
                               f"over {len(collective.ranks)}", collective.span)


def points(tables: list[tuple[str, Table]], every: int, place: str) -> tuple[Point, ...]:
    """The rows of size > 0 (a 0-byte row times only the launch), per log sorted by size;
    one size in `every`, and the largest, are fit rows."""
    out = []
    for log, table in tables:
        rows = sorted((r for r in table.rows if r.size > 0), key=lambda r: r.size)
        for k, row in enumerate(rows):
            out.append(Point(row.size, _time(row, place), k % every == 0 or k == len(rows) - 1,
                             log))
    if not out:
        raise CalibrationError("the logs have no rows with a size above 0")
    return tuple(out)


def _time(row: Row, place: str) -> float:
    return row.time_s(place)


# ---- the model as a function ------------------------------------------------------------------


class Model:
    """T(size; θ) of one schedule as NumPy code, with the winning protocol per size."""

    def __init__(self, session: Session, schedule: str, fit: tuple[str, ...]):
        program = session.program
        timing = session.timing(schedule)
        self.size = size_symbol(session, schedule)
        formula = timing.cost.formula
        depends = {s.name for s in formula.free_symbols}
        if not fit:
            fit = tuple(p.name for p in program.params.values()
                        if p.symbol != self.size and p.name in depends)
        for k, name in enumerate(fit):
            if name in fit[:k]:  # one unknown each: a param twice would be two of the same
                raise UsageError(f"--fit names {name} twice")
            param = program.params.get(name)
            if param is None:
                from ...errors import did_you_mean
                raise UsageError(f"--fit {name}: no param named '{name}'"
                                 + (did_you_mean(name, list(program.params), "params") or ""))
            if param.symbol == self.size:
                raise UsageError(f"--fit {name}: {name} is the collective's size, set by the log")
            if name not in depends:
                raise UsageError(f"--fit {name}: the time of '{schedule}' does not depend on it")
            if param.nominal <= 0:
                raise UsageError(f"--fit {name}: its nominal value must be positive to fit it")
        if not fit:
            raise UsageError(f"the time of '{schedule}' depends on no param but the size; "
                             "nothing to fit")
        self.params = [program.params[n] for n in fit]
        self.fixed = {s: v for s, v in program.nominal.items()
                      if s != self.size and s.name not in fit}
        symbols = [self.size] + [p.symbol for p in self.params]
        self.function = _lambdify(symbols, formula.xreplace(self.fixed))
        self.protocols = [(t.name, _lambdify(symbols, t.formula.xreplace(self.fixed)))
                          for t in timing.cost.protocol_times]
        self.initial = np.array([float(p.nominal) for p in self.params])
        # A protocol's share of a link's bandwidth is at most 1.
        effs = {str(p.eff) for p in program.protocols}
        self.upper = np.array([1.0 if p.dim == DIMENSIONLESS and p.name in effs else np.inf
                               for p in self.params])

    def __call__(self, sizes: np.ndarray, theta: np.ndarray) -> np.ndarray:
        return np.broadcast_to(np.asarray(self.function(sizes, *theta), dtype=float), sizes.shape)

    def winners(self, sizes: np.ndarray, theta: np.ndarray) -> list[str | None]:
        if not self.protocols:
            return [None] * len(sizes)
        times = np.stack([np.broadcast_to(np.asarray(f(sizes, *theta), dtype=float), sizes.shape)
                          for _, f in self.protocols])
        return [self.protocols[k][0] for k in np.argmin(times, axis=0)]


def _lambdify(symbols, expr):
    return sympy.lambdify(symbols, expr, modules="numpy")


# ---- commands ---------------------------------------------------------------------------------


def compare(session: Session, schedule: str, tables: list[tuple[str, Table]],
            place: str = "out") -> Comparison:
    """Predicted (at the file's nominal params) against measured, without fitting."""
    for log, table in tables:
        check_table(session, schedule, table, log)
    pts = tuple(Point(p.size, p.measured, False, p.log) for p in points(tables, 1, place))
    timing = session.timing(schedule)
    size = size_symbol(session, schedule)
    nominal = {s: v for s, v in session.program.nominal.items() if s != size}
    f = _lambdify([size], timing.cost.formula.xreplace(nominal))
    sizes = np.array([float(p.size) for p in pts])
    predicted = np.broadcast_to(np.asarray(f(sizes), dtype=float), sizes.shape)
    winners: list[str | None] = [None] * len(pts)
    if timing.cost.protocol_times:
        each = np.stack([np.broadcast_to(np.asarray(_lambdify([size], t.formula.xreplace(nominal))(
            sizes), dtype=float), sizes.shape) for t in timing.cost.protocol_times])
        winners = [timing.cost.protocol_times[k].name for k in np.argmin(each, axis=0)]
    return Comparison(schedule, tuple(dict.fromkeys(log for log, _ in tables)), pts,
                      tuple(float(x) for x in predicted), tuple(winners))


def calibrate(session: Session, schedule: str, tables: list[tuple[str, Table]],
              fit: tuple[str, ...] = (), every: int = DEFAULT_EVERY,
              place: str = "out", max_evaluations: int = 2000) -> Calibration:
    from scipy.optimize import least_squares  # type: ignore[import-untyped]  # scipy has no types

    for log, table in tables:
        check_table(session, schedule, table, log)
    model = Model(session, schedule, fit)
    pts = points(tables, every, place)
    sizes = np.array([float(p.size) for p in pts])
    measured = np.array([p.measured for p in pts])
    on = np.array([p.fit for p in pts])
    if on.sum() < len(model.params):
        raise CalibrationError(f"{int(on.sum())} fit rows cannot determine {len(model.params)} "
                               "params; fit on more rows (a smaller --every)")
    scale = model.initial
    upper = np.log(model.upper / scale)

    def residuals(x: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            predicted = model(sizes[on], scale * np.exp(x))
            out = np.log(predicted / measured[on])
        return np.where(np.isfinite(out), out, 1e3)

    best = None
    # A few starts: the nominal point, and every param a decade either way (the minimum over
    # protocols makes the objective piecewise smooth, with local minima).
    for start in (0.0, -1.0, 1.0):
        x0 = np.minimum(np.full(len(scale), start * math.log(10)), upper - 1e-9)
        result = least_squares(residuals, x0, bounds=(np.full(len(scale), -np.inf), upper),
                               method="trf", x_scale=1.0, max_nfev=max_evaluations)
        if best is None or result.cost < best.cost:
            best = result
    assert best is not None
    theta = scale * np.exp(best.x)
    determined = _determined(best.jac)
    predicted = model(sizes, theta)
    comparison = Comparison(schedule, tuple(dict.fromkeys(log for log, _ in tables)), pts,
                            tuple(float(x) for x in predicted),
                            tuple(model.winners(sizes, theta)))
    params = tuple(FittedParam(p.name, float(v), float(p.nominal), p.dim, bool(d))
                   for p, v, d in zip(model.params, theta, determined))
    return Calibration(comparison, params, bool(best.success), str(best.message), int(best.nfev),
                       every)


def _determined(jac: np.ndarray) -> np.ndarray:
    """Per param: does the data determine it? Not if its Jacobian column vanishes, or if it
    lies in the Jacobian's null space (it moves only together with others)."""
    norms = np.linalg.norm(jac, axis=0)
    determined = norms > 1e-8 * max(float(norms.max(initial=0)), 1e-300)
    if determined.any():
        _, singular, vt = np.linalg.svd(jac[:, determined] / norms[determined], full_matrices=False)
        null = vt[singular < 1e-6 * singular.max()]
        if len(null):
            involved = (np.abs(null) > 1e-3).any(axis=0)
            idx = np.flatnonzero(determined)
            determined[idx[involved]] = False
    return determined


def as_fraction(value: float) -> Fraction:
    return Fraction(value).limit_denominator(10**18)

"""Fit a machine's params to measured times (nccl-tests logs) and compare prediction with
measurement: the data, the set-up shared by `calibrate` and `predict`, and `predict`.

The model is the schedule's closed-form time T(V; θ) (with protocols, the minimum over them);
the fit (fit.py) minimises Σ_i log(T(V_i; θ) / t_i)² over the *fit rows* plus each param's
prior (roles.py), inside each param's physical bounds. The other rows are *held out*: their
error checks the fit on sizes (or logs) it did not see. Errors are T_model / T_measured - 1;
their geomean is over |error|.
"""

from __future__ import annotations

from collections import Counter

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from ...errors import SchedcError
from ...limits import MAX_FIT_WORK
from ...measure.nccl_tests import BUSBW_FACTORS, Row, Table
from ...session import Session
from .model import Model, schedules, size_symbol

# nccl-tests' binary per collective of the language.
COLLECTIVE_BINARIES = {"allreduce": "all_reduce", "reduce_scatter": "reduce_scatter",
                       "allgather": "all_gather", "broadcast": "broadcast", "reduce": "reduce",
                       "alltoall": "alltoall"}
# What the rows' redop/root columns say each binary's rows look like (nccl-tests prints
# `none` as the redop of a collective that does not reduce, and -1 as an unrooted root).
ROW_SHAPES = {"all_reduce": "reduction", "reduce_scatter": "reduction",
              "reduce": "rooted reduction", "all_gather": "no reduction",
              "alltoall": "no reduction", "broadcast": "no reduction"}
DEFAULT_EVERY = 4
# A row is latency-bound when latency is more than this share of its predicted time: its
# prediction rests on the latencies, which transfer between machines less well than the
# shares of a link (docs/calibration.md, "What transfers").
LATENCY_BOUND = 0.5
MiB = 2**20
# Held-out error is also shown by size: latency-bound, the middle, bandwidth-bound.
SIZE_RANGES = (("<= 64 KiB", 0, 64 * 2**10), ("64 KiB - 64 MiB", 64 * 2**10 + 1, 64 * MiB - 1),
               (">= 64 MiB", 64 * MiB, math.inf))


class CalibrationError(SchedcError):
    """A calibration cannot be set up (a log that does not fit the machine, a bad param)."""


class WorkBudget:
    """The work a fit may still take (`limits.MAX_FIT_WORK`, `--max-fit-work`): each
    evaluation of the model spends its fit rows and CALL_COST; past the limit, refused."""

    CALL_COST = 100  # a call of the model costs about as much as 100 rows more (measured)

    def __init__(self, limit: int | None, rows: int, params: int) -> None:
        self.limit = self.left = MAX_FIT_WORK if limit is None else limit
        self.rows, self.params = rows, params

    # The most evaluations per unknown (and one more) a shipped log's fit took (RESULTS.md): an
    # estimate, not a bound; rows that determine little can take more, and `spend` stops them.
    EVALUATIONS_PER_UNKNOWN = 2_750

    def estimate(self) -> int:
        """The work the fit may take, from its rows and params alone."""
        return self.EVALUATIONS_PER_UNKNOWN * (self.params + 1) * (self.rows + self.CALL_COST)

    def checked(self) -> WorkBudget:
        """This budget; refused, before the first evaluation, if the estimate passes it."""
        if self.estimate() > self.limit:
            raise CalibrationError(
                f"a fit of {self.params} params on {self.rows:,} fit rows may take "
                f"{self.estimate():,} units of work (estimated before it starts: up to "
                f"{self.EVALUATIONS_PER_UNKNOWN:,} evaluations of the model per param and one "
                f"more, as the shipped logs' slowest fit took, each costing its fit rows + "
                f"{self.CALL_COST}); the limit is {self.limit:,}: fit fewer params (--fit) or "
                "fewer rows (--every, fewer logs), or raise --max-fit-work")
        return self

    def spend(self) -> None:
        self.left -= self.rows + self.CALL_COST
        if self.left < 0:
            calls = self.limit // (self.rows + self.CALL_COST)
            raise CalibrationError(
                f"the fit did not settle within {self.limit:,} units of work ({self.rows:,} fit "
                f"rows and {self.CALL_COST} more per evaluation of the model: {calls:,} "
                f"evaluations, for {self.params} params); fit fewer params (--fit) or fewer "
                "rows (--every, fewer logs), or raise --max-fit-work")


@dataclass(frozen=True)
class Point:
    size: int  # bytes
    measured: float  # seconds
    fit: bool  # used for the fit (else held out)
    log: str
    line: int = 0  # the row's line in its log


@dataclass(frozen=True)
class Run:
    """One log with its machine: the schedule of `session` that NCCL ran for it."""

    session: Session
    schedule: str
    log: str
    table: Table
    machine: str = ""


@dataclass(frozen=True)
class Split:
    """Which rows are fit rows: "interleaved" (one size in `every`, and the largest), "size"
    (the sizes up to `size`), "leave-one-out" (every log but one, in turn; with `own_below`,
    the held-out log's own params are then fitted on its rows up to that size)."""

    kind: str = "interleaved"
    every: int = DEFAULT_EVERY
    size: int = 64 * MiB
    own_below: int = 0  # bytes; 0: the held-out log's own params stay at its file's values

    def describe(self) -> str:
        if self.kind == "size":
            from ...units import format_bytes
            return f"size:{format_bytes(self.size)} (fit on sizes <= it, held out above)"
        if self.kind == "leave-one-out" and self.own_below:
            from ...units import format_bytes
            return ("leave-one-out (each log predicted from a fit on the others, its own "
                    f"params fitted on its rows <= {format_bytes(self.own_below)})")
        if self.kind == "leave-one-out":
            return "leave-one-out (each log predicted from a fit on the others)"
        return f"interleaved (every {self.every}th size and the largest fit, per log)"


@dataclass(frozen=True)
class FittedParam:
    name: str
    value: float  # base units
    initial: float
    dim: tuple
    determined: bool
    log: str | None = None  # None: shared by every log whose machine file has it
    what: str = ""  # its role, e.g. "LL's share of a link's bandwidth"
    lower: float = 0.0
    upper: float = math.inf
    prior: float | None = None
    sigma: float | None = None  # the value's relative standard error (from the Jacobian)
    flags: tuple[str, ...] = ()  # "at its lower bound", "undetermined", ...
    fitted: bool = True  # False: not fitted here (leave-one-out: the held-out log's own)
    held: str = ""  # why it is held at its prior, not fitted (identify.py); "" when fitted


def geomean_abs(errors) -> float | None:
    """Geomean |error| (None for no rows); an exact row counts as 1e-15, not as 0."""
    errors = list(errors)
    if not errors:
        return None
    return math.exp(sum(math.log(max(abs(e), 1e-15)) for e in errors) / len(errors))


@dataclass(frozen=True)
class Comparison:
    """Predicted against measured, row by row."""

    schedule: str
    logs: tuple[str, ...]
    points: tuple[Point, ...]
    predicted: tuple[float, ...]
    protocols: tuple[str | None, ...]  # the winning protocol per row, when there are any
    # Per row, the share of its predicted time that is latency (per call, per round, per hop:
    # the winner's time at size 0), or None where that is not a share (model.latency_shares).
    latency: tuple[float | None, ...]
    notes: tuple[str, ...] = ()  # how the machine was set for each log (`predict`'s hosts)
    # Per row, where its prediction comes from: "model" (the file's, at its params) or
    # "nccl" (NCCL's own latency model, for sizes the fit cannot carry: predictions.py).
    sources: tuple[str, ...] = ()

    def __post_init__(self):
        rows = len(self.points)
        if not len(self.predicted) == len(self.protocols) == len(self.latency) == rows:
            raise ValueError("a comparison needs a prediction, a winner and a latency share "
                             "per row")
        if self.sources and len(self.sources) != rows:
            raise ValueError("a comparison's sources are one per row")

    @functools.cached_property  # (once: `worst` and the tables read it per row)
    def errors(self) -> tuple[float, ...]:
        return tuple(p / m.measured - 1 for p, m in zip(self.predicted, self.points))

    def _chosen(self, fit: bool | None, lo: float = 0, hi: float = math.inf) -> list[float]:
        return [abs(e) for e, p in zip(self.errors, self.points)
                if (fit is None or p.fit == fit) and lo <= p.size <= hi]

    def geomean(self, fit: bool | None, lo: float = 0, hi: float = math.inf) -> float | None:
        """Geomean |error| over fit rows (True), held-out rows (False) or all (None), of
        sizes in [lo, hi]."""
        return geomean_abs(self._chosen(fit, lo, hi))

    def mean(self, fit: bool | None) -> float | None:
        """Mean |error|: unlike the geomean, not pulled down by a few near-exact rows."""
        chosen = self._chosen(fit)
        return sum(chosen) / len(chosen) if chosen else None

    def by_range(self, fit: bool | None) -> list[tuple[str, int, float | None]]:
        """(range, rows, geomean |error|) per size range."""
        return [(name, len(self._chosen(fit, lo, hi)), self.geomean(fit, lo, hi))
                for name, lo, hi in SIZE_RANGES]

    def by_bound(self, fit: bool | None) -> list[tuple[str, list[Point], float | None]]:
        """(what bounds the time, its rows, geomean |error|): `latency` where latency is more
        than LATENCY_BOUND of the predicted time, else `bandwidth`, and `unknown` for rows
        without a share (listed only when there are any)."""
        rows: dict[str, list[tuple[Point, float]]] = {"latency": [], "bandwidth": [],
                                                      "unknown": []}
        for p, e, share in zip(self.points, self.errors, self.latency):
            if fit is None or p.fit == fit:
                bound = ("unknown" if share is None else
                         "latency" if share > LATENCY_BOUND else "bandwidth")
                rows[bound].append((p, e))
        return [(name, [p for p, _ in mine], geomean_abs([e for _, e in mine]))
                for name, mine in rows.items() if mine or name != "unknown"]

    @property
    def worst(self) -> tuple[Point, float]:
        errors = self.errors
        k = max(range(len(self.points)), key=lambda i: abs(errors[i]))
        return self.points[k], self.errors[k]


@dataclass(frozen=True)
class Calibration:
    comparison: Comparison
    params: tuple[FittedParam, ...]
    converged: bool
    message: str  # the optimiser's
    evaluations: int
    every: int
    split: Split = field(default_factory=Split)
    starts: tuple[str, ...] = ()  # what the starts reached, when they disagree
    notes: tuple[str, ...] = ()  # rows excluded, duplicated sizes, checks skipped
    checks: tuple[str, ...] = ()  # the model's adequacy problems (checks.py)
    folds: tuple[tuple[str, Calibration], ...] = ()  # leave-one-out: (held-out log, its fit)
    optimum: tuple[int, int] = (0, 0)  # (starts that reached the best cost, starts made)
    # The command line that makes it again, which a written fit records ("": made by the
    # Python API from loaded sessions, which no command line names)
    made_by: str = ""
    # `calibrate --step-rules`: the same fit under each `step cost` rule (step_rules.py)
    step_rules: tuple = ()

    @property
    def undetermined(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params if not p.determined)

    @property
    def flagged(self) -> tuple[FittedParam, ...]:
        return tuple(p for p in self.params if p.flags)

    @property
    def trusted(self) -> bool:
        """Written by --write without --force: converged, no flagged param, starts agree."""
        return (self.converged and not self.flagged and not self.starts
                and not any(c.startswith("INADEQUATE") for c in self.checks)
                and all(f.trusted for _, f in self.folds))


# ---- set-up -----------------------------------------------------------------------------------


def check_table(session: Session, schedule: str, table: Table, log: str) -> list[str]:
    """The log must be of the machine's collective, rank and host count, where it says;
    returns what was checked and from where, or why a check was skipped."""
    size_symbol(session, schedule)  # (several schedules: of one collective)
    collective = session.program.result(schedules(schedule)[0]).collective
    binary = COLLECTIVE_BINARIES.get(collective.kind)
    if binary is None:
        raise CalibrationError(f"nccl-tests has no benchmark of {collective.kind}, which schedule "
                               f"'{schedule}' computes: a log measures one of "
                               f"{', '.join(COLLECTIVE_BINARIES)}", collective.span)
    said = []
    if table.collective is not None:
        where = ("its '# Collective test starting' line" if table.collective_from == "starting"
                 else "the binary it names")
        if table.collective != binary:
            raise CalibrationError(f"{log} measures {table.collective} ({where}), but schedule "
                                   f"'{schedule}' computes {collective.kind} ({binary}_perf)",
                                   collective.span)
        said.append(f"collective {binary} from {where}")
    else:
        shape = table.row_shape()
        if shape is not None and shape != ROW_SHAPES.get(binary, shape):
            raise CalibrationError(
                f"{log} names no collective, and its rows are of a collective with "
                f"{shape} (redop/root columns), but schedule '{schedule}' computes "
                f"{collective.kind} ({binary}_perf: {ROW_SHAPES[binary]})", table.span)
        fits = _collectives_from_busbw(table)
        if fits is not None and binary not in fits[0]:
            raise CalibrationError(
                f"{log} names no collective, and its busbw/algbw of {fits[1]:.4f} is nccl-tests' "
                f"factor for {' or '.join(sorted(fits[0]))} on its {table.ranks} ranks, but "
                f"schedule '{schedule}' computes {collective.kind} ({binary}_perf: "
                f"{_FACTOR_TEXT.get(binary, '1')})", table.span)
        said.append(f"collective: the log names none; its rows' "
                    f"{'redop/root' if shape else ''}{' and ' if shape and fits else ''}"
                    f"{'busbw/algbw' if fits else ''} fit {binary}"
                    if shape or fits else "collective check skipped: the log names none")
    ranks = len(collective.ranks)
    if table.ranks is not None:
        if table.ranks != ranks:
            raise CalibrationError(f"{log} ran on {table.ranks} ranks (its '#  Rank' lines), "
                                   f"but schedule '{schedule}' is over {ranks}", collective.span)
        said.append(f"{ranks} ranks from its '#  Rank' lines")
    else:
        said.append("rank check skipped: the log lists no '#  Rank' lines")
    implied = _ranks_from_busbw(table, binary)
    if implied is not None:
        if implied[0] != ranks:
            raise CalibrationError(f"{log}: its busbw/algbw of {implied[1]:.4f} means "
                                   f"{implied[0]} ranks (nccl-tests: busbw = algbw · "
                                   f"{_FACTOR_TEXT[binary]}), but schedule '{schedule}' is over "
                                   f"{ranks}", collective.span)
        said.append(f"{ranks} ranks from its busbw/algbw")
    devices = session.program.topology.devices
    hosts = len({devices[r].host for r in collective.ranks})
    if table.hosts is not None:
        if table.hosts != hosts:
            raise CalibrationError(f"{log} ran on {table.hosts} hosts (its '#  Rank' lines), but "
                                   f"schedule '{schedule}' has its ranks on {hosts}",
                                   collective.span)
        said.append(f"{hosts} host{'s' if hosts > 1 else ''} from its '#  Rank' lines")
    per = table.per_process()
    if per is not None and ranks % per[0]:
        raise CalibrationError(f"{log}: {per[0]} GPUs per process ({per[1]}) cannot make the "
                               f"{ranks} ranks of schedule '{schedule}'", collective.span)
    return [f"{log}: {', '.join(said)}"]


_FACTOR_TEXT = {"all_reduce": "2(n-1)/n", "reduce_scatter": "(n-1)/n", "all_gather": "(n-1)/n",
                "alltoall": "(n-1)/n"}


def _fastest_row(table: Table):
    """The measurement of the largest algbw, if its busbw/algbw is exact enough to read
    (two printed decimals: above 10 GB/s), else None."""
    best = max((r.measurement("out") for r in table.rows), key=lambda m: m.algbw)
    return best if best.algbw >= 10 else None


def _collectives_from_busbw(table: Table) -> tuple[set[str], float] | None:
    """The collectives whose busbw factor, at the ranks the `#  Rank` lines count, gives the
    rows' busbw/algbw (to the printed precision, on the row of the largest algbw)."""
    best = _fastest_row(table)
    if table.ranks is None or best is None:
        return None
    fits = {name for name, factor in BUSBW_FACTORS.items()
            if abs(factor(table.ranks) * best.algbw - best.busbw) <= 0.02}
    return (fits, best.busbw / best.algbw) if fits else None


def _ranks_from_busbw(table: Table, binary: str) -> tuple[int, float] | None:
    """The rank count the rows' busbw/algbw implies (nccl-tests' factor, its PERFORMANCE.md),
    read from the rows of the largest algbw (two decimals: exact enough above 10 GB/s)."""
    best = _fastest_row(table)
    if binary not in _FACTOR_TEXT or best is None:
        return None
    ratio = best.busbw / best.algbw
    share = ratio / 2 if binary == "all_reduce" else ratio  # (n-1)/n
    if not 0 <= share < 1:
        return None
    n = round(1 / (1 - share))
    # Trust it only when n's factor reproduces the ratio to the printed precision.
    factor = (2 if binary == "all_reduce" else 1) * (n - 1) / n
    return (n, ratio) if abs(factor * best.algbw - best.busbw) <= 0.02 else None


def rows_of(run: Run, place: str, drop_wrong: bool) -> tuple[list[Row], list[str]]:
    """The rows a fit may use, sorted by size, and notes on those it may not."""
    notes = []
    rows = [r for r in run.table.rows if r.size > 0]
    if len(rows) < len(run.table.rows):
        notes.append(f"{run.log}: {len(run.table.rows) - len(rows)} row(s) of 0 B not used "
                     "(they time only the launch)")
    wrong = [r for r in rows if (r.measurement(place).wrong or 0) > 0]
    if wrong:
        lines = ", ".join(str(r.span.line) for r in wrong)
        if not drop_wrong:
            raise CalibrationError(f"{run.log}: {len(wrong)} row(s) with a nonzero #wrong (lines "
                                   f"{lines}): their results were wrong, so their times do not "
                                   "count; --drop-wrong leaves them out", wrong[0].span)
        notes.append(f"{run.log}: {len(wrong)} row(s) with a nonzero #wrong left out "
                     f"(--drop-wrong): lines {lines}")
        rows = [r for r in rows if not (r.measurement(place).wrong or 0) > 0]
    # (counted once: list.count per row took 1.5 s on 10,000 rows)
    twice = sorted(s for s, n in Counter(r.size for r in rows).items() if n > 1)
    if twice:
        notes.append(f"{run.log}: sizes measured more than once, each row kept: "
                     + ", ".join(str(s) for s in twice))
    if not rows:
        raise CalibrationError(f"{run.log}: no rows to fit (sizes above 0, results not wrong)",
                               run.table.span)
    return sorted(rows, key=lambda r: r.size), notes


def points(run: Run, split: Split, place: str, drop_wrong: bool = False,
           fit_all: bool = False) -> tuple[tuple[Point, ...], list[str]]:
    rows, notes = rows_of(run, place, drop_wrong)
    out = []
    for k, row in enumerate(rows):
        if fit_all:
            on = True
        elif split.kind == "size":
            on = row.size <= split.size
        elif split.kind == "leave-one-out":
            on = False
        else:
            on = k % split.every == 0 or k == len(rows) - 1
        out.append(Point(row.size, row.time_s(place), on, run.log, row.span.line))
    return tuple(out), notes


# ---- predict ----------------------------------------------------------------------------------


def compare(session: Session, schedule: str, tables: list[tuple[str, Table]],
            place: str = "out", drop_wrong: bool = False) -> Comparison:
    """Predicted (at the file's nominal params) against measured, without fitting."""
    pts: list[Point] = []
    for log, table in tables:
        check_table(session, schedule, table, log)
        got, _ = points(Run(session, schedule, log, table), Split(), place, drop_wrong)
        pts += [Point(p.size, p.measured, False, p.log, p.line) for p in got]
    size_symbol(session, schedule)
    model = Model(session, schedule, ())
    sizes = np.array([float(p.size) for p in pts])
    theta = np.array([])
    return Comparison(schedule, tuple(dict.fromkeys(log for log, _ in tables)), tuple(pts),
                      tuple(float(x) for x in model(sizes, theta)),
                      tuple(model.winners(sizes, theta)),
                      tuple(model.latency_shares(sizes, theta)))


def calibrate(session: Session, schedule: str, tables: list[tuple[str, Table]],
              fit: tuple[str, ...] = (), every: int = DEFAULT_EVERY, place: str = "out",
              max_evaluations: int = 2000, split: Split | None = None,
              drop_wrong: bool = False) -> Calibration:
    """One machine file's params fitted to its logs (see fit.calibrate_runs for several)."""
    from .fit import calibrate_runs
    runs = [Run(session, schedule, log, table, session.program.path) for log, table in tables]
    return calibrate_runs(runs, tuple(fit), split or Split(every=every), place, drop_wrong,
                          max_evaluations)

"""The records of calibration, shared by the fit (fit.py, splits.py), the checks of the
model (checks.py), `predict` (calibration.py) and the renderers: a log's measured points, the
runs a fit spans, how rows are split, fitted params, the comparison of prediction with
measurement and the calibration itself. Here, below every module that makes them, so the
wing's modules import records and not each other.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...errors import SchedcError
from ...limits import MAX_FIT_WORK

if TYPE_CHECKING:
    from ...measure.nccl_tests import Table
    from ...session import Session

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
    # (log, measure.nccl_tests.Row) of each row left out as an outlier (`--outlier-factor`)
    outliers: tuple = ()

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

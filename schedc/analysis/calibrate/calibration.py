"""Fit a machine's params to measured times (nccl-tests logs) and compare prediction with
measurement: `compare` (`predict`) and `calibrate` (one machine file; fit.py fits several).
The records are records.py's, the rows rows.py's (both re-exported here, where callers have
always found them).

The model is the schedule's closed-form time T(V; θ) (with protocols, the minimum over them);
the fit (fit.py) minimises Σ_i log(T(V_i; θ) / t_i)² over the *fit rows* plus each param's
prior (roles.py), inside each param's physical bounds. The other rows are *held out*: their
error checks the fit on sizes (or logs) it did not see. Errors are T_model / T_measured - 1;
their geomean is over |error|.
"""

from __future__ import annotations

import numpy as np

from ...measure.nccl_tests import Table
from ...session import Session
from .fit import calibrate_runs
from .model import size_symbol as size_symbol
from .numeric_model import NumericModel
from .records import COLLECTIVE_BINARIES as COLLECTIVE_BINARIES
from .records import DEFAULT_EVERY as DEFAULT_EVERY
from .records import LATENCY_BOUND as LATENCY_BOUND
from .records import ROW_SHAPES as ROW_SHAPES
from .records import SIZE_RANGES as SIZE_RANGES
from .records import Calibration as Calibration
from .records import CalibrationError as CalibrationError
from .records import Comparison as Comparison
from .records import FittedParam as FittedParam
from .records import Point as Point
from .records import Run as Run
from .records import Split as Split
from .records import WorkBudget as WorkBudget
from .records import geomean_abs as geomean_abs
from .rows import check_table as check_table
from .rows import points as points
from .rows import rows_of as rows_of


# ---- predict ----------------------------------------------------------------------------------


def compare(session: Session, schedule: str, tables: list[tuple[str, Table]],
            place: str = "out", drop_wrong: bool = False) -> Comparison:
    """Predicted (at the file's nominal params) against measured, without fitting: each row's
    time from the loads, no formula built (numeric_model.py)."""
    pts: list[Point] = []
    for log, table in tables:
        check_table(session, schedule, table, log)
        got, _ = points(Run(session, schedule, log, table), Split(), place, drop_wrong)
        pts += [Point(p.size, p.measured, False, p.log, p.line) for p in got]
    model = NumericModel(session, schedule)
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
    runs = [Run(session, schedule, log, table, session.program.path) for log, table in tables]
    return calibrate_runs(runs, tuple(fit), split or Split(every=every), place, drop_wrong,
                          max_evaluations)

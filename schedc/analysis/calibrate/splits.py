"""`--split leave-one-out`: each log predicted from constants fitted on the others (every
row of every other log a fit row) plus its own machine file — transfer to a machine the fit
has not seen. The held-out log's own params (declared in its machine file, such as its
fabric's latency) and any shared param no other log has stay at its machine file's values."""

from __future__ import annotations

from dataclasses import replace

from ...errors import UsageError
from .calibration import Calibration, Comparison, Point, Run, Split


def leave_one_out(runs: list[Run], names: tuple[str, ...], place: str, drop_wrong: bool,
                  max_evaluations: int) -> Calibration:
    from .fit import calibrate_runs, prediction
    if len(runs) < 2:
        raise UsageError("--split leave-one-out needs two logs or more (each is predicted from "
                         "a fit on the others)")
    folds = []
    pts: list[Point] = []
    predicted: list[float] = []
    winners: list[str | None] = []
    notes: list[str] = []
    for k, run in enumerate(runs):
        others = runs[:k] + runs[k + 1:]
        fold = calibrate_runs(others, names, Split(), place, drop_wrong, max_evaluations,
                              fit_all=True)
        values = {(p.name, p.log): p.value for p in fold.params}
        got, times, wins, said = prediction(run, names, values, place, drop_wrong)
        pts += got
        predicted += times
        winners += wins
        notes += said
        folds.append((run.log, fold))
    comparison = Comparison(", ".join(dict.fromkeys(r.schedule for r in runs)),
                            tuple(dict.fromkeys(r.log for r in runs)), tuple(pts),
                            tuple(predicted), tuple(winners))
    cal = Calibration(comparison, (), all(f.converged for _, f in folds),
                      "; ".join(dict.fromkeys(f.message for _, f in folds)),
                      sum(f.evaluations for _, f in folds), 0, Split("leave-one-out"),
                      tuple(s for _, f in folds for s in f.starts), tuple(dict.fromkeys(notes)))
    return replace(cal, folds=tuple(folds))

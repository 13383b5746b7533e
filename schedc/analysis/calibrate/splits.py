"""`--split leave-one-out`: each log predicted from constants fitted on the others (every
row of every other log a fit row) plus its own machine file — transfer to a machine the fit
has not seen. The held-out log's own params (declared in its machine file, such as its
fabric's latency) and any shared param no other log has stay at its machine file's values;
with `leave-one-out:SIZE` the own params are fitted instead on the held-out log's rows up to
SIZE (its smallest sizes: a short run on the new machine), the shared ones held at the
other logs' values, and its other rows are held out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from ...errors import UsageError
from .model import Model, check_names, declared_in_library, default_unknowns
from .records import Calibration, CalibrationError, Comparison, Run, Split
from .roles import roles
from .rows import check_table, points

Fit = Callable[..., Calibration]  # fit.calibrate_runs


def leave_one_out(runs: list[Run], names: tuple[str, ...], place: str, drop_wrong: bool,
                  max_evaluations: int, own_below: int = 0, max_work: int | None = None, *,
                  calibrate_runs: Fit) -> Calibration:
    """The folds, each fitted by `calibrate_runs` (`fit.calibrate_runs`, which calls this
    for a leave-one-out split: given, not imported, so the wing has no import cycle)."""
    if len(runs) < 2:
        raise UsageError("--split leave-one-out needs two logs or more (each is predicted from "
                         "a fit on the others)")
    folds = []
    parts: list[Comparison] = []
    notes: list[str] = []
    for k, run in enumerate(runs):
        others = runs[:k] + runs[k + 1:]
        fold = calibrate_runs(others, names, Split(), place, drop_wrong, max_evaluations,
                              fit_all=True, max_work=max_work)
        values = {(p.name, p.log): p.value for p in fold.params}
        if own_below:
            part, said, own, own_starts = _own_fit(
                run, names, values, place, drop_wrong, max_evaluations, own_below, max_work,
                calibrate_runs)
            # Its own, fitted on its rows; that fit's starts are the fold's too.
            fold = replace(fold, params=fold.params + own, starts=fold.starts + tuple(
                f"its own params' fit: {s}" for s in own_starts))
        else:
            part, said = prediction(run, names, values, place, drop_wrong)
        parts.append(part)
        notes += said
        folds.append((run.log, fold))
    if names:  # e.g. `--fit latencies`: the shares stay at the library's values
        notes.append("--fit: the params not fitted are at the machine files' values; where a "
                     "library they import was fitted on the held-out log too, that log's "
                     "prediction is not a transfer")
    comparison = Comparison(", ".join(dict.fromkeys(r.schedule for r in runs)),
                            tuple(dict.fromkeys(r.log for r in runs)),
                            *(tuple(x for part in parts for x in getattr(part, name))
                              for name in ("points", "predicted", "protocols", "latency")))
    cal = Calibration(comparison, (), all(f.converged for _, f in folds),
                      "; ".join(dict.fromkeys(f.message for _, f in folds)),
                      sum(f.evaluations for _, f in folds), 0,
                      Split("leave-one-out", own_below=own_below),
                      tuple(f"fitted without {log}: {s}" for log, f in folds for s in f.starts),
                      tuple(dict.fromkeys(notes)))
    return replace(cal, folds=tuple(folds))


def _own_fit(run: Run, names: tuple[str, ...], values: dict, place: str, drop_wrong: bool,
             max_evaluations: int, below: int, max_work: int | None, calibrate_runs: Fit):
    """The held-out log with its shared params at the other logs' values (a shared param no
    other log has at its prior) and its own params fitted on its rows up to `below`."""
    from ...elaborate.program import parse_override
    from ...session import Session
    from ...units import base_unit, format_bytes, format_quantity
    session = run.session
    mine = (check_names(session, run.schedule, names, anywhere=True) if names
            else default_unknowns(session, run.schedule))
    params = [session.program.params[n] for n in mine]
    own = tuple(p.name for p in params if not declared_in_library(run.session, p.name))
    if not own or session.origin is None:
        part, said = prediction(run, names, values, place, drop_wrong)
        return part, [*said, f"{run.log}: no own params (its machine file declares none it "
                      "times): predicted from the other logs' alone"], (), ()
    shared = {p.name: values.get((p.name, None), role.prior if role.prior is not None
                                 else float(p.nominal))
              for p, role in zip(params, roles(session, params)) if p.name not in own}
    path, overrides, limits = session.origin
    kept = tuple(o for o in overrides if o.name not in shared)
    given = tuple(parse_override(f"{n}={v!r} {base_unit(session.program.params[n].dim)}"
                                 .rstrip()) for n, v in shared.items())
    again = Session.load(path, kept + given, limits, None, session.changes)
    try:
        fitted = calibrate_runs([replace(run, session=again)], own,
                                Split("size", size=below), place, drop_wrong, max_evaluations,
                                max_work=max_work)
    except CalibrationError as error:
        raise CalibrationError(f"{run.log}, its rows <= {format_bytes(below)} for its own "
                               f"params {', '.join(own)}: {error.message}", error.span) from None
    c = fitted.comparison
    values_said = ", ".join(f"{p.name} = {format_quantity(p.value, p.dim)}"
                            + (f" ({'; '.join(p.flags)})" if p.flags else
                               f" ({p.held}, not fitted)" if p.held else "")
                            for p in fitted.params)
    notes = [*fitted.notes, f"{run.log}: its own params fitted on its rows <= "
             f"{format_bytes(below)}: {values_said}"]
    own_params = tuple(replace(p, log=run.log) for p in fitted.params)  # a one-log fit's
    return c, notes, own_params, fitted.starts  # are shared


def prediction(run: Run, names: tuple[str, ...], values: dict[tuple[str, str | None], float],
               place: str, drop_wrong: bool) -> tuple[Comparison, list[str]]:
    """A log's rows predicted with `values` (by (name, log)) for its shared unknowns; all rows
    held out."""
    notes = check_table(run.session, run.schedule, run.table, run.log)
    mine = (check_names(run.session, run.schedule, names, anywhere=True) if names
            else default_unknowns(run.session, run.schedule))
    pts, said = points(run, Split("leave-one-out"), place, drop_wrong)
    model = Model(run.session, run.schedule, mine)
    params = [run.session.program.params[n] for n in mine]
    # A shared param no other log has is at its prior (NCCL's value), not at the library's
    # value, which may have been fitted on this very log; the log's own are its file's.
    # (Not NCCL's ratio to the other logs' Simple share, as a held share is: measured, that
    # predicts the single host worse, 44.26 % against 43.28 % over all rows.)
    theta = np.array([values.get((p.name, None), role.prior if role.prior is not None
                                 else float(p.nominal))
                      if declared_in_library(run.session, p.name) else float(p.nominal)
                      for p, role in zip(params, roles(run.session, params))])
    sizes = np.array([float(p.size) for p in pts])
    return Comparison(run.schedule, (run.log,), tuple(pts),
                      tuple(float(v) for v in model(sizes, theta)),
                      tuple(model.winners(sizes, theta)),
                      tuple(model.latency_shares(sizes, theta))), notes + said

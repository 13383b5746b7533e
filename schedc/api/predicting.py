"""`predict --against LOG` as a table shaped like the log's, with a verdict per row: is my
number expected? (`analysis.predicted_log`)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ..measure.noise import DEFAULT_OUTLIER_FACTOR as DEFAULT_OUTLIER_FACTOR
from .compiling import LoadOptions
from .measuring import PredictOptions

if TYPE_CHECKING:
    from ..analysis.calibrate.calibration import Comparison
    from ..analysis.predicted_log import Band, PredictedLog
    from ..measure.nccl_tests import Row
    from ..session import Session


def predict_against(session: Session, logs: Iterable[str | Path], schedule: str | None = None,
                    *, in_place: bool = False, verify: bool = True, drop_wrong: bool = False,
                    outlier_factor: float = PredictOptions.outlier_factor,
                    fitted: str | Path | None = None,
                    within: str | None = PredictOptions.within,
                    nccl: bool = PredictOptions.nccl, sm: int | None = PredictOptions.sm,
                    inputs: tuple[str, ...] = (),
                    small_sizes: str = PredictOptions.small_sizes
                    ) -> tuple[PredictedLog, Comparison]:
    """Every row of the logs beside its prediction, in nccl-tests' terms, with the resource
    that bounds it and a verdict against the fit's stated uncertainty: the bands a `fitted`
    file (from `calibrate --write`) states, or one band `within` (`"10%"`) for every size.
    Returns the table and the `Comparison` its error figures come from (outliers left out).
    With `nccl`, by NCCL's own model (`predict_nccl`: `sm`, `inputs` go with it; a `fitted`
    file does not).

        >>> table, compared = schedc.predict_against(session, [LOG], fitted=FIT)  # doctest: +SKIP
        >>> [r.verdict for r in table.rows][:3]                            # doctest: +SKIP
        ['expected', 'expected', 'not expected']
    """
    from ..analysis.predicted_log import predicted_log
    from .measuring import predict, predict_nccl, read_logs
    PredictOptions(outlier_factor, small_sizes, nccl, sm, within, tuple(inputs), fitted)
    logs = [str(p) for p in logs]
    if fitted is not None:
        _check_at_fit(session, fitted)
    bands, said = _bands(fitted, within)
    place = "in" if in_place else "out"
    if nccl:
        kept = predict_nccl(session, logs, schedule, sm=sm, inputs=inputs, in_place=in_place,
                            drop_wrong=drop_wrong, outlier_factor=outlier_factor)
    else:
        kept = predict(session, logs, schedule, in_place=in_place, verify=verify,
                       drop_wrong=drop_wrong, outlier_factor=outlier_factor,
                       small_sizes=small_sizes)
    _, outliers, _ = read_logs(logs, outlier_factor)
    whole = read_logs(logs, float("inf"))[0]
    sessions = _at_host_counts(session, schedule, whole)
    flagged = _predict_rows(sessions, outliers, schedule, place, drop_wrong, nccl, sm, inputs)
    rows = {(log, r.span.line): r for log, table in whole for r in table.rows}
    table = predicted_log(session, kept, flagged, rows, place, bands, outlier_factor, said,
                          nccl, sessions)
    return table, kept


def predict_file(path: str | Path, logs: Iterable[str | Path], schedule: str | None = None,
                 *, sets: Iterable[str] = (), fitted: str | Path | None = None,
                 plot: str | Path | None = None, machine: str | Path | None = None,
                 ranks: str | None = None,
                 max_transfers: int | None = LoadOptions.max_transfers,
                 max_rounds: int | None = LoadOptions.max_rounds, in_place: bool = False,
                 verify: bool = True, drop_wrong: bool = False,
                 outlier_factor: float = PredictOptions.outlier_factor,
                 within: str | None = PredictOptions.within,
                 nccl: bool = PredictOptions.nccl, sm: int | None = PredictOptions.sm,
                 inputs: tuple[str, ...] = (),
                 small_sizes: str = PredictOptions.small_sizes
                 ) -> tuple[PredictedLog, Comparison]:
    """`schedc predict FILE --against LOG...`: FILE loaded at the params of `fitted` (a
    `calibrate --write` file) with `sets` for the others (`load_fitted`), then
    `predict_against`; `plot` also writes the plot (`plot_prediction`).

        >>> table, compared = schedc.predict_file(MACHINE, [LOG], fitted=FIT)  # doctest: +SKIP
    """
    # what goes with what, refused before any file is read
    PredictOptions(outlier_factor, small_sizes, nccl, sm, within, tuple(inputs), fitted)
    session = load_fitted(path, fitted, sets, max_transfers=max_transfers,
                          max_rounds=max_rounds, machine=machine, ranks=ranks)
    table, compared = predict_against(
        session, logs, schedule, in_place=in_place, verify=verify, drop_wrong=drop_wrong,
        outlier_factor=outlier_factor, fitted=fitted, within=within, nccl=nccl, sm=sm,
        inputs=tuple(inputs), small_sizes=small_sizes)
    if plot is not None:
        from .measuring import plot_prediction
        plot_prediction(session, compared, plot)
    return table, compared


def load_fitted(path: str | Path, fitted: str | Path | None, sets: Iterable[str] = (),
                **load_options) -> Session:
    """FILE compiled at the params of a `calibrate --write` file (`predict --fitted`), `sets`
    (`--set`) setting the others. A param both set is refused, not decided: the prediction
    is either at the fit or not. `load_options` are `load`'s.

        >>> session = schedc.load_fitted(MACHINE, "fit.sched", ["V=1MiB"])   # doctest: +SKIP
    """
    from ..errors import UsageError
    from .compiling import load
    from .measuring import fitted_sets
    sets = tuple(sets)
    if fitted is None:
        return load(path, sets, **load_options)
    fit = fitted_sets(fitted)
    names = [f.partition("=")[0] for f in fit]
    given = {s.partition("=")[0].strip() for s in sets}
    both = [name for name in names if name in given]
    if both:
        raise UsageError(f"--set {both[0]}: --fitted {fitted} sets {both[0]} already; "
                         "predict at the fit or at your value, not both")
    try:
        return load(path, (*fit, *sets), **load_options)
    except UsageError as error:  # a fitted param the machine lacks: the fit is not its
        name = next((n for n in names if error.message.startswith(f"--set {n}: no param")), None)
        if name is None:
            raise
        raise UsageError(f"--fitted {fitted}: {path} has no param '{name}' for its value; "
                         "is it a fit of this machine?") from None


def _check_at_fit(session: Session, fitted: str | Path) -> None:
    """Refuse to label a prediction "at the params of FIT" that is not: a session loaded
    without them (`load_fitted` loads it with them)."""
    from ..elaborate.loader import load_program
    from ..errors import UsageError
    own = session.program.params
    for param in load_program(fitted).params.values():
        mine = own.get(param.name)
        if mine is None or float(mine.nominal) != float(param.nominal):
            raise UsageError(f"fitted={fitted}: the session is not at its params ("
                             f"{param.name} differs); load it with "
                             "schedc.load_fitted(FILE, FIT), or call schedc.predict_file")


def _at_host_counts(session: Session, schedule: str | None, tables) -> dict[str, Session]:
    """Each log's machine: at the log's host count when it has a host param (as `predict`)."""
    from ..analysis.calibrate.hosts import host_point
    from .measuring import schedules_named
    name = schedules_named(session, schedule)
    out = {}
    for log, table in tables:
        point = host_point(session, name, table, log)
        out[log] = session if point is None else session.at({point.param: point.hosts})
    return out


def outlier_rows(logs: Iterable[str | Path],
                 outlier_factor: float = PredictOptions.outlier_factor
                 ) -> list[tuple[str, Row]]:
    """The rows of the logs whose out-of-place and in-place times differ by more than
    `outlier_factor`, as (log, row): what `calibrate` and `predict` leave out.

        >>> [row.size for _, row in schedc.outlier_rows([LOG])]             # doctest: +SKIP
        [32]
    """
    from .measuring import read_logs
    return [(log, row) for log, rows in read_logs(logs, outlier_factor)[1] for row in rows]


def _predict_rows(sessions: dict[str, Session], outliers, schedule: str | None, place: str,
                  drop_wrong: bool, nccl: bool, sm: int | None, inputs: tuple[str, ...]):
    """The outlier rows predicted as the others are, each log's on its machine (None when
    there are none)."""
    from ..analysis.calibrate.hosts import merged
    parts = [_predict_log_rows(sessions[log], [(log, rows)], schedule, place, drop_wrong,
                               nccl, sm, inputs) for log, rows in outliers]
    return merged([p for p in parts if p is not None]) if outliers else None


def _predict_log_rows(session: Session, outliers, schedule: str | None, place: str,
                      drop_wrong: bool, nccl: bool, sm: int | None, inputs: tuple[str, ...]):
    """One log's outlier rows predicted (None when there are none)."""
    import dataclasses

    from ..analysis.calibrate.calibration import compare
    from ..measure.nccl_tests import read_log
    from .measuring import schedules_named
    tables = [(log, dataclasses.replace(read_log(log).table(), rows=rows))
              for log, rows in outliers]
    if not tables:
        return None
    name = schedules_named(session, schedule)
    if not nccl:
        return compare(session, name, tables, place, drop_wrong)
    from ..analysis.calibrate.nccl_prediction import nccl_compare
    from ..nccl.constants import VERSION
    from .nccl import nccl_model
    kind = session.program.result(name.split(",")[0]).collective.kind
    model = nccl_model(session, collective=kind if kind != "alltoall" else None, sm=sm,
                       inputs=inputs, max_bytes=1)
    return nccl_compare(session, name, tables, model.comm, model.table, f"NCCL {VERSION}",
                        place, drop_wrong)


def _bands(fitted: str | Path | None, within: str | None) -> tuple[tuple[Band, ...], str]:
    """The bands a row is judged by, and where they come from, in words."""
    from ..analysis.calibrate.calibration import SIZE_RANGES
    from ..analysis.predicted_log import BANDS_LINE, Band
    from ..errors import UsageError
    if within is not None:
        text = within.strip().rstrip("%")
        try:
            value = float(text) / 100
        except ValueError:
            value = float("nan")
        if not value > 0:
            raise UsageError(f"--within {within}: expected a percentage above 0, e.g. 10%")
        return (tuple(Band(name, value, 0) for name, _, _ in SIZE_RANGES),
                f"within ±{within.strip().rstrip('%')}% (--within)")
    if fitted is None:
        return (), "no stated uncertainty (give --fitted FILE from calibrate --write, or --within)"
    bands = fitted_bands(fitted)
    if not bands:
        return (), (f"{fitted} states no uncertainty (no '{BANDS_LINE[2:]}' line: not a fit, "
                    "or written before schedc stated one; calibrate --write it again, or give "
                    "--within)")
    return bands, f"the 90th percentile of the fit's held-out |error| ({fitted})"


def fitted_bands(path: str | Path) -> tuple[Band, ...]:
    """The bands a `calibrate --write` file states on its `BANDS_LINE`: `<= 64 KiB 12.3% (10
    rows); ...`; none when it has no such line."""
    import re

    from ..analysis.predicted_log import BANDS_LINE, Band
    from ..errors import UsageError
    from ..files import read_source
    text = read_source(path, "a fitted .sched file", UsageError, shown=str(path)).text
    line = next((x for x in text.splitlines() if x.startswith(BANDS_LINE)), None)
    if line is None:
        return ()
    found = re.findall(r"\s*([^;]+?) (\d+(?:\.\d+)?)% \((\d+) rows?\)", line[len(BANDS_LINE):])
    return tuple(Band(name.strip(), float(value) / 100, int(rows)) for name, value, rows in found)

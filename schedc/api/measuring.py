"""Meeting measurements: reading nccl-tests logs with their outliers set apart (shared by
`calibrating.py`, which fits a file's params to them), and `predict`, which compares a file's
prediction with them without fitting (`predict_nccl`: NCCL's own model's; `predicting.py`:
the table shaped like the log's)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import SchedcError, UsageError
from ..measure.noise import DEFAULT_OUTLIER_FACTOR
from .compiling import numeric_times
from .options import Options, choice, count, option, switch, text

if TYPE_CHECKING:
    from ..analysis.calibrate.calibration import Comparison
    from ..measure.nccl_tests import Row
    from ..session import Session

# Where `predict`'s rows below 1 MiB come from (`predict`'s docstring).
SMALL_SIZES = ("auto", "model", "nccl")


def outlier_factor_option() -> Any:
    """The `--outlier-factor` field: above 1, inf keeps every row (`measure.noise`)."""
    return option(DEFAULT_OUTLIER_FACTOR, "--outlier-factor", "factor")


@dataclass(frozen=True)
class PredictOptions(Options):
    """`predict`'s options, and what goes with what: `sm` and `inputs` with `nccl` (NCCL's
    own model), which has no params a `fitted` file could set."""

    outlier_factor: float = outlier_factor_option()
    small_sizes: str = choice("auto", "--small-sizes", SMALL_SIZES)
    nccl: bool = switch("--nccl")
    sm: int | None = count(None, "--sm", None)
    within: str | None = text(None, "--within")  # ("10%": `predicting._bands` reads it)
    inputs: tuple[str, ...] = field(default=())
    fitted: object | None = None  # a `calibrate --write` file

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.nccl and (self.sm is not None or self.inputs):
            raise UsageError("--sm and --input go with --nccl (NCCL's own tuning model)")
        if self.nccl and self.fitted:
            raise UsageError("--nccl predicts by NCCL's own constants: --fitted has no "
                             "params there")


def kept_tables(paths: Iterable[str | Path], outlier_factor: float = math.inf) -> list:
    return read_logs(paths, outlier_factor)[0]


def read_logs(paths: Iterable[str | Path], outlier_factor: float
          ) -> tuple[list, list[tuple[str, tuple[Row, ...]]], list[str]]:
    """Each log's table without its outliers (measure.noise: out-of-place and in-place times
    more than `outlier_factor` apart), the outliers of each log, and a note per log that had
    any: rows enter a fit or an error figure only through here."""
    from ..measure.nccl_tests import read_log
    from ..measure.noise import check_factor, outlier_note, split_outliers
    check_factor(outlier_factor)
    tables, outliers, notes = [], [], []
    for path in paths:
        table, flagged = split_outliers(read_log(path).table(), outlier_factor)
        tables.append((str(path), table))
        if flagged:
            outliers.append((str(path), flagged))
            notes.append(outlier_note(str(path), flagged, outlier_factor))
    return tables, outliers, notes


def schedules_named(session: Session, name: str | None) -> str:
    """The schedules named (`a,b` names several), else every one of the file: the time is
    the fastest of them at each size, as NCCL's tuner picks the fastest algorithm."""
    if name and "," in name:
        parts = [n.strip() for n in name.split(",") if n.strip()]
        return ",".join(session.selected(parts))
    # Without -s, every schedule of the file: the time is the fastest of them per size.
    return ",".join(session.selected((name,) if name else ()))


def place_of(in_place: bool) -> str:
    return "in" if in_place else "out"


def predict(session: Session, logs: Iterable[str | Path], schedule: str | None = None, *,
            in_place: bool = False, verify: bool = True, drop_wrong: bool = False,
            outlier_factor: float = PredictOptions.outlier_factor,
            small_sizes: str = PredictOptions.small_sizes) -> Comparison:
    """One schedule's predicted time (default: the file's only one) against the measured
    rows of nccl-tests logs, at the file's params (see `fitted_sets` for a calibrated file),
    rows whose two times differ by more than `outlier_factor` left out (`predict_against`
    shows them). A machine with a structural host param (`param hosts = 2`) is compiled at
    each log's host count (analysis/calibrate/hosts.py); a log whose counts do not fit it is
    refused. `small_sizes`: where rows below 1 MiB come from: "model" (the file's), "nccl"
    (NCCL's own latency model of the machine, nothing fitted: analysis/calibrate/
    small_sizes.py), or "auto": NCCL's for a log at a host count other than the file's own
    (where the file's latencies, fitted at its own, are not the target's), else the file's.

        >>> compared = schedc.predict(machine, [LOG])                      # doctest: +SKIP
        >>> compared.geomean(None)                                         # doctest: +SKIP
        0.06...
    """
    from dataclasses import replace

    from ..analysis.calibrate.calibration import compare
    from ..analysis.calibrate.small_sizes import with_nccl_below
    PredictOptions(outlier_factor, small_sizes)
    name = schedules_named(session, schedule)

    def one(at: Session, log: str, table) -> Comparison:
        numeric_times(at, name.split(","), verify=verify)  # (no formula: compare's are numbers)
        compared = compare(at, name, [(log, table)], place_of(in_place), drop_wrong)
        if small_sizes == "nccl" or small_sizes == "auto" and at is not session:
            try:
                nccl = _nccl_one(at, name, log, table, None, (), in_place, drop_wrong)
            except SchedcError as refused:
                if small_sizes == "nccl":
                    raise
                return replace(compared, notes=(*compared.notes, f"{log}: rows below 1 MiB "
                                                f"from the file's model ({refused.message})"))
            why = ("asked" if small_sizes == "nccl" else
                   "the file's latencies were not fitted at this host count")
            return with_nccl_below(compared, nccl, f"{log}: rows below 1 MiB from NCCL's own "
                                   f"latency model of the machine, nothing fitted ({why})")
        return compared
    return _per_host_count(session, name, logs, one, outlier_factor)


def _per_host_count(session: Session, name: str, logs: Iterable[str | Path],
                    compute: Callable[[Session, str, object], Comparison],
                    outlier_factor: float) -> Comparison:
    """`compute(session at the log's host count, log, table)` per log (its outliers left
    out), merged."""
    from dataclasses import replace

    from ..analysis.calibrate.hosts import host_point, merged
    parts = []
    for log, table in kept_tables(logs, outlier_factor):
        point = host_point(session, name, table, log)
        at = session if point is None else session.at({point.param: point.hosts})
        part = compute(at, log, table)
        said = () if point is None else (f"{log}: {point.said}",)
        parts.append(replace(part, notes=(*said, *part.notes)))
    return merged(parts)


def predict_nccl(session: Session, logs: Iterable[str | Path], schedule: str | None = None, *,
                 sm: int | None = None, inputs: tuple[str, ...] = (), in_place: bool = False,
                 drop_wrong: bool = False,
                 outlier_factor: float = PredictOptions.outlier_factor) -> Comparison:
    """The logs' rows against NCCL's own tuning model on the file's machine, nothing fitted:
    at each size the algorithm/protocol NCCL picks and its time, lat + n/(1000·bw) µs
    (`sm`: the GPU generation, 80 for A100, 90 for H100; `inputs`: NAME=VALUE overrides of
    NCCL's inputs, as `schedc nccl --input`); at each log's host count, as `predict`.

        >>> compared = schedc.api.predict_nccl(machine, [LOG], sm=90)          # doctest: +SKIP
        >>> compared.protocols[0]                                          # doctest: +SKIP
        'ring/ll'
    """
    PredictOptions(outlier_factor, nccl=True, sm=sm, inputs=tuple(inputs))
    name = schedules_named(session, schedule)
    return _per_host_count(session, name, logs, lambda at, log, table: _nccl_one(
        at, name, log, table, sm, inputs, in_place, drop_wrong), outlier_factor)


def _nccl_one(session: Session, name: str, log: str, table, sm: int | None,
              inputs: tuple[str, ...], in_place: bool, drop_wrong: bool) -> Comparison:
    from ..analysis.calibrate.nccl_prediction import nccl_compare
    from ..nccl.constants import VERSION
    from .nccl import nccl_model
    kind = session.program.result(name.split(",")[0]).collective.kind
    model = nccl_model(session, collective=kind if kind != "alltoall" else None, sm=sm,
                       inputs=inputs, max_bytes=1)
    label = f"NCCL {VERSION}'s tuning model (sm {model.comm['minCompCap']})"
    return nccl_compare(session, name, [(log, table)], model.comm, model.table, label,
                        place_of(in_place), drop_wrong)


def plot_prediction(session: Session, comparison: Comparison, path: str | Path) -> None:
    """Plot time and bus bandwidth over size, measured and predicted, into an SVG or PNG
    file, with the sizes where the schedule's protocol changes marked; a machine in hosts
    at the first log's host count, as `predict` compiled it (its busbw factor, its switches)."""
    from ..analysis.calibrate.calibration import COLLECTIVE_BINARIES, size_symbol
    from ..analysis.calibrate.hosts import host_point
    from ..analysis.solve.protocols import protocol_spans
    from ..measure.nccl_tests import BUSBW_FACTORS
    from ..render.measured_plot import plot_comparison
    name = comparison.schedule.split(",")[0]
    own = name in {r.name for r in session.program.results}
    (log, table), = kept_tables(comparison.logs[:1])
    point = host_point(session, comparison.schedule if own else session.program.results[0].name,
                       table, log)
    at = session if point is None else session.at({point.param: point.hosts})
    if own:
        spans = protocol_spans(at.timing(name), size_symbol(at, name))
        switches = [(float(b.lo), a.protocol, b.protocol) for a, b in zip(spans, spans[1:])]
        collective = at.program.result(name).collective
    else:  # `predict --nccl`: NCCL's picks change between two measured sizes (marked at the
        # first size of the new pick)
        pts, picks = comparison.points, comparison.protocols
        switches = [(float(b.size), x or "", y or "") for a, b, x, y in
                    zip(pts, pts[1:], picks, picks[1:]) if x != y and a.log == b.log]
        collective = at.program.results[0].collective
    factor = BUSBW_FACTORS[COLLECTIVE_BINARIES[collective.kind]](len(collective.ranks))
    plot_comparison(comparison, Path(path), factor, switches)


def fitted_sets(path: str | Path) -> list[str]:
    """The params of a `calibrate --write` file as `NAME=VALUE` overrides for `load`.

        >>> schedc.load(machine_path, schedc.fitted_sets("fit.sched"))    # doctest: +SKIP
    """
    from ..elaborate.loader import load_program
    from ..units import base_unit
    program = load_program(path)
    return [f"{p.name}={float(p.nominal)!r} {base_unit(p.dim)}".rstrip()
            for p in program.params.values()]

"""Meeting measurements: `calibrate` fits a file's params to nccl-tests logs (`calibrate_files`
as the command does, from paths, and `write_calibration` writes the fit), `predict` compares
its prediction with them, without fitting."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import SchedcError
from ..limits import MAX_FIT_WORK
from ..measure.noise import DEFAULT_OUTLIER_FACTOR
from .compiling import LoadOptions, load, verified_timings
from .options import Options, count, text

if TYPE_CHECKING:
    from ..analysis.calibrate.calibration import Calibration, Comparison
    from ..measure.nccl_tests import Row
    from ..session import Session


@dataclass(frozen=True)
class CalibrateOptions(Options):
    every: int = count(4, "--every")  # with split interleaved: fit on one size in this many
    split: str = text("interleaved", "--split")  # (`parse_split` reads it)
    max_work: int = count(MAX_FIT_WORK, "--max-fit-work")


def _tables(paths: Iterable[str | Path], outlier_factor: float = math.inf) -> list:
    return _read(paths, outlier_factor)[0]


def _read(paths: Iterable[str | Path], outlier_factor: float
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


def _noted(result: Calibration, notes: list[str]) -> Calibration:
    from dataclasses import replace
    return replace(result, notes=(*result.notes, *notes)) if notes else result


def _schedule(session: Session, name: str | None) -> str:
    """The schedules named (`a,b` names several), else every one of the file: the time is
    the fastest of them at each size, as NCCL's tuner picks the fastest algorithm."""
    if name and "," in name:
        parts = [n.strip() for n in name.split(",") if n.strip()]
        return ",".join(session.selected(parts))
    # Without -s, every schedule of the file: the time is the fastest of them per size.
    return ",".join(session.selected((name,) if name else ()))


def _place(in_place: bool) -> str:
    return "in" if in_place else "out"


def _fit_names(fit: Iterable[str]) -> tuple[str, ...]:
    """`--fit a,b --fit c`: the names, each item split at its commas."""
    return tuple(n.strip() for item in fit for n in item.split(",") if n.strip())


def calibrate(session: Session, logs: Iterable[str | Path], schedule: str | None = None, *,
              fit: Iterable[str] = (), every: int = CalibrateOptions.every,
              in_place: bool = False, verify: bool = True, split: str = CalibrateOptions.split,
              drop_wrong: bool = False,
              outlier_factor: float = DEFAULT_OUTLIER_FACTOR) -> Calibration:
    """Fit the params `fit` (default: every param the time depends on but the size) of one
    schedule (default: the file's only one) to nccl-tests logs, by least squares on log time,
    on one size in `every` (and the largest); the rest are held out. The fit is trustworthy
    when `.trusted`: converged, no param `.flagged` (a param the rows do not determine is
    held at NCCL's value, its `.held` saying so, and is not a flag). Rows whose two times
    differ by more than `outlier_factor` are left out, and `.notes` says which.

        >>> machine = schedc.load("schedules/calibration/nvidia_dgxc_1node_8xH100_nvlink_allreduce.sched")
        >>> fitted = schedc.calibrate(machine, [LOG])                      # doctest: +SKIP
        >>> [p.name for p in fitted.params]                                # doctest: +SKIP
        ['a_L', 'B_L']
    """
    from ..analysis.calibrate.calibration import calibrate as fit_params
    every = CalibrateOptions(every, split).every
    name = _schedule(session, schedule)
    verified_timings(session, name.split(","), verify)
    tables, _, notes = _read(logs, outlier_factor)
    return _noted(fit_params(session, name, tables, _fit_names(fit), every, _place(in_place),
                             split=parse_split(split, every), drop_wrong=drop_wrong), notes)


def calibrate_logs(pairs: Iterable[tuple[str | Path, Session]], schedule: str | None = None, *,
                   fit: Iterable[str] = (), every: int = CalibrateOptions.every,
                   in_place: bool = False, verify: bool = True,
                   split: str = CalibrateOptions.split, drop_wrong: bool = False,
                   max_work: int = CalibrateOptions.max_work,
                   outlier_factor: float = DEFAULT_OUTLIER_FACTOR,
                   step_rules: bool = False) -> Calibration:
    """One fit over several logs, each with its own machine (a loaded session, compiled at
    the log's host count when it has a structural host param, as `predict` does): params of a
    library the machine files import are shared, a machine file's own params are its log's.
    `split` is "interleaved", "size:64MiB" or "leave-one-out". A fit that does not settle
    within `max_work` (per evaluation of the model, its fit rows + 100) is refused. With
    `step_rules`, the fit is made under `step cost sum` and `step cost max` too (and under
    the files' own `step cost pipelined chunk Q`, if declared), and `.step_rules` says each
    one's held-out error (which the rows prefer).

        >>> fitted = schedc.calibrate_logs([(LOG1, m1), (LOG2, m2)])       # doctest: +SKIP
    """
    from dataclasses import replace

    from ..analysis.calibrate.calibration import Run
    from ..analysis.calibrate.fit import calibrate_runs
    from ..analysis.calibrate.hosts import host_point
    options = CalibrateOptions(every, split, max_work)
    runs, said = [], []
    for log, session in pairs:
        name = _schedule(session, schedule)
        ((path, table),), _, outliers = _read([log], outlier_factor)
        said += outliers
        point = host_point(session, name, table, path)  # a machine in hosts: at the log's
        if point is not None:
            session = session.at({point.param: point.hosts})
            said.append(f"{path}: {point.said}")
        verified_timings(session, name.split(","), verify)
        runs.append(Run(session, name, path, table, session.program.path))

    def fit_runs(these: list) -> Calibration:
        return _noted(calibrate_runs(these, _fit_names(fit), parse_split(split, options.every),
                                     _place(in_place), drop_wrong, max_work=options.max_work),
                      said)
    if not step_rules:
        return fit_runs(runs)
    from ..analysis.calibrate.step_rules import compare_step_rules
    return replace(fit_runs(runs), step_rules=compare_step_rules(runs, fit_runs))


def calibration_pairs(logs: Iterable[str | Path] = (), machines: Iterable[str | Path] = (),
                      manifest: str | Path | None = None) -> list[tuple[str, str]]:
    """The (log, machine) pairs a calibration fits: the lines of a `manifest`, or each of
    `logs` with its machine (one of `machines` for every log, or one per log in order). A
    machine that is an MSCCL algorithm is refused: it has no params of its own to fit."""
    from ..errors import UsageError
    log_paths, machine_paths = [str(p) for p in logs], [str(p) for p in machines]
    if manifest is not None:
        if log_paths or machine_paths:
            raise UsageError("give either --manifest or LOG... --machine M..., not both")
        pairs = read_manifest(manifest)
    else:
        if not log_paths or not machine_paths:
            raise UsageError("give LOG... and --machine M... (or --manifest FILE)")
        if len(machine_paths) not in (1, len(log_paths)):
            raise UsageError(f"{len(log_paths)} logs and {len(machine_paths)} --machine files: "
                             "give one machine for all logs, or one per log")
        pairs = list(zip(log_paths, machine_paths * len(log_paths)
                         if len(machine_paths) == 1 else machine_paths))
    xml = next((m for _, m in pairs if Path(m).suffix.lower() == ".xml"), None)
    if xml is not None:
        raise UsageError(f"--machine {xml}: calibrate fits the params of a .sched file (its "
                         "machine, collective and schedule); an MSCCL algorithm has no params "
                         "of its own: `schedc predict FILE.xml --machine M.sched --against LOG`")
    return pairs


def calibrate_files(logs: Iterable[str | Path] = (), machines: Iterable[str | Path] = (), *,
                    manifest: str | Path | None = None, schedule: str | None = None,
                    fit: Iterable[str] = (), sets: Iterable[str] = (),
                    every: int = CalibrateOptions.every, in_place: bool = False,
                    verify: bool = True, split: str = CalibrateOptions.split,
                    drop_wrong: bool = False,
                    max_transfers: int | None = LoadOptions.max_transfers,
                    max_rounds: int | None = LoadOptions.max_rounds,
                    max_work: int = CalibrateOptions.max_work,
                    outlier_factor: float = DEFAULT_OUTLIER_FACTOR,
                    step_rules: bool = False) -> Calibration:
    """`schedc calibrate`: `calibrate_logs` over the pairs of `calibration_pairs`, each machine
    file loaded once with `sets`; `fit` items may name several params (`"a_L,B_L"`). The
    result records the command line that makes it again (`made_by`), which
    `write_calibration` writes at the top of the file.

        >>> fitted = schedc.calibrate_files([LOG], [MACHINE], fit=["latencies"])  # doctest: +SKIP
        >>> schedc.write_calibration(fitted, "fit.sched")                           # doctest: +SKIP
    """
    from dataclasses import replace
    logs, machines, sets, fit = tuple(logs), tuple(machines), tuple(sets), tuple(fit)
    every = CalibrateOptions(every, split, max_work).every
    pairs = calibration_pairs(logs, machines, manifest)
    sessions: dict[str, Session] = {}
    loaded = [(log, sessions.setdefault(m, load(m, sets, max_transfers=max_transfers,
                                                max_rounds=max_rounds))) for log, m in pairs]
    result = calibrate_logs(loaded, schedule, fit=fit, every=every, in_place=in_place,
                            verify=verify, split=split, drop_wrong=drop_wrong, max_work=max_work,
                            outlier_factor=outlier_factor, step_rules=step_rules)
    where = (["--manifest", str(manifest)] if manifest is not None else
             [*map(str, logs), *(a for m in machines for a in ("--machine", str(m)))])
    command = " ".join(["schedc calibrate", *where, *(["-s", schedule] if schedule else []),
                        *(f"--fit {n}" for n in _fit_names(fit)), *(f"--set {s}" for s in sets),
                        f"--split {split}", f"--every {every}",
                        *(["--in-place"] if in_place else []),
                        *(["--drop-wrong"] if drop_wrong else []),
                        *([f"--outlier-factor {outlier_factor:g}"]
                          if outlier_factor != DEFAULT_OUTLIER_FACTOR else []),
                        *(["--step-rules"] if step_rules else [])])
    return replace(result, made_by=command)


class FitNotWritten(SchedcError):
    """`write_calibration` refused: the fit is reported, not written (on the command line a
    note, and the exit code says whether the fit is trusted)."""


def write_calibration(calibration: Calibration, path: str | Path, *, force: bool = False
                      ) -> None:
    """Write the fitted params as a `.sched` library a machine file can import (`calibrate
    --write`), all of it or nothing. Refused (`FitNotWritten`) for a leave-one-out fit, which
    is one fit per log, and, unless `force`, for a fit that is not `trusted`."""
    from ..files import write_output_with
    from ..render.calibration import calibration_sched
    if calibration.split.kind == "leave-one-out":
        raise FitNotWritten(f"not writing {path}: leave-one-out makes one fit per log; fit "
                            "without --split leave-one-out to write the constants")
    if not calibration.trusted and not force:
        raise FitNotWritten(f"not writing {path}: the fit is not trustworthy (see its flags "
                            "and checks); --force writes it anyway")
    made_by = calibration.made_by or "the Python API (schedc.calibrate_logs)"
    text = calibration_sched(calibration, made_by + (" --force" if force and calibration.made_by
                                                     else ""))
    write_output_with(Path(path), lambda temporary: Path(temporary).write_text(text, "utf-8"))


def parse_split(text: str, every: int = CalibrateOptions.every):
    """`interleaved`, `size:SIZE` (e.g. size:64MiB), `leave-one-out` or `leave-one-out:SIZE`
    (the held-out log's own params fitted on its rows up to SIZE, e.g. leave-one-out:16B)."""
    from ..analysis.calibrate.calibration import Split
    from ..errors import UsageError
    every = CalibrateOptions(every, text).every
    if text == "interleaved":
        return Split("interleaved", every)
    if text == "leave-one-out":
        return Split("leave-one-out", every)
    kind, _, given = text.partition(":")
    if kind in ("size", "leave-one-out") and given:
        import re

        from ..units import BYTES, UNITS
        match = re.fullmatch(r"\s*(\d{1,15})\s*([A-Za-z]*)\s*", given)
        factor = UNITS.get(match.group(2) or "B") if match else None
        if match and factor is not None and factor[1] == BYTES and int(match.group(1)) > 0:
            size = int(int(match.group(1)) * factor[0])
            return (Split("size", every, size) if kind == "size" else
                    Split("leave-one-out", every, own_below=size))
    raise UsageError(f"--split {text}: expected interleaved, size:SIZE (e.g. size:64MiB), "
                     "leave-one-out or leave-one-out:SIZE (e.g. leave-one-out:16B)")


def predict(session: Session, logs: Iterable[str | Path], schedule: str | None = None, *,
            in_place: bool = False, verify: bool = True, drop_wrong: bool = False,
            outlier_factor: float = DEFAULT_OUTLIER_FACTOR,
            small_sizes: str = "auto") -> Comparison:
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
    from .arguments import one_of
    one_of(small_sizes, "--small-sizes", ("auto", "model", "nccl"))
    name = _schedule(session, schedule)

    def one(at: Session, log: str, table) -> Comparison:
        verified_timings(at, name.split(","), verify)
        compared = compare(at, name, [(log, table)], _place(in_place), drop_wrong)
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
    for log, table in _tables(logs, outlier_factor):
        point = host_point(session, name, table, log)
        at = session if point is None else session.at({point.param: point.hosts})
        part = compute(at, log, table)
        said = () if point is None else (f"{log}: {point.said}",)
        parts.append(replace(part, notes=(*said, *part.notes)))
    return merged(parts)


def predict_nccl(session: Session, logs: Iterable[str | Path], schedule: str | None = None, *,
                 sm: int | None = None, inputs: tuple[str, ...] = (), in_place: bool = False,
                 drop_wrong: bool = False,
                 outlier_factor: float = DEFAULT_OUTLIER_FACTOR) -> Comparison:
    """The logs' rows against NCCL's own tuning model on the file's machine, nothing fitted:
    at each size the algorithm/protocol NCCL picks and its time, lat + n/(1000·bw) µs
    (`sm`: the GPU generation, 80 for A100, 90 for H100; `inputs`: NAME=VALUE overrides of
    NCCL's inputs, as `schedc nccl --input`); at each log's host count, as `predict`.

        >>> compared = schedc.api.predict_nccl(machine, [LOG], sm=90)          # doctest: +SKIP
        >>> compared.protocols[0]                                          # doctest: +SKIP
        'ring/ll'
    """
    name = _schedule(session, schedule)
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
                        _place(in_place), drop_wrong)


def read_manifest(path: str | Path) -> list[tuple[str, str]]:
    """A manifest's (log, machine) pairs: one `LOG MACHINE` pair a line, paths relative to
    the manifest's folder, `#` to the end of a line a comment."""
    from ..errors import SourceFile, Span, UsageError
    from ..files import read_source
    source = read_source(path, "a calibration manifest", UsageError, shown=str(path))
    # A line that is not `LOG MACHINE.sched` is refused at its position without being shown or
    # quoted: a file given as a manifest that is not one (a secret) is never echoed.
    hidden = SourceFile(source.path, source.text, quoted=False)
    folder = Path(path).parent
    pairs = []
    for number, raw in enumerate(source.text.splitlines(), start=1):
        words = raw.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) != 2 or not words[1].endswith(".sched"):
            raise UsageError(f"expected 'LOG MACHINE' (two paths, the machine a .sched file), "
                             f"got {len(words)} words", Span(hidden, number, 1, number, 2))
        for word in words:  # a missing file is said at its line, before any work
            if not (folder / word).is_file():
                start = raw.index(word) + 1
                raise UsageError(f"no such file: {folder / word}",
                                 Span(source, number, start, number, start + len(word)))
        pairs.append((str(folder / words[0]), str(folder / words[1])))
    if not pairs:
        raise UsageError(f"{path}: no 'LOG MACHINE' lines")
    return pairs


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
    (log, table), = _tables(comparison.logs[:1])
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

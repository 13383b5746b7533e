"""`calibrate`: a file's params fitted to nccl-tests logs (`calibrate_files` as the command
does, from paths: which machine each log fits, `calibration_pairs`; `write_calibration`
writes the fit as a `.sched` library). The logs are read as `predict` reads them
(`measuring.read_logs`: outliers set apart)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import SchedcError
from ..limits import MAX_FIT_WORK
from ..measure.noise import DEFAULT_OUTLIER_FACTOR
from .compiling import LoadOptions, load, verified_timings
from .measuring import outlier_factor_option, place_of, read_logs, schedules_named
from .options import Options, count, text

if TYPE_CHECKING:
    from ..analysis.calibrate.calibration import Calibration
    from ..session import Session


@dataclass(frozen=True)
class CalibrateOptions(Options):
    every: int = count(4, "--every")  # with split interleaved: fit on one size in this many
    split: str = text("interleaved", "--split")  # (`parse_split` reads it)
    max_work: int = count(MAX_FIT_WORK, "--max-fit-work")
    outlier_factor: float = outlier_factor_option()


def _noted(result: Calibration, notes: list[str]) -> Calibration:
    from dataclasses import replace
    return replace(result, notes=(*result.notes, *notes)) if notes else result


def _fit_names(fit: Iterable[str]) -> tuple[str, ...]:
    """`--fit a,b --fit c`: the names, each item split at its commas."""
    return tuple(n.strip() for item in fit for n in item.split(",") if n.strip())


def calibrate(session: Session, logs: Iterable[str | Path], schedule: str | None = None, *,
              fit: Iterable[str] = (), every: int = CalibrateOptions.every,
              in_place: bool = False, verify: bool = True, split: str = CalibrateOptions.split,
              drop_wrong: bool = False,
              outlier_factor: float = CalibrateOptions.outlier_factor) -> Calibration:
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
    every = CalibrateOptions(every, split, outlier_factor=outlier_factor).every
    name = schedules_named(session, schedule)
    verified_timings(session, name.split(","), verify)
    tables, _, notes = read_logs(logs, outlier_factor)
    return _noted(fit_params(session, name, tables, _fit_names(fit), every, place_of(in_place),
                             split=parse_split(split, every), drop_wrong=drop_wrong), notes)


def calibrate_logs(pairs: Iterable[tuple[str | Path, Session]], schedule: str | None = None, *,
                   fit: Iterable[str] = (), every: int = CalibrateOptions.every,
                   in_place: bool = False, verify: bool = True,
                   split: str = CalibrateOptions.split, drop_wrong: bool = False,
                   max_work: int = CalibrateOptions.max_work,
                   outlier_factor: float = CalibrateOptions.outlier_factor,
                   step_rules: bool = False) -> Calibration:
    """One fit over several logs, each with its own machine (a loaded session, compiled at
    the log's host count when it has a structural host param, as `predict` does): params of a
    library the machine files import are shared, a machine file's own params are its log's.
    `split` is "interleaved", "size:64MiB" or "leave-one-out". A fit that does not settle
    within `max_work` (per evaluation of the model, its fit rows + 100) is refused. With
    `step_rules`, the fit is made under `step cost sum` and `step cost max` too (and under
    the files' own `step cost pipelined chunk Q`, if declared), and `.step_rules` says each
    one's held-out error (which the rows prefer). `.outliers`: the
    rows left out as outliers, (log, row) each.

        >>> fitted = schedc.calibrate_logs([(LOG1, m1), (LOG2, m2)])       # doctest: +SKIP
    """
    from dataclasses import replace

    from ..analysis.calibrate.calibration import Run
    from ..analysis.calibrate.fit import calibrate_runs
    from ..analysis.calibrate.hosts import host_point
    options = CalibrateOptions(every, split, max_work, outlier_factor)
    runs, said, outliers = [], [], []
    for log, session in pairs:
        name = schedules_named(session, schedule)
        ((path, table),), flagged, notes = read_logs([log], outlier_factor)
        said += notes
        outliers += [(path, row) for _, rows in flagged for row in rows]
        point = host_point(session, name, table, path)  # a machine in hosts: at the log's
        if point is not None:
            session = session.at({point.param: point.hosts})
            said.append(f"{path}: {point.said}")
        verified_timings(session, name.split(","), verify)
        runs.append(Run(session, name, path, table, session.program.path))

    def fit_runs(these: list) -> Calibration:
        return replace(_noted(calibrate_runs(these, _fit_names(fit),
                                             parse_split(split, options.every),
                                             place_of(in_place), drop_wrong,
                                             max_work=options.max_work), said),
                       outliers=tuple(outliers))
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
                    outlier_factor: float = CalibrateOptions.outlier_factor,
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
    every = CalibrateOptions(every, split, max_work, outlier_factor).every
    parse_split(split, every)  # (a bad --split is refused before any file is read)
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

"""Meeting measurements: `calibrate` fits a file's params to nccl-tests logs, `predict`
compares its prediction with them, without fitting."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from .compiling import verified_timings

if TYPE_CHECKING:
    from ..analysis.calibrate.calibration import Calibration, Comparison
    from ..session import Session


def _tables(paths: Iterable[str | Path]) -> list:
    from ..measure.nccl_tests import read_log
    return [(str(path), read_log(path).table()) for path in paths]


def _schedule(session: Session, name: str | None) -> str:
    """The schedule named, or the file's only one."""
    names = session.selected((name,) if name else ())
    if len(names) > 1:
        from ..errors import UsageError
        raise UsageError(f"{session.program.path} has {len(names)} schedules "
                         f"({', '.join(names)}); choose one with -s")
    return names[0]


def _place(in_place: bool) -> str:
    return "in" if in_place else "out"


def calibrate(session: Session, logs: Iterable[str | Path], schedule: str | None = None, *,
              fit: Iterable[str] = (), every: int = 4, in_place: bool = False,
              verify: bool = True) -> Calibration:
    """Fit the params `fit` (default: every param the time depends on but the size) of one
    schedule (default: the file's only one) to nccl-tests logs, by least squares on log time,
    on one size in `every` (and the largest); the rest are held out. The fit is trustworthy
    when `.converged` and no param is `.undetermined`.

        >>> machine = schedc.load("schedules/calibration/nvidia_dgxc_1node_8xH100_nvlink_allreduce.sched")
        >>> fitted = schedc.calibrate(machine, [LOG])                      # doctest: +SKIP
        >>> [p.name for p in fitted.params]                                # doctest: +SKIP
        ['a_L', 'B_L']
    """
    from ..analysis.calibrate.calibration import calibrate as fit_params
    name = _schedule(session, schedule)
    verified_timings(session, [name], verify)
    return fit_params(session, name, _tables(logs), tuple(fit), every, _place(in_place))


def predict(session: Session, logs: Iterable[str | Path], schedule: str | None = None, *,
            in_place: bool = False, verify: bool = True) -> Comparison:
    """One schedule's predicted time (default: the file's only one) against the measured
    rows of nccl-tests logs, at the file's params (see `fitted_sets` for a calibrated file).

        >>> compared = schedc.predict(machine, [LOG])                      # doctest: +SKIP
        >>> compared.geomean(None)                                         # doctest: +SKIP
        0.06...
    """
    from ..analysis.calibrate.calibration import compare
    name = _schedule(session, schedule)
    verified_timings(session, [name], verify)
    return compare(session, name, _tables(logs), _place(in_place))


def plot_prediction(session: Session, comparison: Comparison, path: str | Path) -> None:
    """Plot time and bus bandwidth over size, measured and predicted, into an SVG or PNG
    file, with the sizes where the schedule's protocol changes marked."""
    from ..analysis.calibrate.calibration import COLLECTIVE_BINARIES, size_symbol
    from ..analysis.solve.protocols import protocol_spans
    from ..measure.nccl_tests import BUSBW_FACTORS
    from ..render.measured_plot import plot_comparison
    name = comparison.schedule
    spans = protocol_spans(session.timing(name), size_symbol(session, name))
    switches = [(float(b.lo), a.protocol, b.protocol) for a, b in zip(spans, spans[1:])]
    collective = session.program.result(name).collective
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

"""Commands that meet measurements: `calibrate` fits a machine's params to nccl-tests logs,
`predict` compares a file's prediction with a log."""

from __future__ import annotations

from pathlib import Path

import click

from ..render import schema
from .compiling import verified_timings
from .options import (
    EXIT_FAILED,
    EXIT_OK,
    json_option,
    limit_options,
    no_verify_option,
    set_option,
)
from .paths import InputPath, OutputPath


def _tables(paths) -> list:
    from ..measure.nccl_tests import read_log
    return [(str(path), read_log(path).table()) for path in paths]


def _schedule(session, name: str | None) -> str:
    names = session.selected((name,) if name else ())
    if len(names) > 1:
        from ..errors import UsageError
        raise UsageError(f"{session.program.path} has {len(names)} schedules "
                         f"({', '.join(names)}); choose one with -s")
    return names[0]


def _place(in_place: bool) -> str:
    return "in" if in_place else "out"


@click.command("calibrate")
@click.argument("logs", nargs=-1, required=True, type=InputPath())
@click.option("--machine", "machine", required=True, type=InputPath(),
              help="The .sched file: machine, collective and the schedule NCCL runs.")
@click.option("--schedule", "-s", "schedule", metavar="NAME",
              help="The schedule to fit (default: the file's only one).")
@click.option("--fit", "fit", multiple=True, metavar="NAME[,NAME...]",
              help="Fit these params (default: every param the time depends on but the size).")
@click.option("--every", type=click.IntRange(min=1), default=4, show_default=True,
              help="Fit on one size in this many (and the largest); the rest are held out.")
@click.option("--in-place", is_flag=True, help="Use the in-place times (default: out-of-place).")
@click.option("--write", "write_path", type=OutputPath(),
              help="Write the fitted params as a .sched file a machine file can import.")
@set_option
@limit_options
@json_option(schema.CALIBRATE)
@no_verify_option
def calibrate_command(logs, machine: Path, schedule, fit, every: int, in_place: bool,
                      write_path, sets, limits, as_json: bool, no_verify: bool) -> int:
    """Fit FILE's params to nccl-tests LOGs by least squares on log time; show every row's
    measured and predicted time, and the error on fit and held-out rows."""
    from ..analysis.calibrate.calibration import calibrate
    from ..render.calibration import calibration_json, calibration_sched, calibration_text
    from ..session import Session
    session = Session.open(machine, sets, limits)
    name = _schedule(session, schedule)
    verified_timings(session, [name], no_verify)
    names = tuple(n.strip() for item in fit for n in item.split(",") if n.strip())
    result = calibrate(session, name, _tables(logs), names, every, _place(in_place))
    click.echo(calibration_json(result) if as_json
               else calibration_text(result, _place(in_place)), nl=False)
    trusted = result.converged and not result.undetermined
    if write_path is not None:
        if not trusted:
            click.echo(f"schedc: not writing {write_path}: the fit is not trustworthy (see above)",
                       err=True)
        else:
            command = " ".join(["schedc calibrate", *map(str, logs), "--machine", str(machine),
                                "-s", name, *(f"--fit {n}" for n in names),
                                *(f"--set {s}" for s in sets), f"--every {every}",
                                *(["--in-place"] if in_place else [])])
            from ..render.calibration import write_whole
            text = calibration_sched(result, command)
            write_whole(write_path, lambda temporary: Path(temporary).write_text(text, "utf-8"))
    return EXIT_OK if trusted else EXIT_FAILED


def _fitted_sets(path: Path) -> list[str]:
    """The params of a `calibrate --write` file as `--set` overrides."""
    from ..elaborate.loader import load_program
    from ..units import base_unit
    program = load_program(path)
    return [f"{p.name}={float(p.nominal)!r} {base_unit(p.dim)}".rstrip()
            for p in program.params.values()]


@click.command("predict")
@click.argument("file", type=InputPath(dir_okay=True))
@click.option("--against", "logs", multiple=True, required=True, type=InputPath(),
              metavar="LOG", help="An nccl-tests log (repeatable).")
@click.option("--schedule", "-s", "schedule", metavar="NAME",
              help="The schedule (default: the file's only one).")
@click.option("--plot", "plot", type=OutputPath(),
              help="Also plot time and busbw over size, measured and predicted (.png or .svg).")
@click.option("--in-place", is_flag=True, help="Use the in-place times (default: out-of-place).")
@click.option("--fitted", type=InputPath(),
              help="Set params to the values in this file (from calibrate --write).")
@set_option
@limit_options
@json_option(schema.PREDICT)
@no_verify_option
def predict_command(file: Path, logs, schedule, plot, in_place: bool, fitted, sets, limits,
                    as_json: bool, no_verify: bool) -> int:
    """FILE's predicted time against measured rows of nccl-tests LOGs, without fitting."""
    from ..analysis.calibrate.calibration import compare, size_symbol
    from ..render.calibration import comparison_json, comparison_text
    from ..session import Session
    sets = (*(_fitted_sets(fitted) if fitted else ()), *sets)
    session = Session.open(file, sets, limits)
    name = _schedule(session, schedule)
    verified_timings(session, [name], no_verify)
    tables = _tables(logs)
    result = compare(session, name, tables, _place(in_place))
    if plot is not None:
        from ..analysis.solve.protocols import protocol_spans
        from ..measure.nccl_tests import BUSBW_FACTORS
        from ..render.measured_plot import plot_comparison
        spans = protocol_spans(session.timing(name), size_symbol(session, name))
        switches = [(float(b.lo), a.protocol, b.protocol) for a, b in zip(spans, spans[1:])]
        collective = session.program.result(name).collective
        from ..analysis.calibrate.calibration import COLLECTIVE_BINARIES
        factor = BUSBW_FACTORS[COLLECTIVE_BINARIES[collective.kind]](len(collective.ranks))
        plot_comparison(result, plot, factor, switches)
    click.echo(comparison_json(result) if as_json else comparison_text(result), nl=False)
    return EXIT_OK


COMMANDS = (calibrate_command, predict_command)


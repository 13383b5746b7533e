"""Commands that meet measurements: `calibrate` fits a machine's params to nccl-tests logs,
`predict` compares a file's prediction with a log."""

from __future__ import annotations

from pathlib import Path

import click

from ..render import schema
from .options import (
    EXIT_FAILED,
    EXIT_OK,
    json_option,
    limit_options,
    no_verify_option,
    set_option,
)
from .paths import InputPath, OutputPath


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
    from ..api import calibrate, load
    from ..render.calibration import calibration_json, calibration_sched, calibration_text
    session = load(machine, sets, **limits)
    names = tuple(n.strip() for item in fit for n in item.split(",") if n.strip())
    result = calibrate(session, logs, schedule, fit=names, every=every, in_place=in_place,
                       verify=not no_verify)
    name = result.comparison.schedule
    click.echo(calibration_json(result) if as_json
               else calibration_text(result, "in" if in_place else "out"), nl=False)
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
    from ..api import fitted_sets, load, plot_prediction, predict
    from ..render.calibration import comparison_json, comparison_text
    sets = (*(fitted_sets(fitted) if fitted else ()), *sets)
    session = load(file, sets, **limits)
    result = predict(session, logs, schedule, in_place=in_place, verify=not no_verify)
    if plot is not None:
        plot_prediction(session, result, plot)
    click.echo(comparison_json(result) if as_json else comparison_text(result), nl=False)
    return EXIT_OK


COMMANDS = (calibrate_command, predict_command)


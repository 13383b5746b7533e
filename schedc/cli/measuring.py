"""Commands that meet measurements: `calibrate` fits a machine's params to nccl-tests logs,
`predict` compares a file's prediction with a log."""

from __future__ import annotations

from pathlib import Path

import click

from ..api.calibrating import CalibrateOptions
from ..api.measuring import PredictOptions
from ..render import schema
from .derived import api_option
from .options import (
    EXIT_FAILED,
    EXIT_OK,
    json_option,
    limit_options,
    machine_options,
    no_verify_option,
    set_option,
    wrote,
)
from .paths import InputPath, OutputPath


def outlier_option(options: type):
    """`--outlier-factor`, the field of `options` (its range, above 1, is the API's)."""
    return api_option(options, "outlier_factor", metavar="F",
                      help="Flag a row whose out-of-place and in-place times differ by more "
                           "than this factor as an outlier, and leave it out of fits and error "
                           "figures (inf keeps all).")


@click.command("calibrate")
@click.argument("logs", nargs=-1, type=InputPath())
@click.option("--machine", "machines", multiple=True, type=InputPath(),
              help="The .sched file: machine, collective and the schedule NCCL runs; one for "
              "every log, or one per log in the order of the logs (repeatable).")
@click.option("--manifest", type=InputPath(),
              help="A file of 'LOG MACHINE' lines (paths relative to it; '#' starts a comment), "
              "instead of LOG... --machine M...")
@click.option("--schedule", "-s", "schedule", metavar="NAME",
              help="The schedule to fit (default: each file's only one).")
@click.option("--fit", "fit", multiple=True, metavar="NAME[,NAME...]",
              help="Fit these params (default: every param the time depends on but the size "
              "and the link rates); `latencies` names every latency per call, start-up per "
              "round and latency per hop, `shares` every protocol's share of a link.")
@api_option(CalibrateOptions, "split", metavar="interleaved|size:SIZE|leave-one-out[:SIZE]",
              help="Which rows are held out: every --every-th size is fit (interleaved); sizes "
              "above SIZE (size:64MiB, extrapolation); each log in turn (leave-one-out; "
              "leave-one-out:16B also fits its own params on its rows up to 16 B).")
@api_option(CalibrateOptions, "every",
            help="With --split interleaved: fit on one size in this many (and the largest).")
@click.option("--in-place", is_flag=True, help="Use the in-place times (default: out-of-place).")
@click.option("--drop-wrong", is_flag=True,
              help="Leave out rows with a nonzero #wrong (else they are refused).")
@outlier_option(CalibrateOptions)
@click.option("--write", "write_path", type=OutputPath(),
              help="Write the fitted constants as a .sched library a machine file can import.")
@click.option("--force", is_flag=True,
              help="--write even when a param is flagged (at a bound, undetermined, uncertain).")
@api_option(CalibrateOptions, "max_work",
              help="Refuse a fit that has not settled after this much work: per evaluation of "
                   "the model, its fit rows + 100 (about a µs each).")
@click.option("--step-rules", "step_rules", is_flag=True,
              help="Also fit under `step cost sum` and `step cost max` (and the files' own "
                   "`step cost pipelined chunk Q`, if they declare it) and say which the rows "
                   "prefer, with the held-out error of each.")
@set_option
@limit_options
@json_option(schema.CALIBRATE)
@no_verify_option
def calibrate_command(logs, machines, manifest, schedule, fit, split: str, every: int,
                      in_place: bool, drop_wrong: bool, outlier_factor: float, write_path,
                      force: bool, max_work: int, step_rules: bool, sets, limits, as_json: bool,
                      no_verify: bool) -> int:
    """Fit the machine files' params to nccl-tests LOGs by least squares on log time (with
    NCCL's constants as priors, inside physical bounds); show every row's measured and
    predicted time, the error on fit and held-out rows, and checks of the model."""
    from ..api import FitNotWritten, calibrate_files, write_calibration
    from ..render.calibration import calibration_json, calibration_text
    result = calibrate_files(logs, machines, manifest=manifest, schedule=schedule, fit=fit,
                             sets=sets, every=every, in_place=in_place, verify=not no_verify,
                             split=split, drop_wrong=drop_wrong, max_work=max_work,
                             outlier_factor=outlier_factor, step_rules=step_rules, **limits)
    click.echo(calibration_json(result, list(result.outliers)) if as_json else
               calibration_text(result, "in" if in_place else "out", list(result.outliers)),
               nl=False)
    if write_path is not None:
        try:
            write_calibration(result, write_path, force=force)
            wrote(write_path)
        except FitNotWritten as refused:  # a note: the fit is reported all the same
            click.echo(f"schedc: {refused.message}", err=True)
    return EXIT_OK if result.trusted else EXIT_FAILED


@click.command("predict")
@click.argument("file", type=InputPath(dir_okay=True))
@click.option("--against", "logs", multiple=True, required=True, type=InputPath(),
              metavar="LOG", help="An nccl-tests log (repeatable).")
@click.option("--schedule", "-s", "schedule", metavar="NAME",
              help="The schedule (default: the file's only one).")
@click.option("--plot", "plot", type=OutputPath(),
              help="Also plot time and busbw over size, measured and predicted (.png or .svg).")
@click.option("--in-place", is_flag=True, help="Use the in-place times (default: out-of-place).")
@click.option("--drop-wrong", is_flag=True,
              help="Leave out rows with a nonzero #wrong (else they are refused).")
@click.option("--fitted", type=InputPath(),
              help="Set params to the values in this file (from calibrate --write).")
@api_option(PredictOptions, "nccl",
            help="Predict by NCCL's own tuning model on FILE's machine (its algorithm, "
                 "protocol and time per size), nothing fitted.")
@api_option(PredictOptions, "sm", metavar="N",
              help="With --nccl: the GPU generation (80: A100, 90: H100; default: the "
                   "machine's `gpu ... sm S`, else 90).")
@click.option("--input", "inputs", multiple=True, metavar="NAME=VALUE",
              help="With --nccl: override one of NCCL's inputs, as `schedc nccl --input`.")
@outlier_option(PredictOptions)
@api_option(PredictOptions, "within", metavar="PCT",
            help="Judge each row against this error (e.g. 10%) instead of the bands the "
                 "--fitted file states.")
@api_option(PredictOptions, "small_sizes",
              help="Where rows below 1 MiB come from: FILE's model, NCCL's own latency model "
                   "(nothing fitted), or auto: NCCL's for a log at another host count than "
                   "FILE's own.")
@set_option
@limit_options
@json_option(schema.PREDICT)
@no_verify_option
@machine_options
def predict_command(file: Path, logs, schedule, plot, in_place: bool, drop_wrong: bool, fitted,
                    nccl: bool, sm, inputs, outlier_factor: float, within,
                    small_sizes: str, sets, limits, as_json: bool, no_verify: bool, machine,
                    ranks) -> int:
    """FILE's predicted time against measured rows of nccl-tests LOGs, without fitting: a
    table shaped like the log's, in its terms (time, algbw, busbw), with the resource that
    bounds each row and a verdict: within the fit's stated uncertainty or not."""
    from ..api import predict_file
    from ..render.predicted_log import predicted_json, predicted_text
    rows, result = predict_file(
        file, logs, schedule, sets=sets, fitted=fitted, plot=plot, machine=machine, ranks=ranks,
        in_place=in_place, verify=not no_verify, drop_wrong=drop_wrong,
        outlier_factor=outlier_factor, within=within, nccl=nccl, sm=sm, inputs=tuple(inputs),
        small_sizes=small_sizes, **limits)
    if plot is not None:
        wrote(plot)
    shown = str(fitted) if fitted else None
    how = "by NCCL's model alone, nothing fitted" if nccl else None
    click.echo(predicted_json(rows, result, shown) if as_json else
               predicted_text(rows, result, shown, how), nl=False)
    return EXIT_OK


COMMANDS = (calibrate_command, predict_command)


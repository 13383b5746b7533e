"""Options shared by the commands, and `compiling`: the decorator that gives a command its
`Session` (FILE, `--set`, and the work limits, opened in one place)."""

from __future__ import annotations

import functools
from pathlib import Path

import click

from ..api.analysing import TimedOptions
from ..api.compiling import LoadOptions
from .derived import api_option
from .paths import InputPath, OutputPath
from .state import (  # noqa: F401 (the commands import them from here)
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_OK,
    JSON_REQUESTED,
    KEPT,
)


def wrote(path: object, detail: str = "") -> None:
    """Say on stderr that a file was written ("wrote m.sched"), as compilers and downloaders
    do: stdout stays what the command prints, for a pipe or a redirect."""
    click.echo(f"wrote {path}" + (f" ({detail})" if detail else ""), err=True)


def file_argument(func):
    return click.argument("file", type=InputPath(dir_okay=True))(func)


def set_option(func):
    return click.option("--set", "sets", multiple=True, metavar="NAME=VALUE",
                        help="Override a param's nominal value, with its unit (--set B_L=300GB/s).")(func)


def schedule_option(func):
    return click.option("--schedule", "-s", "schedules", multiple=True, metavar="NAME",
                        help="Only this schedule (repeatable); default: all of the file.")(func)


def _note_json(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    if value:
        JSON_REQUESTED.set(True)
    return value


def json_option(schema: str):
    """`--json`, naming the schema the command prints."""
    return click.option("--json", "as_json", is_flag=True, callback=_note_json,
                        help=f"Print JSON (schema {schema}); bad input prints a schedc.error/1 "
                             "object.")


FORMATS = ("text", "markdown", "latex")


def format_option(func):
    """`--format text|markdown|latex`: the tables for a terminal, a design doc or a paper."""
    return click.option("--format", "output_format", type=click.Choice(FORMATS), default="text",
                        show_default=True,
                        help="Markdown tables, or LaTeX tabular and align* environments.")(func)


def formatted(output_format: str, as_json: bool, what: str, json_renderer):
    """The renderer of `what` ("time", "compare", "bound") in the chosen format: the
    command's document (`render.documents.DOCUMENTS`) written by the format's writer
    (`render.writers.WRITERS`); `json_renderer` with `--json`, which excludes the other
    formats."""
    if as_json:
        if output_format != "text":
            from ..errors import UsageError
            raise UsageError("--json and --format exclude each other")
        return json_renderer
    from ..render.documents import render
    return functools.partial(render, what, output_format)


def plot_option(func):
    return click.option("--plot", "plot_path", type=OutputPath(),
                        metavar="OUT.svg|OUT.png",
                        help="Also draw a plot into this file (SVG or PNG, by its suffix).")(func)


def limit_options(func):
    """`--max-transfers` and `--max-rounds`, passed on as one `limits` argument: the keyword
    arguments of `schedc.load` that set them (and check them: at least 1)."""
    @api_option(LoadOptions, "max_transfers", help="Refuse a schedule making more transfers.")
    @api_option(LoadOptions, "max_rounds",
                help="Refuse a schedule making more rounds and loop iterations.")
    @functools.wraps(func)
    def wrapper(*args, max_transfers: int, max_rounds: int, **kwargs):
        return func(*args, limits={"max_transfers": max_transfers, "max_rounds": max_rounds},
                    **kwargs)
    return wrapper


def timeout_of(options: type):
    """`--timeout`, the field of `options` (checked by the API: NaN, inf and 1e308 too)."""
    return api_option(options, "timeout", metavar="SECONDS",
                      help="Give up on SymPy work after this many seconds per equation.")


timeout_option = timeout_of(TimedOptions)


def no_verify_option(func):
    return click.option("--no-verify", is_flag=True,
                        help="Report on schedules even if they do not compute their collective.")(func)


def no_formula_option(func):
    """`--no-formula`: compile with every param its value (no SymPy), for the numbers alone;
    `compiling` reads it to load the file so."""
    return click.option("--no-formula", is_flag=True,
                        help="Numbers only: time, traffic and busbw at the params' values, "
                             "without formulas, regimes or bottlenecks (faster; no SymPy).")(func)


def machine_options(func):
    """`--machine` and `--ranks`, for an MSCCL XML algorithm in place of a `.sched` FILE."""
    func = click.option("--ranks", metavar="EXPR",
                        help="For an .xml FILE: the devices of the machine its gpus 0, 1, ... "
                             "are (default: the machine's `ranks`).")(func)
    return click.option("--machine", type=InputPath(),
                        metavar="M.sched",
                        help="For an .xml FILE (MSCCL algorithm): the machine it runs on.")(func)


def change_options(func):
    """`--fail ITEM` and `--derate ITEM=FACTOR` (both repeatable), passed on as one `changes`
    argument: the keyword arguments of `schedc.load` that set them ([what-if](docs/whatif.md))."""
    @click.option("--fail", "fail", multiple=True, metavar="ITEM",
                  help="Remove a device, a link (A<->B, A->B) or a shared resource from the "
                       "machine before routing (repeatable).")
    @click.option("--derate", "derate", multiple=True, metavar="ITEM=FACTOR",
                  help="Multiply a link's (or shared resource's) bandwidth by FACTOR (0.5, 1/2, "
                       "50%; repeatable).")
    @functools.wraps(func)
    def wrapper(*args, fail: tuple[str, ...], derate: tuple[str, ...], **kwargs):
        return func(*args, changes={"fail": fail, "derate": derate}, **kwargs)
    return wrapper


def compiling(func):
    """FILE, `--set`, the limits, `--machine`/`--ranks` and `--fail`/`--derate`, turned into
    the command's `session` argument."""
    @file_argument
    @set_option
    @limit_options
    @machine_options
    @change_options
    @functools.wraps(func)
    def wrapper(*args, file: Path, sets: tuple[str, ...], limits: dict[str, int],
                machine: Path | None, ranks: str | None, changes: dict, **kwargs):
        from ..api import load
        session = load(file, sets, **limits, machine=machine, ranks=ranks,
                       fail=changes["fail"], derate=changes["derate"],
                       formula=not kwargs.get("no_formula", False))  # (no_formula_option)
        KEPT.append(session)
        for warning in getattr(session.program, "warnings", ()):  # (an MSCCL file's)
            click.echo(warning.render(), err=True)
        return func(*args, session=session, **kwargs)
    return wrapper

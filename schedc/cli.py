"""The `schedc` command line: a thin layer over the pipeline.

Exit codes: 0 ok; 1 a check or verification failed; 2 bad input or usage. Errors in input
print `file:line:col: error: ...`, the source line and a caret — never a traceback.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from . import __version__
from .bound import MAX_CUTS
from .bound import bound as compute_bound
from .elaborate import Program, load_program, parse_override
from .elaborate_schedule import Limits
from .emit import STAGES, emit_ast, emit_formula, emit_ir, emit_loads
from .errors import ParseError, SchedcError, SourceFile
from .parser import parse_module
from .pipeline import selected, time_schedule
from .report import compare_text, time_text, to_json
from .report_bound import bound_json, bound_text
from .reports import report_values, reports_json, reports_text

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def _file_argument(func):
    return click.argument("file", type=click.Path(dir_okay=True, path_type=Path))(func)


def _set_option(func):
    return click.option("--set", "sets", multiple=True, metavar="NAME=VALUE",
                        help="Override a param's nominal value, with its unit (--set B_L=300GB/s).")(func)


def _limit_option(func):
    func = click.option("--max-rounds", type=click.IntRange(min=1), default=Limits.steps,
                        show_default=True,
                        help="Refuse a schedule making more rounds and loop iterations.")(func)
    return click.option("--max-transfers", type=click.IntRange(min=1), default=Limits.transfers,
                        show_default=True, help="Refuse a schedule making more transfers.")(func)


def _schedule_option(func):
    return click.option("--schedule", "-s", "schedules", multiple=True, metavar="NAME",
                        help="Only this schedule (repeatable); default: all of the file.")(func)


def _json_option(func):
    return click.option("--json", "as_json", is_flag=True, help="Print JSON (schema schedc.time/1).")(func)


def _load(file: Path, sets: tuple[str, ...], max_transfers: int, max_rounds: int) -> Program:
    overrides = tuple(parse_override(s) for s in sets)
    return load_program(file, overrides, Limits(max_transfers, max_rounds))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="schedc")
def cli() -> None:
    """schedc: compile collective-communication schedules to closed-form times.

    Write a topology and schedules in a .sched file; schedc derives each schedule's time
    T = Σ_rounds (α + max_resources bytes/bandwidth) as a formula in your params.
    """


@cli.command()
@_file_argument
@_schedule_option
@_set_option
@_json_option
@_limit_option
def time(file: Path, schedules, sets, as_json: bool, max_transfers: int, max_rounds: int) -> int:
    """Formula, regime, value and traffic of each schedule in FILE."""
    program = _load(file, sets, max_transfers, max_rounds)
    timings = [time_schedule(program, n) for n in selected(program, schedules)]
    click.echo(to_json(program, timings) if as_json else time_text(program, timings), nl=False)
    return EXIT_OK


@cli.command()
@_file_argument
@_set_option
@_json_option
@_limit_option
def compare(file: Path, sets, as_json: bool, max_transfers: int, max_rounds: int) -> int:
    """All schedules of FILE side by side (the seed's §3 table)."""
    program = _load(file, sets, max_transfers, max_rounds)
    timings = [time_schedule(program, n) for n in selected(program)]
    click.echo(to_json(program, timings) if as_json else compare_text(program, timings), nl=False)
    return EXIT_OK


@cli.command()
@click.argument("stage", type=click.Choice(STAGES))
@_file_argument
@_schedule_option
@_set_option
@_limit_option
def emit(stage: str, file: Path, schedules, sets, max_transfers: int, max_rounds: int) -> int:
    """Dump one pipeline stage: ast, ir, loads or formula."""
    if stage == "ast":
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ParseError(f"cannot read {file}: {exc}") from None
        click.echo(emit_ast(parse_module(SourceFile(str(file), text))), nl=False)
        return EXIT_OK
    program = _load(file, sets, max_transfers, max_rounds)
    dump = {"ir": emit_ir, "loads": emit_loads, "formula": emit_formula}[stage]
    click.echo("".join(dump(program, program.schedule(n)) for n in selected(program, schedules)),
               nl=False)
    return EXIT_OK


def main(argv: list[str] | None = None) -> None:
    """Entry point: run a command, turning every schedc error into a message and exit code 2."""
    try:
        code = cli.main(args=argv, prog_name="schedc", standalone_mode=False)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.ClickException as exc:
        exc.show()
        code = exc.exit_code
    except click.exceptions.Abort:
        click.echo("schedc: aborted", err=True)
        code = EXIT_BAD_INPUT
    except SchedcError as exc:
        click.echo(exc.render(), err=True)
        code = EXIT_BAD_INPUT
    except RecursionError:
        click.echo("error: the input is nested too deeply to process", err=True)
        code = EXIT_BAD_INPUT
    except MemoryError:
        click.echo("error: out of memory; lower --max-transfers or simplify the input", err=True)
        code = EXIT_BAD_INPUT
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = EXIT_OK
    sys.exit(code if isinstance(code, int) else EXIT_OK)


if __name__ == "__main__":  # pragma: no cover
    main()


# ---- issue 5: lower bounds (`bound`) and report statements (`eval`) -------------------------


@cli.command()
@_file_argument
@_schedule_option
@_set_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schema schedc.bound/1).")
@_limit_option
@click.option("--max-cuts", type=click.IntRange(min=1), default=MAX_CUTS, show_default=True,
              help="Refuse a collective whose bound needs more max-flow problems.")
def bound(file: Path, schedules, sets, as_json: bool, max_transfers: int, max_rounds: int,
          max_cuts: int) -> int:
    """How far each schedule of FILE is from the physical limit: cut-set and end-host lower
    bounds, the overlapped bound, and what holds each schedule back."""
    program = _load(file, sets, max_transfers, max_rounds)
    result = compute_bound(program, selected(program, schedules), max_cuts)
    click.echo(bound_json(program, result) if as_json else bound_text(program, result), nl=False)
    return EXIT_OK


@cli.command(name="eval")
@_file_argument
@_set_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schema schedc.eval/1).")
@_limit_option
def eval_command(file: Path, sets, as_json: bool, max_transfers: int, max_rounds: int) -> int:
    """Evaluate and print every `report NAME = EXPR` of FILE, in readable units."""
    program = _load(file, sets, max_transfers, max_rounds)
    values = report_values(program)
    click.echo(reports_json(program, values) if as_json else reports_text(values), nl=False)
    return EXIT_OK

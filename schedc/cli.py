"""The `schedc` command line: a thin layer over the pipeline.

Commands follow the pipeline: `emit` dumps a stage; `time` and `compare` report formulas;
`verify` checks data flow; `solve`, `sensitivity` and `sweep` analyse times; `bound` compares
them with the physical limit; `eval` prints `report`s; `check` runs a file's expects.

Exit codes: 0 ok; 1 a check or verification failed; 2 bad input or usage; 70 a bug in
schedc. Errors in input print `file:line:col: error: ...`, the source line and a caret —
never a traceback.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from . import __version__
from .analysis.bound import MAX_CUTS, bound_all
from .analysis.check import check_file, sched_files
from .analysis.equations import DEFAULT_TIMEOUT, Equations, name_span
from .analysis.reports import report_values, reports_json, reports_text
from .analysis.sensitivity import sensitivities
from .analysis.sweep import DEFAULT_POINTS, parse_vary, sweep, write_csv
from .analysis.verify import SCHEMA as VERIFY_SCHEMA
from .analysis.verify import require_verified, verdict_json, verdict_text, verify_program
from .cost.timing import selected, time_schedule
from .deadline import TimeLimit
from .elaborate.program import Program, load_program, parse_override
from .elaborate.schedule import Limits
from .errors import ParseError, SchedcError, SourceFile, Span, UsageError
from .language.parser import parse_equation, parse_module
from .language.syntax import TimeOf, walk
from .render.analysis import (
    check_json,
    check_line,
    check_summary,
    report_line,
    sensitivity_json,
    sensitivity_text,
    solve_json,
    solve_text,
    sweep_json,
    sweep_text,
    verdict_lines,
)
from .render.bound import bound_json, bound_text
from .render.emit import STAGES, emit_ast, emit_formula, emit_ir, emit_loads
from .render.text import compare_text, dump_json, time_text, to_json

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 70


# ---- shared arguments and options ---------------------------------------------------------------


def _file_argument(func):
    return click.argument("file", type=click.Path(dir_okay=True, path_type=Path))(func)


def _set_option(func):
    return click.option("--set", "sets", multiple=True, metavar="NAME=VALUE",
                        help="Override a param's nominal value, with its unit (--set B_L=300GB/s).")(func)


def _schedule_option(func):
    return click.option("--schedule", "-s", "schedules", multiple=True, metavar="NAME",
                        help="Only this schedule (repeatable); default: all of the file.")(func)


def _json_option(schema: str):
    """`--json`, naming the schema the command prints."""
    return click.option("--json", "as_json", is_flag=True, help=f"Print JSON (schema {schema}).")


def _limit_option(func):
    func = click.option("--max-rounds", type=click.IntRange(min=1), default=Limits.steps,
                        show_default=True,
                        help="Refuse a schedule making more rounds and loop iterations.")(func)
    return click.option("--max-transfers", type=click.IntRange(min=1), default=Limits.transfers,
                        show_default=True, help="Refuse a schedule making more transfers.")(func)


def _timeout_option(func):
    return click.option("--timeout", type=click.FloatRange(min=0, min_open=True),
                        default=DEFAULT_TIMEOUT, show_default=True, metavar="SECONDS",
                        help="Give up on SymPy work after this many seconds per equation.")(func)


def _no_verify_option(func):
    return click.option("--no-verify", is_flag=True,
                        help="Report on schedules even if they do not compute their collective.")(func)


def _load(file: Path, sets: tuple[str, ...], max_transfers: int, max_rounds: int) -> Program:
    overrides = tuple(parse_override(s) for s in sets)
    return load_program(file, overrides, Limits(max_transfers, max_rounds))


def _timings(program: Program, names: list[str], no_verify: bool) -> list:
    """The schedules' timings, verified first unless --no-verify (bad input, exit 2, has had
    its say by then, since timing compiles everything)."""
    timings = [time_schedule(program, n) for n in names]
    if not no_verify:
        require_verified(program, names)
    return timings


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="schedc")
def cli() -> None:
    """schedc: compile collective-communication schedules to closed-form times.

    Write a topology and schedules in a .sched file; schedc derives each schedule's time
    T = Σ_rounds (α + max_resources bytes/bandwidth) as a formula in your params.
    """


# ---- stages and times ---------------------------------------------------------------------------


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


@cli.command()
@_file_argument
@_schedule_option
@_set_option
@_json_option("schedc.time/1")
@_limit_option
@_no_verify_option
def time(file: Path, schedules, sets, as_json: bool, max_transfers: int, max_rounds: int,
         no_verify: bool) -> int:
    """Formula, regime, value and traffic of each schedule in FILE."""
    program = _load(file, sets, max_transfers, max_rounds)
    timings = _timings(program, selected(program, schedules), no_verify)
    click.echo(to_json(program, timings) if as_json else time_text(program, timings), nl=False)
    return EXIT_OK


@cli.command()
@_file_argument
@_set_option
@_json_option("schedc.time/1")
@_limit_option
@_no_verify_option
def compare(file: Path, sets, as_json: bool, max_transfers: int, max_rounds: int,
            no_verify: bool) -> int:
    """All schedules of FILE side by side (the seed's §3 table)."""
    program = _load(file, sets, max_transfers, max_rounds)
    timings = _timings(program, selected(program), no_verify)
    click.echo(to_json(program, timings) if as_json else compare_text(program, timings), nl=False)
    return EXIT_OK


@cli.command()
@_file_argument
@_schedule_option
@_set_option
@_json_option(VERIFY_SCHEMA)
@_limit_option
def verify(file: Path, schedules, sets, as_json: bool, max_transfers: int, max_rounds: int) -> int:
    """Check that each schedule computes its collective.

    FILE may be a directory: every .sched file under it is verified (files without result
    schedules, such as machines and libraries, are skipped). Exit 1 if one fails.
    """
    if file.is_dir():
        if schedules or sets:
            raise UsageError("--schedule and --set need one FILE, not a directory")
        paths = sorted(file.rglob("*.sched"))
    else:
        paths = [file]
    documents, texts, failed, bad_input = [], [], 0, False
    for path in paths:
        try:
            program = _load(path, sets, max_transfers, max_rounds)
            verdicts = verify_program(program, schedules)
        except SchedcError as exc:
            if not file.is_dir():
                raise
            click.echo(exc.render(), err=True)
            bad_input = True
            continue
        if not verdicts:
            continue
        failed += sum(not v.ok for v in verdicts)
        documents.append({"file": str(path), "schedules": [verdict_json(v) for v in verdicts]})
        lines = [verdict_text(v) for v in verdicts]
        texts.append("\n".join([f"{path}:", *("  " + t.replace("\n", "\n  ") for t in lines)])
                     if file.is_dir() else "\n".join(lines))
    if as_json:
        click.echo(dump_json({"schema": VERIFY_SCHEMA, "files": documents}), nl=False)
    elif texts:
        click.echo("\n".join(texts))
    elif not bad_input:
        click.echo(f"no result schedules in {file}")
    return EXIT_BAD_INPUT if bad_input else EXIT_FAILED if failed else EXIT_OK


# ---- analysis of times --------------------------------------------------------------------------


@cli.command("solve")
@_file_argument
@click.argument("equation")
@click.option("--for", "param", required=True, metavar="PARAM", help="The param to solve for.")
@_set_option
@_json_option("schedc.solve/1")
@_timeout_option
@_limit_option
@_no_verify_option
def solve_command(file: Path, equation: str, param: str, sets, as_json: bool, timeout: float,
                  max_transfers: int, max_rounds: int, no_verify: bool) -> int:
    """Solve EQUATION for one param, regime by regime: every solution, and which side is
    smaller in between (e.g. 'time(hierarchical) = time(ring, B_L = 32 GB/s)' --for B_L)."""
    program = _load(file, sets, max_transfers, max_rounds)
    relation = parse_equation(SourceFile("equation", equation))
    timed: dict[str, TimeOf] = {}
    for node in walk(relation):
        if isinstance(node, TimeOf):
            timed.setdefault(node.schedule, node)
    for name, node in timed.items():
        program.result(name, name_span(node.span, name))  # an unknown name points into EQUATION
    _timings(program, list(timed), no_verify)
    param_span = Span(SourceFile("--for", param), 1, 1, 1, len(param) + 1)
    solution = Equations(program, timeout).solve(relation, param.strip(), param_span)
    show = solve_json if as_json else solve_text
    click.echo(show(program, equation, solution), nl=False)
    return EXIT_OK


@cli.command("sensitivity")
@_file_argument
@_schedule_option
@_set_option
@_json_option("schedc.sensitivity/1")
@_timeout_option
@_limit_option
@_no_verify_option
def sensitivity_command(file: Path, schedules, sets, as_json: bool, timeout: float,
                        max_transfers: int, max_rounds: int, no_verify: bool) -> int:
    """dT/dp and the elasticity (p/T)·dT/dp of each schedule's time, for every param."""
    program = _load(file, sets, max_transfers, max_rounds)
    rows = [(t.name, t.cost.formula.xreplace(program.nominal),
             sensitivities(program, t, TimeLimit(timeout)))
            for t in _timings(program, selected(program, schedules), no_verify)]
    show = sensitivity_json if as_json else sensitivity_text
    click.echo(show(program, rows), nl=False)
    return EXIT_OK


@cli.command("sweep")
@_file_argument
@click.option("--vary", required=True, metavar="NAME=LO:HI[:N]",
              help=f"The param and its range, with units; N points (default {DEFAULT_POINTS}).")
@click.option("--linear", is_flag=True, help="Space the points linearly (default: logarithmically).")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the sweep to this CSV file (base units).")
@_schedule_option
@_set_option
@_json_option("schedc.sweep/1")
@_limit_option
@_no_verify_option
def sweep_command(file: Path, vary: str, linear: bool, csv_path: Path | None, schedules, sets,
                  as_json: bool, max_transfers: int, max_rounds: int, no_verify: bool) -> int:
    """Each schedule's time over a range of one param, from its compiled formula."""
    program = _load(file, sets, max_transfers, max_rounds)
    plan = parse_vary(vary, program)
    timings = _timings(program, selected(program, schedules), no_verify)
    result = sweep(program, timings, plan, "linear" if linear else "log")
    if csv_path is not None:
        write_csv(result, csv_path)
    click.echo(sweep_json(program, result) if as_json else sweep_text(result), nl=False)
    return EXIT_OK


@cli.command("bound")
@_file_argument
@_schedule_option
@_set_option
@_json_option("schedc.bound/1")
@_limit_option
@click.option("--max-cuts", type=click.IntRange(min=1), default=MAX_CUTS, show_default=True,
              help="Refuse a collective whose bound needs more max-flow problems.")
@_no_verify_option
def bound_command(file: Path, schedules, sets, as_json: bool, max_transfers: int,
                  max_rounds: int, max_cuts: int, no_verify: bool) -> int:
    """How far each schedule of FILE is from the physical limit: cut-set and end-host lower
    bounds, the overlapped bound, and what holds each schedule back. A machine file without
    schedules shows its cuts."""
    program = _load(file, sets, max_transfers, max_rounds)
    names = selected(program, schedules, required=False)
    groups = bound_all(program, names, max_cuts)  # bad input (exit 2) before verification
    _timings(program, names, no_verify)
    click.echo(bound_json(program, groups) if as_json else bound_text(program, groups), nl=False)
    return EXIT_OK


# ---- self-checking files ------------------------------------------------------------------------


@cli.command("eval")
@_file_argument
@_set_option
@_json_option("schedc.eval/1")
@_timeout_option
@_limit_option
def eval_command(file: Path, sets, as_json: bool, timeout: float, max_transfers: int,
                 max_rounds: int) -> int:
    """Evaluate and print every `report NAME = EXPR` of FILE, in readable units."""
    program = _load(file, sets, max_transfers, max_rounds)
    values = report_values(program, Equations(program, timeout).env.extra)
    click.echo(reports_json(program, values) if as_json else reports_text(values), nl=False)
    return EXIT_OK


@cli.command("check")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@_json_option("schedc.check/1")
@_timeout_option
@_limit_option
def check_command(paths: tuple[Path, ...], as_json: bool, timeout: float, max_transfers: int,
                  max_rounds: int) -> int:
    """Compile and verify every .sched file in PATHS (files or directories), print its
    reports and evaluate its expects.

    Exit 0 when all hold, 1 when one fails, 2 when a file has bad input."""
    limits = Limits(max_transfers, max_rounds)
    files = [check_file(path, timeout, limits) for path in sched_files(list(paths))]
    if as_json:
        click.echo(check_json(files), nl=False)
    else:
        for checked in files:
            for verdict in checked.verdicts:
                if not verdict.ok:
                    click.echo(verdict_lines(checked.path, verdict))
            for report in checked.reports:
                click.echo(report_line(checked.path, report))
            for outcome in checked.outcomes:
                click.echo(check_line(checked.path, outcome))
            if checked.error is not None:
                click.echo(checked.error.render(), err=True)
        click.echo(check_summary(files))
    if any(f.error is not None for f in files):
        return EXIT_BAD_INPUT
    return EXIT_FAILED if any(f.failed for f in files) else EXIT_OK


# ---- entry point --------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    """Run a command, turning every schedc error into a message and exit code 2."""
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
        code = exc.exit_code
    except RecursionError:
        click.echo("error: the input is nested too deeply to process", err=True)
        code = EXIT_BAD_INPUT
    except MemoryError:
        click.echo("error: out of memory; lower --max-transfers or simplify the input", err=True)
        code = EXIT_BAD_INPUT
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = EXIT_OK
    except Exception as exc:  # a bug, not bad input: say so instead of a traceback
        if os.environ.get("SCHEDC_DEBUG"):
            raise
        click.echo(f"schedc: internal error: {type(exc).__name__}: {exc}\n"
                   "  this is a bug in schedc; please report it with the input "
                   "(SCHEDC_DEBUG=1 shows the traceback)", err=True)
        code = EXIT_INTERNAL
    sys.exit(code if isinstance(code, int) else EXIT_OK)


if __name__ == "__main__":  # pragma: no cover
    main()

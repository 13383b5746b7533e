"""Commands that analyse times: `solve`, `sensitivity`, `sweep`, `bound`; and the
self-checking ones, `eval` (a file's reports) and `check` (its expects)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..api import DEFAULT_POINTS
from ..api.analysing import BoundOptions, SweepOptions
from ..render import schema
from .derived import api_option
from .options import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_OK,
    compiling,
    format_option,
    formatted,
    json_option,
    limit_options,
    machine_options,
    no_formula_option,
    no_verify_option,
    plot_option,
    schedule_option,
    set_option,
    timeout_option,
    wrote,
)
from .paths import OutputPath


@click.command("solve")
@compiling
@click.argument("equation")
@click.option("--for", "param", required=True, metavar="PARAM", help="The param to solve for.")
@json_option(schema.SOLVE)
@plot_option
@timeout_option
@no_verify_option
def solve_command(session, equation: str, param: str, as_json: bool, plot_path: Path | None,
                  timeout: float, no_verify: bool) -> int:
    """Solve EQUATION for one param, regime by regime: every solution, and which side is
    smaller in between (e.g. 'time(hierarchical) = time(ring, B_L = 32 GB/s)' --for B_L).
    A structural param (hosts) is searched over the integers, compiling at each value."""
    from ..api import IntegerSearch, solve
    from ..render.analysis import solve_json, solve_text
    from ..render.scale import search_json, search_text
    solution = solve(session, equation, param, timeout=timeout, verify=not no_verify,
                     plot=plot_path)
    if isinstance(solution, IntegerSearch):  # a structural param, searched over the integers
        show = search_json if as_json else search_text
        click.echo(show(session.program, equation, solution), nl=False)
        return EXIT_OK
    if plot_path is not None:  # (drawn by the API)
        wrote(plot_path)
    show_solution = solve_json if as_json else solve_text
    click.echo(show_solution(session.program, equation, solution, solution.switches), nl=False)
    return EXIT_OK


@click.command("sensitivity")
@compiling
@schedule_option
@json_option(schema.SENSITIVITY)
@timeout_option
@no_verify_option
def sensitivity_command(session, schedules, as_json: bool, timeout: float, no_verify: bool) -> int:
    """dT/dp and the elasticity (p/T)·dT/dp of each schedule's time, for every param."""
    from ..api import sensitivity
    from ..render.analysis import sensitivity_json, sensitivity_text
    rows = sensitivity(session, schedules, timeout=timeout, verify=not no_verify)
    show = sensitivity_json if as_json else sensitivity_text
    click.echo(show(session.program, [(r.name, r.time, r.params) for r in rows]), nl=False)
    return EXIT_OK


@click.command("sweep")
@compiling
@click.option("--vary", required=True, metavar="NAME=LO:HI[:N|:xK]",
              help=f"The param and its range, with units; N points (default {DEFAULT_POINTS}), "
                   "or xK: LO, LO*K, LO*K^2, ... up to HI (x2: powers of two, as nccl-tests' "
                   "-f 2).")
@api_option(SweepOptions, "linear", help="Space the points linearly (default: logarithmically).")
@click.option("--csv", "csv_path", type=OutputPath(),
              help="Write the sweep to this CSV file (base units); print a summary, not the table.")
@plot_option
@schedule_option
@json_option(schema.SWEEP)
@no_verify_option
@no_formula_option
def sweep_command(session, vary: str, linear: bool, csv_path: Path | None,
                  plot_path: Path | None, schedules, as_json: bool, no_verify: bool,
                  no_formula: bool) -> int:
    """Each schedule's time over a range of one param, from its compiled formula; a
    structural param (a unitless integer such as a host count) is compiled at each point."""
    from ..api import sweep
    from ..render.sweep import sweep_json, sweep_summary, sweep_text
    program = session.program
    result = sweep(session, vary, schedules, linear=linear, verify=not no_verify, csv=csv_path,
                   plot=plot_path)
    if plot_path is not None:  # (drawn by the API; the CSV's line is sweep_summary's)
        wrote(plot_path)
    if as_json:
        # bytes: straight to the binary stdout, unless stdout is text only (a StringIO)
        binary = getattr(sys.stdout, "buffer", None) is not None
        for piece in sweep_json(program, result):
            click.echo(piece if binary else piece.decode("utf-8"), nl=False)
    else:
        text = sweep_text(result) if csv_path is None else sweep_summary(result, csv_path)
        click.echo(text, nl=False)
    return EXIT_OK


@click.command("bound")
@compiling
@schedule_option
@json_option(schema.BOUND)
@format_option
@api_option(BoundOptions, "max_cuts",
            help="Refuse a collective whose bound needs more max-flow problems.")
@no_verify_option
def bound_command(session, schedules, as_json: bool, output_format: str, max_cuts: int,
                  no_verify: bool) -> int:
    """How far each schedule of FILE is from the physical limit: cut-set and end-host lower
    bounds, the overlapped bound, and what holds each schedule back. A machine file without
    schedules shows its cuts."""
    from ..api import bound
    from ..render.bound_json import bound_json
    show = formatted(output_format, as_json, "bound", bound_json)
    groups = bound(session, schedules, max_cuts=max_cuts, verify=not no_verify)
    click.echo(show(session.program, groups), nl=False)
    return EXIT_OK


@click.command("eval")
@compiling
@json_option(schema.EVAL)
@timeout_option
def eval_command(session, as_json: bool, timeout: float) -> int:
    """Evaluate and print every `report NAME = EXPR` of FILE, in readable units."""
    from ..api import evaluate
    from ..render.analysis import reports_json, reports_text
    program = session.program
    values = evaluate(session, timeout=timeout)
    click.echo(reports_json(program, values) if as_json else reports_text(values), nl=False)
    return EXIT_OK


@click.command("check")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@set_option
@json_option(schema.CHECK)
@timeout_option
@limit_options
@machine_options
def check_command(paths: tuple[Path, ...], sets, as_json: bool, timeout: float, limits,
                  machine, ranks) -> int:
    """Compile and verify every .sched file in PATHS (files or directories), print its
    reports and evaluate its expects. `--set` applies to every file, each of which must
    declare the param.

    Exit 0 when all hold, 1 when one fails, 2 when a file has bad input."""
    from ..api import check
    from ..render.analysis import check_json, check_line, check_summary, report_line, verdict_lines
    files = check(paths, sets, timeout=timeout, **limits, machine=machine, ranks=ranks)
    if as_json:
        click.echo(check_json(files), nl=False)
        for checked in files:  # the diagnostics on stderr, as without --json
            if checked.error is not None:
                click.echo(checked.error.render(), err=True)
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


COMMANDS = (solve_command, sensitivity_command, sweep_command, bound_command, eval_command,
            check_command)

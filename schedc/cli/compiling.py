"""Commands that show what the compiler makes of a file: `emit` a stage, `time` and `compare`
schedules, `verify` their data flow."""

from __future__ import annotations

from pathlib import Path

import click

from ..api import STAGES
from ..api.compiling import EmitOptions
from ..api.exporting import ValidateOptions
from ..errors import UsageError
from ..render import schema
from .derived import api_option
from .forall import for_all_options, verify_for_all
from .options import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_OK,
    change_options,
    compiling,
    format_option,
    formatted,
    json_option,
    limit_options,
    machine_options,
    no_formula_option,
    no_verify_option,
    schedule_option,
    set_option,
)


@click.command()
@click.argument("stage", type=click.Choice(STAGES))
@click.argument("file", type=click.Path(dir_okay=True, path_type=Path))
@schedule_option
@set_option
@limit_options
@click.option("--pair", nargs=2, metavar="A B", default=None,
              help="routes: only the route from device A to device B (names as in the topology).")
@api_option(EmitOptions, "max_lines", help="Refuse to dump an ir or loads stage longer than this.")
@machine_options
@change_options
def emit(stage: str, file: Path, schedules, sets, limits, pair, max_lines: int, machine,
         ranks, changes) -> int:
    """Dump one pipeline stage: ast, ir, loads, formula, or the routes each schedule uses."""
    from ..api import emit as dump
    click.echo(dump(stage, file, schedules, sets=sets, pair=pair, max_lines=max_lines, **limits,
                    machine=machine, ranks=ranks, fail=changes["fail"],
                    derate=changes["derate"]), nl=False)
    return EXIT_OK


@click.command()
@compiling
@schedule_option
@json_option(schema.TIME)
@format_option
@no_verify_option
@no_formula_option
def time(session, schedules, as_json: bool, output_format: str, no_verify: bool,
         no_formula: bool) -> int:
    """Formula, regime, value and traffic of each schedule in FILE."""
    if no_formula:
        return _numbers(session, schedules, as_json, output_format, no_verify, "time")
    from ..api import compare as timings_of
    from ..render.text import to_json
    show = formatted(output_format, as_json, "time", to_json)
    timings = timings_of(session, schedules, verify=not no_verify)
    click.echo(show(session.program, timings), nl=False)
    return EXIT_OK


@click.command()
@compiling
@json_option(schema.TIME)
@format_option
@no_verify_option
@click.option("--with-synthesized", is_flag=True,
              help="Add the schedule `synthesize` writes for FILE's first collective, at the "
                   "chunk count fastest at FILE's α.")
@no_formula_option
def compare(session, as_json: bool, output_format: str, no_verify: bool,
            with_synthesized: bool, no_formula: bool) -> int:
    """All schedules of FILE side by side (the seed's §3 table)."""
    if no_formula:
        if with_synthesized:
            raise UsageError("--with-synthesized needs formulas; leave out --no-formula")
        return _numbers(session, (), as_json, output_format, no_verify, "compare")
    from ..api import compare as timings_of
    from ..render.text import to_json
    show = formatted(output_format, as_json, "compare", to_json)
    timings = timings_of(session, verify=not no_verify, with_synthesized=with_synthesized)
    click.echo(show(session.program, timings), nl=False)
    return EXIT_OK


def _numbers(session, schedules, as_json: bool, output_format: str, no_verify: bool,
             command: str) -> int:
    """`time` and `compare` with `--no-formula`: the numbers alone (render.numeric)."""
    from ..api import numeric_times
    from ..render.numeric import numeric_json, numeric_text
    if as_json and output_format != "text":
        raise UsageError("--json and --format exclude each other")
    timings = numeric_times(session, schedules, verify=not no_verify)
    text = numeric_json(session.program, timings) if as_json else \
        numeric_text(command, output_format, session.program, timings)
    click.echo(text, nl=False)
    return EXIT_OK


@click.command()
@click.argument("file", type=click.Path(dir_okay=True, path_type=Path))
@schedule_option
@set_option
@json_option(schema.VERIFY)
@limit_options
@machine_options
@for_all_options
@api_option(ValidateOptions, "executor",
            help="For an .xml FILE: check it against this executor's parser and limits "
                 "instead, without importing it: every rule it breaks, at its line and column.")
@api_option(ValidateOptions, "max_steps", metavar="N",
            help="With --executor: the build's MSCCL_MAX_NUM_STEPS (default: 64 for "
                 "msccl-executor-nccl's default build, 256 for msccl).")
def verify(file: Path, schedules, sets, as_json: bool, limits, machine, ranks, for_all,
           executor: str | None, max_steps: int | None) -> int:
    """Check that each schedule computes its collective.

    FILE may be a directory: every .sched file under it is verified (files without result
    schedules, such as machines and libraries, are skipped). FILE may be an MSCCL XML
    algorithm (.xml): no machine is needed. Exit 1 if one fails. With --for-all PARAM, for
    every value of the structural param (see docs/verification.md, "For every n").
    """
    from ..api.verifying import VerifyOptions
    mode = VerifyOptions(executor=executor, max_steps=max_steps, for_all=for_all["param"],
                         start=for_all["start"], require_proof=for_all["require_proof"],
                         schedules=schedules, sets=sets, machine=machine, ranks=ranks,
                         json=as_json).mode
    if mode == "executor":
        from ..api import validate_msccl
        click.echo(validate_msccl(str(file), executor, max_steps))
        return EXIT_OK
    if mode == "for-all":
        return verify_for_all(file, schedules, sets, as_json, limits, **for_all)
    from ..api import verify_files
    from ..render.errors import error_entry
    from ..render.text import dump_json
    from ..render.verdict import verdict_json, verdict_text
    documents, texts, failed, errors = [], [], 0, []
    for found in verify_files(file, sets, schedules, **limits, machine=machine, ranks=ranks):
        if found.error is not None:
            click.echo(found.error.render(), err=True)
            errors.append(found.error)
            continue
        for warning in found.warnings:
            click.echo(warning.render(), err=True)
        path = found.path
        failed += sum(not v.ok for v in found.verdicts)
        documents.append({"file": str(path), "schedules": [verdict_json(v) for v in found.verdicts]})
        lines = [verdict_text(v) for v in found.verdicts]
        texts.append("\n".join([f"{path}:", *("  " + t.replace("\n", "\n  ") for t in lines)])
                     if file.is_dir() else "\n".join(lines))
    if as_json:  # `errors`: the files with bad input, as in schedc.error/1
        click.echo(dump_json({"schema": schema.VERIFY, "files": documents,
                              "errors": [error_entry(e) for e in errors]}), nl=False)
    elif texts:
        click.echo("\n".join(texts))
    elif not errors:
        click.echo(f"no result schedules in {file}")
    return EXIT_BAD_INPUT if errors else EXIT_FAILED if failed else EXIT_OK


COMMANDS = (emit, time, compare, verify)

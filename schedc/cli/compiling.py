"""Commands that show what the compiler makes of a file: `emit` a stage, `time` and `compare`
schedules, `verify` their data flow."""

from __future__ import annotations

from pathlib import Path

import click

from ..render import schema
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
    no_verify_option,
    schedule_option,
    set_option,
)

MAX_EMIT_LINES = 200_000  # formatting takes about 50 µs a line


def verified_timings(session, names: list[str], no_verify: bool) -> list:
    """The schedules' timings, verified first unless --no-verify (bad input, exit 2, has had
    its say by then, since timing compiles everything)."""
    if not no_verify:  # what verification refuses from the declarations, before compiling
        from ..analysis.verify.verdict import check_verifiable
        check_verifiable(session, tuple(names))
    timings = [session.timing(n) for n in names]
    if not no_verify:
        from ..analysis.verify.verdict import verdicts
        failures = [v for v in verdicts(session, tuple(names)) if not v.ok]
        if failures:
            from ..errors import VerificationFailed
            from ..render.verdict import not_reporting
            raise VerificationFailed(not_reporting(failures))
    return timings


@click.command()
@click.argument("stage", type=click.Choice(("ast", "ir", "loads", "formula", "routes")))
@click.argument("file", type=click.Path(dir_okay=True, path_type=Path))
@schedule_option
@set_option
@limit_options
@click.option("--pair", nargs=2, metavar="A B", default=None,
              help="routes: only the route from device A to device B (names as in the topology).")
@click.option("--max-lines", type=click.IntRange(min=1), default=MAX_EMIT_LINES,
              show_default=True, help="Refuse to dump an ir or loads stage longer than this.")
@machine_options
def emit(stage: str, file: Path, schedules, sets, limits, pair, max_lines: int, machine,
         ranks) -> int:
    """Dump one pipeline stage: ast, ir, loads, formula, or the routes each schedule uses."""
    from ..errors import LimitError, ParseError, UsageError
    from ..render import emit as dumps
    if pair and stage != "routes":
        raise UsageError("--pair goes with `emit routes`")
    if stage == "ast":
        if file.suffix.lower() == ".xml":
            raise UsageError("an MSCCL XML file has no syntax tree of the .sched language; "
                             "try `emit ir`")
        from ..files import read_source
        from ..language.parser import parse_module
        source = read_source(file, "a .sched file", ParseError)
        click.echo(dumps.emit_ast(parse_module(source)), nl=False)
        return EXIT_OK
    from ..session import Session
    session = Session.open(file, sets, limits, machine, ranks)
    program, out = session.program, []
    topology = program.topology
    if pair:
        a, b = (_device_named(topology, name) for name in pair)
        click.echo(dumps.emit_routes(topology, None, [(a, b, None)]), nl=False)
        return EXIT_OK
    lines = 0
    for name in session.selected(schedules):
        if stage in ("ir", "loads"):  # counted before anything is formatted: it is slow
            lines += dumps.line_count(stage, session.schedule(name),
                                      session.loads(name) if stage == "loads" else None)
            if lines > max_lines:
                raise LimitError(f"emit {stage} would print {lines:,} lines or more; the limit "
                                 f"is {max_lines:,} (raise it with --max-lines, or pick "
                                 "schedules with -s)")
        if stage == "routes":
            pairs = dumps.schedule_pairs(session.schedule(name), len(topology.devices))
            out.append(dumps.emit_routes(topology, name, pairs))
        elif stage == "ir":
            out.append(dumps.emit_ir(program, session.schedule(name)))
        elif stage == "loads":
            out.append(dumps.emit_loads(program, session.schedule(name), session.loads(name)))
        else:
            out.append(dumps.emit_formula(session.timing(name)))
    click.echo("".join(out), nl=False)
    return EXIT_OK


def _device_named(topology, name: str) -> int:
    from ..errors import UsageError, did_you_mean
    names = [d.name for d in topology.devices]
    if name not in names:
        raise UsageError(f"--pair: no device '{name}' in the topology" + did_you_mean(name, names))
    return names.index(name)


@click.command()
@compiling
@schedule_option
@json_option(schema.TIME)
@format_option
@no_verify_option
def time(session, schedules, as_json: bool, output_format: str, no_verify: bool) -> int:
    """Formula, regime, value and traffic of each schedule in FILE."""
    from ..render.text import to_json
    show = formatted(output_format, as_json, "time", to_json)
    timings = verified_timings(session, session.selected(schedules), no_verify)
    click.echo(show(session.program, timings), nl=False)
    return EXIT_OK


@click.command()
@compiling
@json_option(schema.TIME)
@format_option
@no_verify_option
def compare(session, as_json: bool, output_format: str, no_verify: bool) -> int:
    """All schedules of FILE side by side (the seed's §3 table)."""
    from ..render.text import to_json
    show = formatted(output_format, as_json, "compare", to_json)
    timings = verified_timings(session, session.selected(), no_verify)
    click.echo(show(session.program, timings), nl=False)
    return EXIT_OK


@click.command()
@click.argument("file", type=click.Path(dir_okay=True, path_type=Path))
@schedule_option
@set_option
@json_option(schema.VERIFY)
@limit_options
@machine_options
def verify(file: Path, schedules, sets, as_json: bool, limits, machine, ranks) -> int:
    """Check that each schedule computes its collective.

    FILE may be a directory: every .sched file under it is verified (files without result
    schedules, such as machines and libraries, are skipped). FILE may be an MSCCL XML
    algorithm (.xml): no machine is needed. Exit 1 if one fails.
    """
    from ..analysis.verify.verdict import verdicts
    from ..errors import SchedcError, UsageError
    from ..render.errors import error_entry
    from ..render.text import dump_json
    from ..render.verdict import verdict_json, verdict_text
    from ..session import Session
    if file.is_dir():
        if schedules or sets:
            raise UsageError("--schedule and --set need one FILE, not a directory")
        paths = sorted(file.rglob("*.sched"))
    else:
        paths = [file]
    documents, texts, failed, errors = [], [], 0, []
    for path in paths:
        try:
            found = verdicts(Session.open(path, sets, limits, machine, ranks), schedules)
        except SchedcError as exc:
            if not file.is_dir():
                raise
            click.echo(exc.render(), err=True)
            errors.append(exc)
            continue
        if not found:
            continue
        failed += sum(not v.ok for v in found)
        documents.append({"file": str(path), "schedules": [verdict_json(v) for v in found]})
        lines = [verdict_text(v) for v in found]
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

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
    json_option,
    limit_options,
    no_verify_option,
    schedule_option,
    set_option,
)

MAX_EMIT_LINES = 200_000  # formatting takes about 50 µs a line


def verified_timings(session, names: list[str], no_verify: bool) -> list:
    """The schedules' timings, verified first unless --no-verify (bad input, exit 2, has had
    its say by then, since timing compiles everything)."""
    timings = [session.timing(n) for n in names]
    if not no_verify:
        from ..analysis.verify import verdicts
        failures = [v for v in verdicts(session, tuple(names)) if not v.ok]
        if failures:
            from ..errors import VerificationFailed
            from ..render.verdict import not_reporting
            raise VerificationFailed(not_reporting(failures))
    return timings


@click.command()
@click.argument("stage", type=click.Choice(("ast", "ir", "loads", "formula")))
@click.argument("file", type=click.Path(dir_okay=True, path_type=Path))
@schedule_option
@set_option
@limit_options
@click.option("--max-lines", type=click.IntRange(min=1), default=MAX_EMIT_LINES,
              show_default=True, help="Refuse to dump an ir or loads stage longer than this.")
def emit(stage: str, file: Path, schedules, sets, limits, max_lines: int) -> int:
    """Dump one pipeline stage: ast, ir, loads or formula."""
    from ..errors import ParseError, SourceFile
    from ..render import emit as dumps
    if stage == "ast":
        from ..language.parser import parse_module
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ParseError(f"cannot read {file}: {exc}") from None
        click.echo(dumps.emit_ast(parse_module(SourceFile(str(file), text))), nl=False)
        return EXIT_OK
    from ..session import Session
    session = Session.open(file, sets, limits)
    program, out = session.program, []
    lines = 0
    for name in session.selected(schedules):
        if stage in ("ir", "loads"):  # counted before anything is formatted: it is slow
            lines += dumps.line_count(stage, session.schedule(name),
                                      session.loads(name) if stage == "loads" else None)
            if lines > max_lines:
                from ..errors import LimitError
                raise LimitError(f"emit {stage} would print {lines:,} lines or more; the limit "
                                 f"is {max_lines:,} (raise it with --max-lines, or pick "
                                 "schedules with -s)")
        if stage == "ir":
            out.append(dumps.emit_ir(program, session.schedule(name)))
        elif stage == "loads":
            out.append(dumps.emit_loads(program, session.schedule(name), session.loads(name)))
        else:
            out.append(dumps.emit_formula(session.timing(name)))
    click.echo("".join(out), nl=False)
    return EXIT_OK


@click.command()
@compiling
@schedule_option
@json_option(schema.TIME)
@no_verify_option
def time(session, schedules, as_json: bool, no_verify: bool) -> int:
    """Formula, regime, value and traffic of each schedule in FILE."""
    from ..render.text import time_text, to_json
    timings = verified_timings(session, session.selected(schedules), no_verify)
    program = session.program
    click.echo(to_json(program, timings) if as_json else time_text(program, timings), nl=False)
    return EXIT_OK


@click.command()
@compiling
@json_option(schema.TIME)
@no_verify_option
def compare(session, as_json: bool, no_verify: bool) -> int:
    """All schedules of FILE side by side (the seed's §3 table)."""
    from ..render.text import compare_text, to_json
    timings = verified_timings(session, session.selected(), no_verify)
    program = session.program
    click.echo(to_json(program, timings) if as_json else compare_text(program, timings), nl=False)
    return EXIT_OK


@click.command()
@click.argument("file", type=click.Path(dir_okay=True, path_type=Path))
@schedule_option
@set_option
@json_option(schema.VERIFY)
@limit_options
def verify(file: Path, schedules, sets, as_json: bool, limits) -> int:
    """Check that each schedule computes its collective.

    FILE may be a directory: every .sched file under it is verified (files without result
    schedules, such as machines and libraries, are skipped). Exit 1 if one fails.
    """
    from ..analysis.verify import verdicts
    from ..errors import SchedcError, UsageError
    from ..render.text import dump_json
    from ..render.verdict import verdict_json, verdict_text
    from ..session import Session
    if file.is_dir():
        if schedules or sets:
            raise UsageError("--schedule and --set need one FILE, not a directory")
        paths = sorted(file.rglob("*.sched"))
    else:
        paths = [file]
    documents, texts, failed, bad_input = [], [], 0, False
    for path in paths:
        try:
            found = verdicts(Session.open(path, sets, limits), schedules)
        except SchedcError as exc:
            if not file.is_dir():
                raise
            click.echo(exc.render(), err=True)
            bad_input = True
            continue
        if not found:
            continue
        failed += sum(not v.ok for v in found)
        documents.append({"file": str(path), "schedules": [verdict_json(v) for v in found]})
        lines = [verdict_text(v) for v in found]
        texts.append("\n".join([f"{path}:", *("  " + t.replace("\n", "\n  ") for t in lines)])
                     if file.is_dir() else "\n".join(lines))
    if as_json:
        click.echo(dump_json({"schema": schema.VERIFY, "files": documents}), nl=False)
    elif texts:
        click.echo("\n".join(texts))
    elif not bad_input:
        click.echo(f"no result schedules in {file}")
    return EXIT_BAD_INPUT if bad_input else EXIT_FAILED if failed else EXIT_OK


COMMANDS = (emit, time, compare, verify)

"""`schedc report`: everything schedc knows about a file, as one self-contained HTML page."""

from __future__ import annotations

from pathlib import Path

import click

from ..api.exporting import ReportOptions
from .derived import api_option
from .options import EXIT_OK, compiling, no_verify_option, timeout_of, wrote
from .paths import OutputPath


def default_output(source: str) -> Path:
    """Without -o: the file's stem with .html, in the current directory."""
    return Path(Path(source).stem + ".html")


@click.command("report")
@compiling
@click.option("-o", "--output", type=OutputPath(),
              help="The HTML file to write (default: FILE's stem + .html, here).")
@timeout_of(ReportOptions)
@api_option(ReportOptions, "max_cuts",
            help="Refuse a collective whose bound needs more max-flow problems.")
@no_verify_option
def report_command(session, output: Path | None, timeout: float, max_cuts: int,
                   no_verify: bool) -> int:
    """One HTML page about FILE: the comparison table, every formula typeset, time against
    each param with the crossovers marked, each schedule round by round, the bounds, and
    the file's reports and expects. Self-contained: no network, no JavaScript."""
    from ..api import check_output, report
    from ..render.files import write_atomically
    program = session.program
    target = output or default_output(program.path)
    check_output(target)
    page = report(session, timeout=timeout, max_cuts=max_cuts, verify=not no_verify)
    data = page.encode("utf-8")
    write_atomically(target, data)
    wrote(target, f"{len(data) / 1024:,.0f} KiB")
    return EXIT_OK


COMMANDS = (report_command,)

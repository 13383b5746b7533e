"""`schedc report`: everything schedc knows about a file, as one self-contained HTML page."""

from __future__ import annotations

from pathlib import Path

import click

from ..api.reporting import ReportOptions
from .derived import api_option
from .options import EXIT_OK, compiling, no_verify_option, timeout_of, wrote
from .paths import OutputPath


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
    from ..api import report, report_path
    target = report_path(session, output)  # (without -o: FILE's stem + .html, here)
    page = report(session, timeout=timeout, max_cuts=max_cuts, verify=not no_verify,
                  output=target)
    wrote(target, f"{len(page.encode('utf-8')) / 1024:,.0f} KiB")
    return EXIT_OK


COMMANDS = (report_command,)

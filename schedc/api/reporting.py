"""`report`: everything schedc knows about a file as one self-contained HTML page, and
where the command writes it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..deadline import DEFAULT_TIMEOUT
from ..limits import MAX_CUTS
from .compiling import verified_timings
from .options import Options, count, time_limit

if TYPE_CHECKING:
    from ..session import Session


@dataclass(frozen=True)
class ReportOptions(Options):
    timeout: float = time_limit(DEFAULT_TIMEOUT)
    max_cuts: int = count(MAX_CUTS, "--max-cuts")


def report_path(session: Session, output: str | Path | None = None) -> Path:
    """Where `report` writes the page: `output`, else the file's stem with `.html` in the
    current directory; checked as every output is (`check_output`: not an input, not a
    directory), so that a refusal comes before any work.

        >>> schedc.report_path(session)
        PosixPath('nvlink_2x8.html')
    """
    from ..files import check_output
    target = Path(Path(session.program.path).stem + ".html") if output is None else Path(output)
    return check_output(target)


def report(session: Session, *, timeout: float = ReportOptions.timeout,
           max_cuts: int = ReportOptions.max_cuts, verify: bool = True,
           output: str | Path | None = None) -> str:
    """`schedc report`: one self-contained HTML page about the file (the comparison table,
    every formula typeset, time against each param with the crossovers marked, each
    schedule round by round, the bounds, the reports and expects), verified first.

        >>> page = schedc.report(schedc.load("schedules/seed/pcie_2x4.sched"))
        >>> page.startswith("<!DOCTYPE html>")
        True
    """
    from ..analysis.overview import overview
    from ..render.html import report_html
    options = ReportOptions(timeout, max_cuts)
    timeout, max_cuts = options.timeout, options.max_cuts
    target = None if output is None else report_path(session, output)
    timings = verified_timings(session, session.selected(), verify)
    page = report_html(session.program, overview(session, timings, timeout, max_cuts))
    if target is not None:
        from ..render.files import write_atomically
        write_atomically(target, page.encode("utf-8"))
    return page

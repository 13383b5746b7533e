"""The rows a calibration uses: a log checked against the machine it is said to measure
(collective, ranks and hosts, where the log says them), its rows (0 B and wrong ones left
out, said why) and the points a split marks for the fit."""

from __future__ import annotations

from collections import Counter

from ...measure.nccl_tests import BUSBW_FACTORS, Row, Table
from ...session import Session
from .model import schedules, size_symbol
from .records import (
    COLLECTIVE_BINARIES,
    ROW_SHAPES,
    CalibrationError,
    Point,
    Run,
    Split,
)


def check_table(session: Session, schedule: str, table: Table, log: str) -> list[str]:
    """The log must be of the machine's collective, rank and host count, where it says;
    returns what was checked and from where, or why a check was skipped."""
    size_symbol(session, schedule)  # (several schedules: of one collective)
    collective = session.program.result(schedules(schedule)[0]).collective
    binary = COLLECTIVE_BINARIES.get(collective.kind)
    if binary is None:
        raise CalibrationError(f"nccl-tests has no benchmark of {collective.kind}, which schedule "
                               f"'{schedule}' computes: a log measures one of "
                               f"{', '.join(COLLECTIVE_BINARIES)}", collective.span)
    said = [_check_collective(table, log, schedule, collective, binary),
            *_check_ranks(table, log, schedule, collective, binary)]
    devices = session.program.topology.devices
    hosts = len({devices[r].host for r in collective.ranks})
    if table.hosts is not None:
        if table.hosts != hosts:
            raise CalibrationError(f"{log} ran on {table.hosts} hosts (its '#  Rank' lines), but "
                                   f"schedule '{schedule}' has its ranks on {hosts}",
                                   collective.span)
        said.append(f"{hosts} host{'s' if hosts > 1 else ''} from its '#  Rank' lines")
    ranks = len(collective.ranks)
    per = table.per_process()
    if per is not None and ranks % per[0]:
        raise CalibrationError(f"{log}: {per[0]} GPUs per process ({per[1]}) cannot make the "
                               f"{ranks} ranks of schedule '{schedule}'", collective.span)
    return [f"{log}: {', '.join(said)}"]


def _check_collective(table: Table, log: str, schedule: str, collective, binary: str) -> str:
    """The log's collective: the one it names, else what its rows' redop/root columns and
    busbw/algbw fit; what was checked, from where."""
    if table.collective is not None:
        where = ("its '# Collective test starting' line" if table.collective_from == "starting"
                 else "the binary it names")
        if table.collective != binary:
            raise CalibrationError(f"{log} measures {table.collective} ({where}), but schedule "
                                   f"'{schedule}' computes {collective.kind} ({binary}_perf)",
                                   collective.span)
        return f"collective {binary} from {where}"
    shape = table.row_shape()
    if shape is not None and shape != ROW_SHAPES.get(binary, shape):
        raise CalibrationError(
            f"{log} names no collective, and its rows are of a collective with "
            f"{shape} (redop/root columns), but schedule '{schedule}' computes "
            f"{collective.kind} ({binary}_perf: {ROW_SHAPES[binary]})", table.span)
    fits = _collectives_from_busbw(table)
    if fits is not None and binary not in fits[0]:
        raise CalibrationError(
            f"{log} names no collective, and its busbw/algbw of {fits[1]:.4f} is nccl-tests' "
            f"factor for {' or '.join(sorted(fits[0]))} on its {table.ranks} ranks, but "
            f"schedule '{schedule}' computes {collective.kind} ({binary}_perf: "
            f"{_FACTOR_TEXT.get(binary, '1')})", table.span)
    return (f"collective: the log names none; its rows' "
            f"{'redop/root' if shape else ''}{' and ' if shape and fits else ''}"
            f"{'busbw/algbw' if fits else ''} fit {binary}"
            if shape or fits else "collective check skipped: the log names none")


def _check_ranks(table: Table, log: str, schedule: str, collective, binary: str) -> list[str]:
    """The log's rank count (its '#  Rank' lines, its busbw/algbw) against the schedule's
    ranks; what was checked, from where."""
    said = []
    ranks = len(collective.ranks)
    if table.ranks is not None:
        if table.ranks != ranks:
            raise CalibrationError(f"{log} ran on {table.ranks} ranks (its '#  Rank' lines), "
                                   f"but schedule '{schedule}' is over {ranks}", collective.span)
        said.append(f"{ranks} ranks from its '#  Rank' lines")
    else:
        said.append("rank check skipped: the log lists no '#  Rank' lines")
    implied = ranks_from_busbw(table, binary)
    if implied is not None:
        if implied[0] != ranks:
            raise CalibrationError(f"{log}: its busbw/algbw of {implied[1]:.4f} means "
                                   f"{implied[0]} ranks (nccl-tests: busbw = algbw · "
                                   f"{_FACTOR_TEXT[binary]}), but schedule '{schedule}' is over "
                                   f"{ranks}", collective.span)
        said.append(f"{ranks} ranks from its busbw/algbw")
    return said


_FACTOR_TEXT = {"all_reduce": "2(n-1)/n", "reduce_scatter": "(n-1)/n", "all_gather": "(n-1)/n",
                "alltoall": "(n-1)/n"}


def _fastest_row(table: Table):
    """The measurement of the largest algbw, if its busbw/algbw is exact enough to read
    (two printed decimals: above 10 GB/s), else None."""
    best = max((r.measurement("out") for r in table.rows), key=lambda m: m.algbw)
    return best if best.algbw >= 10 else None


def _collectives_from_busbw(table: Table) -> tuple[set[str], float] | None:
    """The collectives whose busbw factor, at the ranks the `#  Rank` lines count, gives the
    rows' busbw/algbw (to the printed precision, on the row of the largest algbw)."""
    best = _fastest_row(table)
    if table.ranks is None or best is None:
        return None
    fits = {name for name, factor in BUSBW_FACTORS.items()
            if abs(factor(table.ranks) * best.algbw - best.busbw) <= 0.02}
    return (fits, best.busbw / best.algbw) if fits else None


def ranks_from_busbw(table: Table, binary: str) -> tuple[int, float] | None:
    """The rank count the rows' busbw/algbw implies (nccl-tests' factor, its PERFORMANCE.md),
    read from the rows of the largest algbw (two decimals: exact enough above 10 GB/s)."""
    best = _fastest_row(table)
    if binary not in _FACTOR_TEXT or best is None:
        return None
    ratio = best.busbw / best.algbw
    share = ratio / 2 if binary == "all_reduce" else ratio  # (n-1)/n
    if not 0 <= share < 1:
        return None
    n = round(1 / (1 - share))
    # Trust it only when n's factor reproduces the ratio to the printed precision.
    factor = (2 if binary == "all_reduce" else 1) * (n - 1) / n
    return (n, ratio) if abs(factor * best.algbw - best.busbw) <= 0.02 else None


def rows_of(run: Run, place: str, drop_wrong: bool) -> tuple[list[Row], list[str]]:
    """The rows a fit may use, sorted by size, and notes on those it may not."""
    notes = []
    rows = [r for r in run.table.rows if r.size > 0]
    if len(rows) < len(run.table.rows):
        notes.append(f"{run.log}: {len(run.table.rows) - len(rows)} row(s) of 0 B not used "
                     "(they time only the launch)")
    wrong = [r for r in rows if (r.measurement(place).wrong or 0) > 0]
    if wrong:
        lines = ", ".join(str(r.span.line) for r in wrong)
        if not drop_wrong:
            raise CalibrationError(f"{run.log}: {len(wrong)} row(s) with a nonzero #wrong (lines "
                                   f"{lines}): their results were wrong, so their times do not "
                                   "count; --drop-wrong leaves them out", wrong[0].span)
        notes.append(f"{run.log}: {len(wrong)} row(s) with a nonzero #wrong left out "
                     f"(--drop-wrong): lines {lines}")
        rows = [r for r in rows if not (r.measurement(place).wrong or 0) > 0]
    # (counted once: list.count per row took 1.5 s on 10,000 rows)
    twice = sorted(s for s, n in Counter(r.size for r in rows).items() if n > 1)
    if twice:
        notes.append(f"{run.log}: sizes measured more than once, each row kept: "
                     + ", ".join(str(s) for s in twice))
    if not rows:
        raise CalibrationError(f"{run.log}: no rows to fit (sizes above 0, results not wrong)",
                               run.table.span)
    return sorted(rows, key=lambda r: r.size), notes


def points(run: Run, split: Split, place: str, drop_wrong: bool = False,
           fit_all: bool = False) -> tuple[tuple[Point, ...], list[str]]:
    rows, notes = rows_of(run, place, drop_wrong)
    out = []
    for k, row in enumerate(rows):
        if fit_all:
            on = True
        elif split.kind == "size":
            on = row.size <= split.size
        elif split.kind == "leave-one-out":
            on = False
        else:
            on = k % split.every == 0 or k == len(rows) - 1
        out.append(Point(row.size, row.time_s(place), on, run.log, row.span.line))
    return tuple(out), notes

"""nccl-tests output → tables of measured rows.

Two formats, both written by NVIDIA/nccl-tests (src/util.cu):

- the text table each `*_perf` binary prints: a header `# size count type redop root time
  algbw busbw #wrong time algbw busbw #wrong` (older versions lack redop/root and call the
  last column `error`; `-I` adds per-iteration columns, `-R` a timestamp), a units line, then
  one row per size, the first time/algbw/busbw group out-of-place, the second in-place. The
  header names the columns, so rows are read by name. Lines around the table (NCCL INFO,
  `# nThread ...`, `#  Rank ...`, launcher noise) are metadata or ignored; a launcher's line
  prefix (`0: ` from srun, `[1,0]<stdout>:` from mpirun) or a Markdown quote (`> `) is
  stripped. Old dialects: the `error` column is judged by nccl-tests' own tolerance, an
  old all-to-all's empty redop is read as `none`; a `-d all` table (several datatypes) is
  refused.
- the `-J FILE.json` document: `{"version", "args", "config": {"nthreads", "ngpus",
  "devices": [...]}, "results": [{"size", "count", "type", "redop", "root",
  "out_of_place": {"time" | "cpu_time", "alg_bw", "bus_bw", "nwrong"} | null, "in_place":
  {...}}]}` (writeBenchmarkLinePreamble / writeBenchmarkLineBody).

Times are µs and bandwidths GB/s (10^9 B/s) in both. A row that cannot be read is an error
at its line and column, never skipped.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import SchedcError, Span
from ..files import read_source
from ..limits import MAX_SIZE
from .bandwidth import BUSBW_FACTORS as BUSBW_FACTORS  # (the calibration reads it here)

# The command line (`./build/all_reduce_perf -b 8 -e 8G -f 2 -g 1`), wherever a launcher or a
# README printed it: the binary names the collective, -g / -t the GPUs and threads per process.
# nccl-tests' binaries (BIN_FILES_LIST, src/Makefile:37 at a0b82b2), each with the build's
# NAME_SUFFIX (:38, `make MPI=1 NAME_SUFFIX=_mpi`): all_reduce_perf_mpi is all_reduce_perf.
BINARIES = ("all_reduce", "all_gather", "broadcast", "reduce_scatter", "reduce", "alltoall",
            "alltoallv", "scatter", "gather", "sendrecv", "hypercube")
BINARY_NAME = re.compile(r"(?:^|[\s/'\"])(" + "|".join(BINARIES) + r")_perf\w*(?=\s|$|['\"])")
# What a measurement may be: a time in microseconds, as nccl-tests prints it, from 1 ns to
# about 11.6 days (0 or 1e-300 would make every relative error meaningless), and sizes and
# counts within nccl-tests' 64-bit integers (MAX_SIZE).
MIN_TIME_US, MAX_TIME_US = 1e-3, 1e12


def figure_problem(key: str, figure: float) -> str | None:
    """Why `figure` cannot be the value of the `key` column ("time", "algbw", ...), if so."""
    if not math.isfinite(figure):
        return "must be a finite number"
    if key == "time" and not MIN_TIME_US <= figure <= MAX_TIME_US:
        return f"must be from {MIN_TIME_US:g} us to 10^{math.log10(MAX_TIME_US):.0f} us"
    if figure < 0:
        return "must be a non-negative number"
    return None


class LogError(SchedcError):
    """A measurement log cannot be read."""


@dataclass(frozen=True)
class Measurement:
    """One placement's figures: time in µs, algbw and busbw in GB/s, wrong elements."""

    time_us: float
    algbw: float
    busbw: float
    wrong: float | None


@dataclass(frozen=True)
class Row:
    size: int  # bytes
    count: int  # elements
    type: str
    redop: str | None
    root: int | None
    out_of_place: Measurement | None
    in_place: Measurement | None
    span: Span = field(compare=False, repr=False)

    def measurement(self, place: str = "out") -> Measurement:
        """The out-of-place (`out`) or in-place (`in`) figures; the other if one is absent."""
        first, second = ((self.out_of_place, self.in_place) if place == "out"
                         else (self.in_place, self.out_of_place))
        return first or second  # type: ignore[return-value]

    def time_s(self, place: str = "out") -> float:
        return self.measurement(place).time_us * 1e-6


@dataclass(frozen=True)
class Table:
    rows: tuple[Row, ...]
    collective: str | None  # e.g. "all_reduce", when the log names its binary
    ranks: int | None  # when the log lists its ranks
    fields: tuple[tuple[str, str], ...]  # the `# nThread 1 nGpus 1 ...` header, as read
    span: Span = field(compare=False, repr=False)
    # Where `collective` was read: "starting" (`# Collective test starting: X`), "binary"
    # (a command line naming X_perf), None (neither: see `row_shape`).
    collective_from: str | None = None
    hosts: int | None = None  # the distinct hosts of the `#  Rank` lines
    arguments: tuple[tuple[str, int], ...] = ()  # `-g N`, `-t N` of the command line

    def per_process(self) -> tuple[int, str] | None:
        """GPUs driven by each process (threads × GPUs per thread), and where that was read:
        the `# nThread N nGpus G` header, else the command line's -t / -g."""
        fields = dict(self.fields)
        given = dict(self.arguments)
        candidates: list[tuple[str, str | None, str | None]] = [
            ("the '# nThread' header", fields.get("nThread"), fields.get("nGpus"))]
        if self.arguments:
            candidates.append(("the command line's -t/-g", str(given.get("t", 1)),
                               str(given.get("g", 1))))
        for source, threads, gpus in candidates:
            # (nccl-tests runs at least one thread of at least one GPU: a 0 says nothing)
            if threads is not None and gpus is not None and threads.isdigit() and gpus.isdigit() \
                    and int(threads) * int(gpus) > 0:
                return int(threads) * int(gpus), source
        return None

    def row_shape(self) -> str | None:
        """What the rows say of the collective: "reduction" (a redop, no root), "rooted
        reduction", "no reduction" (`redop none`: all-gather, all-to-all, broadcast, ...)."""
        ops = {r.redop for r in self.rows}
        if ops == {None}:
            return None
        if ops == {"none"}:
            return "no reduction"
        if "none" in ops:
            return None
        rooted = {r.root is not None and r.root >= 0 for r in self.rows}
        return "rooted reduction" if rooted == {True} else "reduction"

    def busbw_factor(self) -> float | None:
        """nccl-tests' busbw/algbw for this table, when collective and ranks are known."""
        factor = BUSBW_FACTORS.get(self.collective or "")
        return factor(self.ranks) if factor and self.ranks else None


@dataclass(frozen=True)
class Log:
    path: str
    format: str  # "text" or "json"
    tables: tuple[Table, ...]

    def table(self) -> Table:
        """The log's one table; a log of several must be split first."""
        if not self.tables:
            raise LogError(f"{self.path}: no nccl-tests table found (expected a '# size count "
                           "type ...' header or rows of numbers)")
        if len(self.tables) > 1:
            where = ", ".join(f"line {t.span.line}" for t in self.tables)
            raise LogError(f"{self.path} holds {len(self.tables)} nccl-tests tables (at {where});"
                           " give a log with one")
        return self.tables[0]


def read_log(path: str | Path) -> Log:
    """Read an nccl-tests log: JSON if it parses as a JSON document, else the text table."""
    shown = str(path)
    source = read_source(path, "an nccl-tests log", LogError, shown=shown)
    text = source.text
    if text.lstrip().startswith("{"):
        from .nccl_tests_json import parse_json
        return Log(shown, "json", parse_json(source))
    from .nccl_tests_text import parse_text
    return Log(shown, "text", parse_text(source))


def collective_name(binary: str) -> str:
    """`all_reduce_perf` (or `all_reduce_perf_mpi`, with a NAME_SUFFIX) -> `all_reduce`."""
    found = BINARY_NAME.search(" " + Path(binary).name)
    return found.group(1) if found else Path(binary).name

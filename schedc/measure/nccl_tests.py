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

from ..errors import SchedcError, SourceFile, Span
from ..files import read_source
from ..limits import MAX_LOG_ROWS, MAX_SIZE
from .bandwidth import BUSBW_FACTORS as BUSBW_FACTORS  # (the calibration reads it here)
from .dialects import errors_as_wrong, none_wrong, with_blank_redop

# A launcher's prefix (srun's `0: `, mpirun's `[1,0]<stdout>:`) or a Markdown quote (`> `).
_PREFIX = re.compile(r"^(\s*\d+:\s|\s*\[\d+,\d+\]<std(?:out|err)>:|(?:\s*>(?=\s|$)\s?)+)")
_RANK = re.compile(r"^#\s+Rank\s+(\d{1,9})\s")  # (longer: not a rank line)
_HOST = re.compile(r"\son\s+(\S+)\s+device\s")  # `#  Rank 3 Group 0 Pid 7 on HOST device 3`
# The command line (`./build/all_reduce_perf -b 8 -e 8G -f 2 -g 1`), wherever a launcher or a
# README printed it: the binary names the collective, -g / -t the GPUs and threads per process.
# nccl-tests' binaries (BIN_FILES_LIST, src/Makefile:37 at a0b82b2), each with the build's
# NAME_SUFFIX (:38, `make MPI=1 NAME_SUFFIX=_mpi`): all_reduce_perf_mpi is all_reduce_perf.
BINARIES = ("all_reduce", "all_gather", "broadcast", "reduce_scatter", "reduce", "alltoall",
            "alltoallv", "scatter", "gather", "sendrecv", "hypercube")
_BINARY = re.compile(r"(?:^|[\s/'\"])(" + "|".join(BINARIES) + r")_perf\w*(?=\s|$|['\"])")
_ARG = re.compile(r"\s-([gt])\s+(\d{1,4})\b")
# The run's count of wrong rows, once after its tables (common.cu:1202 at 8274cb4).
_NO_ERRORS = re.compile(r"^#\s*Out of bounds values\s*:\s*0\s+OK\b")
_STARTING = re.compile(r"^#\s*Collective test starting:\s*(\S+)")
_TOKEN = re.compile(r"\S+")
_INT = re.compile(r"^\d+$")
_NEGATIVE = re.compile(r"^-\d+$")
_NUMBERISH = re.compile(r"^[-+]?[\d.]+([eE][-+]?\d+)?[A-Za-z]*$")  # 8.5, 1e6, 1M
# Header-less tables (pasted excerpts) are told apart by their width.
_HEADERLESS = {
    11: "size count type time algbw busbw error time algbw busbw error",
    12: "size count type redop time algbw busbw error time algbw busbw error",
    13: "size count type redop root time algbw busbw #wrong time algbw busbw #wrong",
}
_WRONG = ("#wrong", "error")
_TIME = ("time", "cputime")
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
    return Log(shown, "text", parse_text(source))


# ---- text ------------------------------------------------------------------------------------


@dataclass
class _Pending:
    """What the lines before a table say about it."""

    collective: str | None = None
    collective_from: str | None = None
    ranks: set[int] = field(default_factory=set)
    hosts: set[str] = field(default_factory=set)
    fields: tuple[tuple[str, str], ...] = ()
    arguments: tuple[tuple[str, int], ...] = ()


def parse_text(source: SourceFile) -> tuple[Table, ...]:
    tables: list[Table] = []
    pending = _Pending()
    columns: list[str] | None = None  # the open table's header
    header_span: Span | None = None
    rows: list[Row] = []
    meta = pending
    judged: list[int] = []  # tables whose old `error` column was judged, since the last footer

    def close() -> None:
        nonlocal rows, columns
        if rows:
            table = Table(tuple(rows), meta.collective, max(meta.ranks) + 1
                          if meta.ranks else None, meta.fields, header_span or rows[0].span,
                          meta.collective_from, len(meta.hosts) or None, meta.arguments)
            if columns is not None and "error" in columns:
                table = errors_as_wrong(table)
                judged.append(len(tables))
            tables.append(_one_datatype(table))
        rows, columns = [], None

    for number, raw in enumerate(source.text.splitlines(), start=1):
        prefix = _PREFIX.match(raw)
        offset = prefix.end() if prefix else 0
        line = raw[offset:]
        tokens = [(m.group(), offset + m.start() + 1) for m in _TOKEN.finditer(line)]
        if not tokens:
            if rows:  # nccl-tests prints no blank line inside a table: pasted tables end here
                close()
            continue
        words = [t for t, _ in tokens]
        if _is_header(words):
            close()
            meta, pending = pending, _Pending()
            columns = [w for w in (words[1:] if words[0] == "#" else words)
                       if w != "#"]
            header_span = Span(source, number, tokens[0][1], number, len(raw) + 1)
            continue
        stripped = line.strip()
        if stripped.startswith("#"):
            _metadata(stripped, pending)
            if rows:  # a comment after rows (`# Out of bounds values`, ...) ends the table
                close()
            if _NO_ERRORS.match(stripped):  # the run's own count: no row was wrong
                for k in judged:
                    tables[k] = none_wrong(tables[k])
                judged.clear()
            continue
        if not _INT.match(words[0]):
            _command_line(line, pending)
            # In a table, a row whose size is not a whole number (-8, 8.5, 1M) but whose
            # count is, and as many fields as the header: a bad row, not prose.
            if columns is not None and len(words) > 1 and _INT.match(words[1].lstrip("-")) \
                    and (_NEGATIVE.match(words[0]) or (
                        len(words) == len([c for c in columns if c != "timestamp"])
                        and _NUMBERISH.match(words[0]))):
                raise LogError(f"size must be a whole number of bytes, got '{words[0]}'",
                               Span(source, number, tokens[0][1], number,
                                    tokens[0][1] + len(words[0])))
            continue  # prose, NCCL INFO lines, launcher noise
        if columns is None:
            if len(words) < 2 or not _INT.match(words[1]):
                continue  # a line that merely starts with a number
            width = _HEADERLESS.get(len(words))
            if width is None:
                raise LogError(f"a row of {len(words)} fields without a header line; expected "
                               "11, 12 or 13 (size count type [redop [root]] time algbw busbw "
                               "#wrong, twice)", Span(source, number, tokens[0][1], number,
                                                      len(raw) + 1))
            meta, pending = pending, _Pending()
            columns, header_span = width.split(), None
        if len(rows) + sum(len(t.rows) for t in tables) >= MAX_LOG_ROWS:
            raise LogError(f"row {MAX_LOG_ROWS + 1:,}: a log is limited to {MAX_LOG_ROWS:,} rows",
                           Span(source, number, tokens[0][1], number, len(raw) + 1))
        rows.append(_row(source, number, raw, tokens, columns))
    close()
    return tuple(tables)


def _one_datatype(table: Table) -> Table:
    """`-d all` measures every datatype in one table; its rows are not one series of sizes."""
    first: dict[str, Row] = {}
    for row in table.rows:
        first.setdefault(row.type, row)
    if len(first) > 1:
        kinds = ", ".join(f"{t} (line {r.span.line})" for t, r in first.items())
        raise LogError(f"the table mixes datatypes: {kinds}, as nccl-tests' '-d all' prints "
                       "them; give a log of one datatype (e.g. '-d float')",
                       list(first.values())[1].span)
    return table


def _is_header(words: list[str]) -> bool:
    names = {w.lstrip("#") for w in words}
    return {"size", "count", "type", "algbw", "busbw"} <= names and bool(names & set(_TIME))


def _metadata(line: str, pending: _Pending) -> None:
    rank = _RANK.match(line)
    if rank:
        pending.ranks.add(int(rank.group(1)))
        host = _HOST.search(line)
        if host:
            pending.hosts.add(host.group(1))
        return
    starting = _STARTING.match(line)
    if starting:
        pending.collective = collective_name(starting.group(1))
        pending.collective_from = "starting"
        return
    if re.match(r"^#\s*nThread\s", line):
        pending.fields = _fields(line.lstrip("#").split())
        return
    _command_line(line, pending)


def _command_line(line: str, pending: _Pending) -> None:
    """A line naming an nccl-tests binary: its collective (unless the `# Collective test
    starting` line said it) and its -g / -t."""
    binary = _BINARY.search(line)
    if binary is None or pending.collective_from == "starting":
        return
    pending.collective, pending.collective_from = binary.group(1), "binary"
    pending.arguments = tuple((k, int(v)) for k, v in _ARG.findall(line[binary.end():]))


def _fields(words: list[str]) -> tuple[tuple[str, str], ...]:
    """`nThread 1 nGpus 1 ... step: 2(factor) warmup iters: 5 ... direction: H2D` as pairs:
    a key is the words up to a value; a key ending in ':' takes the next word whatever it is."""
    out: list[tuple[str, str]] = []
    key: list[str] = []
    for word in words:
        if key and (key[-1].endswith(":") or word[:1].isdigit()):
            out.append((" ".join(key).rstrip(":"), word))
            key = []
        else:
            key.append(word)
    return tuple(out)


def collective_name(binary: str) -> str:
    """`all_reduce_perf` (or `all_reduce_perf_mpi`, with a NAME_SUFFIX) -> `all_reduce`."""
    found = _BINARY.search(" " + Path(binary).name)
    return found.group(1) if found else Path(binary).name


def _row(source: SourceFile, number: int, raw: str, tokens: list[tuple[str, int]],
         columns: list[str]) -> Row:
    def at(k: int) -> Span:
        text, col = tokens[k]
        return Span(source, number, col, number, col + len(text))

    needed = [c for c in columns if c != "timestamp"]
    tokens = with_blank_redop(tokens, needed)
    if len(tokens) < len(needed):
        end = len(raw) + 1
        raise LogError(f"the row has {len(tokens)} fields; the header has {len(needed)} "
                       f"({' '.join(needed)})", Span(source, number, end, number, end))
    place: list[dict[str, float | None]] = []
    values: dict[str, str] = {}
    value_col: dict[str, int] = {}
    for k, name in enumerate(needed):
        text = tokens[k][0]
        if name in _TIME:
            place.append({})
        if place and name in (*_TIME, "algbw", "busbw", *_WRONG):
            key = "time" if name in _TIME else "wrong" if name in _WRONG else name
            if key in place[-1]:
                continue
            if key == "wrong" and text == "N/A":
                place[-1][key] = None
                continue
            try:
                figure = float(text)
            except ValueError:
                raise LogError(f"expected a number for {name}, got '{text}'", at(k)) from None
            problem = figure_problem(key, figure)
            if problem:
                raise LogError(f"{name} {problem}, got '{text}'", at(k))
            place[-1][key] = figure
        elif not place:
            values[name], value_col[name] = text, k
    for name in ("size", "count"):
        if name not in values or not _INT.match(values[name]):
            k = value_col.get(name, 0)
            raise LogError(f"expected a whole number of {'bytes' if name == 'size' else 'elements'}"
                           f" for {name}, got '{tokens[k][0]}'", at(k))
        digits = values[name].lstrip("0")  # (int() refuses strings of over 4,300 digits)
        if len(digits) > len(str(MAX_SIZE)) or int(digits or "0") > MAX_SIZE:
            raise LogError(f"{name} must be at most {MAX_SIZE:,} (nccl-tests counts in 64 bits), "
                           f"got {len(values[name])} digits", at(value_col[name]))
    root = values.get("root")
    if root is not None and not re.match(r"^-?\d{1,9}$", root):
        raise LogError(f"expected a rank number for root, got '{root}'", at(value_col["root"]))
    placements = []
    for p in place:  # only "wrong" is ever None (N/A); the others are numbers when present
        time, algbw, busbw = p.get("time"), p.get("algbw"), p.get("busbw")
        if time is not None and algbw is not None and busbw is not None:
            placements.append(Measurement(time, algbw, busbw, p.get("wrong")))
    if not placements:
        raise LogError("the row has no time column", at(0))
    return Row(int(values["size"]), int(values["count"]), values.get("type", "?"),
               values.get("redop"), int(root) if root is not None else None,
               placements[0], placements[1] if len(placements) > 1 else None,
               Span(source, number, tokens[0][1], number, len(raw) + 1))

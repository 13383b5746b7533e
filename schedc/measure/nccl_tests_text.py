"""nccl-tests' text table → tables of measured rows (see `schedc.measure.nccl_tests` for the
format and the dialects): a header names the columns, rows are read by name, the lines
around a table are metadata or ignored, and a row that cannot be read is an error at its
line and column."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import SourceFile, Span
from ..limits import MAX_LOG_ROWS, MAX_SIZE
from .dialects import errors_as_wrong, none_wrong, with_blank_redop
from .nccl_tests import (
    BINARY_NAME,
    LogError,
    Measurement,
    Row,
    Table,
    collective_name,
    figure_problem,
)

# A launcher's prefix (srun's `0: `, mpirun's `[1,0]<stdout>:`) or a Markdown quote (`> `).
_PREFIX = re.compile(r"^(\s*\d+:\s|\s*\[\d+,\d+\]<std(?:out|err)>:|(?:\s*>(?=\s|$)\s?)+)")
_RANK = re.compile(r"^#\s+Rank\s+(\d{1,9})\s")  # (longer: not a rank line)
_HOST = re.compile(r"\son\s+(\S+)\s+device\s")  # `#  Rank 3 Group 0 Pid 7 on HOST device 3`
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
    """The tables of a text log, line by line (`_Reader`)."""
    reader = _Reader(source)
    for number, raw in enumerate(source.text.splitlines(), start=1):
        reader.line(number, raw)
    reader.close()
    return tuple(reader.tables)


class _Reader:
    """The state of reading a text log: the tables closed so far, the open table's header
    and rows, and the metadata seen since (`pending`) and for the open table (`meta`)."""

    def __init__(self, source: SourceFile) -> None:
        self.source = source
        self.tables: list[Table] = []
        self.pending = _Pending()
        self.meta = self.pending
        self.columns: list[str] | None = None  # the open table's header
        self.header_span: Span | None = None
        self.rows: list[Row] = []
        self.judged: list[int] = []  # tables whose old `error` column was judged, since the
        # last footer

    def close(self) -> None:
        """End the open table, if it has rows."""
        if self.rows:
            meta = self.meta
            table = Table(tuple(self.rows), meta.collective, max(meta.ranks) + 1
                          if meta.ranks else None, meta.fields,
                          self.header_span or self.rows[0].span, meta.collective_from,
                          len(meta.hosts) or None, meta.arguments)
            if self.columns is not None and "error" in self.columns:
                table = errors_as_wrong(table)
                self.judged.append(len(self.tables))
            self.tables.append(_one_datatype(table))
        self.rows, self.columns = [], None

    def line(self, number: int, raw: str) -> None:
        prefix = _PREFIX.match(raw)
        offset = prefix.end() if prefix else 0
        line = raw[offset:]
        tokens = [(m.group(), offset + m.start() + 1) for m in _TOKEN.finditer(line)]
        if not tokens:
            if self.rows:  # nccl-tests prints no blank line inside a table: pasted tables end
                self.close()
            return
        words = [w for w, _ in tokens]
        if _is_header(words):
            self.close()
            self.meta, self.pending = self.pending, _Pending()
            self.columns = [w for w in (words[1:] if words[0] == "#" else words) if w != "#"]
            self.header_span = Span(self.source, number, tokens[0][1], number, len(raw) + 1)
        elif line.strip().startswith("#"):
            self.comment(line.strip())
        elif not _INT.match(words[0]):
            self.prose(number, line, words, tokens)
        else:
            self.row(number, raw, words, tokens)

    def comment(self, stripped: str) -> None:
        _metadata(stripped, self.pending)
        if self.rows:  # a comment after rows (`# Out of bounds values`, ...) ends the table
            self.close()
        if _NO_ERRORS.match(stripped):  # the run's own count: no row was wrong
            for k in self.judged:
                self.tables[k] = none_wrong(self.tables[k])
            self.judged.clear()

    def prose(self, number: int, line: str, words: list[str], tokens: list) -> None:
        """A line not starting with a number: a command line, noise, or a bad row."""
        _command_line(line, self.pending)
        # In a table, a row whose size is not a whole number (-8, 8.5, 1M) but whose
        # count is, and as many fields as the header: a bad row, not prose.
        columns = self.columns
        if columns is not None and len(words) > 1 and _INT.match(words[1].lstrip("-")) \
                and (_NEGATIVE.match(words[0]) or (
                    len(words) == len([c for c in columns if c != "timestamp"])
                    and _NUMBERISH.match(words[0]))):
            raise LogError(f"size must be a whole number of bytes, got '{words[0]}'",
                           Span(self.source, number, tokens[0][1], number,
                                tokens[0][1] + len(words[0])))

    def row(self, number: int, raw: str, words: list[str], tokens: list) -> None:
        if self.columns is None:
            if len(words) < 2 or not _INT.match(words[1]):
                return  # a line that merely starts with a number
            width = _HEADERLESS.get(len(words))
            if width is None:
                raise LogError(f"a row of {len(words)} fields without a header line; expected "
                               "11, 12 or 13 (size count type [redop [root]] time algbw busbw "
                               "#wrong, twice)", Span(self.source, number, tokens[0][1], number,
                                                      len(raw) + 1))
            self.meta, self.pending = self.pending, _Pending()
            self.columns, self.header_span = width.split(), None
        if len(self.rows) + sum(len(t.rows) for t in self.tables) >= MAX_LOG_ROWS:
            raise LogError(f"row {MAX_LOG_ROWS + 1:,}: a log is limited to {MAX_LOG_ROWS:,} rows",
                           Span(self.source, number, tokens[0][1], number, len(raw) + 1))
        self.rows.append(_row(self.source, number, raw, tokens, self.columns))


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
    binary = BINARY_NAME.search(line)
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

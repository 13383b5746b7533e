"""Results → JSON, and the plain-text table and list that several writers share (the
documents of `time`, `compare` and `bound` are in `documents`, their writers in `writers`).

The JSON schema (`schedc.time/1`) is shared by `schedc time` and `schedc compare`; see the
README. Formulas are SymPy strings in base units (bytes, seconds, bytes/s) that
`sympy.sympify` parses back, with params as symbols.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Collection, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from ..elaborate.program import Program
from ..measure.bandwidth import bandwidths, busbw_factor
from ..model.ir import linear_expr
from ..model.topology import Topology
from ..units import base_unit, format_quantity, to_float
from . import schema

if TYPE_CHECKING:  # (SymPy's formulas: imported where one is written)
    from ..cost.formula import RoundClass
    from ..cost.timing import Timing


def json_number(value: Fraction | Any | float | None,
                integer: bool = True) -> int | float | None:
    """A number for JSON: an exact integer stays one, unless `integer` is off (a field the schema
    types as a float, a time say, is one even when whole). JSON has no NaN or Infinity, so
    they, SymPy's oo and nan, and None are null. A SymPy value is evaluated to 50 digits
    (`regimes.key`) before rounding, so the float is right to its last digit."""
    if value is None:
        return None
    sympy = sys.modules.get("sympy")  # not imported: the value is no SymPy object
    if sympy is not None and isinstance(value, sympy.Basic):
        if integer and value.is_Integer:
            return int(value)
        from ..cost.regimes import key
        value = key(value)
    elif integer and isinstance(value, (int, Fraction)) and value.denominator == 1:
        return int(value)
    number = to_float(value)
    return number if math.isfinite(number) else None


INLINE_LIST = 16  # a longer list of plain numbers prints on one line


def dump_json(document: dict) -> str:
    """A document as every command prints it, indented; non-finite floats are refused, not
    written as the non-JSON NaN or Infinity (`json_number` makes them null). Long lists of
    numbers (a sweep's 10^6 points) go on one line, through json's C encoder: indenting
    runs in pure Python, a hundred times slower. A NumPy array of floats is such a list, written
    by `floats.json_list` with the same bytes, many times faster than json's float repr."""
    return "".join(_json_pieces(document, as_bytes=False))  # one copy of a long document


def dump_json_pieces(document: dict) -> list[bytes]:
    """`dump_json` as ASCII bytes, in pieces to be written one after another: a sweep's
    70 MB of numbers go out without a copy into one string (and back to bytes)."""
    return _json_pieces(document, as_bytes=True)


def _json_pieces(document: dict, as_bytes: bool, nonce: str = "") -> list:
    """The text, or bytes, of `dump_json` in pieces: indented JSON and the inline lists. Each
    inline part is a placeholder string `"\\0<nonce><index>"` in the skeleton; a document
    whose own strings look like one is written again with a longer nonce."""
    inline: list[list] = []  # the pieces of each inline list
    placed = [0]  # placeholders put in the skeleton (an array's may stand in several places)
    numpy = sys.modules.get("numpy")  # not imported: no value is an array
    arrays: list = []  # (array, its index in inline): an array equal to an earlier one reuses it

    written: dict = {}  # (id of a dict, level) -> its text: thousands of cuts share a few

    def inlined(text: str) -> str:
        inline.append([text.encode("ascii") if as_bytes else text])
        placed[0] += 1
        return f"\0{nonce}{len(inline) - 1}"

    def mark(value, level: int):
        """`value`, to be written `level` deep, with its long parts made text already."""
        if type(value) in (dict, list):
            try:
                return inlined(_plain(value, level, written))  # (a bound's 18,000 cuts)
            except _NotPlain:  # an array below: written by the parts
                pass
        if isinstance(value, dict):
            return {k: mark(v, level + 1) for k, v in value.items()}
        if numpy is not None and isinstance(value, numpy.ndarray):
            if value.ndim == 1 and len(value) > INLINE_LIST and value.dtype.kind == "f":
                from .floats import json_pieces, same_bits
                index = next((k for a, k in arrays if same_bits(a, value)), None)
                if index is None:
                    pieces = json_pieces(value)
                    inline.append(pieces if as_bytes else [b"".join(pieces).decode("ascii")])
                    index = len(inline) - 1
                    arrays.append((value, index))
                placed[0] += 1
                return f"\0{nonce}{index}"
            value = value.tolist()
        if isinstance(value, list):
            if _numbers(value):
                return inlined(json.dumps(value, allow_nan=False))
            return [mark(v, level + 1) for v in value]
        return value

    text = json.dumps(mark(document, 0), indent=2, allow_nan=False)
    # ASCII: json.dumps escapes the rest
    skeleton = re.split(r'"\\u0000' + re.escape(nonce) + r'(\d+)"', text + "\n")
    if len(skeleton) // 2 != placed[0]:  # a string of the document's own looks like one
        return _json_pieces(document, as_bytes, nonce + "#")
    pieces = []
    for k, piece in enumerate(skeleton):
        if k % 2:
            pieces.extend(inline[int(piece)])
        else:
            pieces.append(piece.encode("ascii") if as_bytes else piece)
    return pieces


# Plain parts (dicts with string keys, lists, strings, numbers, booleans, None) written as
# `json.dumps(..., indent=2)` writes them, without its pure-Python walk: a generator per
# level, every piece passed up through each. Anything else (a NumPy array, a subclass) is
# left to the walk. tests/test_json_text.py compares the two on random documents.
_SCALARS = (str, int, float, bool, type(None))
_encode = json.encoder.encode_basestring_ascii  # (C; json.dumps's default ensure_ascii)


class _NotPlain(Exception):
    pass


def _numbers(value: list) -> bool:
    """A long list of plain numbers: written on one line."""
    return len(value) > INLINE_LIST and all(type(v) in (int, float) for v in value)


def _plain(value, level: int, written: dict) -> str:
    kind = type(value)
    if kind is str:
        return _encode(value)
    if value is None or kind is bool:
        return "null" if value is None else "true" if value else "false"
    if kind is int or kind is float:
        if kind is float and not math.isfinite(value):
            raise ValueError(f"Out of range float values are not JSON compliant: {value!r}")
        return repr(value)  # (int.__repr__ and float.__repr__, as json writes them)
    if kind is dict:
        if not value:
            return "{}"
        text = written.get((id(value), level))
        if text is None:
            inner = "\n" + "  " * (level + 1)
            items = []
            for k, v in value.items():
                if type(k) is not str:
                    raise _NotPlain
                items.append(f"{_encode(k)}: {_plain(v, level + 1, written)}")
            text = "{" + inner + ("," + inner).join(items) + "\n" + "  " * level + "}"
            written[(id(value), level)] = text
        return text
    if kind is list or kind is tuple:
        if not value:
            return "[]"
        if kind is list and _numbers(value):
            return json.dumps(value, allow_nan=False)
        inner = "\n" + "  " * (level + 1)
        return ("[" + inner + ("," + inner).join([_plain(v, level + 1, written) for v in value])
                + "\n" + "  " * level + "]")
    raise _NotPlain


def _class_json(c: RoundClass, topology: Topology, nominal: dict) -> dict:
    from ..cost.formula import nominal_value
    carriers = c.terms[c.dominant].resources if c.dominant is not None else ()
    return {
        "count": c.count,
        "time_s": json_number(nominal_value(c.time, nominal), integer=False),
        "formula": str(c.time),
        "regime_formula": str(c.regime_time),
        "bottleneck": bottleneck_class(c, topology),
        "bottleneck_resources": [topology.resources[r].name for r in carriers],
        "tied_bottlenecks": [{"class": term_class(c, k, topology),
                              "resources": [topology.resources[r].name for r in c.terms[k].resources]}
                             for k in c.tied],
    }


def term_class(c: RoundClass, term: int, topology: Topology) -> str:
    return "+".join(sorted({topology.resources[r].cls for r in c.terms[term].resources}))


def bottleneck_class(c: RoundClass, topology: Topology) -> str | None:
    return None if c.dominant is None else term_class(c, c.dominant, topology)


def params_json(program: Program) -> dict:
    return {
        p.name: {"value": json_number(p.nominal), "unit": base_unit(p.dim),
                 "text": format_quantity(p.nominal, p.dim)}
        for p in program.params.values()
    }


def timing_json(t: Timing, topology: Topology) -> dict:
    from ..cost.formula import nominal_value
    c = t.cost
    pipeline = None if c.chunks is None or c.chunk is None else (  # step cost pipelined
        nominal_value(c.chunk, t.nominal), nominal_value(c.chunks, t.nominal), c.chunks)
    return schedule_json(
        t, c.rounds, c.cross_rounds, c.bytes_cross, c.bytes_logical, c.protocol,
        [(p.name, p.value, p.formula) for p in c.protocol_times], pipeline,
        time_formulas={"formula": str(c.formula), "regime_formula": str(c.regime_formula),
                       "regime_conditions": [str(r) for r in c.conditions]},
        bytes_formulas={"bytes_cross_host_formula": str(linear_expr(c.bytes_cross)),
                        "bytes_logical_formula": str(linear_expr(c.bytes_logical)),
                        "round_classes": [_class_json(k, topology, t.nominal)
                                          for k in c.classes]})


def schedule_json(t, rounds: int, cross_rounds: int, bytes_cross, bytes_logical,
                  protocol: str | None, protocol_times, pipeline,
                  time_formulas: dict | None = None, bytes_formulas: dict | None = None
                  ) -> dict:
    """One schedule of `schedc.time/1`: its keys, in order, defined once for the formula path
    (`timing_json`) and the numeric one (`render.numeric`, which gives no formulas).
    `t` has `name`, `schedule`, `time` and `bytes_value`; `protocol_times` are (name,
    seconds, formula or None); `pipeline` is None or (chunk bytes, chunks, their formula or
    None); the formulas' keys go after `time_s` and after the bytes."""
    collective = t.schedule.collective
    return {
        "name": t.name,
        "collective": collective.kind,
        "ranks": len(collective.ranks),
        "rounds": rounds,
        "rounds_cross_host": cross_rounds,
        "transfers": t.schedule.transfer_count,
        "time_s": json_number(t.time, integer=False),
        **(time_formulas or {}),
        "bytes_cross_host": json_number(t.bytes_value(bytes_cross)),
        "bytes_logical": json_number(t.bytes_value(bytes_logical)),
        **(bytes_formulas or {}),
        **bandwidth_json(collective.kind, len(collective.ranks),
                         t.bytes_value(collective.size), t.time),
        **({} if protocol is None else {
            "protocol": protocol,
            "protocol_times": {name: {"time_s": json_number(value, integer=False),
                                      **({} if formula is None else {"formula": str(formula)})}
                               for name, value, formula in protocol_times}}),
        **({} if pipeline is None else {"pipeline": {
            "chunk_bytes": json_number(pipeline[0]),
            "chunks": json_number(pipeline[1], integer=False),
            **({} if pipeline[2] is None else {"chunks_formula": str(pipeline[2])})}}),
    }


def bandwidth_json(kind: str, ranks: int, size, seconds) -> dict:
    """`algbw_GBps`, `busbw_GBps` (null: nccl-tests has no factor for the collective) and
    `busbw_factor`, in GB/s as nccl-tests prints them (measure.bandwidth)."""
    got = bandwidths(kind, ranks, size, seconds)
    return {"algbw_GBps": None if got is None else got.algbw,
            "busbw_GBps": None if got is None else got.busbw,
            "busbw_factor": busbw_factor(kind, ranks)}


def to_json(program: Program, timings: list[Timing]) -> str:
    document = {
        "schema": schema.TIME,
        "file": program.path,
        "alpha": str(program.alpha),
        "params": params_json(program),
        # The host instances; empty when the machine declares none, and then every device
        # counts as its own host in `rounds_cross_host` and `bytes_cross_host`.
        "hosts": list(program.topology.host_names),
        "schedules": [timing_json(t, program.topology) for t in timings],
    }
    return dump_json(document)


# ---- text ---------------------------------------------------------------------------------------


def table(rows: Sequence[tuple[str, ...]], right: Collection[int] = (), underline: bool = True,
          indent: str = "") -> list[str]:
    """Columns as wide as their widest cell, two spaces apart, left-aligned but for the columns
    in `right`; with `underline`, the first row is a header underlined with dashes. No line
    ends in blanks, so a short last column leaves no ragged padding."""
    widths = [max(len(row[k]) for row in rows) for k in range(len(rows[0]))]
    lines = []
    for i, row in enumerate(rows):
        cells = [cell.rjust(w) if k in right else cell.ljust(w)
                 for k, (cell, w) in enumerate(zip(row, widths))]
        lines.append(indent + "  ".join(cells).rstrip())
        if underline and i == 0:
            lines.append(indent + "  ".join("-" * w for w in widths))
    return lines


def listing(names: Sequence[str], shown: int = 2) -> str:
    """The first `shown` names and how many more, so a long list stays one short line:
    `a, b, … 6 more`."""
    more = f", … {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more

"""Results → text and JSON.

The JSON schema (`schedc.time/1`) is shared by `schedc time` and `schedc compare`; see the
README. Formulas are SymPy strings in base units (bytes, seconds, bytes/s) that
`sympy.sympify` parses back, with params as symbols.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Sequence
from fractions import Fraction

import sympy

from ..cost.formula import RoundClass, nominal_value
from ..cost.regimes import key
from ..cost.timing import Timing
from ..elaborate.program import Program
from ..model.ir import LinearBytes, linear_expr
from ..model.topology import Topology
from ..units import base_unit, format_bytes, format_quantity, format_seconds, to_float
from . import schema


def json_number(value: Fraction | sympy.Expr | float | None,
                integer: bool = True) -> int | float | None:
    """A number for JSON: an exact integer stays one, unless `integer` is off (a field the schema
    types as a float, a time say, is one even when whole). JSON has no NaN or Infinity, so
    they, SymPy's oo and nan, and None are null. A SymPy value is evaluated to 50 digits
    (`regimes.key`) before rounding, so the float is right to its last digit."""
    if value is None:
        return None
    if isinstance(value, sympy.Basic):
        if integer and value.is_Integer:
            return int(value)
        value = key(value)
    elif integer and isinstance(value, (int, Fraction)) and value.denominator == 1:
        return int(value)
    number = to_float(value)
    return number if math.isfinite(number) else None


def dump_json(document: dict) -> str:
    """A document as every command prints it; non-finite floats are refused, not written as
    the non-JSON NaN or Infinity (`json_number` makes them null)."""
    return json.dumps(document, indent=2, allow_nan=False) + "\n"


def _class_json(c: RoundClass, topology: Topology, nominal: dict) -> dict:
    carriers = c.terms[c.dominant].resources if c.dominant is not None else ()
    return {
        "count": c.count,
        "time_s": json_number(nominal_value(c.time, nominal), integer=False),
        "formula": str(c.time),
        "regime_formula": str(c.regime_time),
        "bottleneck": _bottleneck_class(c, topology),
        "bottleneck_resources": [topology.resources[r].name for r in carriers],
    }


def _bottleneck_class(c: RoundClass, topology: Topology) -> str | None:
    if c.dominant is None:
        return None
    classes = sorted({topology.resources[r].cls for r in c.terms[c.dominant].resources})
    return "+".join(classes)


def params_json(program: Program) -> dict:
    return {
        p.name: {"value": json_number(p.nominal), "unit": base_unit(p.dim),
                 "text": format_quantity(p.nominal, p.dim)}
        for p in program.params.values()
    }


def timing_json(t: Timing, topology: Topology) -> dict:
    c = t.cost
    collective = t.schedule.collective
    return {
        "name": t.name,
        "collective": collective.kind,
        "ranks": len(collective.ranks),
        "rounds": c.rounds,
        "rounds_cross_host": c.cross_rounds,
        "transfers": t.schedule.transfer_count,
        "time_s": json_number(t.time, integer=False),
        "formula": str(c.formula),
        "regime_formula": str(c.regime_formula),
        "regime_conditions": [str(r) for r in c.conditions],
        "bytes_cross_host": json_number(t.bytes_value(c.bytes_cross)),
        "bytes_logical": json_number(t.bytes_value(c.bytes_logical)),
        "bytes_cross_host_formula": str(linear_expr(c.bytes_cross)),
        "bytes_logical_formula": str(linear_expr(c.bytes_logical)),
        "round_classes": [_class_json(k, topology, t.nominal) for k in c.classes],
    }


def to_json(program: Program, timings: list[Timing]) -> str:
    document = {
        "schema": schema.TIME,
        "file": program.path,
        "alpha": str(program.alpha),
        "params": params_json(program),
        "schedules": [timing_json(t, program.topology) for t in timings],
    }
    return dump_json(document)


# ---- text ---------------------------------------------------------------------------------------


def table(rows: list[tuple[str, ...]], right: Collection[int] = (), underline: bool = True,
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


def _bytes_text(t: Timing, form: LinearBytes) -> str:
    """The bytes at the nominal point, and their formula when they depend on params."""
    value = format_bytes(t.bytes_value(form))
    symbolic = linear_expr(form)
    return f"{value}  ({symbolic})" if symbolic.free_symbols else value


def time_text(program: Program, timings: list[Timing]) -> str:
    out = []
    for t in timings:
        c = t.cost
        coll = t.schedule.collective
        size = format_bytes(t.bytes_value(coll.size))
        out.append(f"{t.name}: {coll.kind} of {size} over {len(coll.ranks)} ranks")
        rows = [
            ("time", format_seconds(t.time)),
            ("formula", str(c.formula)),
            ("regime", str(c.regime_formula)),
        ]
        if c.conditions:
            rows.append(("  valid while", ", ".join(str(r) for r in c.conditions)))
        rows += [
            ("rounds", f"{c.rounds} ({c.cross_rounds} cross-host)"),
            ("transfers", f"{t.schedule.transfer_count:,}"),
            ("bytes cross-host", _bytes_text(t, c.bytes_cross)),
            ("bytes logical", _bytes_text(t, c.bytes_logical)),
        ]
        out.extend(f"  {label:<18}{value}" for label, value in rows)
        out.append("  round classes")
        for k in c.classes:
            out.append(_class_line(k, program.topology, t.nominal))
        out.append("")
    return "\n".join(out)


def _class_line(c: RoundClass, topology: Topology, nominal: dict) -> str:
    each = format_seconds(nominal_value(c.time, nominal))
    line = f"    {c.count:>5} × {each:<12} {c.time}"
    if c.dominant is not None:
        carriers = listing([topology.resources[r].name for r in c.terms[c.dominant].resources])
        line += f"\n{'':>25}bottleneck: {_bottleneck_class(c, topology)} ({carriers})"
        if c.window_limited:
            line += ", window-limited: window/latency < bw"
    return line


def compare_text(program: Program, timings: list[Timing]) -> str:
    header = ("schedule", "rounds", "cross-host rounds", "cross-host bytes", "logical bytes", "time",
              "bottleneck")
    rows = [header]
    for t in timings:
        c = t.cost
        bottlenecks = []
        for k in c.classes:
            name = _bottleneck_class(k, program.topology)
            if name and name not in bottlenecks:
                bottlenecks.append(name)
        rows.append((t.name, str(c.rounds), str(c.cross_rounds), format_bytes(t.bytes_value(c.bytes_cross)),
                     format_bytes(t.bytes_value(c.bytes_logical)), format_seconds(t.time),
                     ", ".join(bottlenecks) or "-"))
    lines = table(rows, right=range(1, len(header) - 1))
    lines.append("")
    for t in timings:
        lines.append(f"{t.name}:")
        lines.append(f"  T = {t.cost.formula}")
        if t.cost.regime_formula != t.cost.formula:
            cond = ", ".join(str(r) for r in t.cost.conditions)
            lines.append(f"    = {t.cost.regime_formula}" + (f"   while {cond}" if cond else ""))
    return "\n".join(lines) + "\n"

"""`time --no-formula` and `compare --no-formula`: the numbers of `time` and `compare`
(`cost.numeric.NumericTiming`) as text or as `schedc.time/1` JSON, without the formulas.

What is left out, against the formula path: the formula and its regime form, the conditions
of the regime, the bytes' formulas, and the round classes (a class comes from the formula's
terms); `compare`'s bottleneck column stays (`cost.numeric.bottlenecks`). The JSON says so
with `"formulas": false`; its other keys are the formula path's, with the same values
(tests/test_numeric.py).
This module imports no SymPy, nor anything that does.
"""

from __future__ import annotations

from ..cost.numeric import NumericTiming
from ..elaborate.program import Program
from ..errors import UsageError
from ..measure.bandwidth import bandwidths, factor_text, format_gbps
from ..model.scalars import exact_value
from ..units import format_bytes, format_seconds
from . import schema
from .text import dump_json, params_json, schedule_json, table

LEFT_OUT = "formulas, regimes and round classes left out (--no-formula)"


def numeric_json(program: Program, timings: list[NumericTiming]) -> str:
    """The `schedc.time/1` document of `--no-formula`: `formulas` false, and no key that
    holds a formula (`alpha`, `formula`, `regime_formula`, `regime_conditions`, the bytes'
    formulas, `round_classes`)."""
    return dump_json({
        "schema": schema.TIME,
        "file": program.path,
        "formulas": False,
        "params": params_json(program),
        "hosts": list(program.topology.host_names),
        "schedules": [_timing_json(t, program) for t in timings],
    })


def _timing_json(t: NumericTiming, program: Program) -> dict:
    pipeline = None if t.chunks is None else (  # `step cost pipelined chunk Q`
        exact_value(program.step_chunk, t.nominal), t.chunks, None)
    return schedule_json(t, t.rounds, t.cross_rounds, t.bytes_cross, t.bytes_logical,
                         t.protocol, [(name, value, None) for name, value in t.protocol_times],
                         pipeline)


def numeric_text(command: str, output_format: str, program: Program,
                 timings: list[NumericTiming]) -> str:
    """`compare`'s table or `time`'s fields, as text."""
    if output_format != "text":
        raise UsageError(f"--no-formula writes text or --json, not --format {output_format} "
                         "(the other formats typeset formulas)")
    hosts = bool(program.topology.host_names)
    if command == "compare":
        header = ("schedule", "rounds", "cross-host rounds", "cross-host bytes",
                  "logical bytes", "time", "algbw (GB/s)", "busbw (GB/s)", "bottleneck")
        rows = [header, *[_row(t, hosts) for t in timings]]
        lines = table(rows, right=range(1, len(header) - 1))
        if not hosts:
            lines.append("hosts: none declared, so no cross-host figures (declare 'host' blocks)")
        return "\n".join([*lines, LEFT_OUT]) + "\n"
    return "\n".join(_fields(t, hosts) for t in timings)  # a blank line between schedules


def _row(t: NumericTiming, hosts: bool) -> tuple[str, ...]:
    cross = (str(t.cross_rounds), format_bytes(t.bytes_value(t.bytes_cross))) if hosts \
        else ("-", "-")
    got = _bandwidths(t)
    return (t.name, str(t.rounds), *cross, format_bytes(t.bytes_value(t.bytes_logical)),
            format_seconds(t.time), format_gbps(got.algbw if got else None),
            format_gbps(got.busbw if got else None), ", ".join(t.bottlenecks) or "-")


def _bandwidths(t: NumericTiming):
    coll = t.schedule.collective
    return bandwidths(coll.kind, len(coll.ranks), t.bytes_value(coll.size), t.time)


def _fields(t: NumericTiming, hosts: bool) -> str:
    """One schedule as `time` shows it (`render.documents.time_fields`), numbers only."""
    coll = t.schedule.collective
    rows = [("time", format_seconds(t.time))]
    got = _bandwidths(t)
    if got is not None:
        rows += [("algbw / busbw", f"{format_gbps(got.algbw)} / {format_gbps(got.busbw)} GB/s"),
                 ("", factor_text(coll.kind, len(coll.ranks)))]
    if t.protocol is not None:
        each = ", ".join(f"{name} {format_seconds(value)}" for name, value in t.protocol_times)
        rows.append(("protocol", f"{t.protocol} wins at the nominal point ({each})"))
    rows += [("rounds", f"{t.rounds} ({t.cross_rounds} cross-host)" if hosts else str(t.rounds)),
             ("transfers", f"{t.schedule.transfer_count:,}"),
             ("bytes cross-host", format_bytes(t.bytes_value(t.bytes_cross))) if hosts else
             ("hosts", "none declared, so nothing is counted as crossing hosts"),
             ("bytes logical", format_bytes(t.bytes_value(t.bytes_logical))),
             ("", LEFT_OUT)]
    heading = (f"{t.name}: {coll.kind} of {format_bytes(t.bytes_value(coll.size))} over "
               f"{len(coll.ranks)} ranks")
    width = max(len(label) for label, _ in rows) + 2
    return "\n".join([heading, *[f"  {label:<{width}}{value}" for label, value in rows]]) + "\n"

"""The documents of `time`, `compare` and `bound`: each command's result said once, as
blocks (`render.document`), for every writer (`render.writers`) to set in its format.

`DOCUMENTS` names each command's builder; `render(command, format, program, results)` builds
and writes in one call, which is what `--format` does.
"""

from __future__ import annotations

from collections.abc import Callable

from ..cost.formula import RoundClass, nominal_value
from ..cost.timing import Timing
from ..elaborate.program import Program
from ..measure.bandwidth import Bandwidths, bandwidths, factor_text, format_gbps
from ..model.ir import LinearBytes, linear_expr
from ..model.topology import Topology
from ..units import format_bytes, format_seconds
from .bound import bound_document
from .document import (
    LATEX,
    LEFT,
    MARKDOWN,
    PAGES,
    RIGHT,
    TEXT,
    Block,
    Document,
    Equation,
    Field,
    Fields,
    Formulas,
    Heading,
    Listing,
    Math,
    Paragraph,
    Table,
)
from .text import bottleneck_class, listing, term_class
from .writers import write


def class_bottleneck(c: RoundClass, topology: Topology) -> tuple[str, str]:
    """A round class's bottleneck: its class(es) and the resources carrying it."""
    if c.dominant is None:
        return "-", ""
    if c.startup_bound:  # `step cost max`: the transfer is hidden behind the start-up
        return "start-up", "the transfer overlaps it"
    carriers = listing([topology.resources[r].name for r in c.terms[c.dominant].resources])
    return bottleneck_class(c, topology) or "-", carriers


# ---- time -----------------------------------------------------------------------------------


def _bytes_text(t: Timing, form: LinearBytes) -> str:
    """The bytes at the nominal point, and their formula when they depend on params."""
    value = format_bytes(t.bytes_value(form))
    symbolic = linear_expr(form)
    return f"{value}  ({symbolic})" if symbolic.free_symbols else value


def timing_bandwidths(t: Timing) -> Bandwidths | None:
    """The time in nccl-tests' terms at the collective's nominal size (measure.bandwidth)."""
    coll = t.schedule.collective
    return bandwidths(coll.kind, len(coll.ranks), t.bytes_value(coll.size), t.time)


def _bandwidth_field(t: Timing) -> list[Field]:
    got = timing_bandwidths(t)
    if got is None:
        return []
    coll = t.schedule.collective
    return [Field("algbw / busbw", f"{format_gbps(got.algbw)} / {format_gbps(got.busbw)} GB/s"),
            Field("", factor_text(coll.kind, len(coll.ranks)), nested=True)]


def time_fields(t: Timing, hosts: bool) -> tuple[Field, ...]:
    """One schedule as `schedc time` shows it, before its round classes; `hosts`: whether
    the machine declares hosts (else no cross-host figures)."""
    c = t.cost
    fields = [Field("time", format_seconds(t.time)), *_bandwidth_field(t)]
    if c.protocol is not None:
        each = ", ".join(f"{p.name} {format_seconds(p.value)}" for p in c.protocol_times)
        fields.append(Field("protocol", f"{c.protocol} wins at the nominal point ({each})"))
    fields += [Field("formula", Math.of(c.formula)),
               Field("regime" if c.protocol is None else f"regime ({c.protocol})",
                     Math.of(c.regime_formula))]
    if c.conditions:
        fields.append(Field("valid while", Math(tuple(c.conditions)), nested=True))
    if c.chunks is not None and c.chunk is not None:  # `step cost pipelined chunk Q`
        chunks = float(nominal_value(c.chunks, t.nominal))
        fields.append(Field("pipeline", f"{chunks:.6g} chunk(s) of "
                            f"{format_bytes(nominal_value(c.chunk, t.nominal))}: the rounds "
                            "are its stages (step cost pipelined)"))
    return (*fields,
            Field("rounds", f"{c.rounds} ({c.cross_rounds} cross-host)" if hosts else str(c.rounds)),
            Field("transfers", f"{t.schedule.transfer_count:,}"),
            Field("bytes cross-host", _bytes_text(t, c.bytes_cross)) if hosts else
            Field("hosts", "none declared, so nothing is counted as crossing hosts"),
            Field("bytes logical", _bytes_text(t, c.bytes_logical)))


def time_heading(t: Timing) -> str:
    coll = t.schedule.collective
    size = format_bytes(t.bytes_value(coll.size))
    return f"{t.name}: {coll.kind} of {size} over {len(coll.ranks)} ranks"


def timing_equation(t: Timing) -> Equation:
    c = t.cost
    regime = None if c.regime_formula == c.formula else c.regime_formula
    return Equation(t.name, c.formula, regime=regime, conditions=tuple(c.conditions))


def _class_line(c: RoundClass, topology: Topology, nominal: dict) -> str:
    each = format_seconds(nominal_value(c.time, nominal))
    line = f"    {c.count:>5} × {each:<12} {c.time}"
    if c.startup_bound and c.dominant is not None:  # `step cost max`, the start-up the longer
        return line + f"\n{'':>25}bottleneck: start-up (the transfer overlaps it)"
    for k in () if c.dominant is None else (c.dominant, *c.tied):
        carriers = listing([topology.resources[r].name for r in c.terms[k].resources])
        label = "bottleneck:" if k == c.dominant else "  tied with:"
        line += f"\n{'':>25}{label} {term_class(c, k, topology)} ({carriers})"
        if k == c.dominant and c.window_limited:
            line += ", window-limited: window/latency < bw"
    return line


def _time_blocks(program: Program, t: Timing) -> list[Block]:
    topology = program.topology
    own = "" if t.cost.protocol is None else " (each round's own terms, before any protocol)"
    if t.cost.chunks is not None:
        own = " (each round's own terms for the whole call, before chunking" + \
            ("" if t.cost.protocol is None else " and any protocol") + ")"
    classes = [(str(c.count), format_seconds(nominal_value(c.time, t.nominal)), Math.of(c.time),
                *class_bottleneck(c, topology)) for c in t.cost.classes]
    return [
        Heading(text=time_heading(t)),
        Fields(fields=time_fields(t, bool(topology.host_names)), tight=True),
        Formulas(equations=(timing_equation(t),), formats=LATEX),
        Paragraph(parts=(f"  round classes{own}",), formats=TEXT, tight=True),
        Paragraph(parts=("Round classes:",), formats=MARKDOWN),
        Listing(lines=tuple(_class_line(c, topology, t.nominal) for c in t.cost.classes),
                formats=TEXT, tight=True),
        Table(header=("rounds", "each", "formula", "bottleneck", "resources"),
              rows=tuple(classes), align="rrlll", formats=PAGES),
    ]


def time_document(program: Program, timings: list[Timing]) -> Document:
    return Document(tuple(b for t in timings for b in _time_blocks(program, t)))


# ---- compare --------------------------------------------------------------------------------

COMPARE_HEADER = ("schedule", "rounds", "cross-host rounds", "cross-host bytes", "logical bytes",
                  "time", "algbw (GB/s)", "busbw (GB/s)", "bottleneck")
COMPARE_ALIGN = LEFT + RIGHT * 7 + LEFT


def compare_rows(program: Program, timings: list[Timing]) -> list[tuple[str, ...]]:
    """The seed's §3 table, one row per schedule (without the header); without `host` blocks
    the cross-host cells are `-` (every device would count as its own host)."""
    rows: list[tuple[str, ...]] = []
    hosts = bool(program.topology.host_names)
    for t in timings:
        c = t.cost
        bottlenecks = []
        for k in c.classes:
            name = bottleneck_class(k, program.topology)
            if name and name not in bottlenecks:
                bottlenecks.append(name)
        cross = (str(c.cross_rounds), format_bytes(t.bytes_value(c.bytes_cross))) if hosts \
            else ("-", "-")
        got = timing_bandwidths(t)
        rows.append((t.name, str(c.rounds), *cross, format_bytes(t.bytes_value(c.bytes_logical)),
                     format_seconds(t.time), format_gbps(got.algbw if got else None),
                     format_gbps(got.busbw if got else None), ", ".join(bottlenecks) or "-"))
    return rows


def compare_document(program: Program, timings: list[Timing]) -> Document:
    blocks: list[Block] = [Table(header=COMPARE_HEADER, rows=tuple(compare_rows(program, timings)),
                                 align=COMPARE_ALIGN)]
    if not program.topology.host_names:  # a flat machine: every device would count as its own host
        blocks.append(Paragraph(parts=("hosts: none declared, so no cross-host figures (declare "
                                       "'host' blocks)",), formats=TEXT, tight=True))
    blocks.append(Formulas(equations=tuple(timing_equation(t) for t in timings)))
    return Document(tuple(blocks))


DOCUMENTS: dict[str, Callable[..., Document]] = {
    "time": time_document,
    "compare": compare_document,
    "bound": bound_document,
}


def render(command: str, format_name: str, program: Program, results: list) -> str:
    """A command's result (`DOCUMENTS`) in a format (`writers.WRITERS`)."""
    return write(format_name, DOCUMENTS[command](program, results))

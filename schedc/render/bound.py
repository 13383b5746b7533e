"""`schedc bound` results → JSON (schema `schedc.bound/1`, see the README) and the document
that every `--format` writes."""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import TYPE_CHECKING

from ..elaborate.program import Program
from ..model.ir import LinearBytes, linear_expr, linear_value
from ..model.topology import Topology
from ..units import format_bytes, format_rate, format_seconds
from . import schema
from .document import (
    LATEX,
    MARKDOWN,
    PAGES,
    TEXT,
    Block,
    Document,
    Equation,
    Escaped,
    Formulas,
    Heading,
    Inline,
    Math,
    Paragraph,
    Table,
)
from .text import dump_json, json_number, listing, params_json

if TYPE_CHECKING:  # (only annotations: `compare` need not import the bounds)
    from ..analysis.bound.bounds import Bounds, Crossing, CutBound, Efficiency


@lru_cache(maxsize=4096)
def _str(expr) -> str:
    """A formula as text; cached, since a thousand cuts share a handful of formulas."""
    return str(expr)


def _bytes(form: LinearBytes, nominal: dict) -> Fraction:
    return linear_value(form, nominal) if form else Fraction(0)


def _names(topology: Topology, resources) -> list[str]:
    return [topology.resources[r].name for r in resources]


# ---- JSON -----------------------------------------------------------------------------------


def _crossing_json(c: Crossing, nominal: dict, memo: dict) -> dict:
    """One way of a cut; `memo` holds those already made (thousands of cuts share a few)."""
    key = (c.capacity.value, c.capacity.bandwidth, c.bytes, c.value)
    if key not in memo:
        memo[key] = {
            "bandwidth": json_number(c.capacity.value),
            "bandwidth_formula": None if c.capacity.bandwidth is None else _str(c.capacity.bandwidth),
            "bytes": json_number(_bytes(c.bytes, nominal)),
            "bytes_formula": _str(linear_expr(c.bytes)) if c.bytes else "0",
            "bound_s": json_number(c.value, integer=False),
        }
    return memo[key]


def _cut_json(c: CutBound, nominal: dict, memo: dict) -> dict:
    return {
        "name": c.cut.name,
        "family": c.cut.family,
        "ranks": [len(c.cut.side), len(c.cut.ranks) - len(c.cut.side)],
        "bound_s": _crossing_json(c.crossing, nominal, memo)["bound_s"],
        "forward": _crossing_json(c.forward, nominal, memo),
        "backward": _crossing_json(c.backward, nominal, memo),
    }


def _binding_json(c: CutBound, topology: Topology, nominal: dict) -> dict:
    crossing = c.crossing
    return {
        "name": c.cut.name,
        "family": c.cut.family,
        "direction": c.binding,
        "sides": [[topology.devices[r].name for r in c.cut.side],
                  [topology.devices[r].name for r in c.cut.rest]],
        "bandwidth": json_number(crossing.capacity.value),
        "bandwidth_formula": None if crossing.capacity.bandwidth is None else str(crossing.capacity.bandwidth),
        "resources": _names(topology, crossing.capacity.resources),
        "bytes": json_number(_bytes(crossing.bytes, nominal)),
        "bytes_formula": str(linear_expr(crossing.bytes)) if crossing.bytes else "0",
        "bound_s": json_number(crossing.value, integer=False),
        "bound_formula": str(crossing.bound),
    }


def _schedule_json(e: Efficiency, b: Bounds, topology: Topology, nominal: dict) -> dict:
    t = e.timing
    busiest = topology.resources[e.busiest] if e.busiest is not None else None
    entry = {
        "name": t.name,
        "time_s": json_number(t.time, integer=False),
        "overlapped_s": json_number(e.overlapped_value, integer=False),
        "overlapped_formula": str(e.overlapped.time) if e.overlapped else "0",
        "ratio": json_number(e.ratio, integer=False),
        "limited_by": None if busiest is None else {
            "resource": busiest.name,
            "class": busiest.cls,
            "busy_s": json_number(e.overlapped_value, integer=False),
            "window_limited": busiest.window_limited(nominal),
        },
        "window_limited_rounds": sum(c.count for c in t.cost.classes if c.window_limited),
        "binding_cut": None,
    }
    if b.binding is not None:
        entry["binding_cut"] = {
            "bytes_forward": json_number(_bytes(e.cut_bytes[0], nominal)),
            "bytes_backward": json_number(_bytes(e.cut_bytes[1], nominal)),
            "resources_used": e.cut_used[0],
            "resources": e.cut_used[1],
        }
    return entry


def bound_json(program: Program, groups: list[Bounds]) -> str:
    """The first collective's bounds at the top level (most files declare one), and every
    collective's, in the same shape, under `collectives`."""
    parts = [_bounds_json(program, b) for b in groups]
    document = {"schema": schema.BOUND, "file": program.path, "params": params_json(program),
                **parts[0], "collectives": parts}
    return dump_json(document)


def _bounds_json(program: Program, b: Bounds) -> dict:
    topology, nominal = program.topology, program.nominal
    c = b.collective
    memo: dict = {}
    end_host = None
    if b.end_host is not None:
        h = b.end_host
        end_host = {
            "bound_s": json_number(h.value, integer=False),
            "bound_formula": str(h.bound),
            "bytes": json_number(_bytes(h.total, nominal)),
            "bytes_formula": str(linear_expr(h.total)),
            "egress_formula": str(h.egress),
            "ingress_formula": str(h.ingress),
        }
    return {
        "collective": None if c is None else {
            "kind": c.kind,
            "ranks": len(c.ranks),
            "bytes": json_number(_bytes(c.size, nominal)),
            "bytes_formula": str(linear_expr(c.size)),
        },
        "bound_s": json_number(b.best_value, integer=False),
        "bound_formula": str(b.best),
        "binds": b.binds,
        "binding_cut": None if b.binding is None else _binding_json(b.binding, topology, nominal),
        "end_host": end_host,
        **({"end_host_not_applicable": _in_network_reason(b)} if b.in_network else {}),
        "optimum": _optimum_json(b, topology, nominal),
        "cuts": [_cut_json(k, nominal, memo) for k in b.cuts],
        "schedules": [_schedule_json(e, b, topology, nominal) for e in b.schedules],
    }


def _optimum_json(b: Bounds, topology: Topology, nominal: dict) -> dict | None:
    o = b.optimum
    if o is None:
        return None
    return {
        "time_s": json_number(o.value, integer=False),
        "time_formula": str(o.time),
        "lower_bound": o.kind != "allreduce",  # all-reduce's: reduce-scatter + all-gather
        "cuts": [{
            "kind": part.kind,
            "sides": sides,
            "inside_ranks": len(part.ranks_inside),
            "bytes": json_number(_bytes(part.bytes, nominal)),
            "bytes_formula": str(linear_expr(part.bytes)),
            "bandwidth": json_number(_bytes(part.bytes, nominal) / part.value),
            "bandwidth_formula": str(part.bandwidth),
            "resources": _names(topology, part.resources),
            "time_s": json_number(part.value, integer=False),
            "time_formula": str(part.time),
            "max_flows": part.solved,
        } for part, sides in zip(o.parts, b.optimum_sides)],
    }


# ---- text -----------------------------------------------------------------------------------


def _rate(capacity) -> str:
    if capacity.bandwidth is None:
        return "unlimited"
    return f"{format_rate(capacity.value)} = {_str(capacity.bandwidth)}"


def _each_way(forward: str, backward: str) -> str:
    if forward == backward:
        return forward
    return f"→ {forward}, ← {backward}"


def _must_cross(c: CutBound, nominal: dict) -> str:
    shown = [format_bytes(_bytes(x.bytes, nominal)) if x.bytes else "0" for x in (c.forward, c.backward)]
    if shown[0] == shown[1]:
        return f"{shown[0]} each way"
    return f"→ {shown[0]}, ← {shown[1]}"


def _bound(c: CutBound) -> str:
    crossing = c.crossing
    if not crossing.value:
        return "0"
    return f"{format_seconds(crossing.value)} = {_str(crossing.bound)}"


def cut_rows(b: Bounds, nominal: dict) -> list[tuple[str, str, str, str]]:
    """One row per family and result: the 16 single-rank cuts of a uniform machine are one."""
    groups: dict[tuple, list[CutBound]] = {}
    for c in b.cuts:  # grouped by value first: printing a formula costs more than comparing it
        key = (c.cut.family, c.forward.capacity.bandwidth, c.backward.capacity.bandwidth,
               c.forward.capacity.value, c.backward.capacity.value, c.forward.bytes,
               c.backward.bytes, c.binding)
        groups.setdefault(key, []).append(c)
    rows = []
    for members in groups.values():
        c = members[0]
        if len(members) == 1:
            name = c.cut.name
        else:
            label = {"rank": "single ranks", "host": "hosts", "min-cut": "min cuts"}.get(c.cut.family, "cuts")
            name = f"{len(members)} {label} ({c.cut.name}, …)"
        rows.append((name, _each_way(_rate(c.forward.capacity), _rate(c.backward.capacity)),
                     _must_cross(c, nominal), _bound(c)))
    return rows


def _bytes_of(b: Bounds, nominal: dict) -> str:
    assert b.collective is not None
    return format_bytes(_bytes(b.collective.size, nominal))


def bound_document(program: Program, groups: list[Bounds]) -> Document:
    """One section per collective."""
    return Document(tuple(block for b in groups for block in _bound_blocks(program, b)))


def _bound_blocks(program: Program, b: Bounds) -> list[Block]:
    topology, nominal = program.topology, program.nominal
    c = b.collective
    if c is None:
        out: list[Block] = [
            Heading(text=f"{program.path}: no schedules, so no collective to bound; the cuts "
                         f"between its {len(b.ranks)} GPUs", formats=TEXT),
            Heading(text=f"{program.path}: no schedules; the cuts between its {len(b.ranks)} GPUs",
                    formats=PAGES)]
    else:
        out = [Heading(text=f"{program.path}: {c.kind} of {_bytes_of(b, nominal)} over "
                            f"{len(c.ranks)} ranks")]
    if not b.cuts:
        return out + [Paragraph(parts=("no cut: fewer than two ranks to split",), formats=TEXT),
                      Paragraph(parts=("No cut: fewer than two ranks to split.",), formats=PAGES)]
    if c is None:
        return out + [
            Table(header=("cut", "bandwidth"), rows=tuple(row[:2] for row in cut_rows(b, nominal)),
                  indent=2),
            Paragraph(parts=(f"  narrowest: {narrowest_text(b)}",), formats=TEXT, tight=True),
            Paragraph(parts=("Narrowest: ", Escaped(narrowest_text(b)), "."), formats=PAGES)]
    out += [Paragraph(parts=("cut-set bounds: the bytes every schedule must move across a cut, "
                             "over its bandwidth",), formats=TEXT),
            Table(header=("cut", "bandwidth", "must cross", "bound"),
                  rows=tuple(cut_rows(b, nominal)), indent=2, tight=True)]
    if b.binding is not None:
        out += [Paragraph(parts=(f"  binding cut: {binding_text(b, topology)}",), formats=TEXT,
                          tight=True),
                Paragraph(parts=(f"Binding cut: {binding_text(b, topology)}.",), formats=PAGES)]
    out += _end_host_blocks(b, nominal)
    if b.optimum is not None:
        out += [Paragraph(parts=(optimum_text(b, topology, nominal),), formats=TEXT),
                Paragraph(parts=(f"Optimum: {format_seconds(b.optimum.value)} = ",
                                 Math.of(b.optimum.time), "."), formats=PAGES)]
    out.append(Paragraph(parts=best_parts(b)))
    if b.schedules:
        out += _schedule_blocks(b, topology, nominal)
    return out


def _end_host_blocks(b: Bounds, nominal: dict) -> list[Block]:
    """The end-host bound, in words; in LaTeX the cut's and the end host's bounds as
    inequalities."""
    c = b.collective
    assert c is not None
    out: list[Block] = []
    if b.end_host is not None:
        h = b.end_host
        total = format_bytes(_bytes(h.total, nominal))
        out += [Paragraph(parts=(f"end-host bound (Patarasuk & Yuan 2009): the {len(c.ranks)} "
                                 f"ranks send, and receive, 2(p-1)·V = {total} in all\n"
                                 f"  through their own links (out: {h.egress}; in: {h.ingress}): "
                                 f"{format_seconds(h.value)} = {h.bound}",), formats=TEXT),
                Paragraph(parts=(f"End-host bound: {total} sent and received in all, "
                                 f"{format_seconds(h.value)} = ", Math.of(h.bound), "."),
                          formats=MARKDOWN)]
    elif b.in_network and c.kind == "allreduce":
        out.append(Paragraph(parts=(f"end-host bound: does not apply: {_in_network_reason(b)}",),
                             formats=TEXT))
    bounds = []
    if b.binding is not None and b.binding.value:
        bounds.append(Equation("cut", b.binding.crossing.bound, "≥",
                               note=format_seconds(b.binding.value)))
    if b.end_host is not None:
        bounds.append(Equation("end-host", b.end_host.bound, "≥",
                               note=format_seconds(b.end_host.value)))
    if bounds:
        out.append(Formulas(equations=tuple(bounds), formats=LATEX))
    return out


def best_parts(b: Bounds) -> tuple[Inline, ...]:
    """`best_text` with its formula as a formula."""
    text = best_text(b)
    if b.binds == "none":
        return (text,)
    before, after = text.split(f"= {b.best}", 1)
    return (before + "= ", Math.of(b.best), after)


def _schedule_blocks(b: Bounds, topology: Topology, nominal: dict) -> list[Block]:
    out: list[Block] = [Table(header=SCHEDULE_HEADER, rows=tuple(schedule_rows(b, topology, nominal)),
                              align="lrrrl", indent=2)]
    crossing = crossing_rows(b, nominal)
    if b.binding is not None and crossing:
        name = b.binding.cut.name
        out += [Paragraph(parts=(f"across the binding cut {name} (at least "
                                 f"{_must_cross(b.binding, nominal)}):",), formats=TEXT),
                Table(rows=tuple(crossing), indent=2, tight=True, formats=TEXT),
                Paragraph(parts=(f"Across the binding cut {name}:",), formats=PAGES),
                Table(header=("schedule", "moves", "of the minimum", "over"),
                      rows=tuple((n, m, f.strip("()"), o) for n, m, f, o in crossing),
                      formats=PAGES)]
    out.append(Paragraph(parts=("overlapped: max over resources of Σ_rounds bytes/bandwidth, the "
                                "time if rounds\noverlapped perfectly; ratio: time / best bound",),
                         formats=TEXT))
    return out


def _in_network_reason(b: Bounds) -> str:
    return (f"{listing(list(b.in_network))} reduce{'s' * (len(b.in_network) == 1)} in the network"
            " (NVLS/SHARP), so the ranks need not send and receive 2(p-1)·V themselves")


def narrowest_text(b: Bounds) -> str:
    """The narrowest cut, for a machine without a collective."""
    narrowest = min(b.cuts, key=lambda k: (k.forward.capacity.value is None, k.forward.capacity.value))
    return f"{narrowest.cut.name}, {_rate(narrowest.forward.capacity)}"


def best_text(b: Bounds) -> str:
    if b.binds == "none":
        return "best bound: 0 (nothing must cross a cut of finite bandwidth)"
    which = {"cut": "the binding cut", "end-host": "the end-host bound",
             "optimum": "the exact optimum"}[b.binds]
    line = f"best bound: {format_seconds(b.best_value)} = {b.best}, from {which}"
    if b.binds != "cut" and b.binding is not None:
        line += f" (the binding cut gives {format_seconds(b.binding.value)})"
    return line


def optimum_text(b: Bounds, topology: Topology, nominal: dict) -> str:
    """The exact optimum, each of its cuts with what crosses it, and what it proves."""
    o = b.optimum
    assert o is not None and b.collective is not None
    lines = []
    for part, sides in zip(o.parts, b.optimum_sides):
        way = "leave" if part.kind in ("reduce_scatter", "reduce") else "enter"
        classes = "+".join(sorted({topology.resources[r].cls for r in part.resources}))
        lines.append(f"  {part.kind}: {format_bytes(_bytes(part.bytes, nominal))} must {way} "
                     f"{sides.split(' | ')[0]} over {len(part.resources)} × {classes} "
                     f"({format_rate(_bytes(part.bytes, nominal) / part.value)}): "
                     f"{format_seconds(part.value)} = {_str(part.time)}")
    head = (f"optimum over all cuts (exact, α = 0; {sum(p.solved for p in o.parts)} max-flows): "
            f"{format_seconds(o.value)} = {_str(o.time)}")
    tail = "  reached by packed trees, pipelined (schedc synthesize writes them)"
    if o.kind == "allreduce":
        head += ", reduce-scatter then all-gather"
        if o.value == b.best_value:
            tail += "; equal to the best bound below: no all-reduce does better"
        else:
            tail += (f"; {float(o.value / b.best_value):.3f}× the best bound below: an "
                     "all-reduce may do better, or the bound is loose")
    return "\n".join([head, *lines, tail])


SCHEDULE_HEADER = ("schedule", "time", "overlapped", "ratio", "held back by")


def schedule_rows(b: Bounds, topology: Topology, nominal: dict) -> list[tuple[str, ...]]:
    """Each schedule against the best bound (without the header)."""
    rows: list[tuple[str, ...]] = []
    for e in b.schedules:
        held = "-"
        if e.busiest is not None:
            r = topology.resources[e.busiest]
            window = ", window-limited" if r.window_limited(nominal) else ""
            held = f"{r.cls} {r.name}: busy {format_seconds(e.overlapped_value)}{window}"
        ratio = "-" if e.ratio is None else f"{float(e.ratio):.2f}"
        rows.append((e.timing.name, format_seconds(e.timing.time), format_seconds(e.overlapped_value),
                     ratio, held))
    return rows


def crossing_rows(b: Bounds, nominal: dict) -> list[tuple[str, ...]]:
    """What each schedule moves across the binding cut (none without a binding cut)."""
    if b.binding is None:
        return []
    need = b.binding.crossing
    rows: list[tuple[str, ...]] = []
    for e in b.schedules:
        moved = [_bytes(x, nominal) for x in e.cut_bytes]
        shown = _each_way(format_bytes(moved[0]), format_bytes(moved[1]))
        if moved[0] == moved[1]:
            shown += " each way"
        minimum = _bytes(need.bytes, nominal)
        times = moved[0 if b.binding.binding == "forward" else 1] / minimum if minimum else None
        factor = "" if times is None else f"({float(times):.4g}×)"
        rows.append((e.timing.name, shown, factor,
                     f"over {e.cut_used[0]} of its {e.cut_used[1]} resources"))
    return rows


def binding_text(b: Bounds, topology: Topology) -> str:
    """The binding cut, its resources' classes and names."""
    assert b.binding is not None, "only asked for when there is a binding cut"
    cap = b.binding.crossing.capacity
    classes = sorted({topology.resources[r].cls for r in cap.resources})
    return (f"{b.binding.cut.name}, {len(cap.resources)} × {'+'.join(classes)} "
            f"({listing(_names(topology, cap.resources))})")

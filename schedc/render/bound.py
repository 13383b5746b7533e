"""`schedc bound` results as the document that every `--format` writes (the JSON is
`render.bound_json`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..elaborate.program import Program
from ..model.topology import Topology
from ..units import format_bytes, format_rate, format_seconds
from .bound_json import bytes_at, formula_str, in_network_reason, resource_names
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
from .text import listing

if TYPE_CHECKING:  # (only annotations: `compare` need not import the bounds)
    from ..analysis.bound.bounds import Bounds, Crossing, CutBound, Efficiency


# ---- text -----------------------------------------------------------------------------------


def _rate(capacity) -> str:
    if capacity.bandwidth is None:
        return "unlimited"
    return f"{format_rate(capacity.value)} = {formula_str(capacity.bandwidth)}"


def _each_way(forward: str, backward: str) -> str:
    if forward == backward:
        return forward
    return f"→ {forward}, ← {backward}"


def _must_cross(c: CutBound, nominal: dict) -> str:
    shown = [format_bytes(bytes_at(x.bytes, nominal)) if x.bytes else "0" for x in (c.forward, c.backward)]
    if shown[0] == shown[1]:
        return f"{shown[0]} each way"
    return f"→ {shown[0]}, ← {shown[1]}"


def _bound(c: CutBound) -> str:
    crossing = c.crossing
    if not crossing.value:
        return "0"
    return f"{format_seconds(crossing.value)} = {formula_str(crossing.bound)}"


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
    return format_bytes(bytes_at(b.collective.size, nominal))


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
        total = format_bytes(bytes_at(h.total, nominal))
        if h.hosts:  # where switches reduce inside the hosts: the hosts are the ends
            head = (f"end-host bound over hosts (Patarasuk & Yuan 2009, hosts for ranks: "
                    f"{in_network_reason(b, hosts=True)}): the {h.hosts} hosts send, and "
                    f"receive, 2(H-1)·V")
        else:
            head = (f"end-host bound (Patarasuk & Yuan 2009): the {len(c.ranks)} ranks send, "
                    f"and receive, 2(p-1)·V")
        short = "End-host bound over hosts" if h.hosts else "End-host bound"
        out += [Paragraph(parts=(f"{head} = {total} in all\n"
                                 f"  through their own links (out: {h.egress}; in: {h.ingress}): "
                                 f"{format_seconds(h.value)} = {h.bound}",), formats=TEXT),
                Paragraph(parts=(f"{short}: {total} sent and received in all, "
                                 f"{format_seconds(h.value)} = ", Math.of(h.bound), "."),
                          formats=MARKDOWN)]
    elif b.in_network and c.kind == "allreduce":
        out.append(Paragraph(parts=(f"end-host bound: does not apply: {in_network_reason(b)}",),
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
        way = "leave" if part.kind in ("reduce_scatter", "reduce") else "enter"  # (allreduce: both)
        classes = "+".join(sorted({topology.resources[r].cls for r in part.resources}))
        lines.append(f"  {part.kind}: {format_bytes(bytes_at(part.bytes, nominal))} must {way} "
                     f"{sides.split(' | ')[0]} over {len(part.resources)} × {classes} "
                     f"({format_rate(bytes_at(part.bytes, nominal) / part.value)}): "
                     f"{format_seconds(part.value)} = {formula_str(part.time)}")
    head = (f"optimum over all cuts (exact, α = 0; {sum(p.solved for p in o.parts)} max-flows): "
            f"{format_seconds(o.value)} = {formula_str(o.time)}")
    tail = ("  reached by packed trees, pipelined, where routes may take any path; schedc "
            "synthesize says how near trees over schedc's routes come")
    if o.kind == "allreduce" and o.is_bound:  # switches reduce: all-reduce's own cut
        head += ", all-reduce in the network"
        tail = ("  a lower bound on every all-reduce: the sum must enter every side that holds "
                "some but not all ranks; schedc synthesize --collective allreduce writes a "
                "schedule through the switches that reduce and says how near it comes")
    elif o.kind == "allreduce":
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
        moved = [bytes_at(x, nominal) for x in e.cut_bytes]
        shown = _each_way(format_bytes(moved[0]), format_bytes(moved[1]))
        if moved[0] == moved[1]:
            shown += " each way"
        minimum = bytes_at(need.bytes, nominal)
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
            f"({listing(resource_names(topology, cap.resources))})")

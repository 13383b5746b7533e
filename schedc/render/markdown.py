"""`--format markdown` of `time`, `compare` and `bound`: pipe tables (GitHub / CommonMark
extension) with the same cells as the text tables, formulas as code spans, for a design doc."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from ..analysis.bound.bounds import Bounds
from ..cost.formula import nominal_value
from ..cost.timing import Timing
from ..elaborate.program import Program
from ..model.ir import linear_value
from ..units import format_bytes, format_seconds
from .bound import (
    SCHEDULE_HEADER,
    best_text,
    binding_text,
    crossing_rows,
    cut_rows,
    narrowest_text,
    schedule_rows,
)
from .text import (
    COMPARE_HEADER,
    class_bottleneck,
    compare_rows,
    formula_row,
    time_heading,
    time_rows,
)


def cell(text: str) -> str:
    """A table cell: a pipe would end it, a new line would end the row."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def code(text: str) -> str:
    """A code span that survives any backticks inside."""
    fence = "``" if "`" in text else "`"
    return f"{fence}{text}{fence}"


def md_table(header: Sequence[str], rows: Sequence[Sequence[str]], right: Collection[int] = ()) -> list[str]:
    lines = ["| " + " | ".join(cell(h) for h in header) + " |",
             "|" + "|".join("---:" if k in right else "---" for k in range(len(header))) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return lines


def compare_markdown(program: Program, timings: list[Timing]) -> str:
    lines = md_table(COMPARE_HEADER, compare_rows(program, timings),
                     right=range(1, len(COMPARE_HEADER) - 1))
    lines.append("")
    for t in timings:
        lines.append(f"- **{t.name}**: T = {code(str(t.cost.formula))}")
        if t.cost.regime_formula != t.cost.formula:
            cond = ", ".join(str(r) for r in t.cost.conditions)
            lines.append(f"  = {code(str(t.cost.regime_formula))}"
                         + (f" while {code(cond)}" if cond else ""))
    return "\n".join(lines) + "\n"


def time_markdown(program: Program, timings: list[Timing]) -> str:
    out = []
    hosts = bool(program.topology.host_names)
    for t in timings:
        out += [f"### {time_heading(t)}", ""]
        rows = [(label.strip(), code(value) if formula_row(label) else value)
                for label, value in time_rows(t, hosts)]
        out += md_table(("", "value"), rows)
        out += ["", "Round classes:", ""]
        classes = []
        for c in t.cost.classes:
            cls, carriers = class_bottleneck(c, program.topology)
            classes.append((str(c.count), format_seconds(nominal_value(c.time, t.nominal)),
                            code(str(c.time)), cls, carriers))
        out += md_table(("rounds", "each", "formula", "bottleneck", "resources"), classes,
                        right=(0, 1))
        out.append("")
    return "\n".join(out)


def bound_markdown(program: Program, groups: list[Bounds]) -> str:
    return "\n".join(_bounds(program, b) for b in groups)


def _bounds(program: Program, b: Bounds) -> str:
    topology, nominal = program.topology, program.nominal
    c = b.collective
    if c is None:
        title = f"{program.path}: no schedules; the cuts between its {len(b.ranks)} GPUs"
    else:
        size = format_bytes(linear_value(c.size, nominal))
        title = f"{program.path}: {c.kind} of {size} over {len(c.ranks)} ranks"
    out = [f"### {cell(title)}", ""]
    if not b.cuts:
        return "\n".join(out + ["No cut: fewer than two ranks to split.", ""])
    if c is None:
        out += md_table(("cut", "bandwidth"), [row[:2] for row in cut_rows(b, nominal)]) + [""]
        out += [f"Narrowest: {cell(narrowest_text(b))}.", ""]
        return "\n".join(out)
    out += md_table(("cut", "bandwidth", "must cross", "bound"), cut_rows(b, nominal)) + [""]
    if b.binding is not None:
        out += [f"Binding cut: {binding_text(b, topology)}.", ""]
    if b.end_host is not None:
        h = b.end_host
        out += [f"End-host bound: {format_bytes(linear_value(h.total, nominal))} sent and "
                f"received in all, {format_seconds(h.value)} = {code(str(h.bound))}.", ""]
    if c is not None:
        out += [best_text(b).replace(f"= {b.best}", f"= {code(str(b.best))}"), ""]
    if b.schedules:
        out += md_table(SCHEDULE_HEADER, schedule_rows(b, topology, nominal), right=(1, 2, 3))
        crossing = crossing_rows(b, nominal)
        if crossing:
            assert b.binding is not None  # crossing rows exist only with a binding cut
            out += ["", f"Across the binding cut {b.binding.cut.name}:", ""]
            out += md_table(("schedule", "moves", "of the minimum", "over"),
                            [(n, m, f.strip("()"), o) for n, m, f, o in crossing])
        out.append("")
    return "\n".join(out)

"""`--format latex` of `time`, `compare` and `bound`, for a paper: `tabular` environments with
the text tables' cells (escaped), and `align*` environments with the formulas typeset by
SymPy's LaTeX printer. `align*` needs `\\usepackage{amsmath}`; nothing else is assumed."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import sympy

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

_ESCAPES = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "µ": r"\ensuremath{\mu}", "×": r"\ensuremath{\times}", "…": r"\ldots{}",
    "→": r"\ensuremath{\rightarrow}", "←": r"\ensuremath{\leftarrow}", "·": r"\ensuremath{\cdot}",
    "Σ": r"\ensuremath{\Sigma}", "α": r"\ensuremath{\alpha}",
    # In the default OT1 font encoding these print as other glyphs (¡, ¿, —).
    "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
}


def escape(text: str) -> str:
    """Text for a LaTeX document, every special character escaped."""
    return "".join(_ESCAPES.get(ch, ch) for ch in text)


def math(expr: sympy.Basic) -> str:
    """A formula by SymPy's LaTeX printer (Max and Min print as \\max and \\min)."""
    return sympy.latex(expr)


def tabular(header: Sequence[str], rows: Sequence[Sequence[str]], right: Collection[int] = (),
            escaped: Collection[int] = ()) -> list[str]:
    """A `tabular` with a rule under the header; the cells of columns in `escaped` are
    already LaTeX (math), the others are escaped here."""
    spec = "".join("r" if k in right else "l" for k in range(len(header)))

    def row(cells: Sequence[str]) -> str:
        return " & ".join(c if k in escaped else escape(c) for k, c in enumerate(cells)) + r" \\"

    return [rf"\begin{{tabular}}{{{spec}}}", r"\hline", " & ".join(escape(h) for h in header)
            + r" \\", r"\hline", *(row(r) for r in rows), r"\hline", r"\end{tabular}"]


def _name(name: str) -> str:
    return r"\mathrm{" + escape(name) + "}"


def _formula_lines(t: Timing) -> list[str]:
    """T_name = formula, then = regime form with its conditions, as align rows."""
    c = t.cost
    lines = [rf"T_{{{_name(t.name)}}} &= {math(c.formula)}"]
    if c.regime_formula != c.formula:
        line = rf"&= {math(c.regime_formula)}"
        if c.conditions:
            line += r" && \text{while } " + r",\ ".join(math(r) for r in c.conditions)
        lines.append(line)
    return lines


def align(blocks: list[list[str]]) -> list[str]:
    rows = [row for block in blocks for row in block]
    return [r"\begin{align*}", *(row + (r" \\" if k < len(rows) - 1 else "")
                                 for k, row in enumerate(rows)), r"\end{align*}"]


def compare_latex(program: Program, timings: list[Timing]) -> str:
    lines = tabular(COMPARE_HEADER, compare_rows(program, timings),
                    right=range(1, len(COMPARE_HEADER) - 1))
    lines += [""] + align([_formula_lines(t) for t in timings])
    return "\n".join(lines) + "\n"


def time_latex(program: Program, timings: list[Timing]) -> str:
    out = []
    hosts = bool(program.topology.host_names)
    for t in timings:
        out.append(rf"\paragraph{{{escape(time_heading(t))}}}")
        rows = [(label.strip(), value) for label, value in time_rows(t, hosts)
                if not formula_row(label)]
        out += tabular(("", "value"), rows)
        out += [""] + align([_formula_lines(t)])
        classes = []
        for c in t.cost.classes:
            cls, carriers = class_bottleneck(c, program.topology)
            classes.append((str(c.count), escape(format_seconds(nominal_value(c.time, t.nominal))),
                            f"${math(c.time)}$", escape(cls), escape(carriers)))
        out += [""] + tabular(("rounds", "each", "formula", "bottleneck", "resources"), classes,
                              right=(0, 1), escaped=range(5))
        out.append("")
    return "\n".join(out)


def bound_latex(program: Program, groups: list[Bounds]) -> str:
    return "\n".join(_bounds(program, b) for b in groups)


def _bounds(program: Program, b: Bounds) -> str:
    topology, nominal = program.topology, program.nominal
    c = b.collective
    if c is None:
        title = f"{program.path}: no schedules; the cuts between its {len(b.ranks)} GPUs"
    else:
        title = (f"{program.path}: {c.kind} of {format_bytes(linear_value(c.size, nominal))} "
                 f"over {len(c.ranks)} ranks")
    out = [rf"\paragraph{{{escape(title)}}}"]
    if not b.cuts:
        return "\n".join(out + ["No cut: fewer than two ranks to split.", ""])
    if c is None:
        out += tabular(("cut", "bandwidth"), [row[:2] for row in cut_rows(b, nominal)]) + [""]
        out += [f"Narrowest: {escape(narrowest_text(b))}.", ""]
        return "\n".join(out)
    out += tabular(("cut", "bandwidth", "must cross", "bound"), cut_rows(b, nominal)) + [""]
    if b.binding is not None:
        out += [f"Binding cut: {escape(binding_text(b, topology))}.", ""]
    bounds = []
    if b.binding is not None and b.binding.value:
        bounds.append(rf"T_{{\mathrm{{cut}}}} &\geq {math(b.binding.crossing.bound)} "
                      rf"&& \text{{{escape(format_seconds(b.binding.value))}}}")
    if b.end_host is not None:
        bounds.append(rf"T_{{\mathrm{{end\text{{-}}host}}}} &\geq {math(b.end_host.bound)} "
                      rf"&& \text{{{escape(format_seconds(b.end_host.value))}}}")
    if bounds:
        out += align([bounds]) + [""]
    if c is not None:
        out += [escape(best_text(b)), ""]
    if b.schedules:
        out += tabular(SCHEDULE_HEADER, schedule_rows(b, topology, nominal), right=(1, 2, 3))
        crossing = crossing_rows(b, nominal)
        if crossing:
            assert b.binding is not None  # crossing rows exist only with a binding cut
            out += ["", f"Across the binding cut {escape(b.binding.cut.name)}:", ""]
            out += tabular(("schedule", "moves", "of the minimum", "over"),
                           [(n, m, f.strip("()"), o) for n, m, f, o in crossing])
        out.append("")
    return "\n".join(out)

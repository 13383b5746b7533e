"""The LaTeX writer, for a paper: `tabular` environments with escaped cells, formulas
typeset by SymPy's LaTeX printer in `align*` (which needs `\\usepackage{amsmath}`; nothing
else is assumed). A heading is a run-in `\\paragraph`, its text following directly."""

from __future__ import annotations

from collections.abc import Sequence

import sympy

from ..document import (
    Block,
    Cell,
    Document,
    Equation,
    Fields,
    Figure,
    Formulas,
    Heading,
    Listing,
    Math,
    Paragraph,
    Table,
    plain,
)
from .base import assemble, unknown

NAME = "latex"

_ESCAPES = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "µ": r"\ensuremath{\mu}", "×": r"\ensuremath{\times}", "…": r"\ldots{}",
    "→": r"\ensuremath{\rightarrow}", "←": r"\ensuremath{\leftarrow}", "·": r"\ensuremath{\cdot}",
    "Σ": r"\ensuremath{\Sigma}", "α": r"\ensuremath{\alpha}",
    # In the default OT1 font encoding these print as other glyphs (¡, ¿, —).
    "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
}
_RELATIONS = {"=": "=", "≥": r"\geq", "≤": r"\leq"}
_SECTIONS = {1: "section*", 2: "subsection*"}  # deeper: a run-in \paragraph


def write(document: Document) -> str:
    return assemble(document, NAME, lines,
                    lambda previous, block: not isinstance(previous, Heading))


def escape(text: str) -> str:
    """Text for a LaTeX document, every special character escaped."""
    return "".join(_ESCAPES.get(ch, ch) for ch in text)


def math(expr: sympy.Basic) -> str:
    """A formula by SymPy's LaTeX printer (Max and Min print as \\max and \\min)."""
    return sympy.latex(expr)


def _cell(value: Cell) -> str:
    if isinstance(value, Math):
        return "$" + r",\ ".join(math(e) for e in value.exprs) + "$"
    return escape(value)


def tabular(header: Sequence[str] | None, rows: Sequence[Sequence[Cell]], spec: str) -> list[str]:
    """A `tabular` with rules above and below, and under the header if there is one."""
    head = [] if header is None else [" & ".join(escape(h) for h in header) + r" \\", r"\hline"]
    return [rf"\begin{{tabular}}{{{spec}}}", r"\hline", *head,
            *(" & ".join(map(_cell, row)) + r" \\" for row in rows), r"\hline", r"\end{tabular}"]


def _name(name: str) -> str:
    """A subscript name, upright; a hyphen as a hyphen, not a minus sign."""
    return r"\mathrm{" + escape(name).replace("-", r"\text{-}") + "}"


def _equation(e: Equation) -> list[str]:
    """T_name = formula (and its note), then = regime form with its conditions, as rows."""
    first = rf"T_{{{_name(e.name)}}} &{_RELATIONS[e.relation]} {math(e.expr)}"
    if e.note:
        first += rf" && \text{{{escape(e.note)}}}"
    rows = [first]
    if e.regime is not None:
        row = rf"&= {math(e.regime)}"
        if e.conditions:
            row += r" && \text{while } " + r",\ ".join(math(r) for r in e.conditions)
        rows.append(row)
    return rows


def align(rows: list[str]) -> list[str]:
    return [r"\begin{align*}", *(row + (r" \\" if k < len(rows) - 1 else "")
                                 for k, row in enumerate(rows)), r"\end{align*}"]


def lines(block: Block) -> list[str]:
    if isinstance(block, Heading):
        command = _SECTIONS.get(block.level, "paragraph")
        return [rf"\{command}{{{escape(block.text)}}}"]
    if isinstance(block, Paragraph):
        # a formula in running text stays SymPy's text: math mode is for the displays
        return [escape(plain(block.parts))]
    if isinstance(block, Table):
        columns = len(block.header) if block.header else len(block.rows[0]) if block.rows else 0
        return tabular(block.header, block.rows, "".join(block.alignment(k) for k in range(columns)))
    if isinstance(block, Fields):
        return tabular(("", "value"), [(f.label, f.value) for f in block.fields
                                       if not isinstance(f.value, Math)], "ll")
    if isinstance(block, Formulas):
        return align([row for e in block.equations for row in _equation(e)])
    if isinstance(block, Listing):
        return [r"\begin{verbatim}", *block.lines, r"\end{verbatim}"]
    if isinstance(block, Figure):
        return [escape(f"Figure: {block.caption}")]
    raise unknown(block, NAME)

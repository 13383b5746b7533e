"""The HTML writer: tables in scrolling boxes, formulas as MathML (SymPy's presentation
printer, which browsers render natively), figures as inline SVG. `schedc report` builds its
page from these pieces (`render.html`)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from html import escape

import sympy

from ..document import (
    RIGHT,
    Block,
    Cell,
    Document,
    Escaped,
    Fields,
    Figure,
    Formulas,
    Heading,
    Inline,
    Listing,
    Math,
    Paragraph,
    Table,
)
from .base import unknown

NAME = "html"


def write(document: Document) -> str:
    """The blocks as HTML elements, one a line (a fragment, for a page's body)."""
    figure = Figures()
    out = [element(block, figure) for block in document.blocks if block.shown_in(NAME)]
    return "\n".join(out) + "\n" if out else ""


def table(header: Sequence[str], rows: Sequence[Sequence[str]], numeric: Collection[int] = (),
          raw: Collection[int] = (), wide: Collection[int] = ()) -> str:
    """A table in a scrolling box; cells of columns in `raw` are HTML already; columns in
    `wide` hold long text, which wraps but keeps a readable width."""
    def cell(tag: str, k: int, text: str) -> str:
        css = ' class="num"' if k in numeric else ' class="wide"' if k in wide else ""
        return f"<{tag}{css}>{text if k in raw and tag == 'td' else escape(text)}</{tag}>"

    head = "".join(cell("th", k, h) for k, h in enumerate(header))
    lines = ["".join(cell("td", k, c) for k, c in enumerate(row)) for row in rows]
    return ('<div class="scroll"><table><thead><tr>' + head + "</tr></thead><tbody>"
            + "".join(f"<tr>{line}</tr>" for line in lines) + "</tbody></table></div>")


def inline_math(expr: sympy.Basic) -> str:
    return f"<math>{sympy.mathml(expr, printer='presentation')}</math>"


def mathml(expr: sympy.Basic, lhs: str = "", relation: str = "=") -> str:
    """A formula as block MathML, optionally `lhs =` (or another relation) before it."""
    inner = sympy.mathml(expr, printer="presentation")
    if lhs:
        inner = f"<mrow>{lhs}<mo>{relation}</mo>{inner}</mrow>"
    return f'<div class="formula"><math display="block">{inner}</math></div>'


def time_of(name: str) -> str:
    """T with the name as its subscript, in MathML."""
    return f"<msub><mi>T</mi><mtext>{escape(name)}</mtext></msub>"


class Figures:
    """Numbers the figures of a page, which keeps the ids inside their SVGs apart."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, figure, caption: str, kind: str) -> str:
        from .. import plot  # matplotlib, only for a page with figures
        self.count += 1
        svg = plot.svg(figure, f"f{self.count}")
        return (f'<figure class="plot {kind}" id="figure-{self.count}">{svg}'
                f"<figcaption>Figure {self.count}. {caption}</figcaption></figure>")


def _cell(value: Cell) -> str:
    if isinstance(value, Math):
        return ", ".join(inline_math(e) for e in value.exprs)
    return escape(value)


def _inline(part: Inline) -> str:
    if isinstance(part, Math):
        return _cell(part)
    return escape(part.text if isinstance(part, Escaped) else part)


def element(block: Block, figure: Figures) -> str:
    if isinstance(block, Heading):
        anchor = f' id="{escape(block.anchor)}"' if block.anchor else ""
        return f"<h{block.level}{anchor}>{escape(block.text)}</h{block.level}>"
    if isinstance(block, Paragraph):
        return "<p>" + "".join(map(_inline, block.parts)) + "</p>"
    if isinstance(block, Table):
        columns = len(block.header) if block.header else len(block.rows[0]) if block.rows else 0
        numeric = [k for k in range(columns) if block.alignment(k) == RIGHT]
        return table(block.header or ("",) * columns,
                     [tuple(map(_cell, row)) for row in block.rows], numeric, raw=range(columns),
                     wide=block.wide)
    if isinstance(block, Fields):
        return table(("", "value"), [(escape(f.label), _cell(f.value)) for f in block.fields],
                     raw=(0, 1))
    if isinstance(block, Formulas):
        out = []
        for e in block.equations:
            out.append(mathml(e.expr, time_of(e.name), e.relation))
            if e.note:
                out.append(f'<p class="muted">{escape(e.note)}</p>')
            if e.regime is not None:
                out.append(mathml(e.regime, time_of(e.name)))
                if e.conditions:
                    out.append('<p class="muted">regime form, while</p>'
                               + "".join(mathml(r) for r in e.conditions))
        return "\n".join(out)
    if isinstance(block, Listing):
        return "<pre>" + escape("\n".join(block.lines)) + "</pre>"
    if isinstance(block, Figure):
        return figure(block.figure, escape(block.caption), block.kind)
    raise unknown(block, NAME)

"""The plain-text writer: what a terminal shows. Tables are columns as wide as their widest
cell; fields are a label padded to 18 characters and a value; formulas are SymPy's text."""

from __future__ import annotations

from ..document import (
    RIGHT,
    Block,
    Cell,
    Document,
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
from ..text import table
from .base import assemble, unknown

NAME = "text"
LABEL_WIDTH = 18  # a field's label column, past the longest label ("bytes cross-host")


def write(document: Document) -> str:
    return assemble(document, NAME, lines, lambda previous, block: not block.tight)


def cell_text(value: Cell) -> str:
    return value.text() if isinstance(value, Math) else value


def lines(block: Block) -> list[str]:
    if isinstance(block, Heading):
        return [block.text]
    if isinstance(block, Paragraph):
        return [plain(block.parts)]
    if isinstance(block, Table):
        rows = [tuple(map(cell_text, row)) for row in block.rows]
        right = [k for k in range(len(rows[0] if rows else block.header or ()))
                 if block.alignment(k) == RIGHT]
        if block.header is not None:
            rows.insert(0, block.header)
        if not rows:
            return []
        return table(rows, right=right, underline=block.header is not None,
                     indent=" " * block.indent)
    if isinstance(block, Fields):
        return [f"  {('  ' if f.nested else '') + f.label:<{LABEL_WIDTH}}{cell_text(f.value)}"
                for f in block.fields]
    if isinstance(block, Formulas):
        out = []
        for e in block.equations:
            note = f"   ({e.note})" if e.note else ""
            out += [f"{e.name}:", f"  T {e.relation} {e.expr}{note}"]
            if e.regime is not None:
                cond = ", ".join(str(r) for r in e.conditions)
                out.append(f"    = {e.regime}" + (f"   while {cond}" if cond else ""))
        return out
    if isinstance(block, Listing):
        return list(block.lines)
    if isinstance(block, Figure):
        return [f"[figure: {block.caption}]"]
    raise unknown(block, NAME)

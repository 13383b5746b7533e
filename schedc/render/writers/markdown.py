"""The Markdown writer, for a design doc: pipe tables (the GitHub / CommonMark extension),
formulas as code spans, a blank line between blocks."""

from __future__ import annotations

from collections.abc import Collection, Sequence

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
from .base import assemble, unknown

NAME = "markdown"


def write(document: Document) -> str:
    return assemble(document, NAME, lines, lambda previous, block: True)


def cell(text: str) -> str:
    """A table cell: a pipe would end it, a new line would end the row."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def code(text: str) -> str:
    """A code span that survives any backticks inside."""
    fence = "``" if "`" in text else "`"
    return f"{fence}{text}{fence}"


def md_table(header: Sequence[str], rows: Sequence[Sequence[str]],
             right: Collection[int] = ()) -> list[str]:
    lines = ["| " + " | ".join(cell(h) for h in header) + " |",
             "|" + "|".join("---:" if k in right else "---" for k in range(len(header))) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return lines


def _cell(value: Cell) -> str:
    return code(value.text()) if isinstance(value, Math) else value


def _inline(part: Inline) -> str:
    if isinstance(part, Math):
        return code(part.text())
    if isinstance(part, Escaped):
        return cell(part.text)
    return part


def lines(block: Block) -> list[str]:
    if isinstance(block, Heading):
        return ["#" * block.level + " " + cell(block.text)]
    if isinstance(block, Paragraph):
        return ["".join(map(_inline, block.parts))]
    if isinstance(block, Table):
        columns = len(block.header) if block.header else len(block.rows[0]) if block.rows else 0
        right = [k for k in range(columns) if block.alignment(k) == RIGHT]
        return md_table(block.header or ("",) * columns,
                        [tuple(map(_cell, row)) for row in block.rows], right)
    if isinstance(block, Fields):
        return md_table(("", "value"), [(f.label, _cell(f.value)) for f in block.fields])
    if isinstance(block, Formulas):
        out = []
        for e in block.equations:
            note = f" ({e.note})" if e.note else ""
            out.append(f"- **{e.name}**: T {e.relation} {code(str(e.expr))}{note}")
            if e.regime is not None:
                cond = ", ".join(str(r) for r in e.conditions)
                out.append(f"  = {code(str(e.regime))}" + (f" while {code(cond)}" if cond else ""))
        return out
    if isinstance(block, Listing):
        return ["```", *block.lines, "```"]
    if isinstance(block, Figure):
        return [f"*Figure: {block.caption}*"]
    raise unknown(block, NAME)

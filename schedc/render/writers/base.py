"""What every writer shares: the blocks of its format, in order, a blank line between two
unless the writer keeps them together."""

from __future__ import annotations

from collections.abc import Callable

from ..document import Block, Document


def assemble(document: Document, format_name: str, lines_of: Callable[[Block], list[str]],
             apart: Callable[[Block, Block], bool]) -> str:
    """The lines of each block shown in `format_name`, a blank line between two blocks when
    `apart(previous, block)`, and a final newline; "" for a document with nothing to show."""
    out: list[str] = []
    previous: Block | None = None
    for block in document.blocks:
        if not block.shown_in(format_name):
            continue
        if previous is not None and apart(previous, block):
            out.append("")
        out.extend(lines_of(block))
        previous = block
    return "\n".join(out) + "\n" if previous is not None else ""


def unknown(block: Block, format_name: str) -> TypeError:
    return TypeError(f"the {format_name} writer has no rule for a {type(block).__name__}")

"""The writers of the document model, by format name: the one registry `--format` (and
anything else that writes a `Document`) looks a writer up in."""

from __future__ import annotations

from collections.abc import Callable

from ..document import Document
from . import html, latex, markdown, text

Writer = Callable[[Document], str]

WRITERS: dict[str, Writer] = {
    text.NAME: text.write,
    markdown.NAME: markdown.write,
    latex.NAME: latex.write,
    html.NAME: html.write,
}


def write(format_name: str, document: Document) -> str:
    """The document in the named format (one of WRITERS)."""
    try:
        writer = WRITERS[format_name]
    except KeyError:
        raise ValueError(f"no writer for {format_name!r}; the formats are "
                         f"{', '.join(WRITERS)}") from None
    return writer(document)

"""XML as schedc reads it: an element tree with a position for every element, never through
entities, and what kind of file a root element says it is.

Every XML file schedc reads (MSCCL algorithms, NCCL topology files) comes through `parse`:
expat with a handler that refuses a document type declaration, so no entity is ever declared
(no "billion laughs" expansion) and no external entity names a file to be read. Neither format
has a DOCTYPE: NCCL's own reader (src/graph/xml.cc, xmlGetNode) knows only elements and
comments.

`foreign_kind(root)` names the formats schedc knows by their root element, so a reader handed
the wrong one says which command reads it (`schedc machine import` for an NCCL topology file).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from xml.parsers import expat

from .errors import ParseError, SchedcError, SourceFile, Span


@dataclass
class Element:
    name: str
    attrs: dict[str, str]
    span: Span
    children: list[Element] = field(default_factory=list)
    parent: Element | None = field(default=None, repr=False)


def descendants(root: Element):
    """`root` and every element under it, in document order."""
    stack = [root]
    while stack:
        element = stack.pop()
        yield element
        stack.extend(reversed(element.children))


class _Refused(Exception):
    def __init__(self, message: str, line: int, col: int) -> None:
        super().__init__(message)
        self.message, self.line, self.col = message, line, col


def parse(source: SourceFile, data: bytes, error: type[SchedcError] = ParseError) -> list[Element]:
    """The document's root elements (one, in a well-formed file), each with its position
    (expat reports where a tag starts). A DOCTYPE, and with it any entity declaration, is
    refused at its position; so is malformed XML."""
    parser = expat.ParserCreate()
    stack: list[Element] = []
    roots: list[Element] = []

    def start(name: str, attrs: dict[str, str]) -> None:
        line, col = parser.CurrentLineNumber, parser.CurrentColumnNumber + 1
        element = Element(name, attrs, Span(source, line, col, line, col + len(name) + 1),
                          parent=stack[-1] if stack else None)
        (stack[-1].children if stack else roots).append(element)
        stack.append(element)

    def doctype(*_args) -> None:
        raise _Refused("a document type declaration (<!DOCTYPE ...>): schedc reads XML "
                       "without entities, so none may be declared", parser.CurrentLineNumber,
                       parser.CurrentColumnNumber + 1)

    def entity(*_args) -> None:  # (expat reports declarations only inside a DOCTYPE)
        raise _Refused("an entity declaration: schedc reads XML without entities",
                       parser.CurrentLineNumber, parser.CurrentColumnNumber + 1)

    parser.StartElementHandler = start
    parser.EndElementHandler = lambda name: stack.pop()
    parser.StartDoctypeDeclHandler = doctype
    parser.EntityDeclHandler = entity
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    try:
        parser.Parse(data, True)
    except _Refused as exc:
        raise error(exc.message, Span(source, exc.line, exc.col, exc.line, exc.col + 1)) from None
    except expat.ExpatError as exc:
        line, col = exc.lineno, exc.offset + 1
        if not roots:  # not one element read: nothing says it is XML, so no line of it is shown
            hidden = SourceFile(source.path, source.text, quoted=False)
            raise error(f"not an XML file: {expat.ErrorString(exc.code)} before its first "
                        "element", Span(hidden, line, col, line, col + 1)) from None
        raise error(f"malformed XML: {expat.ErrorString(exc.code)}",
                    Span(source, line, col, line, col + 1)) from None
    return roots


def start_of(source: SourceFile) -> Span:
    """Where to point when a document has no element at all."""
    return Span(source, 1, 1, 1, 2)


# ---- what a root element says the file is

# root element → (what it is, the command that reads it)
KINDS = {
    "system": ("an NCCL topology file", "schedc machine import"),
    "graphs": ("an NCCL graph file (NCCL_GRAPH_DUMP_FILE), not a topology",
               "schedc machine import (with the topology file, NCCL_TOPO_DUMP_FILE)"),
    "algo": ("an MSCCL algorithm", "schedc's MSCCL front end (a .xml FILE to any command)"),
}


def foreign_kind(root: str | Element) -> str | None:
    """`this is an NCCL topology file: use \\`schedc machine import\\`` when the root element
    (or its name) is one of the formats schedc knows (see KINDS); None for any other. A reader
    that expects another format calls it to say which command reads the file it was given
    (the MSCCL reader: `foreign_kind(roots[0].name)`)."""
    kind = KINDS.get(root if isinstance(root, str) else root.name)
    if kind is None:
        return None
    return f"this is {kind[0]}: use `{kind[1]}`"

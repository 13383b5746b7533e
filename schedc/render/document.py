"""The document model: what a command's result says, as blocks that every writer
(`render.writers`: text, Markdown, LaTeX, HTML) sets in its own format.

A command builds its document once (`render.documents`); a writer turns it into a string.
The blocks are few and plain: a heading, a paragraph (text and inline formulas), a table
(with each column's alignment), labelled fields, formulas (SymPy expressions, typeset by each
writer's printer), a figure and a listing of preformatted lines.

Where the formats were designed to say different things (a terminal's summary line that a
paper leaves out, a paper's `align*` of bounds that the terminal shows in its rows), a block
names the `formats` it belongs to; a block without `formats` is in every format. Blocks are
separated by a blank line; in plain text a `tight` block follows the one before it directly,
as lines of one record on a terminal.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy

LEFT, RIGHT = "l", "r"

# The `formats` of blocks that only some formats show.
TEXT, LATEX, MARKDOWN = frozenset({"text"}), frozenset({"latex"}), frozenset({"markdown"})
PAGES = frozenset({"markdown", "latex", "html"})  # documents, not a terminal


@dataclass(frozen=True)
class Math:
    """Formulas inline, joined by ", " when several (a regime's conditions): SymPy's text in
    plain text, a code span in Markdown, `$...$` in a LaTeX table cell, MathML in HTML."""
    exprs: tuple[sympy.Basic, ...]

    @classmethod
    def of(cls, *exprs: sympy.Basic) -> Math:
        return cls(tuple(exprs))

    def text(self) -> str:
        return ", ".join(str(e) for e in self.exprs)


@dataclass(frozen=True)
class Escaped:
    """Text that the Markdown writer escapes as it escapes a table cell (a pipe, a
    backslash) even inside a paragraph: the narrowest cut's name, as `bound --format
    markdown` has always printed it. Plain text everywhere else."""
    text: str


Inline = str | Math | Escaped
Cell = str | Math


def plain(parts: tuple[Inline, ...]) -> str:
    """Inline parts as plain text."""
    return "".join(p if isinstance(p, str) else p.text() if isinstance(p, Math) else p.text
                   for p in parts)


@dataclass(frozen=True, kw_only=True)
class Block:
    """What every block has: the formats it is shown in (None: all of them), and whether
    in plain text it follows the block before it without a blank line."""
    formats: frozenset[str] | None = None
    tight: bool = False

    def shown_in(self, format_name: str) -> bool:
        return self.formats is None or format_name in self.formats


@dataclass(frozen=True, kw_only=True)
class Heading(Block):
    text: str
    level: int = 3
    anchor: str | None = None  # an id to link to (HTML)


@dataclass(frozen=True, kw_only=True)
class Paragraph(Block):
    """Running text; a part may be a formula. Plain text keeps its line breaks."""
    parts: tuple[Inline, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Table(Block):
    """Rows of cells under an optional header. `align` holds each column's alignment (LEFT
    or RIGHT, numbers right); `indent` is plain text's margin, in spaces."""
    header: tuple[str, ...] | None = None
    rows: tuple[tuple[Cell, ...], ...] = ()
    align: str = ""
    indent: int = 0
    wide: tuple[int, ...] = ()  # columns of long text, which HTML wraps at a readable width

    def alignment(self, column: int) -> str:
        return self.align[column] if column < len(self.align) else LEFT


@dataclass(frozen=True)
class Field:
    """One labelled value; a `nested` one qualifies the field before it."""
    label: str
    value: Cell
    nested: bool = False


@dataclass(frozen=True, kw_only=True)
class Fields(Block):
    """Labelled values of one thing (a schedule's time, formula, rounds...): aligned lines in
    plain text, a two-column table elsewhere. A paper typesets formulas apart, so the LaTeX
    writer leaves out the fields whose value is a formula (a `Formulas` block gives them)."""
    fields: tuple[Field, ...] = ()


@dataclass(frozen=True)
class Equation:
    """`T_name relation expr`, then, if given, `= regime` while its `conditions`; `note`
    (a value in words, say) goes after it."""
    name: str
    expr: sympy.Basic
    relation: str = "="  # "=" or "≥"
    regime: sympy.Basic | None = None
    conditions: tuple[sympy.Basic, ...] = ()
    note: str = ""


@dataclass(frozen=True, kw_only=True)
class Formulas(Block):
    """Displayed equations, one after another (one `align*` in LaTeX)."""
    equations: tuple[Equation, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Figure(Block):
    """A plot (`render.plot`'s figure), drawn as inline SVG in HTML; the text formats show
    its caption."""
    figure: object = None
    caption: str = ""
    kind: str = ""  # a CSS class: "curves", "busy"


@dataclass(frozen=True, kw_only=True)
class Listing(Block):
    """Lines laid out already (a terminal's columns with their own continuation lines)."""
    lines: tuple[str, ...] = ()


@dataclass(frozen=True)
class Document:
    blocks: tuple[Block, ...] = ()

    def __add__(self, other: Document) -> Document:
        return Document(self.blocks + other.blocks)

"""Source spans and the error hierarchy: one root, one subclass per pipeline stage.

Every error that bad input can cause is a `SchedcError` carrying the `Span` of the
construct at fault, so the command line can print ``file:line:col``, the source line and a
caret instead of a traceback.
"""

from __future__ import annotations

import bisect
import difflib
import functools
import re
from dataclasses import dataclass, field


@dataclass(frozen=True, eq=False)
class SourceFile:
    """The text of one input: a `.sched` file, or a command-line argument."""

    path: str
    text: str
    # False: a file that is not shown as schedc's (it is not in the format it was given as):
    # errors give its file:line:col but never a line of it (docs/robustness.md).
    quoted: bool = True

    def __post_init__(self) -> None:
        # Python's rule for source text: '\r\n' and a lone '\r' end a line like '\n' (as
        # reading a file with universal newlines does; the same for command-line text).
        if "\r" in self.text:
            object.__setattr__(self, "text", self.text.replace("\r\n", "\n").replace("\r", "\n"))

    def lines(self) -> list[str]:
        """The lines as the lexer counts them: only '\n' ends a line (Lark's rule, and Python's
        tokenizer's), so a form feed, U+0085 or U+2028 is a character of its line."""
        lines = self.text.split("\n")
        return lines[:-1] if len(lines) > 1 and not lines[-1] else lines

    @functools.cached_property
    def _starts(self) -> list[int]:
        """The offset where each line starts, found once: positions and excerpts of a file
        with thousands of errors or rows stay linear in its size (cached_property writes the
        instance's __dict__ directly, which a frozen dataclass allows)."""
        return [0, *(m.end() for m in re.finditer("\n", self.text))]

    def line(self, number: int) -> str:
        starts = self._starts
        if not 0 < number <= len(starts) or number == len(starts) > 1 and \
                starts[-1] == len(self.text):
            return ""
        end = starts[number] - 1 if number < len(starts) else len(self.text)
        return self.text[starts[number - 1]:end]

    def position(self, offset: int) -> tuple[int, int]:
        """(line, column), from 1, of the character at `offset`: a bisection of the line
        starts, not a count from the file's start for each position."""
        line = bisect.bisect_right(self._starts, offset)
        return line, offset - self._starts[line - 1] + 1


# Characters a terminal would move the cursor for or not show (tabs, control characters and
# what str.splitlines() breaks at besides '\n'): one space each, so the caret keeps its column.
_SHOWN_AS_SPACE = {c: " " for c in [*range(32), 0x7f, 0x85, 0x2028, 0x2029]}  # controls too


EXCERPT_WIDTH = 200  # columns of a source line an excerpt shows at most


@dataclass(frozen=True)
class Span:
    """A region of a source file; lines and columns count from 1, the end is exclusive."""

    source: SourceFile = field(compare=False, repr=False)
    line: int
    col: int
    end_line: int
    end_col: int

    def __str__(self) -> str:
        return f"{self.source.path}:{self.line}:{self.col}"

    def excerpt(self) -> str:
        """The source line and a caret line underlining the span; a line longer than
        `EXCERPT_WIDTH` is cut to that many columns around the caret, with '...' where it is
        cut (a 14 MB line is not echoed whole to stderr). Nothing for an unquoted file."""
        if not self.source.quoted:
            return ""
        text = self.source.line(self.line)
        stop = self.end_col if self.end_line == self.line else len(text) + 1
        width = max(1, min(stop, len(text) + 1) - self.col)
        col = self.col
        if len(text) > EXCERPT_WIDTH:
            first = max(0, min(col - 1 - EXCERPT_WIDTH // 2, len(text) - EXCERPT_WIDTH))
            before = "..." if first > 0 else ""
            after = "..." if first + EXCERPT_WIDTH < len(text) else ""
            text = before + text[first:first + EXCERPT_WIDTH] + after
            col = col - first + len(before)
            width = max(1, min(width, EXCERPT_WIDTH + len(before) - col + 1))
        text = text.translate(_SHOWN_AS_SPACE)
        return f"  {text}\n  {' ' * (col - 1)}^{'~' * (width - 1)}"


# A MemoryError, said where it happened (a statement, a schedule, a what-if's failure) by the
# stage that knows, and by the command line, without a position, anywhere else.
OUT_OF_MEMORY = "out of memory here; make this part of the input smaller, or give schedc more memory"


class SchedcError(Exception):
    """Root of every error schedc reports to a user: bad input, exit code 2."""

    exit_code = 2


    def __init__(self, message: str, span: Span | None = None, notes: tuple[str, ...] = ()):
        super().__init__(message)
        self.message = message
        self.span = span
        self.notes = tuple(notes)

    def render(self) -> str:
        where = f"{self.span}: " if self.span else ""
        lines = [f"{where}error: {self.message}"]
        if self.span and self.span.source.quoted:
            lines.append(self.span.excerpt())
        lines.extend(f"  note: {note}" for note in self.notes)
        return "\n".join(lines)


class ParseError(SchedcError):
    """The text is not in the language (lexing and parsing)."""



class LoadError(SchedcError):
    """An import is missing, unreadable or cyclic."""



class ElaborationError(SchedcError):
    """Names, types, units, indices and calls while elaborating to IR."""

    at_call = False  # True once reported at the user's own call (elaborate/schedule.py)



class UnitError(ElaborationError):
    """Quantities of different dimensions were combined, or a unit is unknown."""


class LimitError(ElaborationError):
    """The input asks for more work than the configured limit; refused, not attempted."""


class TopologyError(SchedcError):
    """A topology is malformed, or a transfer has no route (lowering)."""



class CostError(SchedcError):
    """A cost cannot be formed (e.g. a bandwidth that is not positive)."""



class SolveError(SchedcError):
    """An equation cannot be solved as asked."""



class UsageError(SchedcError):
    """A command-line argument is wrong."""


class VerificationFailed(SchedcError):
    """A schedule whose time was asked for does not compute its collective (exit code 1).

    `message` holds the counterexamples, one block per schedule."""

    exit_code = 1

    def render(self) -> str:
        return self.message


def did_you_mean(name: str, known: list[str], listing: str | None = None) -> str:
    """The end of an unknown-name message: "; did you mean 'x'?" when a known name is close,
    else " (LISTING: a, b)" when a listing is wanted and there is something to list, else ""."""
    close = difflib.get_close_matches(name, known, n=1)
    if close:
        return f"; did you mean '{close[0]}'?"
    return f" ({listing}: {', '.join(known)})" if listing and known else ""


def decode_source(path: str, data: bytes, error: type[SchedcError]) -> SourceFile:
    """The UTF-8 text of an input, or `error` at the line and column of its first byte that is
    not UTF-8 (a binary file): the line shown with U+FFFD where the bad bytes are."""
    try:
        return SourceFile(path, data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        before = SourceFile(path, data[:exc.start].decode("utf-8"))  # lines end as the lexer's
        line = before.text.count("\n") + 1
        col = len(before.text) - before.text.rfind("\n")  # characters, as the lexer counts
        shown = SourceFile(path, data.decode("utf-8", errors="replace"))
        raise error(f"byte 0x{data[exc.start]:02x} is not UTF-8 text ({exc.reason}); "
                    "schedc reads UTF-8 text files", Span(shown, line, col, line, col + 1)) from None

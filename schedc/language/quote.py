"""Text that schedc writes into `.sched` source: the one place that makes it safe.

Everything schedc generates as `.sched` (`machine import`, `calibrate --write`, `synthesize`
and any later writer) passes every piece of text it did not write itself — a name read from a
topology file, a file's path, the command line — through one of these, so that the generated
file parses to exactly the statements its writer meant and no input can add one:

- `comment(text)`: the rest of a `#` comment. The lexer ends a comment only at a line break
  (`COMMENT: /#[^\\n]*/`, with '\\r' and '\\r\\n' read as '\\n': `errors.SourceFile`), so every
  character that is not printable — line breaks, other control characters, U+2028, a lone
  surrogate from an undecodable file name — is written as a visible escape (`\\n`, `\\x1b`,
  `\\u2028`); a backslash is doubled, so the escape is unambiguous.
- `string(text)`: a `"..."` literal (`import`). The grammar has no escapes in strings
  (`STRING: /"[^"\\n]*"/`), so a quote or an unprintable character is refused.
- `name(text)`: an identifier (`param`, `let`, a schedule), refused unless the parser
  reads it as that one name.

A refusal is a `UsageError` naming what was refused and why. tests/test_quote.py checks the
promise with Hypothesis: any text in, the generated source parses to the intended statements.
"""

from __future__ import annotations

import re

from ..errors import SchedcError, SourceFile, UsageError

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_QUOTE = '"'
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}


def _escape(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 \
        else f"\\U{code:08x}"


def comment(text: str) -> str:
    """`text` as the rest of one `#` comment line: printable characters as they are (a
    space too), a backslash doubled, every other character a visible escape."""
    return "".join(c if c == " " or c.isprintable() and c != "\\" else _escape(c)
                   for c in str(text))


def string(text: str, what: str = "a path") -> str:
    """`text` as a `"..."` literal of the language, or a UsageError: the grammar's strings
    have no escapes, so a '"' or an unprintable character cannot be written."""
    bad = next((c for c in text if c == '"' or not (c == " " or c.isprintable())), None)
    if bad is not None:
        raise UsageError(f"{what} {comment(text)!r} cannot be written into a .sched file: "
                         f"it holds {'a quote' if bad == _QUOTE else _escape(bad)}, which "
                         "the language's strings cannot")
    return f'"{text}"'


def name(text: str, what: str = "a name") -> str:
    """`text` as an identifier of the language, or a UsageError: a letter or '_' then
    letters, digits and '_', that the parser reads as that name where one is declared and
    where one is used (`let N = N`: the contextual lexer lets even `for` be a name)."""
    if _NAME.fullmatch(text) and text not in _NAMES_READ:
        from .parser import parse_module
        from .syntax import Let, Name
        try:
            body = parse_module(SourceFile("<name>", f"let {text} = {text}\n")).body
        except SchedcError:
            body = ()
        if len(body) == 1 and isinstance(body[0], Let) and body[0].name == text and \
                isinstance(body[0].value, Name) and body[0].value.id == text:
            _NAMES_READ.add(text)
    if text not in _NAMES_READ:
        raise UsageError(f"{what} {comment(text)!r} cannot be written into a .sched file: a "
                         "name is a letter or '_' then letters, digits and '_'")
    return text


_NAMES_READ: set[str] = set()  # names the parser has read as names


__all__ = ["comment", "name", "string"]

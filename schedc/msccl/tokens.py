"""The executors' own XML tokenizer, re-enacted: what it refuses that a real XML parser takes.

Both executors read MSCCL files with NCCL's hand-written tokenizer, not an XML parser:
Azure/msccl-executor-nccl `src/misc/msccl/msccl_parser.cc` (`mscclXmlGetNode`, lines 18-157)
and microsoft/msccl `src/graph/xml.cc` (`xmlGetNode`, lines 40-160), the same code. It skips
only ' ', '\\n' and '\\r' between tags (no tabs, no text); after a tag's name and after each
attribute value it expects ' ', '/' or '>' (a newline between attributes, or the '?' of an
`<?xml ...?>` declaration, is "expected >"); values are in double quotes, with nothing
around '='; a name is at most 254 characters and a value is copied into a 256-byte buffer
without a bound check. `scan` walks the text the same way and reports where it would stop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_STR_LEN = 255  # msccl_parser.h:20
BETWEEN_TAGS = " \n\r"  # msccl_parser.cc:107
NAME_ENDS = " >/\n\r"  # msccl_parser.cc:75


@dataclass(frozen=True)
class TokenProblem:
    offset: int  # in the text, where the tokenizer stops
    message: str
    line: int  # the source line of msccl_parser.cc that refuses


# A tag the tokenizer reads as written: a name, attributes one space apart in double quotes
# (values of at most 255 characters), then `>`, `/>` or ` />`; or a closing tag.
_TAG = re.compile(r'<(?:/[^ >/\n\r]{0,254}|[^ >/\n\r!?]{1,254}(?: [^ =>/\n\r"]+="[^"]{0,255}")*'
                  r'(?: ?/)?)>')
_PIECES = re.compile(r"<!--.*?-->|<[^>]*>", re.S)


def scan(text: str) -> TokenProblem | None:
    """The first place the executors' tokenizer fails on `text`, or None."""
    at = 0
    for match in _PIECES.finditer(text):  # the common case, at regex speed
        if text[at:match.start()].strip(BETWEEN_TAGS) or not (
                match.group().startswith("<!--") or _TAG.fullmatch(match.group())):
            return _scan(text)
        at = match.end()
    return _scan(text) if text[at:].strip(BETWEEN_TAGS) else None


def _scan(text: str) -> TokenProblem | None:
    """`scan` character by character, as mscclXmlGetNode reads."""
    n, k = len(text), 0
    while True:
        while k < n and text[k] in BETWEEN_TAGS:
            k += 1
        if k >= n:
            return None
        if text[k] != "<":
            return TokenProblem(k, f"expecting '<', got {text[k]!r}: the executors' tokenizer "
                                "skips only spaces and newlines between tags (no tabs, no text)",
                                111)
        k += 1
        if text.startswith("!--", k):  # a comment runs to the first "-->" (line 93)
            end = text.find("-->", k + 3)
            if end < 0:
                return TokenProblem(k, "an unterminated comment", 98)
            k = end + 3
            continue
        name, k, last = _token(text, k)
        if name is None:
            return TokenProblem(k, "the file ends inside a tag", 20)
        if len(name) >= MAX_STR_LEN:
            return TokenProblem(k, f"a tag name of {len(name)} characters (at most "
                                f"{MAX_STR_LEN - 1})", 71)
        if name == "" and last == "/":  # a closing tag
            name, k, last = _token(text, k)
            if last != ">":
                return TokenProblem(k - 1, f"unexpected {last!r} in a closing tag", 129)
            continue
        while last == " ":
            key, k, last, value_problem = _attribute(text, k)
            if value_problem is not None:
                return value_problem
        if last == "/":
            _, k, last = _token(text, k)
        if last != ">":
            shown = "end of file" if last is None else repr(last)
            why = " (an `<?xml ...?>` declaration: the tokenizer does not know it)" \
                if name.startswith("?") else \
                " (attributes must be on the tag's line, one space apart)" \
                if last is not None and last in "\n\r\t" else ""
            return TokenProblem(max(k - 1, 0), f"expected '>', got {shown}{why}", 153)


def _token(text: str, k: int) -> tuple[str | None, int, str | None]:
    """A name up to ' ', '>', '/', newline (mscclXmlGetToken without a value): (name, the
    position after the character that ended it, that character)."""
    start = k
    while k < len(text):
        c = text[k]
        k += 1
        if c in NAME_ENDS:
            return text[start:k - 1], k, c
    return None, k, None


def _attribute(text: str, k: int) -> tuple[str, int, str | None, TokenProblem | None]:
    """One `key="value"` after a space, as mscclXmlGetToken with a value reads it."""
    start = k
    while k < len(text):
        c = text[k]
        k += 1
        if c == "=":
            key = text[start:k - 1]
            if k >= len(text) or text[k] != '"':
                got = "end of file" if k >= len(text) else repr(text[k])
                return key, k, None, TokenProblem(k, f"attribute '{key}': expected a double quote, "
                                                  f"got {got}", 40)
            close = text.find('"', k + 1)
            if close < 0:
                return key, k, None, TokenProblem(k, "a value without its closing quote", 20)
            value = text[k + 1:close]
            if len(value) > MAX_STR_LEN:
                return key, k, None, TokenProblem(k, f"attribute '{key}': a value of {len(value)} "
                                                  f"characters overflows the tokenizer's "
                                                  f"{MAX_STR_LEN + 1}-byte buffer", 47)
            after = close + 1
            return key, after + 1, text[after] if after < len(text) else None, None
        if c in NAME_ENDS:
            if k - start > MAX_STR_LEN:
                return "", k, c, TokenProblem(start, "an attribute name too long", 71)
            return text[start:k - 1], k, c, None
    return "", k, None, None

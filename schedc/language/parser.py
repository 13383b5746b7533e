"""Text → AST. Lark (LALR) does the parsing, `transform` builds the `syntax` nodes; this
module runs the parser and turns Lark's errors into diagnostics a user can act on (unknown
units, percent notes, nesting depth, a collective's missing words).

No semantics here: names are not resolved and units are not checked.
"""

from __future__ import annotations

import re
from functools import cache
from importlib.resources import files

from lark import (
    Lark,
    Token,
    Tree,
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedToken,
)
from lark.exceptions import VisitError

from ..errors import ParseError, SourceFile, Span
from ..units import near_units, unknown_unit
from . import syntax as ast
from .transform import to_ast, token_span

# What a terminal is called in an error message.
_TERMINAL_NAMES = {
    "NAME": "a name",
    "NUMBER": "a number",
    "PERCENT": "a percentage",
    "STRING": 'a string ("...")',
    "UNIT": "a unit",
    "_NL": "a new line",
    "$END": "the end of the input",
    "COMP_OP": "a comparison",
    "EQUALS": "'='",
    "ADD_OP": "'+' or '-'",
    "MUL_OP": "'*', '/', '//' or '%'",
    "LINK_DIR": "'<->' or '->'",
}


# Bounds on the parse itself, checked token by token as the lexer makes them, so that a
# 14 MB line is refused at its 5,001st operator, not after Lark has built a tree of millions
# of nodes (74 s and 4.9 GB for `report y = 1 + 1 + ...`, issue 36 r12). Lark takes about
# 30 µs a token: the largest shipped file has about 3,000; 100,000 take about 3 s.
MAX_TOKENS = 100_000
MAX_CHAIN = 5_000  # operators in a row at one bracket level: a tree at least that deep, or
# (mixing precedences) a fraction of it; MAX_NESTING then says which exactly
_OPERATORS = frozenset({"ADD_OP", "MUL_OP", "COMP_OP", "BOR_OP", "XOR_OP", "AND_OP",
                        "POW_OP", "SHIFT_OP", "AND", "OR", "NOT", "IF", "ELSE"})


class _TooMuch(Exception):
    """Internal: the token at which a parse bound ran out, and why."""

    def __init__(self, token: Token, message: str) -> None:
        super().__init__(message)
        self.token, self.message = token, message


class _BracketNewlines:
    """Post-lexer: newlines inside (...) and [...] do not end a statement; and the bounds
    above, before the parser sees the token past them."""

    always_accept = ("_NL",)

    def process(self, stream):
        depth = count = 0
        chains = [0]  # operators in a row, per open bracket
        for token in stream:
            count += 1
            if count > MAX_TOKENS:
                raise _TooMuch(token, f"more than {MAX_TOKENS:,} tokens to parse; split the "
                                      "file (with imports)")
            kind = token.type
            if kind in ("LPAR", "LSQB"):
                depth += 1
                if depth > MAX_NESTING:
                    raise _TooMuch(token, f"brackets nested more than {MAX_NESTING} levels "
                                          "deep; split it up (with 'let')")
                chains.append(0)
            elif kind in ("RPAR", "RSQB"):
                depth = max(0, depth - 1)
                if len(chains) > 1:
                    chains.pop()
            elif kind == "_NL" and depth:
                continue
            elif kind in _OPERATORS:
                chains[-1] += 1
                if chains[-1] > MAX_CHAIN:
                    raise _TooMuch(token, f"more than {MAX_CHAIN:,} operators in a row: this "
                                          f"is nested more than {MAX_NESTING} levels deep; "
                                          "split it up (with 'let', or more schedules)")
            elif kind in ("COMMA", "_NL"):
                chains[-1] = 0
            yield token


def _grammar_text() -> str:
    """The grammar, shipped inside this package (package data of `schedc.language`)."""
    return files(__package__).joinpath("schedc.lark").read_text(encoding="utf-8")


@cache
def _lark() -> Lark:
    grammar = _grammar_text()
    return Lark(
        grammar,
        parser="lalr",
        start=["start", "equation", "expr"],
        postlex=_BracketNewlines(),
        propagate_positions=True,
        maybe_placeholders=True,
        cache=True,
    )


def parse_module(source: SourceFile) -> ast.Module:
    """Parse a whole `.sched` file."""
    body = _parse(source, "start")
    return ast.Module(source.path, tuple(body), span=Span(source, 1, 1, 1, 1))


def parse_equation(source: SourceFile) -> ast.Relation:
    """Parse a relation such as ``time(hierarchical) = time(ring, B_L = 32 GB/s)``."""
    return _parse(source, "equation")


def parse_expression(source: SourceFile) -> ast.Expr:
    """Parse one expression, e.g. the value of ``--set B_L=300GB/s``."""
    return _parse(source, "expr")


def _parse(source: SourceFile, start: str):
    text = source.text if source.text.endswith("\n") or start != "start" else source.text + "\n"
    try:
        tree = _lark().parse(text, start=start)
        _check_nesting(tree, source)
        return to_ast(tree, source)
    except _TooMuch as exc:
        raise ParseError(exc.message, token_span(source, exc.token)) from None
    except UnexpectedCharacters as exc:
        _check_unit(source, exc.line, exc.column)
        at = len(text) if exc.pos_in_stream is None else exc.pos_in_stream
        bad = text[at] if at < len(text) else ""
        span = Span(source, exc.line, exc.column, exc.line, exc.column + 1)
        raise ParseError(f"unexpected character {bad!r}; expected {_expected(exc.allowed)}",
                         span) from None
    except UnexpectedEOF as exc:
        line = max(1, len(source.lines()))
        col = len(source.line(line)) + 1
        raise ParseError(f"unexpected end of input; expected {_expected(exc.expected)}",
                         Span(source, line, col, line, col + 1)) from None
    except UnexpectedToken as exc:
        token = exc.token
        if token.type == "$END":
            line = max(1, len(source.lines()))
            col = len(source.line(line)) + 1
            span = Span(source, line, col, line, col + 1)
            found = "end of input"
        else:
            _check_unit(source, token.line, token.column)
            span = token_span(source, token)
            found = "new line" if token.type == "_NL" else repr(str(token))
        expected = _expected(exc.accepts or exc.expected)
        raise _misplaced(exc, found, span) or _after_statement_name(exc, source, found) or ParseError(
            f"unexpected {found}; expected {expected}", span, _percent_note(source, span)) from None
    except VisitError as exc:  # an error raised by a transformer callback
        if isinstance(exc.orig_exc, ParseError):
            raise exc.orig_exc from None
        raise


# A number literal, then the word where parsing failed: a unit schedc does not know.
_NUMBER_BEFORE = re.compile(r"(?:^|[^\w.])\d+(?:\.\d+)?(?:[eE][+-]?\d+)?[ \t]*$")
_UNIT_WORD = re.compile(r"[A-Za-z\u00b5\u03bc][A-Za-z0-9\u00b5\u03bc]*(?:[ \t]*/[ \t]*[A-Za-z]+)?")


def _check_unit(source: SourceFile, line: int, col: int) -> None:
    """`50 Gb/s`, `0.83 usec`: say "unknown unit" and what was meant, not "unexpected 'Gb'"."""
    text = source.line(line)
    word = _UNIT_WORD.match(text, col - 1)
    if word and _NUMBER_BEFORE.search(text[:col - 1]) and near_units(word.group()):
        raise ParseError(unknown_unit(word.group()),
                         Span(source, line, col, line, col + len(word.group()))) from None


def _percent_note(source: SourceFile, span: Span) -> tuple[str, ...]:
    """`7%3`: the '%' glued to the 7 made it 7 percent."""
    if re.search(r"\d%[ \t]*$", source.line(span.line)[:span.col - 1]):
        return ("'%' directly after a number is percent (50%); for modulo put a space before "
                "it (7 % 3)",)
    return ()


MAX_NESTING = 200  # levels of the syntax tree; every later pass recurses once per level


def _check_nesting(tree: Tree, source: SourceFile) -> None:
    """Refuse a tree nested too deeply for the recursive passes after parsing (Python's stack
    holds about 1,000 frames), at the construct where it gets too deep."""
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_NESTING:
            meta = node.meta
            span = Span(source, meta.line, meta.column, meta.end_line, meta.end_column) \
                if not meta.empty else None
            raise ParseError(f"this is nested more than {MAX_NESTING} levels deep; "
                             "split it up (with 'let', or more schedules)", span)
        stack.extend((child, depth + 1) for child in node.children if isinstance(child, Tree))


# Terminals that can start an expression; an error lists them as one item.
_EXPRESSION_START = {"NAME", "NUMBER", "PERCENT", "STRING", "LPAR", "LSQB", "ADD_OP", "ALL", "NONE",
                     "NOT", "PART", "SOLVE", "TIME"}


def _expected(terminals) -> str:
    terminals = set(terminals)
    names = sorted({_terminal_name(t) for t in terminals - _EXPRESSION_START
                    if not t.startswith("__")})
    if terminals & _EXPRESSION_START:
        names.insert(0, "an expression")
    if not names:
        return "something else"
    if len(names) > 8:
        names = names[:8] + ["..."]
    return ", ".join(names) if len(names) < 3 else ", ".join(names[:-1]) + " or " + names[-1]


def _terminal_name(terminal: str) -> str:
    if terminal in _TERMINAL_NAMES:
        return _TERMINAL_NAMES[terminal]
    pattern = _lark().get_terminal(terminal).pattern
    if pattern.type == "str":
        return repr(pattern.value)
    return terminal.lower()



def _after_statement_name(exc: UnexpectedToken, source: SourceFile,
                          found: str) -> ParseError | None:
    """A top-level statement that starts with a name is a collective (`allreduce V over g`);
    when the name is followed by nothing a collective can take, say so (`V = 3` is a
    forgotten `param`, more often than not)."""
    stack = exc.interactive_parser.parser_state.value_stack if exc.interactive_parser else []
    opening = bool(stack) and isinstance(stack[-1], Token) and stack[-1].type in ("NAME", "REDUCE")
    if not opening or any(not (isinstance(item, Tree) and item.data in ("_top", "_sep"))
                          for item in stack[:-1]):
        return None
    name = stack[-1]
    hint = f" (define a name with 'param {name} = ...' or 'let {name} = ...')" \
        if exc.token.type == "EQUALS" else ""
    start, end = token_span(source, name), token_span(source, exc.token)
    span = Span(source, start.line, start.col, end.end_line, end.end_col) \
        if exc.token.type != "$END" else start
    belongs = [there for _, there, starts in _BLOCKS[1:] if str(name).upper() in starts]
    if belongs:  # `round {` as the first statement: the keyword was read as a name
        return ParseError(f"unexpected '{name}' at the top level: a '{name}' statement belongs "
                          f"{belongs[0]}", start)
    return ParseError(f"unexpected {found} after '{name}'; a statement starting with a name "
                      f"declares a collective, as in 'allreduce V over ranks'{hint}", span)


# Where each statement goes (docs/language.md, "Where statements go"), by the keyword that
# starts it; `let`, `if`, `for`, `error` and `reduce` start statements in more than one block.
_BLOCKS = (  # (where a parse is, where a statement belongs, the keywords only it starts with)
    ("at the top level", "at the top level of the file, outside every block",
     {"PARAM", "SET", "IMPORT", "STARTUP", "BUDGET", "EXPECT", "REPORT", "TOPOLOGY", "PROTOCOL",
      "SCHEDULE"}),
    ("in a topology block", "inside 'topology { ... }'",
     {"GPU", "NIC", "SWITCH", "HOST", "LINK", "SHARED", "ROUTE", "ROUTING"}),
    ("in a schedule's body", "in a schedule's body ('schedule NAME { ... }')",
     {"ROUND", "PARALLEL", "COPY", "SEND"}),
)


def _misplaced(exc: UnexpectedToken, found: str, span: Span) -> ParseError | None:
    """A statement in the wrong block (`routing prefer nvlink` at the top level, `param`
    inside a topology): say where it is and the block it belongs to, not the long list of what
    this block takes."""
    accepts = set(exc.accepts or exc.expected)
    here = [at for at, _, starts in _BLOCKS if starts & accepts]
    belongs = [there for _, there, starts in _BLOCKS if exc.token.type in starts]
    if not here or not belongs:
        return None
    return ParseError(f"unexpected {found} {here[0]}: a '{exc.token}' statement belongs "
                      f"{belongs[0]}", span)

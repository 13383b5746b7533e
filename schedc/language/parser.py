"""Text → AST. Lark (LALR) does the parsing; this module only builds `syntax` nodes.

No semantics here: names are not resolved and units are not checked.
"""

from __future__ import annotations

import re
from contextvars import ContextVar
from functools import cache
from importlib.resources import files
from typing import Any

from lark import (
    Lark,
    Token,
    Transformer,
    Tree,
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedToken,
    v_args,
)
from lark.exceptions import VisitError

from .. import magnitude
from ..errors import ParseError, SourceFile, Span
from ..units import near_units, unknown_unit
from . import syntax as ast

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


class _BracketNewlines:
    """Post-lexer: newlines inside (...) and [...] do not end a statement."""

    always_accept = ("_NL",)

    def process(self, stream):
        depth = 0
        for token in stream:
            if token.type in ("LPAR", "LSQB"):
                depth += 1
            elif token.type in ("RPAR", "RSQB"):
                depth = max(0, depth - 1)
            elif token.type == "_NL" and depth:
                continue
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
        token = _SOURCE.set(source)
        try:
            return _ToAst().transform(tree)
        finally:
            _SOURCE.reset(token)
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
            span = _token_span(source, token)
            found = "new line" if token.type == "_NL" else repr(str(token))
        expected = _expected(exc.accepts or exc.expected)
        raise _after_statement_name(exc, source, found) or ParseError(
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
    start, end = _token_span(source, name), _token_span(source, exc.token)
    span = Span(source, start.line, start.col, end.end_line, end.end_col) \
        if exc.token.type != "$END" else start
    return ParseError(f"unexpected {found} after '{name}'; a statement starting with a name "
                      f"declares a collective, as in 'allreduce V over ranks'{hint}", span)


def _token_span(source: SourceFile, token: Token) -> Span:
    line, col = token.line or 1, token.column or 1  # tokens from the lexer have both
    return Span(source, line, col, token.end_line or line, token.end_column or col + 1)



# The source being transformed, so that spans can be made without threading it through Lark.
_SOURCE: ContextVar[SourceFile] = ContextVar("schedc_source")


def _with_span(method, data, children, meta):
    """Call each transformer method as method(children, span)."""
    source = _SOURCE.get()
    if meta.empty:
        return method(children, Span(source, 1, 1, 1, 1))
    return method(children, Span(source, meta.line, meta.column, meta.end_line, meta.end_column))


@v_args(wrapper=_with_span)
class _ToAst(Transformer):
    """Lark tree → `syntax` nodes. Methods are named after grammar rules and aliases."""

    def __default__(self, data, children, meta):
        raise NotImplementedError(f"no AST for grammar rule {data!r}")

    # ---- top level
    def start(self, c, span):
        return _Seq(x for x in c if x is not None)

    def import_stmt(self, c, span):
        return ast.Import(str(c[0])[1:-1], span=span)

    def param_stmt(self, c, span):
        return ast.ParamDecl(str(c[0]), c[1], span=span)

    def set_stmt(self, c, span):
        return ast.SetParam(str(c[0]), c[1], span=span)

    def let_stmt(self, c, span):
        return ast.Let(str(c[0]), c[1], span=span)

    def startup_stmt(self, c, span):
        return ast.Startup(c[0], span=span)

    def budget_stmt(self, c, span):
        return ast.Budget(c[0], span=span)

    def report_stmt(self, c, span):
        return ast.Report(str(c[0]), c[1], span=span)

    def expect_stmt(self, c, span):
        return ast.Expect(c[0], c[1], span=span)

    def relation(self, c, span):
        op = str(c[1])
        if op in ("==", "!="):
            raise ParseError(f"'{op}' is not a relation; use '=', '<=', '>=', '<' or '>'",
                             _token_span(_SOURCE.get(), c[1]))
        return ast.Relation(op, c[0], c[2], span=span)

    def collective(self, c, span):
        return ast.CollectiveDecl(c[0], c[1], c[2], c[3], span=span)

    def collective_kind(self, c, span):
        return str(c[0])

    def schedule_def(self, c, span):
        name, formals, nccl, body = str(c[0]), c[1], c[2], c[3]
        return ast.ScheduleDef(name, formals, _stmts(body), nccl, span=span)

    def nccl_as(self, c, span):
        return ast.NcclName(str(c[0]), str(c[1]), span=span)

    def formals(self, c, span):
        return tuple(x for x in c if x is not None)

    def formal(self, c, span):
        return ast.Formal(str(c[0]), c[1], span=span)

    # ---- topology
    def topology(self, c, span):
        return ast.Topology(c[0], span=span)

    def topo_block(self, c, span):
        return tuple(x for x in c if x is not None)

    def device_decl(self, c, span):
        kind, *names, forwards, reduces = c
        return ast.DeviceDecl(kind, tuple(names), forwards is not None, reduces is not None,
                              span=span)

    def protocol_stmt(self, c, span):
        return ast.Protocol(str(c[0]), tuple(c[1:]), span=span)

    def proto_alpha(self, c, span):
        return ast.ProtocolAttr("alpha", None, c[0], span=span)

    def proto_eff(self, c, span):
        return ast.ProtocolAttr("eff", None, c[0], span=span)

    def proto_class_alpha(self, c, span):
        return ast.ProtocolAttr("alpha", str(c[0]), c[1], span=span)

    def proto_class_cap(self, c, span):
        return ast.ProtocolAttr("cap", str(c[0]), c[1], span=span)

    def device_kind(self, c, span):
        return str(c[0])

    def decl_name(self, c, span):
        return ast.DeclName(str(c[0]), c[1], span=span)

    def host_decl(self, c, span):
        return ast.HostDecl(c[0], c[1], span=span)

    def link_decl(self, c, span):
        a, direction, b, *rest = c
        attrs = _link_attrs([x for x in rest if isinstance(x, tuple)])
        clauses = tuple(x for x in rest if isinstance(x, ast.CompFor))
        return ast.LinkDecl(a, b, str(direction) == "<->", attrs, clauses, span=span)

    def routing_policy(self, c, span):
        return ast.RoutingPolicy(str(c[0]), span=span)

    def route_decl(self, c, span):
        a, direction, b, via, *clauses = c
        return ast.RouteDecl(a, b, str(direction) == "<->", via or (), tuple(clauses), span=span)

    def route_via(self, c, span):
        return tuple(c)

    def shared_decl(self, c, span):
        return ast.SharedDecl(c[0], _link_attrs(c[1:]), span=span)

    def attr_bw(self, c, span):
        return ("bw", c[0], span)

    def attr_class(self, c, span):
        return ("cls", str(c[0]), span)

    def attr_via(self, c, span):
        return ("via", tuple(c), span)

    def attr_half(self, c, span):
        return ("half", True, span)

    def attr_latency(self, c, span):
        return ("latency", c[0], span)

    def attr_window(self, c, span):
        return ("window", c[0], span)

    # ---- schedule statements
    def block(self, c, span):
        return _Seq(x for x in c if x is not None)

    def for_stmt(self, c, span):
        return ast.For(str(c[0]), c[1], _stmts(c[2]), span=span)

    def round_for(self, c, span):
        return ast.RoundFor(str(c[0]), c[1], _stmts(c[2]), span=span)

    def round_stmt(self, c, span):
        return ast.RoundBlock(_stmts(c[0]), span=span)

    def parallel_for(self, c, span):
        return ast.ParallelFor(str(c[0]), c[1], _stmts(c[2]), span=span)

    def parallel_block(self, c, span):
        return ast.ParallelBlock(_stmts(c[0]), span=span)

    def if_stmt(self, c, span):
        cond, then, orelse = c
        return ast.If(cond, _stmts(then), _stmts(orelse) if orelse is not None else (), span=span)

    def if_line(self, c, span):
        return ast.If(c[0], _stmts(c[1]), span=span)

    def transfer(self, c, span):
        return ast.Transfer(c[0], c[1], c[2], c[3], c[4], span=span)

    def transfer_op(self, c, span):
        return str(c[0])

    def send(self, c, span):
        return ast.Send(c[0], c[1], c[2], span=span)

    def call_stmt(self, c, span):
        return ast.CallStmt(self.call(c, span), span=span)

    def error_stmt(self, c, span):
        return ast.Fail(str(c[0])[1:-1], tuple(c[1:]), span=span)

    # ---- expressions
    def range(self, c, span):
        return ast.Range(c[0], c[1], span=span)

    def or_(self, c, span):
        return ast.BoolOp("or", c[0], c[1], span=span)

    def and_(self, c, span):
        return ast.BoolOp("and", c[0], c[1], span=span)

    def not_(self, c, span):
        return ast.Not(c[0], span=span)

    def compare(self, c, span):
        return ast.Compare(str(c[1]), c[0], c[2], span=span)

    def binop(self, c, span):
        return ast.BinOp(str(c[1]), c[0], c[2], span=span)

    def unary(self, c, span):
        return ast.UnaryOp(str(c[0]), c[1], span=span)

    def index(self, c, span):
        return ast.Index(c[0], c[1], span=span)

    def attr(self, c, span):
        return ast.Attr(c[0], str(c[1]), span=span)

    def call(self, c, span):
        name, args = str(c[0]), c[1] or ()
        positional = tuple(a for a in args if not isinstance(a, ast.Keyword))
        keywords = tuple(a for a in args if isinstance(a, ast.Keyword))
        return ast.Call(name, positional, keywords, span=span)

    def args(self, c, span):
        seen_keyword = False
        for arg in c:
            if isinstance(arg, ast.Keyword):
                seen_keyword = True
            elif seen_keyword:
                raise ParseError("a positional argument cannot follow a keyword argument",
                                 arg.span)
        return tuple(c)

    def kwarg(self, c, span):
        return ast.Keyword(str(c[0]), c[2], span=span)

    def number(self, c, span):
        value = magnitude.literal(str(c[0]))
        if value is None:
            raise ParseError(magnitude.TOO_LARGE, _token_span(_SOURCE.get(), c[0]))
        return ast.Number(value, str(c[1]) if c[1] is not None else None, span=span)

    def percent(self, c, span):  # `50%`: the literal and its '%' are one token
        value = magnitude.literal(str(c[0])[:-1])
        if value is None:
            raise ParseError(magnitude.TOO_LARGE, _token_span(_SOURCE.get(), c[0]))
        return ast.Number(value, "%", span=span)

    def conditional(self, c, span):
        return ast.Conditional(c[1], c[0], c[2], span=span)

    def name(self, c, span):
        return ast.Name(str(c[0]), span=span)

    def string(self, c, span):
        return ast.String(str(c[0])[1:-1], span=span)

    def none(self, c, span):
        return ast.NoneLit(span=span)

    def list(self, c, span):
        return ast.ListLit(tuple(x for x in c if x is not None), span=span)

    def comprehension(self, c, span):
        return ast.ListComp(c[0], tuple(c[1:]), span=span)

    def comp_for(self, c, span):
        return ast.CompFor(str(c[0]), c[1], c[2], span=span)

    def all_region(self, c, span):
        return ast.AllRegion(span=span)

    def part(self, c, span):
        return ast.Part(c[0], c[1], c[2], span=span)

    def time_of(self, c, span):
        return ast.TimeOf(str(c[0]), tuple(c[1:]), span=span)

    def solve_of(self, c, span):
        return ast.SolveOf(c[0], str(c[1]), span=span)


class _Seq(tuple):
    """A statement list coming out of a block (distinguishes it from a single statement)."""


def _stmts(body) -> tuple:
    return tuple(body) if isinstance(body, _Seq) else (body,)


def _link_attrs(attrs) -> ast.LinkAttrs:
    values: dict[str, Any] = {}
    for key, value, attr_span in attrs:
        if key in values:
            raise ParseError(f"'{'class' if key == 'cls' else key}' is given twice", attr_span)
        values[key] = value
    return ast.LinkAttrs(**values)

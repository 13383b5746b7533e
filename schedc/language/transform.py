"""Lark tree → `syntax` nodes: one transformer method per grammar rule or alias.

No semantics here: names are not resolved and units are not checked.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from lark import Token, Transformer, Tree, v_args

from .. import magnitude
from ..errors import ParseError, SourceFile, Span
from . import statements as st
from . import syntax as ast


def to_ast(tree: Tree, source: SourceFile) -> Any:
    """The `syntax` node(s) of a parse tree of `source`."""
    token = _SOURCE.set(source)
    try:
        return _ToAst().transform(tree)
    finally:
        _SOURCE.reset(token)


def token_span(source: SourceFile, token: Token) -> Span:
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

    def step_stmt(self, c, span):
        return ast.StepCost(str(c[0]), token_span(_SOURCE.get(), c[0]),
                            c[1] if len(c) > 1 else None, span=span)

    def budget_stmt(self, c, span):
        return ast.Budget(c[0], span=span)

    def report_stmt(self, c, span):
        return ast.Report(str(c[0]), c[1], span=span)

    def guard_stmt(self, c, span):
        return ast.Guard(c[0], c[1].message, c[1].values, span=span)

    def expect_stmt(self, c, span):
        return ast.Expect(c[0], c[1], span=span)

    def relation(self, c, span):
        op = str(c[1])
        if op in ("==", "!="):
            raise ParseError(f"'{op}' is not a relation; use '=', '<=', '>=', '<' or '>'",
                             token_span(_SOURCE.get(), c[1]))
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
        kind, *names, forwards, reduces, sm = c
        return ast.DeviceDecl(kind, tuple(names), forwards is not None, reduces is not None,
                              sm, span=span)

    def protocol_stmt(self, c, span):
        return ast.Protocol(str(c[0]), tuple(c[1:]), token_span(_SOURCE.get(), c[0]), span=span)

    def proto_alpha(self, c, span):
        return ast.ProtocolAttr("alpha", None, c[0], span=span)

    def proto_launch(self, c, span):
        return ast.ProtocolAttr("launch", None, c[0], span=span)

    def proto_eff(self, c, span):
        return ast.ProtocolAttr("eff", None, c[0], span=span)

    def proto_class_alpha(self, c, span):
        return ast.ProtocolAttr("alpha", str(c[0]), c[1], span=span)

    def proto_class_cap(self, c, span):
        return ast.ProtocolAttr("cap", str(c[0]), c[1], span=span)

    def proto_class_eff(self, c, span):
        return ast.ProtocolAttr("eff", str(c[0]), c[1], span=span)

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

    def routing_prefer(self, c, span):
        return ast.RoutingPrefer(tuple(str(x) for x in c), span=span)

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
        return st.For(str(c[0]), c[1], _stmts(c[2]), span=span)

    def round_for(self, c, span):
        return st.RoundFor(str(c[0]), c[1], _stmts(c[2]), span=span)

    def round_stmt(self, c, span):
        return st.RoundBlock(_stmts(c[0]), span=span)

    def parallel_for(self, c, span):
        return st.ParallelFor(str(c[0]), c[1], _stmts(c[2]), span=span)

    def parallel_block(self, c, span):
        return st.ParallelBlock(_stmts(c[0]), span=span)

    def if_stmt(self, c, span):
        cond, then, orelse = c
        return st.If(cond, _stmts(then), _stmts(orelse) if orelse is not None else (), span=span)

    def if_line(self, c, span):
        return st.If(c[0], _stmts(c[1]), span=span)

    def transfer(self, c, span):
        return st.Transfer(c[0], c[1], c[2], c[3], c[4], span=span)

    def transfer_op(self, c, span):
        return str(c[0])

    def send(self, c, span):
        return st.Send(c[0], c[1], c[2], span=span)

    def call_stmt(self, c, span):
        return st.CallStmt(self.call(c, span), span=span)

    def error_stmt(self, c, span):
        return st.Fail(str(c[0])[1:-1], tuple(c[1:]), span=span)

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
            raise ParseError(magnitude.TOO_LARGE, token_span(_SOURCE.get(), c[0]))
        return ast.Number(value, str(c[1]) if c[1] is not None else None, span=span)

    def percent(self, c, span):  # `50%`: the literal and its '%' are one token
        value = magnitude.literal(str(c[0])[:-1])
        if value is None:
            raise ParseError(magnitude.TOO_LARGE, token_span(_SOURCE.get(), c[0]))
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

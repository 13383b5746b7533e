"""The abstract syntax of `.sched` expressions: frozen dataclasses, each with its source
`Span` (`Node`), and `Expr`, their union. syntax.py holds the declarations and top level
over them (and names these too), statements.py the statements of schedule bodies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from ..errors import Span


@dataclass(frozen=True)
class Node:
    span: Span = field(repr=False, compare=False, kw_only=True)


# ---- expressions ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Number(Node):
    value: Fraction
    unit: str | None = None


@dataclass(frozen=True)
class Name(Node):
    id: str


@dataclass(frozen=True)
class String(Node):
    value: str


@dataclass(frozen=True)
class NoneLit(Node):
    pass


@dataclass(frozen=True)
class BinOp(Node):
    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True)
class UnaryOp(Node):
    op: str
    operand: Expr


@dataclass(frozen=True)
class Compare(Node):
    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True)
class BoolOp(Node):
    op: str  # "and" | "or"
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Not(Node):
    operand: Expr


@dataclass(frozen=True)
class Range(Node):
    """`lo..hi`, both ends included."""

    lo: Expr
    hi: Expr


@dataclass(frozen=True)
class Index(Node):
    base: Expr
    index: Expr


@dataclass(frozen=True)
class Attr(Node):
    base: Expr
    name: str


@dataclass(frozen=True)
class Keyword(Node):
    name: str
    value: Expr


@dataclass(frozen=True)
class Call(Node):
    func: str
    args: tuple[Expr, ...]
    kwargs: tuple[Keyword, ...] = ()


@dataclass(frozen=True)
class CompFor(Node):
    var: str
    iter: Expr
    cond: Expr | None = None


@dataclass(frozen=True)
class ListComp(Node):
    element: Expr
    clauses: tuple[CompFor, ...]


@dataclass(frozen=True)
class ListLit(Node):
    items: tuple[Expr, ...]


@dataclass(frozen=True)
class Conditional(Node):
    """`then if cond else orelse`."""

    cond: Expr
    then: Expr
    orelse: Expr


@dataclass(frozen=True)
class AllRegion(Node):
    pass


@dataclass(frozen=True)
class Part(Node):
    """`part(index of count) [of whole]`: the index-th of count equal slices of a region."""

    index: Expr
    count: Expr
    whole: Expr | None = None


@dataclass(frozen=True)
class TimeOf(Node):
    """`time(schedule, P = value, ...)`: a schedule's time, some params pinned."""

    schedule: str
    pins: tuple[Keyword, ...] = ()


@dataclass(frozen=True)
class Relation(Node):
    """`left OP right` with OP one of = <= >= < > (equations and expectations)."""

    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True)
class SolveOf(Node):
    relation: Relation
    param: str


Expr = (
    Number | Name | String | NoneLit | BinOp | UnaryOp | Compare | BoolOp | Not | Range | Index
    | Attr | Call | ListComp | ListLit | Conditional | AllRegion | Part | TimeOf | SolveOf
)

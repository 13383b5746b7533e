"""The statements of schedule bodies: loops, rounds, parallel composition, conditions,
transfers, calls and errors (frozen dataclasses with spans, like the rest of `syntax`)."""

from __future__ import annotations

from dataclasses import dataclass

from .syntax import Call, Expr, Let, Node


@dataclass(frozen=True)
class For(Node):
    """A sequential loop: the rounds of its iterations follow one another."""

    var: str
    iter: Expr
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class RoundFor(Node):
    """`for v in R round {...}`: each iteration is exactly one round."""

    var: str
    iter: Expr
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class RoundBlock(Node):
    """`round {...}`: all transfers inside form one round."""

    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class ParallelFor(Node):
    """Round-wise parallel composition: round j of every iteration forms round j together."""

    var: str
    iter: Expr
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class ParallelBlock(Node):
    """Round-wise parallel composition of the statements of a block (one branch each)."""

    branches: tuple[Stmt, ...]


@dataclass(frozen=True)
class If(Node):
    cond: Expr
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...] = ()


@dataclass(frozen=True)
class Transfer(Node):
    """`reduce|copy REGION from SRC to DST [into REGION]`."""

    op: str
    region: Expr
    src: Expr
    dst: Expr
    into: Expr | None = None


@dataclass(frozen=True)
class Send(Node):
    """`send SIZE from SRC to DST`: bytes with no data-flow meaning."""

    size: Expr
    src: Expr
    dst: Expr


@dataclass(frozen=True)
class CallStmt(Node):
    call: Call


@dataclass(frozen=True)
class Fail(Node):
    """`error "text", values...`: elaborating this statement is an error at the call."""

    message: str
    values: tuple[Expr, ...] = ()


Stmt = (
    Let | For | RoundFor | RoundBlock | ParallelFor | ParallelBlock | If | Transfer | Send | CallStmt
    | Fail
)

"""The abstract syntax of `.sched` files: frozen dataclasses, each with its source `Span`.
Topology and top-level statements are here, and the expressions' names (expressions.py
defines them); `statements` holds the statements of schedule bodies.

The parser builds these and nothing else; no name is resolved and no unit is checked here.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from fractions import Fraction
from typing import TYPE_CHECKING

from ..errors import Span
# the expressions (expressions.py), named here too: `syntax.Number`
from .expressions import AllRegion as AllRegion
from .expressions import Attr as Attr
from .expressions import BinOp as BinOp
from .expressions import BoolOp as BoolOp
from .expressions import Call as Call
from .expressions import CompFor as CompFor
from .expressions import Compare as Compare
from .expressions import Conditional as Conditional
from .expressions import Expr as Expr
from .expressions import Index as Index
from .expressions import Keyword as Keyword
from .expressions import ListComp as ListComp
from .expressions import ListLit as ListLit
from .expressions import Name as Name
from .expressions import Node as Node
from .expressions import NoneLit as NoneLit
from .expressions import Not as Not
from .expressions import Number as Number
from .expressions import Part as Part
from .expressions import Range as Range
from .expressions import Relation as Relation
from .expressions import SolveOf as SolveOf
from .expressions import String as String
from .expressions import TimeOf as TimeOf
from .expressions import UnaryOp as UnaryOp

if TYPE_CHECKING:  # the schedule statements import the nodes here
    from .statements import Stmt


# ---- a let: at the top level, in a topology and in a schedule body -------------------------


@dataclass(frozen=True)
class Let(Node):
    name: str
    value: Expr


# ---- topology -------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeclName(Node):
    """`name` or `name[count]` (a family name[0] .. name[count-1])."""

    name: str
    count: Expr | None = None


@dataclass(frozen=True)
class DeviceDecl(Node):
    kind: str  # gpu | nic | switch
    names: tuple[DeclName, ...]
    forwards: bool = False
    reduces: bool = False  # sums what is reduced into it (in-network reduction)
    sm: Expr | None = None  # a GPU's compute capability (NCCL's sm: 80 for A100, 90 for H100)


@dataclass(frozen=True)
class HostDecl(Node):
    name: DeclName
    body: tuple[TopoStmt, ...]


@dataclass(frozen=True)
class LinkAttrs:
    """Attributes shared by links and shared resources; each keeps its own expression span."""

    bw: Expr | None = None
    cls: str | None = None
    via: tuple[Expr, ...] = ()
    half: bool = False
    latency: Expr | None = None
    window: Expr | None = None


@dataclass(frozen=True)
class LinkDecl(Node):
    a: Expr
    b: Expr
    both_ways: bool
    attrs: LinkAttrs
    clauses: tuple[CompFor, ...] = ()


@dataclass(frozen=True)
class SharedDecl(Node):
    name: DeclName
    attrs: LinkAttrs


@dataclass(frozen=True)
class RoutingPolicy(Node):
    """`routing ecmp` or `routing first`: how bytes split over equally short routes."""

    policy: str


@dataclass(frozen=True)
class RoutingPrefer(Node):
    """`routing prefer nvlink, pcie`: the link classes routes inside a host prefer, best
    first (`routing prefer none`: no preference, `classes` empty)."""

    classes: tuple[str, ...]


@dataclass(frozen=True)
class RouteDecl(Node):
    """`route A -> B via X, Y`: the route of a pair, pinned (`<->`: both ways)."""

    a: Expr
    b: Expr
    both_ways: bool
    via: tuple[Expr, ...]
    clauses: tuple[CompFor, ...] = ()


TopoStmt = DeviceDecl | HostDecl | LinkDecl | SharedDecl | Let | RoutingPolicy | RouteDecl


# ---- top level ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Import(Node):
    path: str


@dataclass(frozen=True)
class ParamDecl(Node):
    name: str
    value: Expr


@dataclass(frozen=True)
class SetParam(Node):
    """`set NAME = VALUE`: a new nominal value for a param an imported file declares."""

    name: str
    value: Expr


@dataclass(frozen=True)
class Startup(Node):
    value: Expr


@dataclass(frozen=True)
class StepCost(Node):
    """`step cost sum|max|pipelined chunk Q`: how a round's start-up and transfer time add up."""

    rule: str
    rule_span: Span | None = field(default=None, repr=False, compare=False)
    chunk: Expr | None = None  # `pipelined chunk Q`: the bytes of one chunk of the call


@dataclass(frozen=True)
class Budget(Node):
    value: Expr


@dataclass(frozen=True)
class Guard(Node):
    """`if CONDITION: error "text", values...` at the top of a file."""

    condition: Expr
    message: str
    values: tuple[Expr, ...] = ()


@dataclass(frozen=True)
class Expect(Node):
    relation: Relation
    within: Expr | None = None


@dataclass(frozen=True)
class Report(Node):
    name: str
    value: Expr


@dataclass(frozen=True)
class Topology(Node):
    body: tuple[TopoStmt, ...]


@dataclass(frozen=True)
class CollectiveDecl(Node):
    kind: str
    size: Expr
    group: Expr
    root: Expr | None = None


@dataclass(frozen=True)
class Formal(Node):
    name: str
    default: Expr | None = None


@dataclass(frozen=True)
class NcclName(Node):
    """`as ring/simple`: the NCCL algorithm and protocol a schedule stands for."""

    algorithm: str
    protocol: str


@dataclass(frozen=True)
class ScheduleDef(Node):
    """A schedule. Without formals it is a result of the file; with formals, a function."""

    name: str
    formals: tuple[Formal, ...] | None
    body: tuple[Stmt, ...]
    nccl: NcclName | None = None


@dataclass(frozen=True)
class ProtocolAttr(Node):
    """One attribute of a protocol: `alpha`, `eff`, or per link class `alpha` / `cap` / `eff`."""

    kind: str  # alpha | eff | cap
    cls: str | None
    value: Expr


@dataclass(frozen=True)
class Protocol(Node):
    name: str
    attrs: tuple[ProtocolAttr, ...]
    name_span: Span | None = field(default=None, repr=False, compare=False)


TopStmt = (
    Import | ParamDecl | SetParam | Let | Startup | StepCost | Budget | Expect | Report | Topology
    | CollectiveDecl | ScheduleDef | Protocol | Guard
)


@dataclass(frozen=True)
class Module(Node):
    path: str
    body: tuple[TopStmt, ...]


def walk(node: object):
    """The node and every node inside it, depth first."""
    if isinstance(node, tuple):
        for item in node:
            yield from walk(item)
    elif isinstance(node, (Node, LinkAttrs)):
        yield node
        for f in fields(node):
            if not f.name.endswith("span"):
                yield from walk(getattr(node, f.name))


def dump(node: object, indent: int = 0) -> str:
    """An indented, span-free rendering of an AST, for `schedc emit ast` and golden tests."""
    pad = "  " * indent
    if isinstance(node, tuple):
        if not node:
            return pad + "()"
        return "\n".join(dump(item, indent) for item in node)
    if not isinstance(node, (Node, LinkAttrs)):
        return pad + repr(node) if not isinstance(node, Fraction) else pad + str(node)
    simple, nested = [], []
    for f in fields(node):
        if f.name.endswith("span"):  # span, name_span
            continue
        value = getattr(node, f.name)
        if isinstance(value, (Node, LinkAttrs)) or (isinstance(value, tuple) and value):
            nested.append((f.name, value))
        elif not (value is None or value is False or value == ()):
            simple.append(f"{f.name}={value if isinstance(value, Fraction) else repr(value)}")
    head = pad + type(node).__name__ + ("" if not simple else " " + " ".join(simple))
    parts = [head]
    for name, value in nested:
        parts.append(f"{pad}  {name}:")
        parts.append(dump(value, indent + 2))
    return "\n".join(parts)

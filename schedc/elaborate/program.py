"""`Program`: what a `.sched` file elaborates to (params, topology, results, functions),
its global names, and `--set` overrides. `loader.load_program` builds it from files.

Schedules without parameters declared in the file given on the command line are its
*results*; every other schedule is a function to call. Result schedules are elaborated to
IR on demand (`Program.schedule`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any

from ..errors import ElaborationError, SchedcError, SourceFile, Span, UsageError, did_you_mean
from ..language import syntax as ast
from ..language.parser import parse_expression
from ..model.ir import Collective, Schedule
from ..model.protocol import Protocol
from ..model.topology import Topology
from ..model.values import TopoRef
from ..units import Dim
from .lanes import Env, Names
from .preview import FIRST_LOOK, Refused, passing_refusals, preview
from .schedule import Limits, ScheduleContext, Watch, elaborate_schedule
from .namespace import Namespace

DEFAULT_LIMITS = Limits()


@dataclass(frozen=True)
class Param:
    name: str
    symbol: Any  # a SymPy symbol; None when compiled without formulas (`Program.symbolic`)
    dim: Dim
    nominal: Fraction  # in base units
    span: Span = field(compare=False, repr=False)
    # A unitless integer param (`param hosts = 2`) is *structural*: it is bound to its integer
    # value, so it may size families and ranges; another value means another compile.
    structural: bool = False


@dataclass(frozen=True)
class Override:
    """`--set NAME=VALUE`, kept with its own source text for error messages."""

    name: str
    value: ast.Expr
    source: SourceFile


@dataclass(frozen=True, eq=False)
class Result:
    """A schedule the file reports on: its definition and the collective it must compute."""

    name: str
    definition: ast.ScheduleDef
    collective: Collective


@dataclass(frozen=True, eq=False)
class Program:
    path: str
    params: dict[str, Param]
    topology: Topology
    alpha: Any  # a SymPy expression, or without formulas its value (`model.scalars`)
    results: list[Result]
    functions: dict[str, ast.ScheduleDef]
    names: ProgramNames
    checks: list[ast.Node]  # budget, expect and report statements of the main file, in order
    limits: Limits = DEFAULT_LIMITS
    protocols: tuple[Protocol, ...] = ()  # with any, a time is the minimum over them
    collectives: tuple[Collective, ...] = ()  # the main file's declarations, in order
    step_rule: str = "sum"  # `step cost max`: a round costs max(α, V/B), else α + V/B
    step_chunk: Any = None  # `step cost pipelined chunk Q`: Q, in bytes (or None)
    # Params are SymPy symbols and times formulas; False (`--no-formula`): every param is its
    # value, every quantity an exact number, and only numbers are computed (no SymPy).
    symbolic: bool = True

    @cached_property
    def nominal(self) -> dict:
        """Each param's symbol → its nominal value (after --set), exactly (none without
        formulas: there are no symbols)."""
        if not self.symbolic:
            return {}
        import sympy
        return {p.symbol: sympy.Rational(p.nominal.numerator, p.nominal.denominator)
                for p in self.params.values()}

    def result(self, name: str, span: Span | None = None) -> Result:
        for r in self.results:
            if r.name == name:
                return r
        hint = (did_you_mean(name, [r.name for r in self.results], "schedules")
                or "; the file has no result schedules")
        raise (ElaborationError if span else UsageError)(f"no schedule named '{name}'{hint}", span)

    def require_machine(self, name: str) -> None:
        """Refuse to time `name` without a machine (a `.sched` program always has one)."""

    @property
    def has_machine(self) -> bool:
        """Whether the topology is a machine that routes transfers (an MSCCL algorithm read
        without --machine has devices only)."""
        return True

    def schedule(self, name: str, span: Span | None = None, watch: Watch | None = None) -> Schedule:
        """Elaborate a result schedule to IR (`Session.schedule` does it once per run); `watch`
        is shown each round loop's batches as they are made, first those of a preview (each
        round loop's first iteration, `preview.py`), and may refuse with a LimitError."""
        result = self.result(name, span)
        names = [d.name for d in self.topology.devices]
        reducing = tuple(d.id for d in self.topology.devices if d.reduces)
        env = Env(self.names, max_lanes=self.limits.held, lane_limit=self.limits.held)

        def run(limits: Limits, watching: Watch | None, first_look: bool = False) -> Schedule:
            ctx = ScheduleContext(self.functions, result.collective, names, limits, self.nominal,
                                  reducing, watch=watching, preview=first_look)
            return elaborate_schedule(name, result.definition, env, ctx)

        if watch is None:
            return run(self.limits, None)
        watching = passing_refusals(watch)
        try:  # a first look for the watch, then the whole (`preview.py`)
            preview(lambda limits: run(limits, watching, first_look=True), self.limits)
        except Refused as refused:
            error = refused.error
            raise type(error)(error.message, error.span, (*error.notes, FIRST_LOOK)) from None
        try:
            return run(self.limits, watching)
        except Refused as refused:
            raise refused.error from None


class ProgramNames(Names):
    """Global names: params and lets by value, topology names through the namespace."""

    def __init__(self, namespace: Namespace, symbolic: bool = True) -> None:
        self.symbolic = symbolic
        self.values: dict[str, object] = {}
        self.where: dict[str, Span] = {}
        self.namespace = namespace
        self.schedules: dict[str, ast.ScheduleDef] = {}

    def define(self, name: str, value: object, span: Span) -> None:
        self.check_free(name, span)
        self.values[name] = value
        self.where[name] = span

    def check_free(self, name: str, span: Span) -> None:
        previous = self.where.get(name) or (self.namespace.root[name].span
                                            if name in self.namespace.root else None)
        if previous is not None:
            raise ElaborationError(f"'{name}' is already defined at {previous}", span)

    def lookup(self, name: str) -> object | None:
        if name in self.values:
            return self.values[name]
        if name in self.namespace.root:
            return self.namespace.settle(TopoRef((name,)))
        return None

    def known(self) -> list[str]:
        return list(self.values) + list(self.namespace.root)

    def index_topology(self, ref, index, node):
        return self.namespace.index(ref, index, node)

    def member(self, ref, name, node):
        return self.namespace.member(ref, name, node)

    def is_schedule(self, name: str) -> bool:
        return name in self.schedules


def parse_override(text: str) -> Override:
    """Parse one `--set NAME=VALUE` argument."""
    name, sep, value = text.partition("=")
    source = SourceFile(f"--set {name.strip()}", value)
    if not sep or not name.strip().isidentifier():
        raise UsageError(f"--set expects NAME=VALUE (e.g. --set B_L=300GB/s), got {text!r}")
    try:
        expr = parse_expression(source)
    except SchedcError as exc:
        raise UsageError(exc.message, exc.span) from None
    return Override(name.strip(), expr, source)


def source_of(expr: ast.Expr) -> str:
    """The text of an expression on one line (for a hint)."""
    span = expr.span
    if span.line != span.end_line:
        return "..."
    return span.source.line(span.line)[span.col - 1:span.end_col - 1]


def declared_at(name: str, span: Span) -> str:
    """A note pointing at a param's declaration, with its source line."""
    return f"{name} is declared at {span}: {span.source.line(span.line).strip()}"

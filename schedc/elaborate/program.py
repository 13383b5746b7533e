"""Files → `Program`: imports, params, lets, the topology, collectives and schedules.

Top-level statements are elaborated in file order; an `import` elaborates the imported file
at that point, once, into the same namespace (so a machine file's params and topology and a
library's schedules become visible). Schedules without parameters declared in the file given
on the command line are its *results*; every other schedule is a function to call. Result
schedules are elaborated to IR on demand (`Program.schedule`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from pathlib import Path

import sympy

from ..errors import (
    ElaborationError,
    LoadError,
    SchedcError,
    SourceFile,
    Span,
    UsageError,
    did_you_mean,
)
from ..language import syntax as ast
from ..language.parser import parse_expression, parse_module
from ..model.ir import Collective, Schedule
from ..model.topology import Topology
from ..model.values import Devices, Quantity, TopoRef, as_number, from_rational, kind_of
from ..units import BYTES, DIMENSIONLESS, SECONDS, Dim, dim_name
from .evaluate import check_positive, evaluate, expect_device, expect_quantity
from .lanes import Env, Names
from .schedule import Limits, ScheduleContext, elaborate_schedule, linear_bytes
from .topology import Namespace, TopologyBuilder

COLLECTIVES_WITH_ROOT = ("broadcast", "reduce")
DEFAULT_LIMITS = Limits()
MAX_IMPORT_DEPTH = 100  # files importing files; each costs a few frames of Python's stack


@dataclass(frozen=True)
class Param:
    name: str
    symbol: sympy.Symbol
    dim: Dim
    nominal: Fraction  # in base units
    span: Span = field(compare=False, repr=False)


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


@dataclass(eq=False)
class Program:
    path: str
    params: dict[str, Param]
    topology: Topology
    alpha: sympy.Expr
    results: list[Result]
    functions: dict[str, ast.ScheduleDef]
    names: ProgramNames
    checks: list[ast.Node]  # budget, expect and report statements of the main file, in order
    limits: Limits = DEFAULT_LIMITS

    @cached_property
    def nominal(self) -> dict[sympy.Symbol, sympy.Expr]:
        """Each param's symbol → its nominal value (after --set), exactly."""
        return {p.symbol: sympy.Rational(p.nominal.numerator, p.nominal.denominator)
                for p in self.params.values()}

    def result(self, name: str, span: Span | None = None) -> Result:
        for r in self.results:
            if r.name == name:
                return r
        hint = (did_you_mean(name, [r.name for r in self.results], "schedules")
                or "; the file has no result schedules")
        raise (ElaborationError if span else UsageError)(f"no schedule named '{name}'{hint}", span)

    def schedule(self, name: str, span: Span | None = None) -> Schedule:
        """Elaborate a result schedule to IR (`Session.schedule` does it once per run)."""
        result = self.result(name, span)
        ctx = ScheduleContext(self.functions, result.collective,
                              [d.name for d in self.topology.devices], self.limits, self.nominal)
        env = Env(self.names, max_lanes=self.limits.transfers)
        return elaborate_schedule(name, result.definition, env, ctx)


class ProgramNames(Names):
    """Global names: params and lets by value, topology names through the namespace."""

    def __init__(self, namespace: Namespace) -> None:
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


def load_program(path: str | Path, overrides: tuple[Override, ...] = (),
                 limits: Limits = DEFAULT_LIMITS) -> Program:
    """Read, parse and elaborate a `.sched` file and everything it imports."""
    by_name: dict[str, Override] = {}
    for override in overrides:
        if override.name in by_name:
            raise UsageError(f"--set {override.name} is given twice")
        by_name[override.name] = override
    loader = _Loader(by_name)
    loader.run(Path(path))
    unused = [o for o in overrides if o.name not in loader.params]
    if unused:
        name = unused[0].name
        raise UsageError(f"--set {name}: no param named '{name}'"
                         + (did_you_mean(name, list(loader.params), "params") or "; there are none"))
    return Program(
        path=str(path),
        params=loader.params,
        topology=loader.topology.build(),
        alpha=loader.alpha(),
        results=loader.results,
        functions=loader.names.schedules,
        names=loader.names,
        checks=loader.checks,
        limits=limits,
    )


class _Loader:
    def __init__(self, overrides: dict[str, Override]) -> None:
        self.overrides = overrides
        self.params: dict[str, Param] = {}
        self.nominal: dict[sympy.Symbol, sympy.Expr] = {}
        self.topology = TopologyBuilder(self.nominal)
        self.names = ProgramNames(self.topology.namespace)
        self.results: list[Result] = []
        self.checks: list[ast.Node] = []
        self.startup: tuple[Quantity, Span] | None = None
        self.done: set[Path] = set()
        self.active: list[Path] = []

    def run(self, path: Path) -> None:
        self._module(self._read(path.resolve(), str(path), None), path.resolve(), is_main=True)

    # ---- files

    def _read(self, path: Path, shown: str, span: Span | None) -> ast.Module:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise LoadError(f"no such file: {shown}", span) from None
        except IsADirectoryError:
            raise LoadError(f"{shown} is a directory, not a .sched file", span) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise LoadError(f"cannot read {shown}: {exc}", span) from None
        return parse_module(SourceFile(shown, text))

    def _import(self, stmt: ast.Import, importer: Path) -> None:
        try:
            target = (importer.parent / stmt.path).resolve()
        except (OSError, ValueError) as exc:  # a NUL character, a loop of symbolic links
            raise LoadError(f"cannot import {stmt.path!r}: {exc}", stmt.span) from None
        if target in self.active:
            chain = " -> ".join(p.name for p in self.active[self.active.index(target):])
            raise LoadError(f"import cycle: {chain} -> {target.name}", stmt.span)
        if target in self.done:
            return
        if len(self.active) >= MAX_IMPORT_DEPTH:
            raise LoadError(f"imports nest more than {MAX_IMPORT_DEPTH} files deep here", stmt.span)
        shown = str(Path(stmt.span.source.path).parent / stmt.path)
        self._module(self._read(target, shown, stmt.span), target, is_main=False)

    def _module(self, module: ast.Module, path: Path, is_main: bool) -> None:
        self.active.append(path)
        collective: Collective | None = None
        env = Env(self.names)
        for stmt in module.body:
            if isinstance(stmt, ast.Import):
                self._import(stmt, path)
            elif isinstance(stmt, ast.ParamDecl):
                self._param(stmt, env)
            elif isinstance(stmt, ast.Let):
                self.names.define(stmt.name, evaluate(stmt.value, env), stmt.span)
            elif isinstance(stmt, ast.Topology):
                self.topology.add(stmt, env)
            elif isinstance(stmt, ast.Startup):
                if self.startup is not None:
                    raise ElaborationError(f"the start-up is already given at {self.startup[1]}",
                                           stmt.span)
                value = expect_quantity(evaluate(stmt.value, env), SECONDS, stmt.value.span,
                                        "the per-round start-up")
                self.startup = (value, stmt.span)
            elif isinstance(stmt, ast.CollectiveDecl):
                collective = self._collective(stmt, env)
            elif isinstance(stmt, ast.ScheduleDef):
                self._schedule(stmt, collective, is_main)
            elif is_main:  # budget, expect, report: checked by `schedc check`
                self.checks.append(stmt)
        self.active.pop()
        self.done.add(path)

    # ---- declarations

    def _param(self, stmt: ast.ParamDecl, env: Env) -> None:
        self.names.check_free(stmt.name, stmt.span)
        value = self._constant(stmt.value, env, "a param's value")
        dim = value.dim if isinstance(value, Quantity) else DIMENSIONLESS
        override = self.overrides.get(stmt.name)
        if override is not None:
            new = self._constant(override.value, Env(self.names), f"--set {stmt.name}")
            new_dim = new.dim if isinstance(new, Quantity) else DIMENSIONLESS
            if new_dim != dim:
                raise UsageError(f"{stmt.name} is {dim_name(dim)}; the value given is "
                                 f"{dim_name(new_dim)}", override.value.span)
            value = new
        nominal = _exact(value)
        assumptions = {"positive": True} if nominal > 0 else {"nonnegative": True} if nominal == 0 \
            else {"real": True}
        symbol = sympy.Symbol(stmt.name, **assumptions)
        self.params[stmt.name] = Param(stmt.name, symbol, dim, nominal, stmt.span)
        self.nominal[symbol] = sympy.Rational(nominal.numerator, nominal.denominator)
        self.names.define(stmt.name, Quantity(symbol, dim), stmt.span)

    def _constant(self, expr: ast.Expr, env: Env, what: str):
        value = evaluate(expr, env)
        if isinstance(value, Quantity) and not value.is_symbolic:
            return value
        if as_number(value) is not None:
            return value
        if isinstance(value, Quantity):
            raise ElaborationError(f"{what} must be a number with a unit, not an expression of "
                                   "params; use 'let' for derived values", expr.span)
        raise ElaborationError(f"{what} must be a number with a unit, not {kind_of(value)}",
                               expr.span)

    def _collective(self, stmt: ast.CollectiveDecl, env: Env) -> Collective:
        size = expect_quantity(evaluate(stmt.size, env), BYTES, stmt.size.span,
                               "the size of a collective")
        check_positive(size, self.nominal, stmt.size.span, "the size of a collective")
        group = evaluate(stmt.group, env)
        if not isinstance(group, Devices) or group.rank != 1:
            raise ElaborationError(f"a collective is over a group of devices, not {kind_of(group)}",
                                   stmt.group.span)
        ranks = tuple(int(i) for i in group.ids)
        if len(set(ranks)) != len(ranks):
            dup = next(i for i in ranks if ranks.count(i) > 1)
            raise ElaborationError(f"{self.topology.devices[dup].name} appears twice in the group",
                                   stmt.group.span)
        if not ranks:
            raise ElaborationError("a collective needs at least one rank", stmt.group.span)
        root = None
        if stmt.kind in COLLECTIVES_WITH_ROOT:
            if stmt.root is None:
                raise ElaborationError(f"{stmt.kind} needs a root: '{stmt.kind} V over ranks root "
                                       "ranks[0]'", stmt.span)
            root = int(expect_device(evaluate(stmt.root, env), stmt.root.span, "the root").ids)
            if root not in ranks:
                raise ElaborationError("the root must be one of the ranks", stmt.root.span)
        elif stmt.root is not None:
            raise ElaborationError(f"{stmt.kind} has no root", stmt.root.span)
        return Collective(stmt.kind, linear_bytes(size, stmt.size.span), ranks, root, stmt.span)

    def _schedule(self, stmt: ast.ScheduleDef, collective: Collective | None, is_main: bool) -> None:
        # Results and functions may share a name (`schedule ring_allreduce =
        # ring_allreduce(ranks)`): a call always means the function, and a result is callable
        # under its name only while no function has it.
        seen: set[str] = set()
        for formal in stmt.formals or ():
            if formal.name in seen:
                raise ElaborationError(f"parameter '{formal.name}' is given twice", formal.span)
            seen.add(formal.name)
        if is_main and stmt.formals is None:
            earlier = next((r for r in self.results if r.name == stmt.name), None)
            if earlier is not None:
                raise ElaborationError(f"schedule '{stmt.name}' is already defined at "
                                       f"{earlier.definition.span}", stmt.span)
            if collective is None:
                raise ElaborationError(f"schedule '{stmt.name}' comes before any collective in "
                                       "this file; declare one first, e.g. 'allreduce V over ranks'",
                                       stmt.span)
            self.results.append(Result(stmt.name, stmt, collective))
            self.names.schedules.setdefault(stmt.name, stmt)
            return
        existing = self.names.schedules.get(stmt.name)
        if existing is not None and not any(r.definition is existing for r in self.results):
            raise ElaborationError(f"schedule '{stmt.name}' is already defined at {existing.span}",
                                   stmt.span)
        self.names.schedules[stmt.name] = stmt

    def alpha(self) -> sympy.Expr:
        """The per-round start-up α: `startup EXPR`, else the param `alpha`, else 0."""
        if self.startup is not None:
            return self.startup[0].expr
        param = self.params.get("alpha")
        if param is None:
            return sympy.Integer(0)
        if param.dim != SECONDS:
            raise ElaborationError(f"'alpha' is the per-round start-up, so it must be "
                                   f"{dim_name(SECONDS)}, not {dim_name(param.dim)}", param.span)
        return param.symbol


def _exact(value) -> Fraction:
    number = as_number(value)
    if number is not None:
        return Fraction(number)
    return from_rational(value.expr)

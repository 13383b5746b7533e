"""Files → `Program`: imports, params, lets, the topology, collectives and schedules.

Top-level statements are elaborated in file order; an `import` elaborates the imported file
at that point, once, into the same namespace (so a machine file's params and topology and a
library's schedules become visible).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import (
    OUT_OF_MEMORY,
    ElaborationError,
    LimitError,
    LoadError,
    SourceFile,
    Span,
    UnitError,
    UsageError,
    did_you_mean,
)
from ..files import read_sched
from ..language import syntax as ast
from ..language.parser import parse_module
from ..model.collectives import collective_kind, collective_names
from ..model.ir import Collective
from ..model.protocol import Protocol
from ..model.scalars import Scalar
from ..model.values import (
    Devices,
    Quantity,
    as_number,
    check_positive,
    constant,
    expect_device,
    expect_quantity,
    kind_of,
    normalize,
)
from ..units import BYTES, SECONDS, dim_name
from .evaluate import evaluate
from .failures import error_text
from .lanes import Env
from .params import check_alpha, dim_of, exact, is_structural, make_param, overridden
from .protocols import read_protocol, read_step_rule
from .program import (
    DEFAULT_LIMITS,
    Override,
    Param,
    Program,
    ProgramNames,
    Result,
    source_of,
)
from .schedule import Limits
from .topology import TopologyBuilder
from .transfers import linear_bytes

MAX_IMPORT_DEPTH = 100  # files importing files; each costs a few frames of Python's stack


def load_program(path: str | Path, overrides: tuple[Override, ...] = (),
                 limits: Limits = DEFAULT_LIMITS,
                 parsed: dict[tuple[str, str], ast.Module] | None = None,
                 symbolic: bool = True) -> Program:
    """Read, parse and elaborate a `.sched` file and everything it imports. `parsed` keeps
    the syntax trees (immutable) of files read before, keyed by name and text: a session
    compiling one file at many sizes parses each file once. `symbolic=False`: every param
    is its value, so no formula can be built and SymPy is not imported (`--no-formula`)."""
    by_name: dict[str, Override] = {}
    for override in overrides:
        if override.name in by_name:
            raise UsageError(f"--set {override.name} is given twice")
        by_name[override.name] = override
    loader = _Loader(by_name, {} if parsed is None else parsed, symbolic)
    loader.run(Path(path))
    unused = [o for o in overrides if o.name not in loader.params]
    if unused:
        name = unused[0].name
        raise UsageError(f"--set {name}: no param named '{name}'"
                         + (did_you_mean(name, list(loader.params), "params") or "; there are none"))
    topology = loader.topology.build()
    classes = sorted({r.cls for r in topology.resources})
    for protocol in loader.protocols:
        for cls, _ in (*protocol.class_alpha, *protocol.class_cap, *protocol.class_eff):
            if cls not in classes:
                raise ElaborationError(f"protocol {protocol.name}: no link of class '{cls}'"
                                       + (did_you_mean(cls, classes, "classes") or ""),
                                       protocol.span)
    return Program(
        path=str(path),
        params=loader.params,
        topology=topology,
        alpha=loader.alpha(),
        results=loader.results,
        functions=loader.names.schedules,
        names=loader.names,
        checks=loader.checks,
        limits=limits,
        protocols=tuple(loader.protocols),
        collectives=tuple(loader.collectives),
        step_rule=loader.step[0] if loader.step else "sum",
        step_chunk=loader.step[2] if loader.step else None,
        symbolic=symbolic,
    )


class _Loader:
    def __init__(self, overrides: dict[str, Override],
                 parsed: dict[tuple[str, str], ast.Module], symbolic: bool = True) -> None:
        self.overrides = overrides
        self.parsed = parsed
        self.symbolic = symbolic
        self.params: dict[str, Param] = {}
        self.nominal: dict = {}  # param symbol → its value, as SymPy rationals (none without)
        self.topology = TopologyBuilder(self.nominal, symbolic)
        self.names = ProgramNames(self.topology.namespace, symbolic)
        self.results: list[Result] = []
        self.checks: list[ast.Node] = []
        self.collectives: list[Collective] = []  # the main file's, in order
        self.protocols: list[Protocol] = []
        self.startup: tuple[Quantity, Span] | None = None
        self.step: tuple[str, Span, Scalar | None] | None = None  # `step cost ...`
        self.done: set[Path] = set()
        self.active: list[Path] = []
        # `set NAME = VALUE` statements, by param name: the outermost file's wins; --set wins
        # over all of them. Applied where the imported file declares the param.
        self.file_sets: dict[str, ast.SetParam] = {}

    def run(self, path: Path) -> None:
        self._module(self._read(path.resolve(), str(path), None), path.resolve(), is_main=True)

    # ---- files

    def _read(self, path: Path, shown: str, span: Span | None) -> ast.Module:
        text = read_sched(path, LoadError, span, shown).text
        if (shown, text) not in self.parsed:
            self.parsed[shown, text] = parse_module(SourceFile(shown, text))
        return self.parsed[shown, text]

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
        if Path(stmt.path).suffix != ".sched":  # never read (nor show a line of) what is not schedc's
            raise LoadError(f"import reads .sched files; {stmt.path!r} is not one", stmt.span)
        self._module(self._read(target, shown, stmt.span), target, is_main=False)

    def _module(self, module: ast.Module, path: Path, is_main: bool) -> None:
        self.active.append(path)
        self._register_sets(module)
        collective: Collective | None = None
        env = Env(self.names)
        for stmt in module.body:
            try:
                collective = self._statement(stmt, env, path, collective, is_main)
            except MemoryError:  # said at the statement that took it, not as "out of memory"
                raise LimitError(OUT_OF_MEMORY, stmt.span) from None
        self.active.pop()
        self.done.add(path)

    def _statement(self, stmt, env: Env, path: Path, collective: Collective | None,
                   is_main: bool) -> Collective | None:
        """One top-level statement; the collective that schedules after it compute."""
        if isinstance(stmt, ast.Import):
            self._import(stmt, path)
        elif isinstance(stmt, ast.ParamDecl):
            self._param(stmt, env)
        elif isinstance(stmt, ast.SetParam):
            self._check_set(stmt)
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
            check_positive(value, self.nominal, stmt.value.span, "the per-round start-up",
                           zero_ok=True)
            self.startup = (value, stmt.span)
        elif isinstance(stmt, ast.CollectiveDecl):
            collective = self._collective(stmt, env)
            if is_main:
                self.collectives.append(collective)
        elif isinstance(stmt, ast.ScheduleDef):
            self._schedule(stmt, collective, is_main)
        elif isinstance(stmt, ast.StepCost):
            self.step = read_step_rule(stmt, self.step, env, self.nominal)
        elif isinstance(stmt, ast.Protocol):
            self.protocols.append(self._protocol(stmt, env))
        elif isinstance(stmt, ast.Guard):
            self._guard(stmt, env)
        elif is_main:  # budget, expect, report: checked by `schedc check`
            self.checks.append(stmt)
        return collective

    # ---- declarations

    def _register_sets(self, module: ast.Module) -> None:
        """A file's `set` statements, before its imports declare the params they re-value."""
        own: dict[str, ast.SetParam] = {}
        for stmt in module.body:
            if not isinstance(stmt, ast.SetParam):
                continue
            if stmt.name in own:
                raise ElaborationError(f"'{stmt.name}' is set twice (first at {own[stmt.name].span})",
                                       stmt.span)
            declared = self.params.get(stmt.name)
            if declared is not None:
                raise ElaborationError(f"cannot set '{stmt.name}' here: it was declared at "
                                       f"{declared.span} before this file was read; set it in the "
                                       "first file that imports it", stmt.span)
            own[stmt.name] = stmt
            self.file_sets.setdefault(stmt.name, stmt)

    def _check_set(self, stmt: ast.SetParam) -> None:
        """`set` re-values a param that an import before it declared (its value is applied
        where the param is declared)."""
        declared = self.params.get(stmt.name)
        if declared is None:
            known = list(self.params)
            raise ElaborationError(f"set {stmt.name}: no param named '{stmt.name}' is declared by "
                                   "the files imported before this line"
                                   + did_you_mean(stmt.name, known, "params"), stmt.span)

    def _param(self, stmt: ast.ParamDecl, env: Env) -> None:
        earlier = self.params.get(stmt.name)
        if earlier is not None and earlier.span.source is not stmt.span.source:
            raise ElaborationError(f"'{stmt.name}' is already defined at {earlier.span}", stmt.span,
                                   (f"to give an imported param a new value, write 'set "
                                    f"{stmt.name} = {source_of(stmt.value)}'",))
        self.names.check_free(stmt.name, stmt.span)
        value = self._constant(stmt.value, env, "a param's value")
        dim = dim_of(value)
        revalue = self.file_sets.get(stmt.name)
        if revalue is not None:
            value = self._revalued(stmt, revalue, dim)
        structural = is_structural(stmt, value, dim)
        override = self.overrides.get(stmt.name)
        if override is not None:
            new = self._constant(override.value, Env(self.names), f"--set {stmt.name}")
            value = overridden(stmt, override, new, dim, structural)
        nominal = exact(value)
        check_alpha(stmt.name, dim, nominal, (override or revalue or stmt).value.span,
                    override is not None)
        param, bound, sympy_value = make_param(stmt, dim, nominal, structural, self.symbolic)
        self.params[stmt.name] = param
        if sympy_value is not None:
            self.nominal[param.symbol] = sympy_value
        self.names.define(stmt.name, bound, stmt.span)

    def _revalued(self, stmt: ast.ParamDecl, revalue: ast.SetParam, dim):
        """An imported param's value from a `set` statement, checked against its declaration."""
        if revalue.span.source is stmt.span.source:
            raise ElaborationError(f"'{stmt.name}' is declared in this file, at {stmt.span}; "
                                   "give it its value there (set re-values an imported param)",
                                   revalue.span)
        new = self._constant(revalue.value, Env(self.names), f"set {stmt.name}")
        if dim_of(new) != dim:
            raise UnitError(f"{stmt.name} is {dim_name(dim)} (declared at {stmt.span}); the "
                            f"value set is {dim_name(dim_of(new))}", revalue.value.span)
        return new

    def _guard(self, stmt: ast.Guard, env: Env) -> None:
        """`if CONDITION: error "text", values...`: refuse the file at these values."""
        condition = evaluate(stmt.condition, env)
        if not isinstance(condition, (bool, np.bool_)):
            raise ElaborationError(f"expected a condition, not {kind_of(condition)}",
                                   stmt.condition.span)
        if not condition:
            return
        raise ElaborationError(error_text(stmt.message, stmt.values, env), stmt.span)

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
        kind = collective_kind(stmt.kind)
        if kind is None:  # the kind is the statement's first word
            where = Span(stmt.span.source, stmt.span.line, stmt.span.col, stmt.span.line,
                         stmt.span.col + len(stmt.kind))
            raise ElaborationError(f"unknown collective '{stmt.kind}'"
                                   + did_you_mean(stmt.kind, collective_names(), "collectives"),
                                   where)
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
        if kind.rooted:
            if stmt.root is None:
                raise ElaborationError(f"{kind.name} needs a root: '{stmt.kind} V over ranks root "
                                       "ranks[0]'", stmt.span)
            root = int(expect_device(evaluate(stmt.root, env), stmt.root.span, "the root").ids)
            if root not in ranks:
                raise ElaborationError("the root must be one of the ranks", stmt.root.span)
        elif stmt.root is not None:
            raise ElaborationError(f"{kind.name} has no root", stmt.root.span)
        return Collective(kind.name, linear_bytes(size, stmt.size.span), ranks, root, stmt.span)

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
        if existing is not None and stmt.formals is None and existing.formals is not None:
            return  # an imported file's result named after a function: the call means the function
        if existing is not None and not any(r.definition is existing for r in self.results):
            raise ElaborationError(f"schedule '{stmt.name}' is already defined at {existing.span}",
                                   stmt.span)
        self.names.schedules[stmt.name] = stmt

    def _protocol(self, stmt: ast.Protocol, env: Env) -> Protocol:
        return read_protocol(stmt, env, self.nominal, self.protocols, self.alpha())

    def alpha(self):
        """The per-round start-up α: `startup EXPR`, else the param `alpha`, else 0."""
        if self.startup is not None:
            return self.startup[0].expr
        param = self.params.get("alpha")
        if param is None:
            return constant(0, self.symbolic)
        if param.dim != SECONDS:
            raise ElaborationError(f"'alpha' is the per-round start-up, so it must be "
                                   f"{dim_name(SECONDS)}, not {dim_name(param.dim)}", param.span)
        return param.symbol if self.symbolic else normalize(param.nominal)

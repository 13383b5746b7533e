"""`report NAME = EXPR` statements → values in readable units (`schedc eval`, `schedc check`).

Reports are evaluated in file order at the nominal point (params at their values, after
`--set`), so `ceil(model / host_memory)` is a whole number of hosts rather than a formula.
Each report's name is visible to the reports after it; `Reports.bindings` lets a checker
make them visible to `expect`s too. Handlers for `time(...)` and the like come in as
`Env.extra` handlers, as the equation evaluator defines them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction

from ...elaborate.evaluate import evaluate
from ...elaborate.lanes import Env, Names
from ...elaborate.program import Program
from ...errors import ElaborationError, Span
from ...language import syntax as ast
from ...model.values import Quantity, as_number, kind_of, settle
from ...units import DIMENSIONLESS, Dim

Handlers = dict[type, Callable[[ast.Node, Env], object]]


@dataclass(frozen=True)
class ReportValue:
    name: str
    value: Fraction  # in base units
    dim: Dim
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True)
class Reports:
    values: tuple[ReportValue, ...]
    bindings: dict[str, object]  # name → value at the nominal point, to bind for `expect`s


class NominalNames(Names):
    """The program's names with params at their nominal values, and the reports so far."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.nominal = program.nominal
        self.reports: dict[str, object] = {}
        self.where: dict[str, Span] = {}

    def lookup(self, name: str) -> object | None:
        if name in self.reports:
            return self.reports[name]
        value = self.program.names.lookup(name)
        if isinstance(value, Quantity) and value.is_symbolic:
            value = settle(Quantity(value.expr.xreplace(self.nominal), value.dim))
        return value

    def known(self) -> list[str]:
        return list(self.reports) + self.program.names.known()

    def index_topology(self, ref, index, node):
        return self.program.names.index_topology(ref, index, node)

    def member(self, ref, name, node):
        return self.program.names.member(ref, name, node)

    def is_schedule(self, name: str) -> bool:
        return self.program.names.is_schedule(name)


def evaluate_reports(program: Program, extra: Handlers | None = None) -> Reports:
    """Every `report` of the main file, in order. `extra` adds handlers to the evaluator (the
    equation evaluator's `time(...)`, say); without them `time(...)` is an error here."""
    names = NominalNames(program)
    env = Env(names, extra=dict(extra or {}))
    values = []
    for stmt in program.checks:
        if not isinstance(stmt, ast.Report):
            continue
        if names.lookup(stmt.name) is not None:
            where = names.where.get(stmt.name) or program.names.where.get(stmt.name)
            previous = f" at {where}" if where else ""
            raise ElaborationError(f"'{stmt.name}' is already defined{previous}", stmt.span)
        value = _at_nominal(evaluate(stmt.value, env), program.nominal)
        values.append(_report_value(stmt, value))
        names.reports[stmt.name] = value
        names.where[stmt.name] = stmt.span
    return Reports(tuple(values), dict(names.reports))


def report_values(program: Program, extra: Handlers | None = None) -> tuple[ReportValue, ...]:
    return evaluate_reports(program, extra).values


def _at_nominal(value: object, nominal: dict) -> object:
    """A value that is still a formula (`time(ring)` is one) at the nominal point."""
    if isinstance(value, Quantity) and value.is_symbolic:
        return settle(Quantity(value.expr.xreplace(nominal), value.dim))
    return value


def _report_value(stmt: ast.Report, value: object) -> ReportValue:
    number = as_number(value) if isinstance(value, (int, Fraction, Quantity)) else None
    if number is not None:
        return ReportValue(stmt.name, Fraction(number), DIMENSIONLESS, stmt.span)
    if isinstance(value, Quantity) and value.expr.is_Rational:
        return ReportValue(stmt.name, Fraction(int(value.expr.p), int(value.expr.q)), value.dim, stmt.span)
    raise ElaborationError(f"a report is a number or a quantity, not {kind_of(value)}", stmt.value.span)

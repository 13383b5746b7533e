"""Expressions over schedules: `time(NAME, P = value, ...)`, `solve(LEFT = RIGHT, P)`, `budget`.

These extend the ordinary expression evaluator (params, units, arithmetic, min/max) through
`Env.extra`, so `time(ring) - time(hierarchical)` or `2 * time(ring, B_L = 300 GB/s)` are
checked for units like any other expression. Values stay symbolic in the params:

- `time(NAME)` is the schedule's cost formula (seconds); pins substitute a value (which may
  itself involve params) for a param on this side only.
- `solve(...)` is the solution at the nominal point: a quantity if there is one, `none` if
  there is none, a list if there are several.
- `budget` is the value of the file's `budget` statement.

`Equations` caches one `Timing` per schedule, so a file's checks compile each schedule once.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import sympy

from ...cost.timing import Timing
from ...deadline import DEFAULT_TIMEOUT, TimeLimit
from ...elaborate.evaluate import evaluate
from ...elaborate.lanes import Env
from ...elaborate.program import Param
from ...errors import ElaborationError, SolveError, Span, UnitError, did_you_mean
from ...language import syntax as ast
from ...model.values import NoneValue, Quantity, kind_of, quantity_of
from ...session import Session
from ...units import DIMENSIONLESS, SECONDS, dim_name, format_quantity
from .reports import NominalNames, Reports, evaluate_reports
from .roots import Side, Solution, solve


@dataclass(frozen=True)
class Values:
    """A list of quantities of one dimension: several solutions, or `[8 GB/s, 64 GB/s]`."""

    items: tuple[Quantity, ...]
    dim: tuple[int, int]
    kind = "a list of quantities"  # what error messages call it


class Equations:
    """Evaluates equations and check expressions over one program."""

    def __init__(self, session: Session, timeout: float | TimeLimit = DEFAULT_TIMEOUT,
                 bindings: dict[str, object] | None = None) -> None:
        """`timeout`: seconds per equation, or a budget already partly spent (the times a
        command derived for the equation). `bindings`: more names for expressions (the
        values of `report` statements)."""
        self.session = session
        self.program = program = session.program
        self.timeout = timeout
        self.budget: Quantity | None = None
        self.env = Env(program.names, local=dict(bindings or {}),
                       extra={ast.TimeOf: self._time, ast.SolveOf: self._solve,
                              ast.ListLit: self._list})
        for stmt in program.checks:
            if isinstance(stmt, ast.Budget):
                self._set_budget(stmt)

    # ---- public

    def timing(self, name: str, span: Span | None = None) -> Timing:
        return self.session.timing(name, span)

    def reports(self) -> Reports:
        """The main file's `report`s, in order, with `time(...)` and `solve(...)` in reach."""
        return evaluate_reports(self.program, self.env.extra)

    def value(self, expr: ast.Expr) -> object:
        return evaluate(expr, self.env)

    def value_at_nominal(self, expr: ast.Expr) -> object:
        """`expr` with params at their nominal values, as a `report` would see them (so
        `ceil(V / 1 MiB)` is a number); `time(...)` and `solve(...)` work as in `value`."""
        return evaluate(expr, replace(self.env, names=NominalNames(self.program)))

    def side(self, expr: ast.Expr) -> Side:
        value = self.value(expr)
        q = quantity_of(value)
        if q is None:
            raise ElaborationError(f"a side of an equation must be a number or a quantity, not "
                                   f"{kind_of(value)}", expr.span)
        return Side(_side_name(expr), q.expr, q.dim, expr.span)

    def solve(self, relation: ast.Relation, param: str, param_span: Span) -> Solution:
        """Solve `relation` for `param`, the other params at their nominal values."""
        chosen = self.param(param, param_span)
        if chosen.structural:
            raise SolveError(f"{param} is a structural param (it sizes the machine or a "
                             "schedule), so the times are not formulas in it; "
                             f"'schedc solve ... --for {param}' searches its integer values",
                             param_span)
        left, right = self.side(relation.left), self.side(relation.right)
        return solve(left, right, relation.op, chosen.symbol, self.program.nominal,
                     self.timeout if isinstance(self.timeout, TimeLimit) else TimeLimit(self.timeout),
                     relation.span, param_span)

    def param(self, name: str, span: Span) -> Param:
        found = self.program.params.get(name)
        if found is None:
            hint = did_you_mean(name, list(self.program.params), "params") or \
                " (this file declares none)"
            raise SolveError(f"no param named '{name}'{hint}", span)
        return found

    # ---- handlers for Env.extra

    def _time(self, node: ast.TimeOf, env: Env) -> Quantity:
        """`time(x, B_L = 300 GB/s, hosts = 4)`: a pinned param replaced in the formula; a
        pinned structural param (an integer that shapes the machine) compiled at its value."""
        pins: dict[sympy.Symbol, sympy.Expr] = {}
        instance: dict[str, int] = {}
        for pin in node.pins:
            param = self.param(pin.name, pin.span)
            if param.symbol in pins or pin.name in instance:
                raise ElaborationError(f"{pin.name} is pinned twice", pin.span)
            value = evaluate(pin.value, env)
            q = quantity_of(value)
            if q is None:
                raise ElaborationError(f"{pin.name} must be given a value, not {kind_of(value)}",
                                       pin.value.span)
            expr, dim = q.expr, q.dim
            if dim != param.dim:
                raise UnitError(f"{pin.name} is {dim_name(param.dim)}; the value given is "
                                f"{dim_name(dim)}", pin.value.span)
            _check_sign(param, expr.xreplace(self.program.nominal), pin.value.span)
            if param.structural:
                exact = expr.xreplace(self.program.nominal)
                if not exact.is_Integer:
                    raise ElaborationError(f"{pin.name} is a structural param (an integer); "
                                           f"{exact} is not a value it can take", pin.value.span)
                instance[pin.name] = int(exact)
            else:
                pins[param.symbol] = expr
        session = self.session.at(instance) if instance else self.session
        formula = session.timing(node.schedule, name_span(node.span, node.schedule)).cost.formula
        try:  # a pinned bandwidth of 0 makes a Max of zoo, which SymPy refuses to build
            pinned = formula.xreplace(pins)
            finite = not node.pins or pinned.xreplace(self.program.nominal).is_finite
        except (ValueError, TypeError, ZeroDivisionError):
            finite = False
        if not finite:
            pinned_text = ", ".join(source_text(pin.span) for pin in node.pins)
            raise SolveError(f"with {pinned_text} the time is infinite (a bandwidth of 0?)",
                             node.span)
        return Quantity(pinned, SECONDS)

    def _solve(self, node: ast.SolveOf, env: Env) -> object:
        if node.relation.op != "=":
            raise SolveError("solve(...) needs an equation ('='); to see where an inequality "
                             "holds, use 'schedc solve'", node.relation.span)
        solution = self.solve(node.relation, node.param, name_span(node.span, node.param, last=True))
        if any(i.smaller == "equal" for i in solution.intervals):
            raise SolveError("the two sides are equal on a whole interval, so solve(...) has no "
                             "single value; see 'schedc solve'", node.span)
        dim = self.program.params[node.param].dim
        found = [Quantity(r.value, dim) for r in solution.roots]
        if not found:
            return NoneValue()
        return found[0] if len(found) == 1 else Values(tuple(found), dim)

    def _list(self, node: ast.ListLit, env: Env) -> Values:
        items: list[Quantity] = []
        for item in node.items:
            found = evaluate(item, env)
            value = quantity_of(found)
            if value is None:
                raise ElaborationError(f"a list here holds numbers or quantities, not "
                                       f"{kind_of(found)}", item.span)
            if items and value.dim != items[0].dim:
                raise UnitError(f"a list mixes {dim_name(items[0].dim)} and {dim_name(value.dim)}",
                                item.span)
            items.append(value)
        return Values(tuple(items), items[0].dim if items else DIMENSIONLESS)

    def _set_budget(self, stmt: ast.Budget) -> None:
        """`budget 3 ms` makes the name `budget` mean 3 ms in expressions."""
        previous = self.program.names.where.get("budget") or self.env.local.get(_BUDGET_AT)
        if previous is not None:
            raise ElaborationError(f"the budget is already given at {previous}", stmt.span)
        value = self.value(stmt.value)
        if not isinstance(value, Quantity) or value.dim != SECONDS:
            found = dim_name(value.dim) if isinstance(value, Quantity) else kind_of(value)
            raise UnitError(f"a budget is a duration, not {found}", stmt.value.span)
        self.budget = value
        self.env = self.env.bind("budget", value).bind(_BUDGET_AT, stmt.span)


_BUDGET_AT = "<budget at>"  # where the budget statement is, for a second one's message


def _check_sign(param: Param, value: sympy.Expr, span: Span) -> None:
    """A pinned value keeps the sign of a param that has one (sizes, times, bandwidths)."""
    if value.is_number and param.symbol.is_nonnegative and value < 0:
        shown = format_quantity(float(value), param.dim) if value.is_finite else str(value)
        raise SolveError(f"{param.name} cannot be negative; the value given is {shown}", span)


def _side_name(expr: ast.Expr) -> str:
    """How results call a side: the schedule's name for a plain `time(NAME)`, else its text."""
    if isinstance(expr, ast.TimeOf) and not expr.pins:
        return expr.schedule
    return source_text(expr.span)


def source_text(span: Span) -> str:
    """The text a span covers (joined onto one line)."""
    lines = span.source.lines()[span.line - 1:span.end_line]
    if not lines:
        return ""
    if len(lines) == 1:
        return lines[0][span.col - 1:span.end_col - 1]
    return " ".join([lines[0][span.col - 1:], *lines[1:-1], lines[-1][:span.end_col - 1]])


def name_span(span: Span, name: str, last: bool = False) -> Span:
    """The span of `name` inside a construct (the schedule of `time(...)`, the param of
    `solve(...)`); the whole construct if it cannot be found on its first line."""
    text = span.source.line(span.line)
    end = span.end_col - 1 if span.end_line == span.line else len(text)
    segment = text[span.col - 1:end]
    at = segment.rfind(name) if last else segment.find(name, segment.find("(") + 1)
    if at < 0:
        return span
    col = span.col + at
    return Span(span.source, span.line, col, span.line, col + len(name))


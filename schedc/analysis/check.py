"""Self-checking files: evaluate the `expect` statements of a program.

    budget 3 ms
    expect time(ring) = 7.6 ms within 1%
    expect time(hierarchical) <= budget
    expect solve(time(hierarchical) = time(ring, B_L = 450 GB/s), B_L) = 49.9 GB/s within 0.1%
    expect solve(time(hierarchical) = time(ring), B_L) = none

Both sides are evaluated at the nominal point (after `--set`). `within` gives a tolerance:
a plain number (`1%`) is relative to the right side, a quantity (`0.1 ms`) is absolute;
without it the comparison is exact (the arithmetic is exact), and two formulas must moreover
be the same function of the params they share near the nominal point (`identity`). A list
on the right (`[8 GB/s, 64 GB/s]`) matches a solve with that many solutions, one by one;
`none` matches a solve with none. `report` statements are evaluated first, in order; their
names are visible to the expects (`expect hosts_needed = 3`).

`check_program` returns structured outcomes and prints nothing; `check_file` compiles a file
and every schedule in it and verifies that each computes its collective first, so a broken
schedule fails the check even if no `expect` mentions it. The expects of a file with a
schedule that fails verification are not evaluated: they would report its time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import sympy

from ..cost.regimes import key
from ..deadline import DEFAULT_TIMEOUT
from ..elaborate.program import DEFAULT_LIMITS
from ..elaborate.schedule import Limits
from ..errors import ElaborationError, SchedcError, Span, UnitError, UsageError
from ..language import syntax as ast
from ..model.values import NoneValue, Quantity, kind_of, quantity_of
from ..session import Session
from ..units import DIMENSIONLESS, dim_name, format_quantity
from .solve.equations import Equations, Values, source_text
from .solve.identity import Undecided, difference_near
from .solve.reports import ReportValue
from .verify.verdict import Verdict, verdicts


@dataclass(frozen=True)
class Outcome:
    """The result of one `expect`."""

    span: Span
    text: str  # the relation as written, with its tolerance
    passed: bool
    found: str  # the left side's value, readable
    expected: str  # the right side's value, readable
    note: str = ""  # why a comparison could not be made one to one
    computed_right: bool = False  # the right side is computed (not a literal), so show it


@dataclass(frozen=True)
class ProgramCheck:
    reports: tuple[ReportValue, ...]
    outcomes: tuple[Outcome, ...]


@dataclass(frozen=True)
class FileCheck:
    path: str
    outcomes: tuple[Outcome, ...] = ()
    reports: tuple[ReportValue, ...] = ()
    verdicts: tuple[Verdict, ...] = ()  # one per result schedule
    error: SchedcError | None = None  # bad input: the file could not be checked

    @property
    def failed(self) -> bool:
        return any(not o.passed for o in self.outcomes) or any(not v.ok for v in self.verdicts)


def check_program(session: Session, timeout: float = DEFAULT_TIMEOUT) -> ProgramCheck:
    """Evaluate the `report`s, then every `expect` of the program's main file, in order."""
    program = session.program
    reports = Equations(session, timeout).reports()
    equations = Equations(session, timeout, reports.bindings)  # reads `budget` too
    outcomes = tuple(_expect(stmt, equations) for stmt in program.checks
                     if isinstance(stmt, ast.Expect))
    return ProgramCheck(reports.values, outcomes)


def check_file(path: Path, timeout: float = DEFAULT_TIMEOUT, limits: Limits = DEFAULT_LIMITS,
               sets: tuple[str, ...] = (), machine: Path | None = None,
               ranks: str | None = None) -> FileCheck:
    """Compile a file (with `--set` overrides) and all its schedules, verify them, then
    evaluate its expects (an MSCCL XML file, on `machine`, has none)."""
    try:
        session = Session.open(path, sets, limits, machine, ranks)
        for name in session.selected(required=False):
            session.timing(name)  # bad input in any schedule is an error before verification
        verdicted = tuple(verdicts(session))
        if not all(v.ok for v in verdicted):
            return FileCheck(str(path), verdicts=verdicted)
        checked = check_program(session, timeout)
        return FileCheck(str(path), checked.outcomes, checked.reports, verdicted)
    except SchedcError as exc:
        return FileCheck(str(path), error=exc)


def sched_files(paths: list[Path]) -> list[Path]:
    """The `.sched` files named, and those under the directories named, in a stable order."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(path.rglob("*.sched"))
        elif path.exists():
            found.append(path)
        else:
            raise UsageError(f"no such file or directory: {path}")
    return list(dict.fromkeys(found))


# ---- one expectation ------------------------------------------------------------------------


def _expect(stmt: ast.Expect, equations: Equations) -> Outcome:
    relation = stmt.relation
    computed = not isinstance(relation.right, (ast.Number, ast.NoneLit, ast.ListLit))
    text = source_text(relation.span) + (f" within {source_text(stmt.within.span)}"
                                         if stmt.within is not None else "")
    left = equations.value_at_nominal(relation.left)
    right = equations.value_at_nominal(relation.right)
    nominal = equations.program.nominal
    if isinstance(left, NoneValue) or isinstance(right, NoneValue):
        if relation.op != "=":
            raise ElaborationError("none can only be compared with '='", relation.span)
        return Outcome(stmt.span, text, isinstance(left, NoneValue) and isinstance(right, NoneValue),
                       _show(left, nominal), _show(right, nominal), computed_right=computed)
    lefts, rights = _items(left, relation.left.span), _items(right, relation.right.span)
    dim = _dimension(lefts + rights, relation.span)
    tolerance = _tolerance(stmt.within, equations, dim)
    found, expected = _show(left, nominal), _show(right, nominal)
    if len(lefts) != len(rights):
        note = f"{len(lefts)} value{'s' * (len(lefts) != 1)} found, {len(rights)} expected"
        return Outcome(stmt.span, text, False, found, expected, note, computed)
    passed = all(_holds(relation.op, _at(a, nominal, relation.left.span),
                        _at(b, nominal, relation.right.span), tolerance)
                 for a, b in zip(lefts, rights))
    note = _not_the_same_function(stmt, equations) if passed else ""
    return Outcome(stmt.span, text, passed and not note, found, expected, note, computed)


def _not_the_same_function(stmt: ast.Expect, equations: Equations) -> str:
    """`A = B` without `within` claims exactness: two formulas must be the same function of
    the params they both depend on (any other param at its nominal value), on the regime at
    the nominal point, not only equal there (`identity`). Returns why they are not, or "".
    A side with no param in common with the other (a number, a report, `ceil` of a param, a
    `solve(...)`) is compared by value at the nominal point, as done already."""
    relation = stmt.relation
    if relation.op != "=" or stmt.within is not None:
        return ""
    if any(isinstance(node, ast.SolveOf) for node in ast.walk((relation.left, relation.right))):
        return ""  # a solution is a value at the nominal point (and solving again costs)
    try:
        left, right = equations.value(relation.left), equations.value(relation.right)
    except SchedcError:
        return ""
    try:
        lefts, rights = _items(left, relation.left.span), _items(right, relation.right.span)
    except SchedcError:
        return ""
    nominal = equations.program.nominal
    for a, b in zip(lefts, rights):
        shared = a.expr.free_symbols & b.expr.free_symbols
        if not shared:
            continue
        fixed = {s: nominal[s] for s in (a.expr.free_symbols | b.expr.free_symbols) - shared}
        try:
            difference = difference_near(a.expr.xreplace(fixed), b.expr.xreplace(fixed), nominal)
        except Undecided as exc:
            return f"equal at the nominal point; as functions of the params undecided ({exc})"
        if difference is not None:
            return ("equal at the nominal point, but not the same function of the params: in "
                    f"the regime there they differ by {difference}")
    return ""


def _items(value: object, span: Span) -> list[Quantity]:
    if isinstance(value, Values):
        return list(value.items)
    q = quantity_of(value)
    if q is not None:
        return [q]
    raise ElaborationError(f"expect compares numbers, quantities or solutions, not {kind_of(value)}",
                           span)


def _dimension(items: list[Quantity], span: Span) -> tuple[int, int]:
    dims = list(dict.fromkeys(q.dim for q in items))
    if len(dims) > 1:
        raise UnitError(f"cannot compare {dim_name(dims[0])} with {dim_name(dims[1])}", span)
    return dims[0] if dims else DIMENSIONLESS


def _tolerance(within: ast.Expr | None, equations: Equations, dim) -> tuple[str, sympy.Expr]:
    """("relative" | "absolute", amount)."""
    if within is None:
        return ("absolute", sympy.S.Zero)
    value = equations.value_at_nominal(within)
    if isinstance(value, Quantity) and value.dim != DIMENSIONLESS:
        if value.dim != dim:
            raise UnitError(f"the tolerance is {dim_name(value.dim)}; the sides are {dim_name(dim)}",
                            within.span)
        amount, kind = value.expr.xreplace(equations.program.nominal), "absolute"
    else:
        items = _items(value, within.span)
        amount, kind = items[0].expr.xreplace(equations.program.nominal), "relative"
    if not amount.is_number or amount < 0:
        raise ElaborationError("a tolerance must be a constant of at least 0", within.span)
    return (kind, amount)


def _at(q: Quantity, nominal: dict, span: Span) -> sympy.Expr:
    value = q.expr.xreplace(nominal)
    if not value.is_number:
        names = ", ".join(sorted(map(str, value.free_symbols)))
        raise ElaborationError(f"this has no value at the nominal point (free: {names})", span)
    return value


def _holds(op: str, a: sympy.Expr, b: sympy.Expr, tolerance: tuple[str, sympy.Expr]) -> bool:
    kind, amount = tolerance
    slack = amount * abs(b) if kind == "relative" else amount
    if all(v.is_Rational for v in (a, b, slack)):  # exact
        diff, slack_ = a - b, slack
    else:
        diff, slack_ = key(a - b), key(slack)
    return bool({"=": abs(diff) <= slack_, "<=": diff <= slack_, "<": diff < slack_,
                 ">=": diff >= -slack_, ">": diff > -slack_}[op])


def _show(value: object, nominal: dict) -> str:
    if isinstance(value, NoneValue):
        return "none"
    if isinstance(value, Values):
        return "[" + ", ".join(_show(v, nominal) for v in value.items) + "]"
    if isinstance(value, Quantity):
        number = value.expr.xreplace(nominal)
        if number.is_number:
            return format_quantity(float(key(number)), value.dim)
        return str(value.expr)
    return str(value)

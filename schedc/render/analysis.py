"""Text and JSON for `schedc solve`, `check`, `sensitivity` and `eval` (`sweep`'s are
sweep.py's).

Numbers in JSON are in base units (bytes, seconds, bytes/s); an unbounded end of an
interval is `null`. Formulas are SymPy strings, as in `schedc.time/1`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..elaborate.program import Param, Program
from ..units import (
    BYTES,
    DIMENSIONLESS,
    RATE,
    SECONDS,
    Dim,
    base_unit,
    format_quantity,
    format_seconds,
)
from ..words import counted
from . import schema
from .text import dump_json, json_number, params_json, table
from .verdict import verdict_json, verdict_text

if TYPE_CHECKING:  # (they bring SymPy, which a sweep without formulas never imports)
    import sympy

    from ..analysis.check import FileCheck, Outcome
    from ..analysis.solve.reports import ReportValue
    from ..analysis.solve.roots import Interval, Regime, Solution
    from ..analysis.solve.sensitivity import Sensitivity
    from ..analysis.verify.verdict import Verdict


def _show(expr: sympy.Expr, dim: Dim) -> str:
    return format_quantity(expr if expr.is_Rational else float(expr), dim)  # exact if it can


# ---- solve ------------------------------------------------------------------------------------


def _between(lo: sympy.Expr, hi: sympy.Expr, name: str, dim: Dim, closed: bool) -> str:
    import sympy
    le = "<=" if closed else "<"
    if lo == 0 and hi is sympy.oo:
        return f"every {name} > 0"
    if lo == 0:
        return f"{name} {le} {_show(hi, dim)}"
    if hi is sympy.oo:
        return f"{name} {'>=' if closed else '>'} {_show(lo, dim)}"
    return f"{_show(lo, dim)} {le} {name} {le} {_show(hi, dim)}"


def _interval_line(solution: Solution, interval: Interval, dim: Dim) -> str:
    equal = interval.smaller == "equal"  # then its ends are solutions too
    where = _between(interval.lo, interval.hi, solution.param, dim, closed=equal)
    left, right = solution.left.name, solution.right.name
    order = {"left": f"{left} < {right}", "right": f"{right} < {left}",
             "equal": f"{left} = {right}"}[interval.smaller]
    holds = "" if solution.relation == "=" else \
        ("   (holds)" if solution.holds(interval) else "   (does not hold)")
    return f"  {order}  for {where}{holds}"


def _sides(solution: Solution, left: sympy.Expr, right: sympy.Expr, indent: str) -> list[str]:
    """`name = formula` for each side that depends on params (a constant names itself)."""
    shown = [(side, expr) for side, expr in ((solution.left, left), (solution.right, right))
             if expr.free_symbols]
    width = max((len(side.name) for side, _ in shown), default=0)
    return [f"{indent}{side.name:<{width}} = {expr}" for side, expr in shown]


def _regime_lines(solution: Solution, regime: Regime, dim: Dim) -> list[str]:
    lines = [f"    regime: {_between(regime.lo, regime.hi, solution.param, dim, closed=True)}",
             *_sides(solution, regime.left, regime.right, "      ")]
    if regime.conditions:
        lines.append("      while " + ", ".join(str(c) for c in regime.conditions))
    return lines


def _switch_lines(program: Program, param: str, switches: dict) -> list[str]:
    """Where each schedule's winning protocol changes along `param`."""
    dim = program.params[param].dim
    out = []
    for name, spans in switches.items():
        out.append(f"fastest protocol of {name} along {param}:")
        for span in spans:
            where = _between(span.lo, span.hi, param, dim, closed=False)
            out.append(f"  {span.protocol:<10} {where}")
        out += [f"  switch at {param} = {_show(b.lo, dim)}: {a.protocol} -> {b.protocol}"
                for a, b in zip(spans, spans[1:])]
    return out


def solve_text(program: Program, equation: str, solution: Solution,
               switches: dict | None = None) -> str:
    param = program.params[solution.param]
    dim = param.dim
    others = ", ".join(f"{p.name} = {format_quantity(p.nominal, p.dim)}"
                       for p in program.params.values() if p.name != param.name)
    out = [f"solve {equation}  for {param.name} (nominal {format_quantity(param.nominal, dim)})",
           f"  other params: {others or 'none'}",
           *_sides(solution, solution.left.expr, solution.right.expr, "  "), ""]
    roots = solution.roots
    if roots:
        out.append(f"{counted(len(roots), 'solution')}:")
        for root in roots:
            symbolic = f" = {root.expr}" if root.expr is not None else ""
            out.append(f"  {param.name} = {_show(root.value, dim)}{symbolic}")
            out += _regime_lines(solution, root.regime, dim)
        out.append("")
    elif any(i.smaller == "equal" for i in solution.intervals):
        out.append("no isolated solution; the sides are equal on a whole interval:")
    else:
        out.append("no solution:")
    out += [_interval_line(solution, i, dim) for i in solution.intervals]
    closest = solution.closest
    if closest is not None:
        gap = format_quantity(float(closest.gap), solution.left.dim)
        if closest.limit:
            where = f"as {param.name} -> {'0' if closest.lo == 0 else 'oo'}"
        elif closest.lo == closest.hi:
            where = f"at {param.name} = {_show(closest.lo, dim)}"
        else:
            where = f"for {_between(closest.lo, closest.hi, param.name, dim, closed=True)}"
        out.append(f"closest approach: the sides differ by {gap} {where}")
    out += [f"note: {n}" for n in solution.notes]
    out += _switch_lines(program, solution.param, switches or {})
    return "\n".join(out) + "\n"


def _regime_json(regime: Regime) -> dict:
    return {"lo": json_number(regime.lo), "hi": json_number(regime.hi), "left": str(regime.left),
            "right": str(regime.right), "conditions": [str(c) for c in regime.conditions]}


def solve_json(program: Program, equation: str, solution: Solution,
               switches: dict | None = None) -> str:
    param = program.params[solution.param]
    intervals = []
    for i in solution.intervals:
        entry = {"lo": json_number(i.lo), "hi": json_number(i.hi), "smaller": solution.name(i.smaller)}
        if solution.relation != "=":
            entry["holds"] = solution.holds(i)
        intervals.append(entry)
    closest = None
    if solution.closest is not None:
        c = solution.closest
        closest = {"lo": json_number(c.lo), "hi": json_number(c.hi),
                   "gap": json_number(c.gap, integer=False), "limit": c.limit}
    return dump_json({
        "schema": schema.SOLVE,
        "file": program.path,
        "equation": equation,
        "relation": solution.relation,
        "param": param.name,
        "unit": base_unit(param.dim),
        "params": params_json(program),
        "left": {"name": solution.left.name, "formula": str(solution.left.expr)},
        "right": {"name": solution.right.name, "formula": str(solution.right.expr)},
        "solutions": [{"value": json_number(r.value, integer=False), "text": _show(r.value, param.dim),
                       "exact": str(r.value), "expr": None if r.expr is None else str(r.expr),
                       "regime": _regime_json(r.regime)} for r in solution.roots],
        "intervals": intervals,
        "closest": closest,
        "notes": list(solution.notes),
        **({"protocol_switches": {
            name: [{"protocol": sp.protocol, "lo": json_number(sp.lo), "hi": json_number(sp.hi)}
                   for sp in spans] for name, spans in switches.items()}} if switches else {}),
    })


# ---- sensitivity ------------------------------------------------------------------------------

# Derivatives are shown per a readable step of the param: ms per GB/s, per MiB, ...
_STEP = {RATE: (10**9, "GB/s"), BYTES: (2**20, "MiB"), DIMENSIONLESS: (1, "1")}


def _derivative(value: sympy.Expr, param: Param) -> str:
    if value == 0:
        return "0"
    if param.dim == SECONDS:  # s per s: a plain number (for alpha, the number of rounds)
        return f"{float(value):.5g}"
    step, unit = _STEP.get(param.dim, (1, base_unit(param.dim)))
    return f"{format_seconds(float(value) * step)} per {unit}"


def _elasticity(value: sympy.Expr) -> str:
    import sympy
    return "-" if value is sympy.nan else f"{float(value):.4g}"


def sensitivity_text(program: Program, rows: list[tuple[str, sympy.Expr, list[Sensitivity]]]) -> str:
    out = []
    for name, time, entries in rows:
        out.append(f"{name}: T = {format_seconds(float(time))}")
        cells = [("param", "nominal", "dT/dp", "elasticity")]
        for s in entries:
            if s.kink:
                derivative = f"{_derivative(s.up, s.param)} up, {_derivative(s.down, s.param)} down"
                elasticity = f"{_elasticity(s.elasticity_up)} up, {_elasticity(s.elasticity_down)} down"
            else:
                derivative, elasticity = _derivative(s.up, s.param), _elasticity(s.elasticity_up)
            cells.append((s.param.name, format_quantity(s.param.nominal, s.param.dim),
                          derivative, elasticity))
        out += table(cells, underline=False, indent="  ")
        if any(s.kink for s in entries):
            out.append("  (up/down: the time has a kink here; raising and lowering the param "
                       "change it at different rates)")
        out.append("")
    return "\n".join(out)


def sensitivity_json(program: Program, rows) -> str:
    def entry(s: Sensitivity) -> dict:
        return {"param": s.param.name,
                "value": json_number(s.param.nominal),
                "unit": base_unit(s.param.dim), "kink": s.kink,
                "derivative_up": json_number(s.up, integer=False),
                "derivative_down": json_number(s.down, integer=False),
                "elasticity_up": json_number(s.elasticity_up, integer=False),
                "elasticity_down": json_number(s.elasticity_down, integer=False)}

    return dump_json({
        "schema": schema.SENSITIVITY,
        "file": program.path,
        "params": params_json(program),
        "schedules": [{"name": name, "time_s": json_number(time, integer=False),
                       "sensitivities": [entry(s) for s in entries]}
                      for name, time, entries in rows],
    })


# ---- check ------------------------------------------------------------------------------------


def check_line(path: str, outcome: Outcome) -> str:
    verdict = "pass" if outcome.passed else "FAIL"
    detail = f"found {outcome.found}"
    if outcome.computed_right:
        detail += f" vs {outcome.expected}"
    elif not outcome.passed:
        detail += f", expected {outcome.expected}"
    if outcome.note:
        detail += f"; {outcome.note}"
    return f"{path}:{outcome.span.line}: {verdict}  expect {outcome.text}  ({detail})"


def report_line(path: str, report: ReportValue) -> str:
    return f"{path}:{report.span.line}: report {report.name} = {report_text(report)}"


def verdict_lines(path: str, verdict: Verdict) -> str:
    """A schedule that fails verification, with its counterexample."""
    return f"{path}:{verdict.schedule.span.line}: FAIL  verify {verdict_text(verdict)}"


def check_summary(files: list[FileCheck]) -> str:
    outcomes = [o for f in files for o in f.outcomes]
    failed = sum(not o.passed for o in outcomes)
    verdicts = [v for f in files for v in f.verdicts]
    wrong = sum(not v.ok for v in verdicts)
    errors = sum(f.error is not None for f in files)
    text = (f"{len(outcomes)} expect{'s' * (len(outcomes) != 1)} in {len(files)} "
            f"file{'s' * (len(files) != 1)}: {len(outcomes) - failed} passed, {failed} failed; "
            f"{len(verdicts) - wrong} of {len(verdicts)} schedule{'s' * (len(verdicts) != 1)} "
            "verified")
    return text + (f", {errors} file{'s' * (errors != 1)} with errors" if errors else "")


def check_json(files: list[FileCheck]) -> str:
    outcomes = [o for f in files for o in f.outcomes]
    return dump_json({
        "schema": schema.CHECK,
        "files": [{"file": f.path,
                   "error": None if f.error is None else f.error.render(),
                   "expects": [{"line": o.span.line, "col": o.span.col, "text": o.text,
                                "passed": o.passed, "found": o.found, "expected": o.expected,
                                "note": o.note} for o in f.outcomes],
                   "reports": [_report_json(r) for r in f.reports],
                   "schedules": [verdict_json(v) for v in f.verdicts]}
                  for f in files],
        "passed": sum(o.passed for o in outcomes),
        "failed": sum(not o.passed for o in outcomes),
        "verified": sum(v.ok for f in files for v in f.verdicts),
        "unverified": sum(not v.ok for f in files for v in f.verdicts),
        "errors": sum(f.error is not None for f in files),
    })


# ---- report statements (`schedc eval`) ----------------------------------------------------


def report_text(v: ReportValue) -> str:
    return format_quantity(v.value, v.dim)


def reports_text(values: tuple[ReportValue, ...]) -> str:
    if not values:
        return "no report statements\n"
    rows = table([(v.name, report_text(v)) for v in values], underline=False)
    return "".join(line + "\n" for line in rows)


def reports_json(program: Program, values: tuple[ReportValue, ...]) -> str:
    return dump_json({"schema": schema.EVAL, "file": program.path, "params": params_json(program),
                      "reports": [_report_json(v) for v in values]})


def _report_json(v: ReportValue) -> dict:
    return {"name": v.name, "value": json_number(v.value), "unit": base_unit(v.dim),
            "text": report_text(v)}

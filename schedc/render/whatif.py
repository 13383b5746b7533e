"""`schedc whatif` as text and as JSON (schedc.whatif/1)."""

from __future__ import annotations

from fractions import Fraction

import sympy

from ..analysis.whatif import Outcome, Symmetry, Weakest, WhatIf
from ..units import format_seconds
from . import schema
from .text import dump_json, json_number, table

HALF = Fraction(1, 2)


def whatif_text(path: str, result: WhatIf, worst_only: bool = False) -> str:
    names = result.schedules
    lines = [f"what-if: each of the {len(result.items)} items of class '{result.cls}' failed "
             f"alone ({path})", ""]
    if not worst_only:
        rows = [("failed", *names), ("(nothing)", *(format_seconds(result.base[n]) for n in names))]
        for item in result.items:
            rows.append((item.name, *(_cell(result.outcomes[(item.name, n)]) for n in names)))
        lines += table(rows, right=range(1, len(names) + 1))
        if any(o.computed_for for o in result.outcomes.values()):
            lines.append("* by symmetry: the time of the failure it is a shift of (below)")
        lines.append("")
        lines += ["symmetry:", *(f"  {n}: {_symmetry(result.symmetry[n])}" for n in names), ""]
    lines.append("worst single failure:")
    for n in names:
        w = result.weakest[n]
        outcome = result.outcomes[(w.item, n)]
        lines.append(f"  {n}: {w.item}: {_worst(outcome, result.base[n])}")
    lines += ["", "the weakest item derated by a factor d (0 < d <= 1), the other params nominal:"]
    for n in names:
        lines += [f"  {n}: {line}" if k == 0 else f"    {line}"
                  for k, line in enumerate(_derated(result.weakest[n], result.base[n]))]
    return "\n".join(lines) + "\n"


def _cell(outcome: Outcome) -> str:
    text = "no route" if outcome.time is None else format_seconds(outcome.time)
    return text + ("*" if outcome.computed_for else " ")


def _symmetry(s: Symmetry) -> str:
    if s.step is None:
        return (f"each of the {s.items} failures computed (shifting the hosts is not a symmetry "
                "of the machine and this schedule)")
    shift = "the next host" if s.step == 1 else f"the host {s.step} places on"
    return (f"{s.items} failures in {s.orbits} classes of symmetric ones, computed once each "
            f"(moving every host to {shift}, of {s.hosts}, leaves the machine and this "
            "schedule unchanged)")


def _worst(outcome: Outcome, base: Fraction) -> str:
    if outcome.time is None:
        return f"no route ({outcome.no_route})"
    return f"{format_seconds(outcome.time)} ({_change(outcome.time, base)})"


def _change(time: Fraction, base: Fraction) -> str:
    if time == base:
        return "unchanged"
    sign = "+" if time > base else "-"
    return f"{sign}{format_seconds(abs(time - base))}, x{float(time / base):.4g}"


def _derated(w: Weakest, base: Fraction) -> list[str]:
    if w.derated is None:
        return [f"{w.item}: no formula in {w.factor}: {w.why_not}"]
    half = _at(w, HALF)
    return [f"{w.item} at {w.factor} times its bandwidth:",
            f"T = {w.derated}",
            f"in ms: {in_ms(w.in_factor)}",
            f"at {w.factor} = 1/2: {format_seconds(half)} ({_change(half, base)})"]


def in_ms(expr: sympy.Expr) -> str:
    """A time formula in d alone (seconds), in milliseconds with five significant digits."""
    return str(_scaled(expr, sympy.Integer(1000)))


def _scaled(expr: sympy.Expr, factor: sympy.Expr) -> sympy.Expr:
    """expr·factor with the factor carried into sums, maxima and minima (so a number inside
    a Max is in the new unit too), numbers as five-digit floats; maxima are not re-evaluated
    (SymPy's comparisons of their arguments cost more than the rest of whatif)."""
    if expr.func in (sympy.Max, sympy.Min):
        return expr.func(*[_scaled(a, factor) for a in expr.args], evaluate=False)
    if expr.func is sympy.Add:
        return sympy.Add(*[_scaled(a, factor) for a in expr.args], evaluate=False)
    coefficient, rest = expr.as_coeff_Mul()
    if rest.func in (sympy.Add, sympy.Max, sympy.Min):
        return sympy.Mul(sympy.Integer(coefficient) if coefficient.is_Integer else
                         sympy.Float(coefficient, 5), _scaled(rest, factor), evaluate=False)
    number, symbolic = expr.as_coeff_Mul()
    value = number * factor
    return sympy.Mul(sympy.Float(value, 5), symbolic, evaluate=False) if symbolic != 1 \
        else sympy.Float(value, 5)


def _at(w: Weakest, value: Fraction) -> Fraction:
    assert w.in_factor is not None
    found = w.in_factor.xreplace({w.factor: sympy.Rational(value.numerator, value.denominator)})
    return Fraction(int(found.p), int(found.q))


def whatif_json(path: str, result: WhatIf) -> str:
    names = result.schedules
    document = {
        "schema": schema.WHATIF,
        "file": path,
        "class": result.cls,
        "schedules": [{"name": n, "time_s": json_number(result.base[n], integer=False),
                       "symmetry": _symmetry_json(result.symmetry[n])} for n in names],
        "failures": [{"item": item.name, "kind": item.kind, "item_class": item.cls,
                      "schedules": {n: _outcome_json(result.outcomes[(item.name, n)])
                                    for n in names}}
                     for item in result.items],
        "worst": {n: _weakest_json(result.weakest[n], result.outcomes[(result.weakest[n].item, n)])
                  for n in names},
    }
    return dump_json(document)


def _symmetry_json(s: Symmetry) -> dict:
    return {"hosts": s.hosts, "shift_hosts": s.step, "failures": s.items, "computed": s.orbits}


def _outcome_json(o: Outcome) -> dict:
    return {"time_s": json_number(o.time, integer=False),
            "formula": None if o.formula is None else str(o.formula),
            "no_route": o.no_route, "computed_for": o.computed_for}


def _weakest_json(w: Weakest, outcome: Outcome) -> dict:
    return {"item": w.item, "time_s": json_number(outcome.time, integer=False),
            "no_route": outcome.no_route, "factor": str(w.factor),
            "formula": None if w.derated is None else str(w.derated),
            "formula_nominal": None if w.in_factor is None else str(w.in_factor),
            "at_half_s": None if w.in_factor is None else json_number(_at(w, HALF),
                                                                       integer=False),
            "why_not": w.why_not}

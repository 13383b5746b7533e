"""Which schedule is fastest where: the lower envelope of several schedules' times over a
range of one param (the message size, for a tuner table), from exact crossovers.

Every pair of schedules is solved with `solve` (`time(a) = time(b)` for the param, the
others at their nominal values): its roots inside the range cut it into stretches. Between
two consecutive cuts no pair changes order, so the fastest schedule there is the one that is
fastest at any point inside, found by evaluating the formulas exactly at a rational point;
neighbouring stretches with the same winner are joined. On a tie throughout a stretch the
schedule listed first wins.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations

import sympy

from ...deadline import DEFAULT_TIMEOUT
from ...elaborate.program import Param
from ...errors import SourceFile, Span
from ...language.parser import parse_equation
from ...session import Session
from .equations import Equations

DIGITS = 50  # roots are ordered by approximations this precise, as `solve` orders them


@dataclass(frozen=True)
class Stretch:
    lo: sympy.Expr  # exact values of the param
    hi: sympy.Expr
    fastest: str


@dataclass(frozen=True)
class Crossover:
    at: sympy.Expr  # exact
    left: str
    right: str


@dataclass(frozen=True)
class Envelope:
    param: Param
    lo: Fraction
    hi: Fraction
    stretches: tuple[Stretch, ...]
    crossovers: tuple[Crossover, ...]  # every pair's crossing inside the range, in order


def fastest(session: Session, names: list[str], param: Param, lo: Fraction, hi: Fraction,
            timeout: float = DEFAULT_TIMEOUT) -> Envelope:
    equations = Equations(session, timeout)
    x = param.symbol
    low, high = sympy.Rational(lo.numerator, lo.denominator), \
        sympy.Rational(hi.numerator, hi.denominator)
    crossovers = []
    for a, b in combinations(names, 2):
        text = f"time({a}) = time({b})"
        relation = parse_equation(SourceFile("crossover", text))
        span = Span(SourceFile("crossover", param.name), 1, 1, 1, len(param.name) + 1)
        if not _depends(session, (a, b), x):
            continue
        for root in equations.solve(relation, param.name, span).roots:
            if low < root.value < high:
                crossovers.append(Crossover(root.value, a, b))
    crossovers.sort(key=lambda c: (sympy.N(c.at, DIGITS), c.left, c.right))
    cuts = [low] + _distinct([c.at for c in crossovers]) + [high]
    others = {s: v for s, v in session.program.nominal.items() if s != x}
    formulas = {n: session.timing(n).cost.formula.xreplace(others) for n in names}
    stretches: list[Stretch] = []
    for start, end in zip(cuts, cuts[1:]):
        point = _between(start, end)
        times = [(formulas[n].xreplace({x: point}), k) for k, n in enumerate(names)]
        winner = names[min(times, key=lambda t: (sympy.N(t[0], DIGITS), t[1]))[1]]
        if stretches and stretches[-1].fastest == winner:
            stretches[-1] = Stretch(stretches[-1].lo, end, winner)
        else:
            stretches.append(Stretch(start, end, winner))
    return Envelope(param, lo, hi, tuple(stretches), tuple(crossovers))


def _depends(session: Session, names: tuple[str, ...], x: sympy.Symbol) -> bool:
    """Whether either time depends on x (else their order is the same everywhere)."""
    return any(session.timing(n).cost.formula.has(x) for n in names)


def _distinct(points: list[sympy.Expr]) -> list[sympy.Expr]:
    out: list[sympy.Expr] = []
    for p in points:
        if not out or sympy.simplify(p - out[-1]) != 0:
            out.append(p)
    return out


def _between(a: sympy.Expr, b: sympy.Expr) -> sympy.Rational:
    """A rational point strictly inside (a, b)."""
    if a.is_Rational and b.is_Rational:
        return (a + b) / 2
    mid = sympy.Rational(str(sympy.N((a + b) / 2, DIGITS)))
    return mid if a < mid < b else sympy.nsimplify((a + b) / 2, rational=True)


def byte_ranges(envelope: Envelope) -> list[tuple[int, int, str]]:
    """Each stretch as whole bytes (min, max, schedule), empty ones dropped: a crossover at x
    gives the sizes up to ⌊x⌋ to the schedule faster below it, from ⌊x⌋ + 1 to the other."""
    out = []
    first = math.ceil(envelope.lo)
    for k, stretch in enumerate(envelope.stretches):
        last = math.floor(envelope.hi) if k == len(envelope.stretches) - 1 else \
            int(sympy.floor(stretch.hi))
        if last >= first:
            out.append((first, last, stretch.fastest))
        first = max(first, last + 1)
    return out

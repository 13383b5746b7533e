"""Solving for a structural param: a search over the integers, one compile per value.

A structural param (`param hosts = 2`) changes the machine or the schedule, so `left - right`
is not one formula in it. The search compiles the file at hosts = 1, 2, ..., 16 and then at
powers of two up to `MAX_SEARCH`, stopping early where a value is refused as too large; where
the smaller side changes between two values far apart, it bisects over the integers in between
to find the exact crossover. It says how far it searched, and never claims anything beyond.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from ... import progress
from ...errors import LimitError, SchedcError, SolveError, Span, VerificationFailed
from ...language import syntax as ast
from ...model.values import from_rational
from ...session import Session
from ...units import Dim
from .equations import Equations, source_text

DENSE = 16  # every integer up to here
MAX_SEARCH = 1024  # then powers of two up to here


@dataclass(frozen=True)
class Point:
    n: int
    left: Fraction  # both sides at this value, the other params at their nominal values
    right: Fraction
    dim: Dim

    @property
    def smaller(self) -> str:
        return "equal" if self.left == self.right else "left" if self.left < self.right else "right"


@dataclass(frozen=True)
class Change:
    """Between the consecutive integers `lo` and `hi` the smaller side changes from `before`
    to `after` ("left", "right" or "equal")."""

    lo: int
    hi: int
    before: str
    after: str


@dataclass(frozen=True)
class IntegerSearch:
    param: str
    relation: str
    left: str  # the sides' names
    right: str
    points: tuple[Point, ...]  # every value compiled, in increasing order
    changes: tuple[Change, ...]
    skipped: tuple[tuple[int, str], ...]  # values that do not compile, with the reason
    stopped: str | None  # why the search ended before MAX_SEARCH

    @property
    def searched(self) -> tuple[int, int]:
        return self.points[0].n, self.points[-1].n

    @property
    def roots(self) -> tuple[int, ...]:
        return tuple(p.n for p in self.points if p.smaller == "equal")


def search(session: Session, relation: ast.Relation, param: str, param_span: Span,
           timeout: float, prepare: Callable[[Session], object] = lambda at: None
           ) -> IntegerSearch:
    """`prepare(session)` runs at each value first (the command verifies the schedules)."""
    def sides(n: int) -> Point:
        at = session.at({param: n})
        prepare(at)
        equations = Equations(at, timeout)
        left, right = equations.side(relation.left), equations.side(relation.right)
        values = [expr.xreplace(at.program.nominal) for expr in (left.expr, right.expr)]
        if not all(v.is_Rational for v in values):
            raise SolveError(f"at {param} = {n} a side is not a number", relation.span)
        return Point(n, from_rational(values[0]), from_rational(values[1]), left.dim)

    ladder = [*range(1, DENSE + 1)]
    while ladder[-1] * 2 <= MAX_SEARCH:
        ladder.append(ladder[-1] * 2)
    found: dict[int, Point] = {}
    skipped: list[tuple[int, str]] = []
    stopped = None
    # Each value is a compile (28 s to minutes in all for the seed's hosts): a bar on a terminal.
    ticker = progress.ticker(f"solve: {param} = 1..{ladder[-1]}", len(ladder))
    for n in ladder:
        ticker.advance()
        try:
            found[n] = sides(n)
        except LimitError as error:
            stopped = f"stopped at {param} = {n}: {error.message}"
            break
        except (SolveError, VerificationFailed):
            raise
        except SchedcError as error:
            if found:  # a value past the start that does not compile: the search ends there
                stopped = f"stopped at {param} = {n}: {error.message}"
                break
            skipped.append((n, error.message))
    if not found:
        raise SolveError(f"the file compiles at no value of {param} in 1..{ladder[-1]} "
                         f"({param} = 1: {skipped[0][1]})", param_span)
    ticker.finish()
    # Bisect every stretch where the smaller side changes between values far apart.
    order = sorted(found)
    stretches = [(a, b) for a, b in zip(order, order[1:])
                 if b - a > 1 and found[a].smaller != found[b].smaller]
    ticker = progress.ticker(f"solve: bisecting {param}",
                             sum((b - a - 1).bit_length() for a, b in stretches))
    for a, b in zip(order, order[1:]):
        lo, hi = a, b
        while hi - lo > 1 and found[lo].smaller != found[hi].smaller:
            mid = (lo + hi) // 2
            found[mid] = sides(mid)
            ticker.advance()
            lo, hi = (mid, hi) if found[mid].smaller == found[lo].smaller else (lo, mid)
    ticker.finish()
    points = tuple(found[n] for n in sorted(found))
    changes = tuple(Change(p.n, q.n, p.smaller, q.smaller)
                    for p, q in zip(points, points[1:]) if p.smaller != q.smaller)
    return IntegerSearch(param, relation.op, source_text(relation.left.span),
                         source_text(relation.right.span), points, changes, tuple(skipped),
                         stopped)

"""What `analysis.scale` answers: pieces of a form in n, each `proved` or `checked`, and a
schedule's pieces with its `--at` values."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import sympy

from .fitting import Family, Shape


@dataclass(frozen=True)
class Observation:
    """What one schedule is at one instance."""

    n: int
    time: Fraction
    regime: Shape
    formula: Shape
    bounds: dict[str, Shape]  # "bound" (the best), "cut-set", "end-host"; empty if not asked


@dataclass(frozen=True)
class Piece:
    valid_from: int
    valid_to: int | None  # None (unbounded) only for a proved piece
    family: Family
    fit_points: tuple[int, ...]
    check_points: tuple[int, ...]
    regime: sympy.Expr | None  # None: no closed form in the basis (see `times`)
    conditions: tuple[str, ...]
    formula: sympy.Expr | None
    limit: sympy.Expr | None  # as n -> oo: only for the last piece (extrapolated unless proved)
    bounds: dict[str, sympy.Expr | None]
    ratio: sympy.Expr | None  # time / bound
    ratio_limit: sympy.Expr | None
    times: tuple[tuple[int, Fraction], ...]  # every instance of the piece that was compiled
    # As n -> oo: each monomial (α, V/B_N, ...), the constant k and the function f(n) of
    # the leading term k·f(n) of its coefficient (f: n², n·log2 n, n, log2 n or 1); empty
    # but for the last piece.
    asymptote: tuple[tuple[sympy.Expr, sympy.Expr, sympy.Expr], ...] = ()
    optimum: Optimum | None = None
    status: str = "checked"  # "proved": for every n in the range; "checked": at `checked_at`
    argument: str | None = None  # with "proved": why it holds for every n
    ends: str | None = None  # why the piece ends at valid_to
    last: bool = False  # the last piece: beyond valid_to the form is an extrapolation
    notes: tuple[str, ...] = ()
    # The full formula's round classes as fitted: (count, start-up, the terms of its Max),
    # each a function of n (what `proof` compares with the classes it derives).
    classes: tuple[tuple[sympy.Expr, sympy.Expr, tuple[sympy.Expr, ...]], ...] = ()
    # "proved" (`bound_argument` says why, `bound_pieces` the forms over the piece's range,
    # several where the binding bound changes inside it) or "checked" (fitted, as the time).
    bounds_status: str = "checked"
    bound_argument: str | None = None
    bound_pieces: tuple[BoundPiece, ...] = ()

    @property
    def checked_at(self) -> tuple[int, ...]:
        return tuple(n for n, _ in self.times)

    def holds_at(self, value: int) -> bool:
        if self.family.name == "powers of two" and value & (value - 1):
            return False
        if self.family.step > 1 and value % self.family.step != self.family.offset:
            return False
        return value >= self.valid_from and (self.valid_to is None or value <= self.valid_to)


@dataclass(frozen=True)
class BoundPiece:
    """The bounds of a collective for every n in [lo, hi] (hi None: unbounded), proved
    (`analysis.scale.cutforms`)."""

    lo: int
    hi: int | None
    cut: sympy.Expr  # the binding cut's bound: V / its width
    end_host: sympy.Expr | None
    best: sympy.Expr

    def holds_at(self, value: int) -> bool:
        return self.lo <= value and (self.hi is None or value <= self.hi)


@dataclass(frozen=True)
class Optimum:
    """A knob's best value: the stationary point of the closed form, and the best integer."""

    stationary: sympy.Expr  # n* from dT/dn = 0, in the other params
    value: sympy.Expr  # n* at the nominal point
    best: int  # the better of floor(n*) and ceil(n*), each compiled
    best_time: Fraction
    neighbours: tuple[tuple[int, Fraction], ...]


@dataclass(frozen=True)
class AtValue:
    """`scale --at N`: the time at n, and how it was found."""

    n: int
    time: Fraction
    method: str  # "formula" | "compiled" | "extrapolated"
    bound: Fraction | None = None  # the best bound at n, from its proved form


@dataclass(frozen=True)
class Scaling:
    name: str
    param: str
    symbol: sympy.Symbol
    pieces: tuple[Piece, ...]
    notes: tuple[str, ...]
    at: tuple[AtValue, ...] = ()

    def form_at(self, value: int, nominal: dict, extrapolate: bool = False
                ) -> tuple[Fraction, str] | None:
        """The time at `value` from the form of the piece holding it, and "formula"; past
        the last piece's range, with `extrapolate`, from that piece and "extrapolated";
        else None (compile there)."""
        for piece in self.pieces:
            if piece.regime is not None and piece.holds_at(value):
                return _evaluate(piece, self, value, nominal), "formula"
        last = self.pieces[-1] if self.pieces else None
        if (extrapolate and last is not None and last.regime is not None and last.last
                and last.valid_to is not None and value > last.valid_to
                and (last.family.name != "powers of two" or not value & (value - 1))):
            return _evaluate(last, self, value, nominal), "extrapolated"
        return None


def _evaluate(piece: Piece, scaling: Scaling, value: int, nominal: dict) -> Fraction:
    assert piece.regime is not None
    others = {s: v for s, v in nominal.items() if str(s) != scaling.param}
    exact = piece.regime.xreplace(others).xreplace({scaling.symbol: value})
    if not exact.is_Rational:  # log(2^k)/log(2) at a power of two: exactly k
        exact = sympy.nsimplify(sympy.expand_log(exact, force=True))
    return Fraction(int(exact.p), int(exact.q))



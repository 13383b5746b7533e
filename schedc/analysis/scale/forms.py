"""Closed forms in a structural param: a schedule's time as a formula in n = hosts (or ranks,
or chunks), derived from compiled instances and checked on instances not used for the fit.

Method. At each n the regime form is a sum of rational coefficients times monomials of the
other params (α, V/B_N, ...). Every coefficient is written as an exact rational combination
of a basis of functions of n — 1, n, 1/n, n² over the integers; 1, log2 n, n, 1/n over the
powers of two, where log2 n is an integer — fitted by solving the exact linear system on as
many instances as the basis has functions. The result is then CHECKED, coefficient by
coefficient and exactly, at instances not used for the fit: the next two, and one at least
8× larger than the largest fit point. A form that fails a check is never reported; the times
at the instances are reported instead. The same fit is made of the full formula (its round
classes: count × (start-up + Max of terms)), of the bounds of `analysis.bound`, and the ratio
time / bound follows from the fitted forms, with its limit as n → ∞.

Where the regime (its monomials or its conditions) changes with n, the axis is cut into
pieces, each fitted on its own: the change between the small instances and the far check is
located by bisection over n.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import sympy

from ...errors import CostError, SchedcError, UsageError, VerificationFailed, did_you_mean
from ...session import Session
from ..bound.bounds import bound
from .fitting import (
    FAMILIES,
    Family,
    NotFittable,
    Shape,
    classes_form,
    classes_shape,
    fit_slots,
    linear_form,
    linear_shape,
    regime_parts,
    regime_shape,
)

MAX_PIECES = 3
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
    valid_to: int | None  # None: checked up to the far check and assumed beyond
    family: Family
    fit_points: tuple[int, ...]
    check_points: tuple[int, ...]
    regime: sympy.Expr | None  # None: no closed form in the basis (see `times`)
    conditions: tuple[str, ...]
    formula: sympy.Expr | None
    limit: sympy.Expr | None
    bounds: dict[str, sympy.Expr | None]
    ratio: sympy.Expr | None  # time / bound
    ratio_limit: sympy.Expr | None
    times: tuple[tuple[int, Fraction], ...]  # every instance of the piece that was compiled
    # As n -> oo: each monomial (α, V/B_N, ...), the constant k and the function f(n) of
    # the leading term k·f(n) of its coefficient (f: n², n·log2 n, n, log2 n or 1); empty
    # for a bounded piece.
    asymptote: tuple[tuple[sympy.Expr, sympy.Expr, sympy.Expr], ...] = ()
    optimum: Optimum | None = None


@dataclass(frozen=True)
class Optimum:
    """A knob's best value: the stationary point of the closed form, and the best integer."""

    stationary: sympy.Expr  # n* from dT/dn = 0, in the other params
    value: sympy.Expr  # n* at the nominal point
    best: int  # the better of floor(n*) and ceil(n*), each compiled
    best_time: Fraction
    neighbours: tuple[tuple[int, Fraction], ...]


@dataclass(frozen=True)
class Scaling:
    name: str
    param: str
    symbol: sympy.Symbol
    pieces: tuple[Piece, ...]
    notes: tuple[str, ...]

    def time_at(self, value: int, nominal: dict) -> Fraction | None:
        """The time at `value` from the fitted form of the piece holding it (no compile at
        that size), the other params at `nominal`; None outside every fitted piece."""
        for piece in self.pieces:
            inside = value >= piece.valid_from and (piece.valid_to is None
                                                    or value <= piece.valid_to)
            if piece.regime is None or not inside:
                continue
            if piece.family.name == "powers of two" and value & (value - 1):
                return None
            others = {s: v for s, v in nominal.items() if str(s) != self.param}
            exact = piece.regime.xreplace(others).xreplace({self.symbol: value})
            if not exact.is_Rational:  # log(2^k)/log(2) at a power of two: exactly k
                exact = sympy.simplify(sympy.expand_log(exact, force=True))
            return Fraction(int(exact.p), int(exact.q)) if exact.is_Rational else None
        return None


class Scaler:
    """Fits the schedules of one session in one structural param."""

    def __init__(self, session: Session, param: str, names: list[str], start: int,
                 with_bounds: bool, prepare: Callable[[Session, str], object]) -> None:
        found = session.program.params.get(param)
        if found is None or not found.structural:
            structural = list(session.structural())
            hint = (f"; '{param}' is not one" if found else did_you_mean(param, structural))
            raise UsageError(f"--in needs a structural param (a unitless integer such as "
                             f"'param hosts = 2'){hint}" + (
                                 f" (structural params: {', '.join(structural)})"
                                 if structural else "; this file has none"))
        self.session, self.param, self.names = session, param, names
        self.symbol = sympy.Symbol(param, positive=True, integer=True)
        self.start, self.with_bounds, self.prepare = start, with_bounds, prepare
        self._seen: dict[tuple[int, str], Observation | SchedcError] = {}

    # ---- instances

    def observe(self, n: int, name: str) -> Observation:
        """One schedule at n (the file compiled once per n); raises the instance's error."""
        if (n, name) not in self._seen:
            try:
                self._seen[n, name] = self._observe(n, name)
            except VerificationFailed:
                raise
            except SchedcError as error:
                self._seen[n, name] = error
            except NotFittable as term:
                self._seen[n, name] = CostError(f"a coefficient is not an exact rational: {term}")
        found = self._seen[n, name]
        if isinstance(found, SchedcError):
            raise found
        return found

    def _observe(self, n: int, name: str) -> Observation:
        at = self.session.at({self.param: n})
        self.prepare(at, name)
        shapes: dict[str, Shape] = {}
        for group in self._bounds(at, name) if self.with_bounds else []:
            shapes["bound"] = linear_shape(group.best)
            if group.binding is not None:
                shapes["cut-set"] = linear_shape(group.binding.crossing.bound)
            if group.end_host is not None:
                shapes["end-host"] = linear_shape(group.end_host.bound)
        t = at.timing(name)
        return Observation(n, t.time, regime_shape(t.cost.regime_formula, t.cost.conditions),
                           classes_shape(t), shapes)

    def _bounds(self, at: Session, name: str) -> list:
        """The bounds of the schedule's collective at one instance (shared by the schedules
        that compute it; the schedules' own efficiencies are not needed here)."""
        collective = at.program.result(name).collective
        return [at.memo("scale-bounds", str(id(collective)),
                        lambda: bound(at, collective, []))]

    # ---- pieces

    def scale(self, name: str) -> Scaling:
        """The first family whose every piece has a closed form; else the last one tried,
        with its times. Why an earlier family failed is a note."""
        notes: list[str] = []
        pieces: list[Piece] = []
        for family in FAMILIES:
            try:
                pieces = self._pieces(name, family)
            except _Refused as refused:
                notes.append(f"over the {family.name}: {refused.args[0]}")
                continue
            if all(p.regime is not None for p in pieces):
                break
            notes.append(f"over the {family.name}: no closed form in the basis "
                         f"{_basis_text(family, self.symbol)}")
        return Scaling(name, self.param, self.symbol, tuple(pieces), tuple(notes))

    def _pieces(self, name: str, family: Family) -> list[Piece]:
        pieces: list[Piece] = []
        index = family.index(max(self.start, 1))
        if family.point(index) < self.start:
            index += 1
        while len(pieces) < MAX_PIECES:
            piece, next_index = self._piece(name, family, index)
            pieces.append(piece)
            if next_index is None:
                return pieces
            index = next_index
        raise _Refused(f"the regime changes more than {MAX_PIECES - 1} times from "
                       f"{self.param} = {family.point(index)} on")

    def _sample(self, name: str, family: Family, index: int) -> Observation:
        try:
            return self.observe(family.point(index), name)
        except VerificationFailed:
            raise
        except SchedcError as error:  # a LimitError too: this family is refused, not tried
            raise _Refused(f"{self.param} = {family.point(index)} does not compile: "
                           f"{error.message}") from None

    def _piece(self, name: str, family: Family, index: int) -> tuple[Piece, int | None]:
        """The piece starting at `index`, and where the next one starts (None: the last)."""
        size = len(family.basis)
        small = list(range(index, index + size + 2))
        sample = {i: self._sample(name, family, i) for i in small}
        key = sample[index].regime.key
        change = next((i for i in small if sample[i].regime.key != key), None)
        if change is None:
            far = family.far(small[size - 1])
            sample[far] = self._sample(name, family, far)
            if sample[far].regime.key != key:  # find the first index with another regime
                lo, hi = small[-1], far
                while hi - lo > 1:
                    mid = (lo + hi) // 2
                    sample[mid] = self._sample(name, family, mid)
                    lo, hi = (mid, hi) if sample[mid].regime.key == key else (lo, mid)
                change = hi
        if change is not None and change - index < size + 1:
            points = [i for i in sorted(sample) if index <= i < change]
            return self._unfitted(family, points, sample, change), change
        points = sorted(i for i in sample if change is None or i < change)
        if change is not None and change - 1 not in points:
            sample[change - 1] = self._sample(name, family, change - 1)
            points.append(change - 1)
        return self._fitted(name, family, points[:size], points[size:], sample, change), change

    def _unfitted(self, family: Family, points: list[int], sample: dict, change: int) -> Piece:
        first = sample[points[0]]
        return Piece(family.point(points[0]), family.point(change - 1), family,
                     (), tuple(family.point(i) for i in points), None,
                     regime_parts(first.regime, [sympy.Rational(c.numerator, c.denominator)
                                                 for c in first.regime.slots])[1],
                     None, None, {}, None, None,
                     tuple((family.point(i), sample[i].time) for i in points))

    def _fitted(self, name: str, family: Family, fit: list[int], check: list[int],
                sample: dict[int, Observation], change: int | None) -> Piece:
        n = self.symbol
        fit_n, check_n = [family.point(i) for i in fit], [family.point(i) for i in check]
        by_n = {family.point(i): o for i, o in sample.items()}
        times = tuple((family.point(i), sample[i].time) for i in sorted(sample)
                      if change is None or i < change)

        def fitted(pick: Callable[[Observation], Shape], build) -> sympy.Expr | None:
            shapes = {p: pick(by_n[p]) for p in (*fit_n, *check_n)}
            slots = fit_slots(shapes, fit_n, check_n, family, n)
            return None if slots is None else build(shapes[fit_n[0]], slots)

        first = sample[fit[0]].regime
        parts = fitted(lambda o: o.regime, regime_parts)
        valid_to = None if change is None else family.point(change - 1)
        if parts is None:
            conditions = regime_parts(first, [sympy.Rational(c.numerator, c.denominator)
                                              for c in first.slots])[1]
            return Piece(fit_n[0], valid_to, family, tuple(fit_n), tuple(check_n), None,
                         conditions, None, None, {}, None, None, times)
        regime, conditions = parts
        formula = fitted(lambda o: o.formula, classes_form)
        bounds: dict[str, sympy.Expr | None] = {}
        for kind in sample[fit[0]].bounds:
            def bound_of(o: Observation, k: str = kind) -> Shape:
                return o.bounds.get(k, Shape((), ()))
            bounds[kind] = fitted(bound_of, linear_form)
        best = bounds.get("bound")
        ratio = _tidy(regime / best) if best else None
        unbounded = valid_to is None
        monomials = first.key[1][1]
        slots = fit_slots({p: by_n[p].regime for p in (*fit_n, *check_n)}, fit_n, check_n,
                          family, n) or []
        asymptote = tuple((m, *_leading(c, n)) for c, m in zip(slots, monomials)) \
            if unbounded else ()
        piece = Piece(fit_n[0], valid_to, family, tuple(fit_n), tuple(check_n), regime,
                      conditions, formula, _limit(regime, n) if unbounded else None, bounds,
                      ratio, _limit(ratio, n) if ratio is not None and unbounded else None, times,
                      tuple(a for a in asymptote if a[1] is not None))
        return _with_optimum(piece, self, name)


class _Refused(Exception):
    """A family cannot be fitted (an instance does not compile, too many regimes)."""


def _basis_text(family: Family, n: sympy.Symbol) -> str:
    return ", ".join(str(b(n)) for b in family.basis)


def _tidy(expr: sympy.Expr) -> sympy.Expr:
    forms = [expr, sympy.factor(expr), sympy.cancel(expr)]
    return min(forms, key=lambda e: (sympy.count_ops(e), len(str(e))))


def _limit(expr: sympy.Expr, n: sympy.Symbol) -> sympy.Expr | None:
    try:
        found = sympy.limit(expr, n, sympy.oo)
    except (NotImplementedError, ValueError, TypeError):
        return None
    return None if found.has(sympy.AccumBounds) else _tidy(found)


def _leading(coefficient: sympy.Expr, n: sympy.Symbol) -> tuple:
    """(k, f) of the leading term k·f(n) of a coefficient as n -> oo; (None, None) if none
    of n², n·log2 n, n, log2 n, 1 is it."""
    for scale in (n**2, n * sympy.log(n, 2), n, sympy.log(n, 2), sympy.Integer(1)):
        found = _limit(coefficient / scale, n)
        if found is not None and found.is_finite and found != 0:
            return found, scale
    return None, None


def _with_optimum(piece: Piece, scaler: Scaler, name: str) -> Piece:
    """A stationary point of the time inside the piece: the knob's optimum (`c*`), with the
    two integers around it (its floor and ceiling) compiled to find the best."""
    from dataclasses import replace
    assert piece.regime is not None  # called only on a piece with a closed form
    n = scaler.symbol
    x = sympy.Symbol(str(n), positive=True)  # solved over the reals, then rounded
    nominal = {s: v for s, v in scaler.session.program.nominal.items() if str(s) != str(n)}
    slope = sympy.diff(piece.regime.xreplace({n: x}), x)
    try:  # no checksol: each root is checked below at the nominal point, which is cheaper
        roots = sympy.solve(slope, x, check=False, simplify=False)
    except (NotImplementedError, ValueError):
        return piece
    for root in roots:
        value = root.xreplace(nominal)
        if not (value.is_real and value.is_positive):
            continue
        curvature = sympy.diff(slope, x).xreplace(nominal).xreplace({x: value})
        if not (curvature.is_real and curvature > 0) or abs(slope.xreplace(nominal).xreplace(
                {x: value})) > 1e-9 * abs(piece.regime.xreplace(nominal).xreplace({n: value})):
            continue  # not a minimum, or not a root after all
        centre = int(sympy.floor(value))
        if centre < piece.valid_from or (piece.valid_to is not None and centre > piece.valid_to):
            continue
        around = [c for c in (centre, centre + 1)
                  if c >= piece.valid_from and (piece.valid_to is None or c <= piece.valid_to)]
        neighbours = tuple((c, scaler.observe(c, name).time) for c in around)
        best, best_time = min(neighbours, key=lambda item: (item[1], item[0]))
        return replace(piece, optimum=Optimum(_tidy(root.xreplace({x: n})), value, best,
                                              best_time, neighbours))
    return piece

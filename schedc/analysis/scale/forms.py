"""Closed forms in a structural param: a schedule's time as a formula in n = hosts (or ranks,
or chunks), derived from compiled instances and checked on instances not used for the fit.

Method. At each n the regime form is a sum of rational coefficients times monomials of the
other params (α, V/B_N, ...). Every coefficient is written as an exact rational combination
of a basis of functions of n — 1, n, 1/n, n² over the integers; 1, log2 n, n, 1/n over the
powers of two, where log2 n is an integer — fitted by solving the exact linear system on as
many instances as the basis has functions. The result is then CHECKED, coefficient by
coefficient and exactly, at instances not used for the fit: the next two, and one at the
piece's end or, for the last piece, at least 8× larger than the largest fit point. A form that fails a check is never reported; the times
at the instances are reported instead. The same fit is made of the full formula (its round
classes: count × (start-up + Max of terms)), of the bounds of `analysis.bound`, and the ratio
time / bound follows from the fitted forms, with its limit as n → ∞.

Pieces. A piece ends where a condition of its regime form, or the dominance of one term of
the full formula over the others, fails (solved exactly in n: `ends`), at a boundary read
from the source (`elaborate.structure`: a comparison `p > 48`, a `ceil(p/64)`), or where the
regime changes between the small instances and the far check (located by bisection). A
period read from the source (`p % 9`) is fitted one residue class at a time.

Status. A piece is `checked`: it equals the compiles at `checked_at` and is claimed only
between its first and last; past the last piece's last compile it is an extrapolation
(`Scaling.form_at`, `--extrapolate`). It is `proved` (with its `argument`; unbounded if it is
the last) when every hypothesis of `proof` holds for the file at hand: transfers affine in
n, a port machine built uniformly in n, and round classes derived for every n (Presburger
sets, `portloads`) equal to the fitted ones; else a note says which hypothesis failed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import sympy

from ...elaborate.structure import Structure, dependence
from ...errors import CostError, SchedcError, UsageError, VerificationFailed, did_you_mean
from ...session import Session
from ..bound.bounds import bound
from .asymptotics import leading, limit, tidy, with_optimum
from .cutforms import BoundForms, bound_forms, bound_value, with_bounds
from .ends import dominance, end_of
from .fitting import (
    INTEGERS,
    POWERS,
    Family,
    NotFittable,
    Shape,
    classes_form,
    classes_shape,
    classes_terms,
    fit_slots,
    linear_form,
    linear_shape,
    regime_parts,
    regime_shape,
)
from .pieces import AtValue, Observation, Piece, Scaling
from .proof import prove
from .terms import full_shape

MAX_PIECES = 4
REACH_FACTOR = 4  # a piece that ends is checked at its end if that is within 4× the far check
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
        self.others = {s: v for s, v in session.program.nominal.items() if str(s) != param}
        self.structure = Structure(param)  # what the source says: read per schedule in `scale`

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
        full = full_shape(at.loads(name), at.program.topology, at.program.alpha) \
            if t.cost.protocol is None else classes_shape(t)
        return Observation(n, t.time, regime_shape(t.cost.regime_formula, t.cost.conditions),
                           full, shapes)

    def _bounds(self, at: Session, name: str) -> list:
        """The bounds of the schedule's collective at one instance (shared by the schedules
        that compute it; the schedules' own efficiencies are not needed here)."""
        collective = at.program.result(name).collective
        return [at.memo("scale-bounds", str(id(collective)),
                        lambda: bound(at, collective, []))]

    def evaluate(self, scaling: Scaling, value: int, extrapolate: bool) -> AtValue:
        """`--at N`: from a form where one covers N; else compiled at N (or, with
        `extrapolate`, from the last piece's form, labelled so)."""
        found = scaling.form_at(value, self.session.program.nominal, extrapolate)
        bound = bound_value(self.bound_forms(scaling.name), value, self.others, self.symbol) \
            if self.with_bounds else None
        if found is not None:
            return AtValue(value, *found, bound=bound)
        try:
            at = self.session.at({self.param: value})
            self.prepare(at, scaling.name)
            return AtValue(value, at.timing(scaling.name).time, "compiled", bound=bound)
        except VerificationFailed:
            raise
        except SchedcError as error:
            error.notes = (*error.notes, f"--at {value}: no piece of {scaling.name}'s form is "
                           f"checked or proved at {self.param} = {value}, so it was compiled "
                           f"there; --extrapolate evaluates the last form instead (labelled "
                           f"extrapolated)")
            raise

    # ---- pieces

    def scale(self, name: str) -> Scaling:
        """The first family whose every piece has a closed form (over the integers, every
        residue class of a period read from the source); else the last one tried, with its
        times. Why an earlier family failed is a note."""
        definition = self.session.program.result(name).definition
        if definition is None:  # an MSCCL algorithm: its XML fixes its ranks, nothing to vary
            raise UsageError(f"scale recompiles a .sched schedule at each value of "
                             f"{self.param}; '{name}' is read from {self.session.program.path}, "
                             "whose ranks the file fixes")
        self.structure = dependence(self.session.modules, self.param, (definition,))
        notes: list[str] = list(self.structure.notes)
        pieces: list[Piece] = []
        fitted = -1
        for group in self._families():
            attempt: list[Piece] = []
            try:
                for family in group:
                    attempt += self._pieces(name, family, notes)
            except _Refused as refused:
                notes.append(f"over the {group[0].name}: {refused.args[0]}")
                continue
            if sum(p.regime is not None for p in attempt) > fitted:  # keep the best attempt
                pieces, fitted = attempt, sum(p.regime is not None for p in attempt)
            if all(p.regime is not None for p in attempt):
                pieces = attempt
                break
            notes.append(f"over the {group[0].name}: no closed form in the basis "
                         f"{_basis_text(group[0], self.symbol)}")
        proved = [self._proved(name, p) for p in pieces]
        if self.with_bounds:
            forms = self.bound_forms(name)
            proved = [with_bounds(p, forms, self.symbol, self.others) for p in proved]
        return Scaling(name, self.param, self.symbol, tuple(proved), tuple(notes))

    def bound_forms(self, name: str) -> BoundForms:
        """The bounds of `name`'s collective for every n, proved (`cutforms`) or why not;
        once per collective."""
        collective = self.session.program.result(name).collective
        return self.session.memo("scale-bound-forms", f"{self.param} {collective.span}",
                                 lambda: bound_forms(self.session, self.param, name,
                                                     self.symbol))

    def _proved(self, name: str, piece: Piece) -> Piece:
        """The piece `proved` for every n of its range (unbounded if it is the last) when
        every hypothesis of `proof` holds; else `checked`, with a note saying which fails."""
        found = prove(self.session, self.param, name, piece, self.symbol, self.others,
                      None if piece.last else piece.valid_to)
        if found.argument is None:
            return replace(piece, notes=(*piece.notes, str(found.note)))
        return replace(piece, status="proved", argument=found.argument,
                       valid_to=None if piece.last else piece.valid_to,
                       ends=None if piece.last else piece.ends)

    def _families(self) -> list[list[Family]]:
        """The integers (one residue class at a time if the source has a period in n), then
        the powers of two; only the powers of two if the source takes a log2 of n."""
        period = self.structure.period
        integers = [INTEGERS] if period == 1 else [
            INTEGERS.residue(period, r) for r in range(period)]
        return [[POWERS]] if self.structure.powers else [integers, [POWERS]]

    def _pieces(self, name: str, family: Family, notes: list[str]) -> list[Piece]:
        """Pieces from `start` on; a residue class's pieces are added to the others'."""
        pieces: list[Piece] = []
        index = family.index(max(self.start, 1))
        while len(pieces) < MAX_PIECES:
            stop = self.structure.next_start(family.point(index))
            try:
                piece, next_index = self._piece(name, family, index,
                                                None if stop is None else family.index(stop))
            except _Refused as refused:
                if not pieces:
                    raise
                notes.append(f"from {self.param} = {family.point(index)} on: {refused.args[0]}")
                return pieces
            pieces.append(piece)
            if next_index is None:
                return pieces
            index = next_index
        notes.append(f"from {self.param} = {family.point(index)} on: not covered (more than "
                     f"{MAX_PIECES} pieces); --at compiles there")
        return pieces

    def _sample(self, name: str, family: Family, index: int) -> Observation:
        try:
            return self.observe(family.point(index), name)
        except VerificationFailed:
            raise
        except SchedcError as error:  # a LimitError too: this family is refused, not tried
            raise _Refused(f"{self.param} = {family.point(index)} does not compile: "
                           f"{error.message}") from None

    def _far(self, name: str, family: Family, lo: int, hi: int,
             sample: dict[int, Observation]) -> int | None:
        """The largest index in (lo, hi] that compiles, trying hi, then halfway down."""
        while hi > lo:
            try:
                sample[hi] = self._sample(name, family, hi)
                return hi
            except _Refused:
                hi = (lo + hi) // 2
        return None
    def _piece(self, name: str, family: Family, index: int, stop: int | None
               ) -> tuple[Piece, int | None]:
        """The piece starting at `index` and ending before `stop` (a boundary read from the
        source), and where the next one starts (None: the last)."""
        size = len(family.basis)
        top = None if stop is None else stop - 1  # the last index this piece may hold
        small = [i for i in range(index, index + size + 2) if top is None or i <= top]
        sample = {i: self._sample(name, family, i) for i in small}
        key = sample[index].regime.key
        change = next((i for i in small if sample[i].regime.key != key), None)
        if change is not None or len(small) < size + 1:
            early = change if change is not None else small[-1] + 1
            reason = (f"the regime changes at {self.param} = {family.point(early)}"
                      if change is not None else self.structure.why(family.point(early)))
            return self._unfitted(family, [i for i in small if i < early], sample, reason), \
                (change if change is not None else stop)
        provisional = self._fit(family, small[:size], small[size:], sample)
        if provisional is None:
            return self._unfitted(family, small, sample, "no closed form in the basis"), None
        first = family.point(index)
        end = end_of(list(zip(provisional[2], provisional[1]))
                     + (dominance(provisional[3], self.symbol, self.others, first)
                        if provisional[3] is not None else []),
                     self.symbol, self.others, first, family.name == "powers of two")
        if end is not None and end.last < first:
            end = None  # cannot happen for conditions true at `first`; never cut before it
        end_index = None if end is None else family.last_index(end.last)
        reach = min([x for x in (top, end_index) if x is not None], default=None)
        target = family.far(small[size - 1])
        if reach is not None and reach <= REACH_FACTOR * target:  # checked at its very end
            target = reach
        elif reach is not None:
            target = min(target, reach)
        far = self._far(name, family, small[-1], target, sample) if target > small[-1] else None
        cut: int | None = None
        if far is not None and sample[far].regime.key != key:  # the first index of another
            lo, hi = small[-1], far
            while hi - lo > 1:
                mid = (lo + hi) // 2
                sample[mid] = self._sample(name, family, mid)
                lo, hi = (mid, hi) if sample[mid].regime.key == key else (lo, mid)
            cut = hi
            if cut - 1 not in sample:
                sample[cut - 1] = self._sample(name, family, cut - 1)
        points = sorted(i for i in sample if cut is None or i < cut)
        why: str | None
        next_index: int | None
        if cut is not None:
            why, next_index, last = (f"the regime changes at {self.param} = {family.point(cut)} "
                                     f"(found by bisection)"), cut, False
        elif end_index is not None and (top is None or end_index <= top):
            why, next_index, last = end.why if end else None, end_index + 1, False
        elif top is not None:
            why, next_index, last = self.structure.why(family.point(stop or 0)), stop, False
        else:
            why, next_index, last = (f"the largest {self.param} compiled; beyond it the form "
                                     f"is an extrapolation"), None, True
        return self._fitted(name, family, points[:size], points[size:], sample, why, last), \
            next_index

    def _fit(self, family: Family, fit: list[int], check: list[int],
             sample: dict[int, Observation]) -> tuple | None:
        """(regime, its conditions as text, as relations, the full formula's classes or
        None), fitted on `fit` and checked on `check`; None if the regime does not fit."""
        n = self.symbol
        fit_n, check_n = [family.point(i) for i in fit], [family.point(i) for i in check]
        by_n = {family.point(i): o for i, o in sample.items()}
        regime = fit_slots({p: by_n[p].regime for p in (*fit_n, *check_n)}, fit_n, check_n,
                           family, n)
        if regime is None:
            return None
        # Where two terms of the full formula are equal (a tie between regimes), they are one
        # load there, and its shape differs: such an instance is checked by its time instead.
        shape = by_n[fit_n[0]].formula
        alike = [p for p in check_n if by_n[p].formula.key == shape.key]
        formula = fit_slots({p: by_n[p].formula for p in (*fit_n, *alike)}, fit_n, alike,
                            family, n)
        parts = regime_parts(by_n[fit_n[0]].regime, regime)
        classes = None if formula is None else classes_terms(shape, formula)
        if formula is not None and any(
                classes_form(shape, formula).xreplace(self.others).xreplace({n: p})
                != sympy.Rational(by_n[p].time.numerator, by_n[p].time.denominator)
                for p in check_n if p not in alike):
            formula = classes = None
        return (*parts, classes, regime, formula)

    def _unfitted(self, family: Family, points: list[int], sample: dict, why: str) -> Piece:
        first = sample[points[0]]
        return Piece(family.point(points[0]), family.point(points[-1]), family,
                     (), tuple(family.point(i) for i in points), None,
                     regime_parts(first.regime, [sympy.Rational(c.numerator, c.denominator)
                                                 for c in first.regime.slots])[1],
                     None, None, {}, None, None,
                     tuple((family.point(i), sample[i].time) for i in points), ends=why)

    def _fitted(self, name: str, family: Family, fit: list[int], check: list[int],
                sample: dict[int, Observation], why: str | None, last: bool) -> Piece:
        n = self.symbol
        fit_n, check_n = [family.point(i) for i in fit], [family.point(i) for i in check]
        by_n = {family.point(i): o for i, o in sample.items()}
        points = sorted((*fit, *check))
        times = tuple((family.point(i), sample[i].time) for i in points)
        valid_to = family.point(points[-1])
        found = self._fit(family, fit, check, sample)
        if found is None:
            return self._unfitted(family, points, sample, "no closed form in the basis")
        regime, conditions, _, classes, slots, full = found
        formula = None if full is None else classes_form(by_n[fit_n[0]].formula, full)
        notes = () if classes is not None else (
            "the full formula (every term of every round class) has no closed form here: a "
            "term smaller at these instances could bind at another n",)
        bounds: dict[str, sympy.Expr | None] = {}
        for kind in sample[fit[0]].bounds:
            def bound_of(o: Observation, k: str = kind) -> Shape:
                return o.bounds.get(k, Shape((), ()))
            fitted = fit_slots({p: bound_of(by_n[p]) for p in (*fit_n, *check_n)}, fit_n,
                               check_n, family, n)
            bounds[kind] = None if fitted is None else linear_form(bound_of(by_n[fit_n[0]]),
                                                                   fitted)
        best = bounds.get("bound")
        ratio = tidy(regime / best) if best else None
        monomials = sample[fit[0]].regime.key[1][1]
        asymptote = tuple((m, *leading(c, n)) for c, m in zip(slots, monomials)) if last else ()
        piece = Piece(fit_n[0], valid_to, family, tuple(fit_n), tuple(check_n), regime,
                      conditions, formula, limit(regime, n) if last else None, bounds,
                      ratio, limit(ratio, n) if ratio is not None and last else None, times,
                      tuple(a for a in asymptote if a[1] is not None), ends=why, last=last,
                      notes=notes, classes=() if classes is None else tuple(
                          (c, s, tuple(t)) for c, s, t in classes))
        return with_optimum(piece, self, name)


class _Refused(Exception):
    """A family cannot be fitted (an instance does not compile, too many regimes)."""


def _basis_text(family: Family, n: sympy.Symbol) -> str:
    return ", ".join(str(b(n)) for b in family.basis)

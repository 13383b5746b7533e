"""The exact fit behind `analysis.scale`: a form at one instance as a *shape* (a structure
that must not change with n, and the rational numbers in it), and each number as an exact
rational combination of a basis of functions of n, solved on some instances and checked on
others.

    >>> fit_slots({n: linear_shape(sympy.Integer(2 * n - 1)) for n in range(2, 9)},
    ...           [2, 3, 4, 5], [6, 7, 8], INTEGERS, sympy.Symbol("n"))   # doctest: +SKIP
    [2*n - 1]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import sympy

SPAN_FACTOR = 8  # the far check is at least this many times the largest fit point


@dataclass(frozen=True)
class Family:
    """Where the instances lie and the basis the coefficients are written in. Over the
    integers the instances may be one residue class, n = offset + step·i (a schedule with a
    period in n, from a `%` or a `ceil` in its source)."""

    name: str  # "integers" | "powers of two"
    basis: tuple[Callable[[sympy.Symbol], sympy.Expr], ...]
    values: tuple[Callable[[int], Fraction], ...]  # each basis function at an instance
    step: int = 1
    offset: int = 0

    def point(self, index: int) -> int:
        return self.offset + self.step * index if self.name == "integers" else 2**index

    def index(self, n: int) -> int:
        """The index of the first instance >= n."""
        if self.name == "integers":
            return -(-(n - self.offset) // self.step)
        return (n - 1).bit_length()

    def last_index(self, n: int) -> int:
        """The index of the last instance <= n."""
        if self.name == "integers":
            return (n - self.offset) // self.step
        return n.bit_length() - 1

    def far(self, index: int) -> int:
        """The index of the far check: at least SPAN_FACTOR times `point(index)`."""
        if self.name == "integers":
            return max(index + 1, self.index(SPAN_FACTOR * self.point(index)))
        return index + 3

    def residue(self, step: int, offset: int) -> Family:
        return Family(self.name, self.basis, self.values, step, offset % step)

    @property
    def label(self) -> str:
        if self.name != "integers" or self.step == 1:
            return self.name
        return f"integers = {self.offset} mod {self.step}"


INTEGERS = Family("integers", (lambda n: sympy.Integer(1), lambda n: n, lambda n: 1 / n,
                               lambda n: n**2),
                  (lambda n: Fraction(1), Fraction, lambda n: Fraction(1, n),
                   lambda n: Fraction(n * n)))
POWERS = Family("powers of two", (lambda n: sympy.Integer(1), lambda n: sympy.log(n, 2),
                                  lambda n: n, lambda n: 1 / n),
                (lambda n: Fraction(1), lambda n: Fraction(n.bit_length() - 1), Fraction,
                 lambda n: Fraction(1, n)))


class NotFittable(Exception):
    """An instance's form has coefficients that are not exact rationals."""


@dataclass(frozen=True)
class Shape:
    """One form at one instance: a structure (`key`, what must stay the same across n) and
    the exact numbers in it (`slots`), which are what the fit writes as functions of n."""

    key: tuple
    slots: tuple[Fraction, ...]


def linear_shape(expr: sympy.Expr) -> Shape:
    """`Σ c·m`: the monomials m (in the other params) are the key, the c the slots."""
    coefficients: dict[sympy.Expr, Fraction] = {}
    for term in sympy.Add.make_args(sympy.sympify(expr)):
        c, monomial = term.as_coeff_Mul()
        if not c.is_Rational:
            raise NotFittable(str(term))
        coefficients[monomial] = coefficients.get(monomial, Fraction(0)) + Fraction(
            int(c.p), int(c.q))
    order = sorted((m for m, c in coefficients.items() if c), key=sympy.default_sort_key)
    return Shape(("linear", tuple(order)), tuple(coefficients[m] for m in order))


def linear_form(shape: Shape, coefficients: list[sympy.Expr]) -> sympy.Expr:
    return sympy.Add(*[sympy.factor(c) * m for c, m in zip(coefficients, shape.key[1])])


def condition_shape(relation: sympy.Expr) -> Shape:
    """`a >= b` as `Σ c·m >= 0` scaled so that its first monomial has coefficient 1 — so
    `16*B_2 >= 3*B_1` (at n = 3) and `B_2 >= B_1` (at n = 16) both read
    `B_2 - (n/16)·B_1 >= 0`, a coefficient the basis can fit."""
    if isinstance(relation, (sympy.GreaterThan, sympy.StrictGreaterThan)):
        difference = relation.lhs - relation.rhs
    elif isinstance(relation, (sympy.LessThan, sympy.StrictLessThan)):
        difference = relation.rhs - relation.lhs
    else:
        raise NotFittable(str(relation))
    strict = isinstance(relation, (sympy.StrictGreaterThan, sympy.StrictLessThan))
    shape = linear_shape(sympy.expand(difference))
    lead = abs(shape.slots[0]) if shape.slots else Fraction(1)
    return Shape((">" if strict else ">=", shape.key[1]), tuple(c / lead for c in shape.slots))


def regime_shape(expr: sympy.Expr, conditions: tuple[sympy.Expr, ...]) -> Shape:
    """The regime form and the conditions it holds under, as one shape."""
    form = linear_shape(expr)
    shapes = sorted((condition_shape(c) for c in conditions),
                    key=lambda c: (str(c.key), c.slots))
    return Shape(("regime", form.key, tuple(c.key for c in shapes)),
                 form.slots + tuple(x for c in shapes for x in c.slots))


def regime_parts(shape: Shape, values: list) -> tuple[sympy.Expr, tuple[str, ...],
                                                     tuple[sympy.Expr, ...]]:
    """The regime form and its conditions (as text, and as relations) from a regime shape's
    slot values."""
    _, form_key, condition_keys = shape.key
    count = len(form_key[1])
    expr = sympy.Add(*[sympy.factor(c) * m for c, m in zip(values[:count], form_key[1])])
    conditions, relations, k = [], [], count
    for relation, monomials in condition_keys:
        terms = [sympy.factor(c) * m for c, m in zip(values[k:k + len(monomials)], monomials)]
        k += len(monomials)
        # Terms negative at the first instance go to the right-hand side.
        left = sympy.Add(*[t for t, c in zip(terms, shape.slots[k - len(monomials):k]) if c >= 0])
        right = sympy.Add(*[-t for t, c in zip(terms, shape.slots[k - len(monomials):k]) if c < 0])
        conditions.append(f"{left} {relation} {right}")
        relations.append((sympy.StrictGreaterThan if relation == ">" else sympy.GreaterThan)(
            left, right, evaluate=False))
    return expr, tuple(conditions), tuple(relations)


def classes_shape(timing) -> Shape:
    """The full formula: per round class its count, start-up and the loads of its terms."""
    key, slots = [], []
    seen: dict[tuple, int] = {}
    for c in timing.cost.classes:
        startup = linear_shape(c.startup)
        terms = tuple((t.bandwidth, tuple(s for s, _ in t.load)) for t in c.terms)
        kind = (startup.key, terms)
        seen[kind] = seen.get(kind, -1) + 1
        key.append((kind, seen[kind]))
        slots += [Fraction(c.count), *startup.slots,
                  *(coefficient for t in c.terms for _, coefficient in t.load)]
    return Shape(("classes", tuple(key)), tuple(slots))


def classes_terms(shape: Shape, values: list[sympy.Expr]
                  ) -> list[tuple[sympy.Expr, sympy.Expr, list[sympy.Expr]]]:
    """Per round class of a classes shape: its count, start-up and the terms of its Max."""
    out, k = [], 0
    for ((startup_key, terms), _) in shape.key[1]:
        count = values[k]
        k += 1
        startup = sympy.Add(*[values[k + j] * m for j, m in enumerate(startup_key[1])])
        k += len(startup_key[1])
        loads = []
        for bandwidth, symbols, *factor in terms:  # factor: the bandwidth's coefficient
            size = sympy.Add(*[values[k + j] * (1 if s == 1 else s) for j, s in enumerate(symbols)])
            k += len(symbols)
            if factor:
                bandwidth, k = values[k] * bandwidth, k + 1
            loads.append(size / bandwidth)
        out.append((count, startup, loads))
    return out


def classes_form(shape: Shape, values: list[sympy.Expr]) -> sympy.Expr:
    out = []
    for count, startup, loads in classes_terms(shape, values):
        peak = (loads[0] if len(loads) == 1 else sympy.Max(*loads, evaluate=False)) if loads \
            else sympy.Integer(0)
        out.append(sympy.factor(count) * (startup + peak))
    return sympy.Add(*out)


def _solve_exact(rows: list[list[Fraction]], rhs: list[Fraction]) -> list[Fraction] | None:
    """Gauss-Jordan elimination over the rationals; None if the system is singular."""
    m = len(rows)
    a = [row[:] + [b] for row, b in zip(rows, rhs)]
    for col in range(m):
        pivot = next((r for r in range(col, m) if a[r][col] != 0), None)
        if pivot is None:
            return None
        a[col], a[pivot] = a[pivot], a[col]
        for r in range(m):
            if r != col and a[r][col] != 0:
                f = a[r][col] / a[col][col]
                a[r] = [x - f * y for x, y in zip(a[r], a[col])]
    return [a[r][m] / a[r][r] for r in range(m)]


def fit_slots(observed: dict[int, Shape], fit: list[int], check: list[int], family: Family,
              n: sympy.Symbol) -> list[sympy.Expr] | None:
    """Each slot as a combination of the basis, fitted on `fit`, or None if a check fails."""
    first = observed[fit[0]]
    if any(observed[p].key != first.key for p in (*fit, *check)):
        return None
    rows = [[f(p) for f in family.values] for p in fit]
    out = []
    for slot in range(len(first.slots)):
        weights = _solve_exact(rows, [observed[p].slots[slot] for p in fit])
        if weights is None:
            return None
        for p in check:
            if sum(w * f(p) for w, f in zip(weights, family.values)) != observed[p].slots[slot]:
                return None
        out.append(sympy.Add(*[sympy.Rational(w.numerator, w.denominator) * b(n)
                               for w, b in zip(weights, family.basis) if w]))
    return out

"""Where a piece ends: the first n at which one of its conditions is false, solved exactly.

A piece's regime form holds while its conditions hold (`B_S/hosts >= B_N`, and that the term
chosen in each round class is the largest of the class's terms). With the other params at
their nominal (or `--set`) values, each condition is a relation between rational functions of
n; its truth can change only at a real root of the numerator or the denominator of the
difference of its sides. So the first integer n >= start at which it fails is `start` itself,
or ceil(r), or an integer root r, for some root r: those few candidates are evaluated exactly,
and nothing is sampled.

    >>> n = sympy.Symbol("n", positive=True, integer=True)
    >>> first_failure(sympy.GreaterThan(64 / n, 1), n, {}, 2)
    65
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy

POWERS_REACH = 62  # over the powers of two, conditions are evaluated at 2^k for k up to this
SCAN = 4096  # a condition that is not a relation of rational functions: evaluated this far


@dataclass(frozen=True)
class End:
    """A piece's regime holds up to `last` (inclusive); `why` says which condition fails after."""

    last: int
    why: str


def first_failure(relation: sympy.Expr, n: sympy.Symbol, others: dict, start: int,
                  powers: bool = False) -> int | None:
    """The first n >= start (a power of two, if `powers`) at which `relation` is false, with
    the other params at `others`; None if it holds at every such n (over the powers of two:
    up to 2^POWERS_REACH; for a relation that is not between rational functions of n, up to
    start + SCAN: the piece is checked, never proved, so its far check still applies)."""
    lhs = sympy.sympify(relation.lhs).xreplace(others)
    rhs = sympy.sympify(relation.rhs).xreplace(others)
    strict = isinstance(relation, (sympy.StrictGreaterThan, sympy.StrictLessThan))
    if isinstance(relation, (sympy.LessThan, sympy.StrictLessThan)):
        lhs, rhs = rhs, lhs
    difference = sympy.together(lhs - rhs)

    def holds(value: int) -> bool:
        at = difference.xreplace({n: value})
        if not at.is_Rational:
            at = sympy.nsimplify(sympy.expand_log(at, force=True))
        if not at.is_number:  # a symbol without a value: undecided, so no end is claimed
            return True
        return bool(at > 0) if strict else bool(at >= 0)

    if powers or difference.has(sympy.log):
        k = max(start - 1, 0).bit_length()
        return next((2**j for j in range(k, POWERS_REACH + 1) if not holds(2**j)), None)
    numerator, denominator = sympy.fraction(difference)
    candidates = {start}
    try:
        polys = [sympy.Poly(part, n) for part in (numerator, denominator)]
    except sympy.PolynomialError:  # a Min or Max left in it (a window): evaluated one by one
        return next((m for m in range(start, start + SCAN) if not holds(m)), None)
    for poly in polys:
        if poly.degree() < 1:
            continue
        for root in poly.real_roots():
            low = int(sympy.floor(root))
            candidates.update(c for c in (low, low + 1) if c >= start)
    failing = sorted(c for c in candidates if not holds(c))
    return failing[0] if failing else None


def end_of(relations: list[tuple[sympy.Expr, str]], n: sympy.Symbol, others: dict, start: int,
           powers: bool = False) -> End | None:
    """The earliest end among `relations` (each with its text), or None if none fails."""
    found: End | None = None
    for relation, text in relations:
        fails = first_failure(relation, n, others, start, powers)
        if fails is None:
            continue
        last = fails - 1 if not powers else fails // 2
        if found is None or last < found.last:
            found = End(last, f"{text} is false from {n} = {fails}")
    return found


def dominance(classes: list[tuple[sympy.Expr, sympy.Expr, list[sympy.Expr]]], n: sympy.Symbol,
              others: dict, at: int) -> list[tuple[sympy.Expr, str]]:
    """For each round class (count, start-up, terms of its Max): the relations that its
    largest term at n = `at` stays the largest."""
    out = []
    for _, _, terms in classes:
        if len(terms) < 2:
            continue
        values = [sympy.sympify(t).xreplace(others).xreplace({n: at}) for t in terms]
        top = max(range(len(terms)), key=lambda k: (values[k], -k))
        for k, term in enumerate(terms):
            if k != top:
                out.append((sympy.GreaterThan(terms[top], term, evaluate=False),
                            f"{terms[top]} >= {term} (a term of the full formula)"))
    return out

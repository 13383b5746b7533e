"""Integers affine in the structural param and loop variables, piecewise: the values of the
symbolic elaboration, and their text in isl's syntax.

A `Lin` is an integer combination of variables plus a constant. The param is `n`; loop
variables are `v1`, `v2`, ...; `q1`, ... are quotients, each tied to its floor by the guard of
the piece that uses it (so they are existential, and determined). A `SymInt` is a tuple of
`Piece`s, an expression under a guard, whose guards split the points where it is defined.
Only what stays Presburger is built: a product needs a constant side, `//` and `%` by a
constant use a quotient, `%` by a group size that varies splits into cases of a bounded
quotient (the elaboration proves the cases cover every point). Anything else is `Outside`.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import count

from ...errors import Span

PARAM = "n"


class Outside(Exception):
    """The schedule leaves the affine class here (`span`: the source it was read from)."""

    def __init__(self, message: str, span: Span | None) -> None:
        super().__init__(message)
        self.message = message
        self.span = span


@dataclass(frozen=True)
class Lin:
    terms: tuple[tuple[str, int], ...] = ()  # sorted by name, no zero coefficients
    const: int = 0

    @staticmethod
    def var(name: str, coefficient: int = 1) -> Lin:
        return Lin(((name, coefficient),)) if coefficient else Lin()

    def _combine(self, other: Lin, sign: int) -> Lin:
        out = dict(self.terms)
        for name, c in other.terms:
            out[name] = out.get(name, 0) + sign * c
        return Lin(tuple(sorted((k, v) for k, v in out.items() if v)), self.const + sign * other.const)

    def __add__(self, other: Lin) -> Lin:
        return self._combine(other, 1)

    def __sub__(self, other: Lin) -> Lin:
        return self._combine(other, -1)

    def scale(self, k: int) -> Lin:
        return Lin(tuple((n, c * k) for n, c in self.terms if c * k), self.const * k)

    @property
    def is_const(self) -> bool:
        return not self.terms

    @property
    def names(self) -> set[str]:
        return {n for n, _ in self.terms}

    def isl(self) -> str:
        parts = [f"{c}*{n}" for n, c in self.terms] + [str(self.const)]
        return " + ".join(parts).replace("+ -", "- ")

    def text(self) -> str:
        """As the language writes it: `8*n`, `n-1`, `7`."""
        parts = [(n if c == 1 else f"-{n}" if c == -1 else f"{c}*{n}") for n, c in self.terms]
        if self.const or not parts:
            parts.append(str(self.const))
        return "+".join(parts).replace("+-", "-")


def const(k: int) -> Lin:
    return Lin((), k)


@dataclass(frozen=True)
class Cons:
    """`lin >= 0` (or `lin = 0` when `equal`)."""

    lin: Lin
    equal: bool = False
    defines: str = ""  # a quotient's definition (always satisfiable), which may be left out


    def isl(self) -> str:
        return f"{self.lin.isl()} {'=' if self.equal else '>='} 0"


def ge(a: Lin, b: Lin) -> Cons:
    return Cons(a - b)


def eq(a: Lin, b: Lin) -> Cons:
    return Cons(a - b, True)


@dataclass(frozen=True)
class Piece:
    expr: Lin
    guard: tuple[Cons, ...] = ()


SymInt = tuple[Piece, ...]


def lin_int(lin: Lin) -> SymInt:
    return (Piece(lin),)


def single(value: SymInt, span: Span | None, what: str) -> Lin:
    """The one expression of an unconditional value (loop bounds, counts, lengths)."""
    if len(value) != 1 or value[0].guard:
        raise Outside(f"{what} is piecewise in the param here", span)
    return value[0].expr


def combine(a: SymInt, b: SymInt, f) -> SymInt:
    return tuple(Piece(f(x.expr, y.expr), x.guard + y.guard) for x in a for y in b)


def constant_of(value: SymInt) -> int | None:
    if len(value) == 1 and not value[0].guard and value[0].expr.is_const:
        return value[0].expr.const
    return None


class Names:
    """Fresh variable names, and what each loop variable is called in the source."""

    def __init__(self) -> None:
        self._next = count(1)
        self.shown: dict[str, str] = {}

    def loop(self, source_name: str) -> str:
        name = f"v{next(self._next)}"
        self.shown[name] = source_name
        return name

    def quotient(self) -> str:
        return f"q{next(self._next)}"


def multiply(a: SymInt, b: SymInt, span: Span | None) -> SymInt:
    ka, kb = constant_of(a), constant_of(b)
    if ka is None and kb is None:
        raise Outside("a product of two values that vary is not affine", span)
    if ka is not None:
        return tuple(Piece(p.expr.scale(ka), p.guard) for p in b)
    return tuple(Piece(p.expr.scale(kb or 0), p.guard) for p in a)


def floor_div(a: SymInt, b: SymInt, names: Names, span: Span | None, *, remainder: bool) -> SymInt:
    """`a // b` or `a % b` for a positive constant b (Python's floor semantics)."""
    k = constant_of(b)
    if k is None or k <= 0:
        raise Outside("'//' and '%' are affine only by a positive constant here", span)
    out = []
    for p in a:
        q = Lin.var(names.quotient())
        name = q.terms[0][0]
        guard = p.guard + (Cons(p.expr - q.scale(k), defines=name),
                           Cons(q.scale(k) + const(k - 1) - p.expr, defines=name))
        out.append(Piece(p.expr - q.scale(k) if remainder else q, guard))
    return tuple(out)


def needed(cons: list[Cons], used: set[str]) -> list[Cons]:
    """`cons` without the definitions of quotients that nothing else (nor `used`) mentions:
    each has exactly one value wherever the others hold, so leaving it out changes nothing."""
    kept = list(cons)
    while True:
        mentioned = set(used)
        for c in kept:
            mentioned |= c.lin.names - {c.defines}
        drop = [c for c in kept if c.defines and c.defines not in mentioned]
        if not drop:
            return kept
        kept = [c for c in kept if not (c.defines and c.defines not in mentioned)]


QUOTIENTS = range(-1, 2)  # the cases of `a % k` for a group size k that varies


def modulo_size(a: SymInt, k: Lin) -> SymInt:
    """`a % k` where k varies with the param: one case per quotient in QUOTIENTS, each affine;
    the caller proves the cases cover every point (and k >= 1)."""
    out = []
    for p in a:
        for q in QUOTIENTS:
            low = k.scale(q)
            out.append(Piece(p.expr - low, p.guard + (ge(p.expr, low), ge(low + k - const(1), p.expr))))
    return tuple(out)

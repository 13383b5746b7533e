"""What the symbolic elaboration makes (`Family`s of transfers and the `Obligation`s that
make them the schedule's at every value of the param, in a `Symbolic`) and the values it
computes with (ranges, devices, topology families, lists, regions), each affine in the param
and the loop variables, piecewise."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ...errors import Span
from .affine import PARAM, Cons, Lin, Names, Outside, SymInt, ge


@dataclass(frozen=True)
class Domain:
    vars: tuple[str, ...] = ()
    cons: tuple[Cons, ...] = ()

    def loop(self, var: str, lo: Lin, hi: Lin) -> Domain:
        v = Lin.var(var)
        return Domain(self.vars + (var,), self.cons + (ge(v, lo), ge(hi, v)))

    def guarded(self, guard: tuple[Cons, ...]) -> Domain:
        return Domain(self.vars, self.cons + guard)


@dataclass(frozen=True)
class Family:
    """The transfers of one statement in one case: at each point of `domain`, `op` moves the
    cells whose leading indices are `cells` from rank `src` to rank `dst` in round `time`."""

    op: str
    domain: Domain
    time: Lin
    src: tuple[Lin, ...]  # the rank's coordinates in the collective's device family
    dst: tuple[Lin, ...]
    cells: tuple[Lin, ...]
    counts: tuple[Lin, ...]
    span: Span


@dataclass(frozen=True)
class Obligation:
    """Every point of `domain` lies in one of `cases`, else `message` (at `span`)."""

    domain: Domain
    cases: tuple[tuple[Cons, ...], ...]
    message: str
    span: Span


@dataclass(frozen=True)
class RankOrder:
    """The collective's ranks: devices of family `path`, coordinate m running over
    lows[m]..highs[m]; rank index = Σ stride·(coord - low) (per coordinate). `major` lists
    the coordinates from the outermost loop to the innermost (empty: in path order); an
    order unrolled from a loop of constant bounds outside one whose length varies
    (rail-major, `[node[h].g[i] for i in 0..7 for h in 0..hosts-1]`: index i·hosts + h)
    has no strides, its index being affine only piece by piece."""

    path: tuple[str, ...]
    strides: tuple[int, ...]
    lows: tuple[Lin, ...]
    highs: tuple[Lin, ...]
    major: tuple[int, ...] = ()

    def at(self, n: int) -> list[tuple[int, ...]]:
        """Each rank's coordinates, in rank order, at param value n."""
        def value(lin: Lin) -> int:
            return lin.const + n * dict(lin.terms).get(PARAM, 0)
        order = self.major or tuple(range(len(self.path)))
        out: list[tuple[int, ...]] = [()]
        for m in order:
            values = range(value(self.lows[m]), value(self.highs[m]) + 1)
            out = [c + (v,) for c in out for v in values]
        inverse = [order.index(m) for m in range(len(self.path))]
        return [tuple(c[k] for k in inverse) for c in out]


@dataclass
class Symbolic:
    families: list[Family] = field(default_factory=list)
    obligations: list[Obligation] = field(default_factory=list)
    names: Names = field(default_factory=Names)
    rounds: Lin = field(default_factory=Lin)
    ranks: RankOrder | None = None
    boundaries: set[Lin] = field(default_factory=set)  # rounds where a statement starts (in n)

    def require(self, domain: Domain, cases, message: str, span: Span) -> None:
        self.obligations.append(Obligation(domain, tuple(tuple(c) for c in cases), message, span))


# ---- values ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class SymRange:
    lo: SymInt
    hi: SymInt


Case = tuple[tuple[Cons, ...], tuple[Lin, ...]]  # a guard, and the coordinates under it


@dataclass(frozen=True)
class Device:
    """A device of family `path`, piecewise: its coordinates in each case."""

    path: tuple[str, ...]
    cases: tuple[Case, ...]


def device(path: tuple[str, ...], coords: tuple[SymInt, ...]) -> Device:
    cases: list[Case] = [((), ())]
    for coord in coords:
        cases = [(g + p.guard, c + (p.expr,)) for g, c in cases for p in coord]
    return Device(path, tuple(cases))


@dataclass(frozen=True)
class TopoFamily:
    """A declared family (`gpu g[8]`, `host node[hosts] {...}`), or one member of a host."""

    path: tuple[str, ...]
    count: Lin | None
    members: dict[str, TopoFamily]
    prefix: tuple[SymInt, ...] = ()  # the host's index, once indexed


@dataclass(frozen=True)
class SymList:
    length: Lin
    at: Callable[[SymInt, Domain, Span], object]
    order: RankOrder | None = None  # when its members are devices in this order


@dataclass(frozen=True)
class Region:
    chain: tuple[tuple[SymInt, Lin], ...] = ()


@dataclass(frozen=True)
class Opaque:
    what: str


class Scope:
    """Local names, and the loop domain statements run in."""

    def __init__(self, local: dict[str, object], domain: Domain) -> None:
        self.local, self.domain = local, domain

    def bind(self, name: str, value: object) -> Scope:
        return Scope({**self.local, name: value}, self.domain)

    def within(self, domain: Domain) -> Scope:
        return Scope(self.local, domain)


def merge(values: list[object], span: Span) -> object:
    """The values of the pieces of an index, as one value: integers and devices piecewise."""
    ints = [v for v in values if isinstance(v, tuple)]
    if len(ints) == len(values):
        return tuple(p for v in ints for p in v)
    devices = [v for v in values if isinstance(v, Device)]
    if len(devices) == len(values) and len({d.path for d in devices}) == 1:
        return Device(devices[0].path, tuple(c for d in devices for c in d.cases))
    raise Outside("an element chosen by a piecewise index is not an integer or a device", span)

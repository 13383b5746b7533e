"""The data flow of a symbolic schedule as Presburger sets in the param n (isl), checked
against the all-reduce postcondition for every n >= `start`.

Points are (t, r, x): rank r's cell x of the buffer at the start of round t (the cells are
the finest parts the schedule's regions cut, `levels`). A transfer of round t from a to b is
an edge (t, a, x) -> (t+1, b, x); a cell that no copy overwrites in round t keeps its value,
an edge (t, b, x) -> (t+1, b, x). Rank c's contribution to cell x is held at (t, r, x)
exactly when a path leads there from (0, c, x): isl computes the transitive closure of the
edges, and when it says the closure is exact, the sets below are exact for every n:

- no copy lands where another write of its round lands (a conflict);
- no two transfers make the same reduce edge, and every reduce joins disjoint sets of
  contributions (so, by induction over the rounds, every contribution is held at most once
  and a cell's multiset is the set computed);
- after the last round every rank holds every rank's contribution on every cell.

Each failure is a parametric set; its smallest n and its lexicographic first point, as
affine functions of n, make the counterexample.
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from .affine import PARAM, Cons, Lin, Outside, const, ge, needed
from .doubles import conflicts, merges, repeated
from .model import Family, Symbolic
from .reach import reach
from .sets import failed_obligation, levels, set_text
from .witness import Bad, failure, params_text, smallest_n


@dataclass(frozen=True)
class Checked:
    ok: bool
    bad: Bad | None = None
    inexact: bool = False


class Flow:
    """The data flow of `sym` for every n >= `start`, ranks numbered `flat` (their index in
    the collective) or by their coordinates in its device family."""

    def __init__(self, sym: Symbolic, ranks: Lin, start: int, flat: bool = True,
                 shown: str = PARAM, kind: str = "allreduce") -> None:
        self.sym, self.start, self.flat, self.shown, self.kind = sym, start, flat, shown, kind
        self.p = ranks
        assert sym.ranks is not None
        self.order = sym.ranks
        self.levels = levels(sym.families)
        self.cells = tuple(f"x{m}" for m in range(len(self.levels)))
        self.rank_dims = ("r",) if flat else tuple(f"r{m}" for m in range(len(self.order.path)))
        self.point = ("t", *self.rank_dims, *self.cells)

    def _rank(self, coords: tuple[Lin, ...]) -> tuple[Lin, ...]:
        if not self.flat:
            return coords
        flat = Lin()
        for c, s, lo in zip(coords, self.order.strides, self.order.lows):
            flat = flat + (c - lo).scale(s)
        return (flat,)

    def _point_cons(self, ranks: tuple[str, ...] | None = None, cells=None) -> list[Cons]:
        ranks = self.rank_dims if ranks is None else ranks
        cells = self.cells if cells is None else cells
        if self.flat:
            bounds = [(const(0), self.p - const(1))]
        else:
            bounds = list(zip(self.order.lows, self.order.highs))
        out = []
        for r, (lo, hi) in zip(ranks, bounds):
            out += [ge(Lin.var(r), lo), ge(hi, Lin.var(r))]
        for x, k in zip(cells, self.levels):
            out += [ge(Lin.var(x), const(0)), ge(k - const(1), Lin.var(x))]
        return out

    def _map(self, left: tuple[str, ...], right: tuple[str, ...], cons) -> isl.Map:
        cons = needed(list(cons), set(left) | set(right))
        used = sorted({v for c in cons for v in c.lin.names} - set(left) - set(right) - {PARAM})
        body = " and ".join([f"{PARAM} >= {self.start}", *(c.isl() for c in cons)])
        if used:
            body = f"exists ({', '.join(used)} : {body})"
        return isl.Map(f"[{PARAM}] -> {{ [{', '.join(left)}] -> [{', '.join(right)}] : {body} }}")

    def _placed(self, family: Family, names: tuple[str, ...]) -> list[Cons]:
        """`names` = (t, src rank dims, dst rank dims, cells): where the family's transfers are."""
        d = len(self.rank_dims)
        t, src, dst, cells = names[0], names[1:1 + d], names[1 + d:1 + 2 * d], names[1 + 2 * d:]
        cons = list(family.domain.cons) + [Cons(Lin.var(t) - family.time, True)]
        for name, value in (*zip(src, self._rank(family.src)), *zip(dst, self._rank(family.dst)),
                            *zip(cells, family.cells)):
            cons.append(Cons(Lin.var(name) - value, True))
        return cons + self._point_cons(src, cells) + self._point_cons(dst, ())

    def edges(self, family: Family) -> isl.Map:
        primed = tuple(n + "p" for n in self.point)
        cons = self._placed(family, (*self.point[:1 + len(self.rank_dims)],
                                     *primed[1:1 + len(self.rank_dims)], *self.cells))
        cons.append(Cons(Lin.var("tp") - Lin.var("t") - const(1), True))
        cons += [Cons(Lin.var(x + "p") - Lin.var(x), True) for x in self.cells]
        return self._map(self.point, primed, cons)

    def points_to_edges(self, family: Family) -> isl.Map:
        free = tuple(f"y{m}" for m in range(len(family.cells), len(self.cells)))
        cells = family.cells + tuple(Lin.var(y) for y in free)
        placed = Family(family.op, family.domain, family.time, family.src, family.dst, cells,
                        family.counts, family.span)
        dst = tuple(n + "p" for n in self.rank_dims)
        cons = self._placed(placed, ("t", *self.rank_dims, *dst, *self.cells))
        return self._map(family.domain.vars + free, ("t", *self.rank_dims, *dst, *self.cells), cons)

    def obligation_failure(self) -> Bad | None:
        failed = failed_obligation(self.sym, self.start)
        if failed is None:
            return None
        ob, left = failed
        return Bad("obligation", smallest_n(left.params()), params_text(left.params()), {},
                   ob.message, ob.span)

    def check(self) -> Checked:
        failed = self.obligation_failure()
        if failed is not None:
            return Checked(False, failed)
        families = [(f, self.edges(f)) for f in self.sym.families]
        families = [(f, m) for f, m in families if not m.is_empty()]
        space = isl.Set(set_text(self.point, tuple(self._point_cons()), self.start))
        empty = space.subtract(space)
        empty_map = isl.Map.from_domain_and_range(empty, empty)
        copies, reduces = empty_map, empty_map
        for family, edges in families:
            if family.op == "copy":
                copies = copies.union(edges)
            else:
                reduces = reduces.union(edges)
        bad, doubled = repeated(self, families, empty_map)
        bad = bad or conflicts(self, copies, reduces)
        if bad is not None:
            return Checked(False, bad)
        rounds = self.sym.rounds
        alive = space.intersect(isl.Set(set_text(self.point, (ge(rounds - const(1), Lin.var("t")),
                                                               ge(Lin.var("t"), const(0))), self.start)))
        step = isl.Map(f"{{ [{', '.join(self.point)}] -> [t + 1, {', '.join(self.point[1:])}] }}")
        back = step.reverse()
        overwritten = copies.range().apply(back)
        keep = isl.Map.identity(alive.get_space().map_from_set()).intersect_domain(
            alive.subtract(overwritten)).apply_range(step)
        flow = keep.union(copies).union(reduces).coalesce()
        own, init, wanted, required = self._collective(rounds)
        reached = reach(self, flow, init)
        if reached is None:
            return Checked(False, inexact=True)
        held = reached.reverse()  # (t, r, x) -> c
        # Where a contribution arrives a second time, and everywhere that flows: held twice
        # there (a copy of a cell held once overwrites it; only the end state counts).
        doubles = merges(self, reduces.apply_range(back), doubled, held).apply_range(step)
        if not doubles.is_empty():
            twice = reach(self, flow, doubles)
            if twice is None:
                return Checked(False, inexact=True)
            twice_at_end = twice.reverse().intersect(required).wrap()
            if not twice_at_end.is_empty():
                return Checked(False, failure(self, "duplicate", twice_at_end, (*self.point, *own)))
        missing = wanted.subtract(held).wrap()
        if not missing.is_empty():
            return Checked(False, failure(self, "missing", missing, (*self.point, *own)))
        unexpected = held.intersect(required).subtract(wanted).wrap()
        if not unexpected.is_empty():
            return Checked(False, failure(self, "unexpected", unexpected, (*self.point, *own)))
        return Checked(True)

    def _flat(self, dims: tuple[str, ...]) -> Lin:
        """A rank's index in the collective, from its dims."""
        if self.flat:
            return Lin.var(dims[0])
        if not self.order.strides:
            raise Outside("a rank's index in an unrolled rank order (rail-major) is affine "
                          "only piece by piece; the parts each rank owns are not read", None)
        index = Lin()
        for d, stride, lo in zip(dims, self.order.strides, self.order.lows):
            index = index + (Lin.var(d) - lo).scale(stride)
        return index

    def _collective(self, rounds: Lin) -> tuple[tuple[str, ...], isl.Map, isl.Map, isl.Map]:
        """The collective's labels of data (a rank's, and for an all-gather, whether it is
        its uninitialised buffer), where each starts (label -> point at round 0), what the
        end state must hold ((t, r, x) -> label at the last round) and the cells it
        constrains (-> any label)."""
        own = tuple("c" + r for r in self.rank_dims)
        labels = own + (("u",) if self.kind == "allgather" else ())
        if self.kind != "allreduce" and (not self.levels or self.levels[0] != self.p):
            raise Outside(f"an {self.kind}'s parts are the p-th parts of the buffer; this "
                          "schedule's regions do not cut it into p parts first", None)
        at_start = [Cons(Lin.var("t"), True), *self._point_cons(),
                    *(Cons(Lin.var(r) - Lin.var(c), True) for r, c in zip(self.rank_dims, own))]
        part = Lin.var("x0")
        mine = Lin() if self.kind == "allreduce" else self._flat(self.rank_dims)
        if self.kind == "allgather":  # rank j's own data on part j, its buffer elsewhere
            u = Lin.var("u")
            init = self._map(labels, self.point, [*at_start, Cons(u, True), Cons(part - mine, True)])
            for below, above in ((part, mine), (mine, part)):
                init = init.union(self._map(labels, self.point, [
                    *at_start, Cons(u - const(1), True), ge(above - below, const(1))]))
        else:
            init = self._map(own, self.point, at_start)
        at_end = [Cons(Lin.var("t") - rounds, True), *self._point_cons(), *self._point_cons(own, ())]
        if self.kind == "reduce_scatter":  # rank j's part j only
            at_end.append(Cons(part - mine, True))
        required = self._map(self.point, labels, at_end + (
            [ge(Lin.var("u"), const(0)), ge(const(1), Lin.var("u"))] if len(labels) > len(own) else []))
        if self.kind == "allgather":  # part j: rank j's data alone
            at_end += [Cons(Lin.var("u"), True), Cons(part - self._flat(own), True)]
        return labels, init, self._map(self.point, labels, at_end), required

    def primed(self) -> tuple[str, ...]:
        return tuple(n + "p" for n in self.point)


# isl's work on one attempt, in its own operation count: far above what the shipped families
# need (their proofs take under a second), so an attempt that would run on is cut off.
MAX_OPERATIONS = 200_000_000


def prove(sym: Symbolic, ranks: Lin, start: int, shown: str = PARAM,
          kind: str = "allreduce") -> Checked:
    """The data flow checked with ranks by their coordinates, then flat (isl closes some
    relations exactly in one numbering and not the other); each attempt within
    MAX_OPERATIONS."""
    modes: tuple[bool, ...] = (True,)
    if sym.ranks is not None and len(sym.ranks.path) > 1:
        # Coordinates that need quotients (a flat list indexed, `ranks[j]`) are cheaper flat.
        quotients = any(name.startswith("q") for f in sym.families
                        for lin in f.src + f.dst for name in lin.names)
        modes = (True, False) if quotients else (False, True)
        if not sym.ranks.strides:  # unrolled: no flat index
            modes = (False,)
    context = isl.DEFAULT_CONTEXT
    checked = Checked(False, inexact=True)
    for flat in modes:
        context.set_max_operations(MAX_OPERATIONS)
        context.reset_operations()
        try:
            checked = Flow(sym, ranks, start, flat, shown, kind).check()
        except isl.Error:
            checked = Checked(False, inexact=True)
        finally:
            context.set_max_operations(0)
        if not checked.inexact:
            return checked
    return checked

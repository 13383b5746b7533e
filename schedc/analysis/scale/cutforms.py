"""The cut-set and end-host bounds of an all-reduce as closed forms in n, proved for every n
on a machine built uniformly in n (docs/scale.md, "Bounds in n"; docs/bounds.md).

Theorem. Let the machine at n be n copies of one block joined to one fabric by the same
links ((U), read from the source: `proof.uniform_copies`), with no link between two copies,
and let the all-reduce's ranks be the same local devices of every copy (read from the
source by the symbolic elaboration). Then for every set A of a copies, the narrowest cut
from A's ranks to the others' equals the narrowest cut of a *compressed* network: the fabric,
one copy standing for A with its capacities times a, and one standing for the rest times
n - a. (A cut of the machine, restricted to each copy, can be replaced by the cheapest copy's
choice of its class without growing; a cut taking the same choice in every copy of a class
is a cut of the compressed network, of the same width.) The same holds for one rank against
the rest (three classes: its copy with that rank a source, the other copies) and for the
narrowest cut between two copies (the others free, times n - 2). Every capacity is then
c·(m0 + m1·n), so each width is the minimum of finitely many lines in n, found exactly by
parametric max-flow (Eisner and Severance's method: the lines at the two ends, then where
they meet, recursively). Where no line of any family meets another and no end-host and
cut-set bound cross (solved exactly in n), each family's smallest minimum cut (the one
`bound` reports) is one cut of the compressed network, so one compiled-free evaluation per
run of n (and per parity, for the halves) gives its closed form for the whole run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from math import floor
from pathlib import Path

import sympy

from ...errors import SchedcError
from ...language import syntax as ast
from ...model.collectives import KINDS
from ...model.ir import linear_expr, linear_value
from ...session import Session
from ..forall.affine import PARAM, Lin, Outside, const, lin_int
from ..forall.family import parsed_modules
from ..forall.model import Domain, Opaque, Scope, SymList
from ..forall.symbolic import Elaborator
from .asymptotics import limit, tidy
from .compressed import Compressed, Machine, Member
from .pieces import BoundPiece, Piece
from .portloads import Unproved
from .uniform import uniform_copies


@dataclass(frozen=True)
class BoundForms:
    pieces: tuple[BoundPiece, ...]
    argument: str | None  # proved: why
    note: str | None  # not proved: which hypothesis fails

    def at(self, n: int) -> BoundPiece | None:
        return next((p for p in self.pieces if p.holds_at(n)), None)


# A class of copies: its multiplier m0 + m1·x (n = r + step·x) and each local rank's role.
def bound_forms(session: Session, param: str, name: str, n: sympy.Symbol) -> BoundForms:
    """The bounds of schedule `name`'s collective for every n >= 2, or why not."""
    try:
        copies = uniform_copies(session, param)
        collective = session.program.result(name).collective
        if collective.kind != "allreduce":
            raise Unproved(f"the collective is {collective.kind}; the argument covers all-reduce "
                           "(V must cross every cut each way)")
        local = _rank_order(session, param, copies, collective.span)
        at = session.at({param: 2})
        if any(d.reduces for d in at.program.topology.devices):
            raise Unproved("a switch reduces in the network")
        machine = Machine(at, copies, at.program.result(name).collective.ranks, local)
        nominal = {s: v for s, v in session.program.nominal.items() if str(s) != param}
        solver = _Solver(machine, n, linear_expr(collective.size),
                         linear_value(collective.size, nominal), nominal)
        pieces = solver.pieces()
    except Outside as exc:
        return BoundForms((), None, f"bounds not proved: {exc.message}")
    except Unproved as exc:
        return BoundForms((), None, f"bounds not proved: {exc.args[0]}")
    except SchedcError as exc:
        return BoundForms((), None, f"bounds not proved: an instance does not compile "
                          f"({exc.message})")
    return BoundForms(tuple(pieces), f"cut families uniform in {param}: {copies}[...] copies "
                      "of one block on one fabric, parametric max-flow on the compressed "
                      f"network, exact for every {param} >= 2", None)


def _rank_order(session: Session, param: str, copies: str, span) -> int:
    """The ranks, read from the source with n a symbol: every copy's devices of one constant
    range of local positions. Returns how many ranks a copy holds."""
    program = session.program
    modules = session.memo("scale-proof", "modules", lambda: parsed_modules(Path(program.path)))
    lets = {s.name: s.value for m in modules for s in m.body if isinstance(s, ast.Let)}
    topology = [s for m in modules for s in m.body if isinstance(s, ast.Topology)]
    constants: dict[str, object] = {
        p.name: (Opaque(p.name) if not p.structural else lin_int(
            Lin.var(PARAM) if p.name == param else const(p.nominal.numerator)))
        for p in program.params.values()}
    elaborator = Elaborator(program.functions, lets, constants, topology)
    decl = next(s for m in modules for s in m.body
                if isinstance(s, ast.CollectiveDecl) and s.span == span)
    group = elaborator.eval(decl.group, Scope({}, Domain()))
    order = getattr(group, "order", None) if isinstance(group, SymList) else None
    if order is None or not order.path or order.path[0] != copies:
        raise Unproved(f"the ranks are not read as devices of the copies of {copies}")
    if order.lows[0] != const(0) or order.highs[0] != Lin.var(PARAM) + const(-1):
        raise Unproved(f"the ranks are not in every copy of {copies}")
    if any(not lo.is_const for lo in order.lows[1:]) or any(
            not hi.is_const for hi in order.highs[1:]):
        raise Unproved(f"the ranks' local positions in a copy vary with {param}")
    count = 1
    for lo, hi in zip(order.lows[1:], order.highs[1:]):
        count *= hi.const - lo.const + 1
    return count


class _Solver:
    """Every family's width for every n >= 2, run by run (see the module docstring)."""

    def __init__(self, machine: Machine, n: sympy.Symbol, size: sympy.Expr,
                 size_value: Fraction, nominal: dict) -> None:
        self.m, self.n, self.size, self.size_value = machine, n, size, size_value
        self.nominal = nominal
        self.net = Compressed(machine, n)
        every = tuple((x, "source") for x in machine.local)
        sinks = tuple((x, "sink") for x in machine.local)
        # Each split of `bound`'s families, forward (side -> rest) and, unless every cut is
        # as wide both ways, backward; in `bound`'s order, which breaks ties.
        both = (False,) if machine.symmetric else (False, True)
        self.members = [Member(0 + back, "host", _roles(every, sinks, back, ((1, 0), (-1, 1))))
                        for back in both]
        for r in (0, 1):  # the first floor(n/2) copies against the rest, n = r + 2x
            self.members += [Member(2 + back, "halves", _roles(every, sinks, back,
                                                               ((0, 1), (r, 1))), 2, r, 3)
                             for back in both]
        self.out: list[Member] = []
        self.into: list[Member] = []
        for k, rank in enumerate(machine.local):
            alone = tuple((x, "source" if x == rank else "sink") for x in machine.local)
            self.out.append(Member(4 + 2 * k, "rank", (("A", (1, 0), alone),
                                                        ("T", (-1, 1), sinks))))
            if not machine.symmetric:
                self.into.append(Member(5 + 2 * k, "rank", _roles(alone, sinks, True,
                                                                  ((1, 0), (-1, 1)))))
        self.members += self.out + self.into
        self.pair = Member(10**6, "min cut", (("A", (1, 0), every), ("B", (1, 0), sinks),
                                              ("F", (-2, 1), ())), from_n=2)

    # ---- the compressed network

    def pieces(self) -> list[BoundPiece]:
        every = [*self.members, self.pair]
        lines = {line for member in every for line in self.net.lines(member)}
        critical = {2, 3, 4} | {int(m.residue + m.step * self.net.start(m)) for m in every}
        for one in lines:
            for two in lines:
                if one[1] > two[1]:
                    x = (two[0] - one[0]) / (one[1] - two[1])
                    if x > 2:
                        critical |= {floor(x), -(-x.numerator // x.denominator)}
        for _ in range(4):  # the crossings of the end-host and cut-set bounds, found run by run
            runs = _runs(sorted(critical))
            forms = [self._run(lo, hi) for lo, hi in runs]
            more = {c for (lo, hi), form in zip(runs, forms)
                    for c in self._crossings(form, lo, hi)} - critical
            if not more:
                return _merged(runs, forms, self.n)
            critical |= more
        raise Unproved("the end-host and cut-set bounds cross too often to solve")

    def _run(self, lo: int, hi: int | None) -> tuple:
        """(cut-set, end-host, best) at every n of [lo, hi], from one n of each parity."""
        found = [self._at(k) for k in (lo, lo + 1) if hi is None or k <= hi]
        first = found[0]
        if any(not _same(a, b) for other in found[1:] for a, b in zip(first, other)):
            raise Unproved(f"the bounds depend on the parity of n from {lo} on")
        return first

    def _at(self, n: int) -> tuple:
        widths = [(w.value, m.order, w) for m in self.members if m.holds(n)
                  for w in [self.net.width(m, n)] if w is not None]
        if not widths:
            raise Unproved("no cut of finite bandwidth separates the ranks")
        _, order, chosen = min(widths, key=lambda t: (t[0], t[1]))
        if order in (2, 3):
            raise Unproved(f"the halves of the copies bind at n = {n}: their width depends "
                           "on the parity of n")
        pair = self.net.width(self.pair, n) if n >= 3 else None
        if pair is not None:
            held = {node[1] for node in pair.side if node[0] == "F"}
            if held and held != set(self.m.local):
                raise Unproved(f"the narrowest cut between two copies splits a third at "
                               f"n = {n}: not covered")
        cut = self.size / chosen.expr
        cut_value = self.size_value / chosen.value
        end = self._end_host(n)
        if end is not None and end[1] > cut_value:
            return cut, end[0], end[0]
        return cut, None if end is None else end[0], cut

    def _end_host(self, n: int) -> tuple[sympy.Expr, Fraction] | None:
        """2(p-1)·V over the ranks' own ways out (or in, if narrower), as `bound` has it."""
        out = [self.net.width(m, n) for m in self.out]
        into = [self.net.width(m, n) for m in self.into] if self.into else out
        if any(w is None for w in (*out, *into)):
            return None
        p = len(self.m.local) * n
        sent = KINDS["allreduce"].end_host
        if sent is None or sent(p) != 2 * (p - 1):
            raise Unproved("the end-host total is not 2(p-1)·V")
        total = 2 * (len(self.m.local) * self.n - 1) * self.size
        out_sum = n * sum((w.value for w in out if w is not None), Fraction(0))
        in_sum = n * sum((w.value for w in into if w is not None), Fraction(0))
        ways = out if out_sum <= in_sum else into
        bandwidth = self.n * sympy.Add(*[w.expr for w in ways if w is not None])
        value = 2 * (p - 1) * self.size_value / min(out_sum, in_sum)
        return sympy.factor_terms(sympy.cancel(total / bandwidth)), value

    def _crossings(self, form: tuple, lo: int, hi: int | None) -> set[int]:
        """Integers around each n in (lo, hi) where the cut-set and end-host bounds meet."""
        cut, end, _ = form
        if end is None:
            return set()
        gap = sympy.together((cut - end).xreplace(self.nominal))
        numerator = sympy.numer(gap)
        if not numerator.has(self.n):
            return set()
        found = set()
        for root in sympy.Poly(numerator, self.n).real_roots():
            if root > lo and (hi is None or root < hi):
                found |= {int(sympy.floor(root)), int(sympy.ceiling(root))}
        return found


def _roles(side: tuple, rest: tuple, back: bool, counts: tuple) -> tuple:
    """Two classes of copies, the side's and the rest's; `back`: the data flows into the side."""
    def flipped(roles: tuple) -> tuple:
        return tuple((x, "sink" if r == "source" else "source") for x, r in roles)
    if back:
        side, rest = flipped(side), flipped(rest)
    return (("S", counts[0], side), ("T", counts[1], rest))


def _runs(critical: list[int]) -> list[tuple[int, int | None]]:
    """Each critical n alone, the integers between two of them, and the rest."""
    runs: list[tuple[int, int | None]] = []
    for k, c in enumerate(critical):
        runs.append((c, c))
        following = critical[k + 1] if k + 1 < len(critical) else None
        if following is None:
            runs.append((c + 1, None))
        elif following > c + 1:
            runs.append((c + 1, following - 1))
    return runs


def _same(a: sympy.Expr | None, b: sympy.Expr | None) -> bool:
    if a is None or b is None:
        return a is b
    return sympy.cancel(a - b) == 0


def _merged(runs: list[tuple[int, int | None]], forms: list[tuple], n: sympy.Symbol
            ) -> list[BoundPiece]:
    """Consecutive runs with the same forms as one piece; a run of one n joins the run after
    it (or before it) whose forms are its own at that n (2·V·(p - 1)/(B·p) is V/B at p = 2)."""
    def parts(piece: BoundPiece) -> tuple:
        return piece.cut, piece.end_host, piece.best

    def alike(one: tuple, two: tuple, at: int | None = None) -> bool:
        return all(_same(a, b) if at is None or a is None or b is None
                   else _same(a.xreplace({n: at}), b.xreplace({n: at})) for a, b in zip(one, two))

    pieces: list[BoundPiece] = []
    for (lo, hi), form in zip(runs, forms):
        if pieces and alike(parts(pieces[-1]), form):
            pieces[-1] = BoundPiece(pieces[-1].lo, hi, *parts(pieces[-1]))
        else:
            pieces.append(BoundPiece(lo, hi, *form))
    joined: list[BoundPiece] = []
    for k, piece in enumerate(pieces):
        following = pieces[k + 1] if k + 1 < len(pieces) else None
        if piece.lo == piece.hi and following is not None \
                and alike(parts(following), parts(piece), piece.lo):
            pieces[k + 1] = BoundPiece(piece.lo, following.hi, *parts(following))
        elif piece.lo == piece.hi and joined and alike(parts(joined[-1]), parts(piece), piece.lo):
            joined[-1] = BoundPiece(joined[-1].lo, piece.hi, *parts(joined[-1]))
        else:
            joined.append(piece)
    return joined


def with_bounds(piece: Piece, forms: BoundForms, n: sympy.Symbol, others: dict) -> Piece:
    """`piece` with its bounds proved over its range where `forms` is (the binding bound's
    forms replacing the fitted ones, which must have their values at every compiled n), else
    with a note saying the bounds are fitted and why they are not proved."""
    if piece.regime is None or not piece.bounds:
        return piece
    fitted = piece.bounds.get("bound")
    wrong = _disagrees(piece, fitted, forms, n, others)
    if forms.argument is None or wrong is not None:
        why = forms.note if wrong is None else (
            f"bounds not proved: the derived bound is not the compiled one at {n} = {wrong}")
        return replace(piece, notes=(*piece.notes, f"the bounds and time/bound are fitted, "
                                                   f"checked at the compiled instances only "
                                                   f"({why})"))
    hi = piece.valid_to if piece.valid_to is not None else None
    inside = tuple(BoundPiece(max(b.lo, piece.valid_from),
                              b.hi if hi is None else hi if b.hi is None else min(b.hi, hi),
                              b.cut, b.end_host, b.best)
                   for b in forms.pieces if (hi is None or b.lo <= hi)
                   and (b.hi is None or b.hi >= piece.valid_from))
    last = inside[-1]
    bounds = {"bound": last.best, "cut-set": last.cut}
    if last.end_host is not None:
        bounds["end-host"] = last.end_host
    notes = piece.notes
    if len(inside) == 1 and fitted is not None and sympy.cancel(fitted - last.best) != 0:
        notes += (f"the fitted bound {fitted} has the proved one's values at the compiled "
                  f"{n} but not its formula: two cuts as wide there",)
    ratio = tidy(piece.regime / last.best)
    limit_of = limit(ratio, n) if piece.last else None
    return replace(piece, bounds=bounds, ratio=ratio, ratio_limit=limit_of, notes=notes,
                   bounds_status="proved", bound_argument=forms.argument,
                   bound_pieces=inside)


def _disagrees(piece: Piece, fitted: sympy.Expr | None, forms: BoundForms, n: sympy.Symbol,
               others: dict) -> int | None:
    """The first compiled n where the fitted bound (the compile's) is not the derived one:
    a safety net, never expected."""
    for k in piece.checked_at if fitted is not None and forms.argument else ():
        held = forms.at(k)
        if held is not None and _value(fitted, others, n, k) != _value(held.best, others, n, k):
            return k
    return None


def bound_value(forms: BoundForms, value: int, nominal: dict, n: sympy.Symbol
                ) -> Fraction | None:
    """The best bound at n = value from its proved form (None: not proved)."""
    found = forms.at(value) if forms.argument is not None else None
    return None if found is None else _value(found.best, nominal, n, value)


def _value(form: sympy.Expr | None, nominal: dict, n: sympy.Symbol, value: int) -> Fraction:
    exact = sympy.sympify(form).xreplace(nominal).xreplace({n: value})
    return Fraction(int(exact.p), int(exact.q))

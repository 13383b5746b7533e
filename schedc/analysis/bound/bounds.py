"""Lower bounds on any schedule of a collective, and how far each schedule is from them.

Cut-set bound. Split the ranks into two sides. Whatever the algorithm, some bytes must cross
from one side to the other (all-reduce: V each way), and they can cross no faster than the
narrowest cut between the sides allows: time >= bytes / bandwidth. The largest such bound over
the cuts tried is the *binding cut*.

End-host bound (all-reduce; Patarasuk and Yuan 2009; not on a machine with a switch that
reduces, where the ranks need only send V each and receive the sum). Reducing at the ranks, the ranks
together send at least 2(p-1)·V (each element needs 2(p-1) one-way messages among p ranks)
and receive as much, through their own cuts: time >= 2(p-1)·V / Σ_r egress_r. With equal
ranks that is the familiar 2(p-1)/p · V per rank. The table of collectives
(`model.collectives`) says, per collective, what must cross a cut and whether (and with
what total) the end-host bound applies.

Why every schedule respects them: each round takes at least max_e V[r,e]/B[e], so the
synchronous time is at least the overlapped bound max_e Σ_r V[r,e]/B[e] (rounds overlapping
perfectly); and the bytes crossing a cut load its resources, so the busiest of them carries
at least its share: bytes / bandwidth. Each direction of a cut is bounded on its own, which
stays valid where both directions share a resource (a half-duplex link), if not tight.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np
import sympy

from ...cost.formula import RoundClass, cost, nominal_value
from ...cost.lower import merged
from ...cost.timing import Timing
from ...errors import LimitError, TopologyError
from ...limits import MAX_CUTS
from ...model.collectives import KINDS
from ...model.ir import Collective, LinearBytes, Schedule, linear_expr, linear_scale, linear_value
from ...session import Session
from .cuts import Cut, CutCapacity, RankCuts
from .in_network import EndHost, host_ends, in_network_optimum
from .optimum import Optimum, optimum, side_names


@dataclass(frozen=True)
class Crossing:
    """One direction of a cut: the bytes that must cross it and the time that takes."""

    bytes: LinearBytes
    capacity: CutCapacity
    bound: sympy.Expr  # bytes / bandwidth; 0 when nothing must cross or the cut is unlimited
    value: Fraction


@dataclass(frozen=True)
class CutBound:
    cut: Cut
    forward: Crossing  # side → rest
    backward: Crossing  # rest → side (its capacity mirrors forward's on a symmetric network)
    binding: str  # "forward" | "backward": the direction with the larger bound

    @property
    def crossing(self) -> Crossing:
        return self.forward if self.binding == "forward" else self.backward

    @property
    def value(self) -> Fraction:
        return self.crossing.value


@dataclass(frozen=True)
class Efficiency:
    """One schedule against the bounds."""

    timing: Timing
    overlapped: RoundClass | None  # one round carrying every round's load; None: no transfers
    overlapped_value: Fraction
    ratio: Fraction | None  # time / best bound; None when the bound is 0
    busiest: int | None  # the resource the overlapped bound waits for
    cut_bytes: tuple[LinearBytes, LinearBytes]  # moved across the binding cut, each way
    cut_used: tuple[int, int]  # binding-cut resources (forward) this schedule loads, of how many


@dataclass(frozen=True)
class Bounds:
    collective: Collective | None  # None: no schedules; the cuts between all GPUs
    ranks: tuple[int, ...]
    cuts: tuple[CutBound, ...]
    binding: CutBound | None  # the cut with the largest bound (the first on a tie); None if 0
    end_host: EndHost | None
    best: sympy.Expr  # the larger of the binding cut's and the end-host bound
    best_value: Fraction
    binds: str  # "cut" | "end-host" | "none"
    schedules: tuple[Efficiency, ...]
    # Switches that reduce in the network: the end-host bound, which assumes the ranks do all
    # the reducing, does not apply (the cut-set bounds do: V still crosses each cut each way).
    in_network: tuple[str, ...] = ()
    # The exact optimum over all cuts (`optimum`), with each of its cuts named; all-reduce's
    # is reduce-scatter's plus all-gather's, reachable but not a lower bound, except where
    # switches reduce: there it is all-reduce's own cut (`in_network_optimum`), a lower bound.
    optimum: Optimum | None = None
    optimum_sides: tuple[str, ...] = ()


def bound(session: Session, collective: Collective | None, names: list[str],
          max_cuts: int = MAX_CUTS, optimum_too: bool = True) -> Bounds:
    """The bounds for `collective`, and each of the schedules `names` (which compute it) against
    them; with no collective, the cuts between all GPUs. `optimum_too=False` leaves out the optimum
    over all cuts (its parametric max-flows cost most on thousands of ranks)."""
    program = session.program
    topology, nominal = program.topology, program.nominal
    ranks = collective.ranks if collective else tuple(d.id for d in topology.devices if d.kind == "gpu")
    finder = RankCuts(topology, nominal, ranks)
    if finder.work > max_cuts:
        # Without a collective, the GPUs' declaration is what asks for the cuts.
        where = collective.span if collective else topology.devices[ranks[0]].span if ranks else None
        raise LimitError(f"bounding {'this collective' if collective else 'the cuts between its GPUs'}"
                         f" takes up to {finder.work:,} max-flow problems; "
                         f"the limit is {max_cuts:,} (raise it with --max-cuts)", where)
    found = finder.cuts()
    if collective is not None:
        _check_connected(found, collective, topology)
    memo: dict = {}  # thousands of cuts share a handful of (bytes, bandwidth) pairs
    cuts = tuple(_cut_bound(c, collective, nominal, memo) for c in found)
    binding = max(cuts, key=lambda c: c.value, default=None)  # max keeps the first of equals
    if binding is not None and not binding.value:
        binding = None  # nothing must cross a cut of finite bandwidth
    if binding is not None and binding.binding == "backward" and binding.cut.backward is None:
        binding = _cut_bound(_with_backward(binding.cut, finder), collective, nominal)
    in_network = tuple(d.name for d in topology.devices if d.reduces)
    end_host = _end_host(collective, cuts, nominal) if not in_network else \
        host_ends(finder, collective, nominal)
    best, best_value, binds = sympy.Integer(0), Fraction(0), "none"
    if binding is not None:
        best, best_value, binds = binding.crossing.bound, binding.value, "cut"
    if end_host is not None and end_host.value > best_value:
        best, best_value, binds = end_host.bound, end_host.value, "end-host"
    exact = None
    if collective is not None and optimum_too:
        reducing = in_network and collective.kind == "allreduce"
        exact = (in_network_optimum if reducing else optimum)(finder, collective, nominal)
    if exact is not None and exact.is_bound \
            and exact.value > best_value:  # over all cuts: at least every family's bound
        best, best_value, binds = exact.time, exact.value, "optimum"
    schedules = tuple(_efficiency(session, n, binding, best_value) for n in names)
    return Bounds(collective, ranks, cuts, binding, end_host, best, best_value, binds, schedules,
                  in_network, exact, () if exact is None else side_names(finder, exact.parts))


def bound_all(session: Session, names: list[str], max_cuts: int = MAX_CUTS) -> list[Bounds]:
    """One `Bounds` per collective the schedules `names` compute, in order of first appearance
    (a file may declare several collectives, one before each group of schedules)."""
    groups: dict[Collective, list[str]] = {}
    for name in names:
        groups.setdefault(session.program.result(name).collective, []).append(name)
    for declared in session.program.collectives:  # declared, with no schedule: bounded too
        groups.setdefault(declared, [])
    return [bound(session, collective, group, max_cuts) for collective, group in groups.items()] \
        or [bound(session, None, [], max_cuts)]


def must_cross(collective: Collective, side: frozenset[int]) -> tuple[LinearBytes, LinearBytes]:
    """The bytes any schedule of `collective` moves from `side` (some of its ranks) to the
    other ranks, and back: multiples of its buffer V, from the table of collectives (all-reduce:
    V each way; all-gather: the shares of the side's ranks out, the others' in; ...)."""
    kind = KINDS[collective.kind]
    if kind.crossing_of is not None:  # it depends on which ranks the side has
        slot = {r: j for j, r in enumerate(collective.ranks)}
        slots = frozenset(slot[r] for r in side)
        out, back = kind.crossing_of(slots, len(collective.ranks))
    else:
        out, back = kind.must_cross(len(side), len(collective.ranks), collective.root in side)
    return _times(collective.size, out), _times(collective.size, back)


def _times(size: LinearBytes, factor: Fraction) -> LinearBytes:
    return size if factor == 1 else linear_scale(size, factor)


def _check_connected(cuts: list[Cut], collective: Collective, topology) -> None:
    """A cut that bytes must cross but no link does: no schedule can compute the collective."""
    for cut in cuts:
        forward, backward = must_cross(collective, frozenset(cut.side))
        if forward and cut.forward.value == 0:
            ends = cut.side, cut.rest
        elif backward and (cut.backward or cut.forward).value == 0:
            ends = cut.rest, cut.side
        else:
            continue  # (`rest` is p-sized: only built for the message)
        raise TopologyError(f"nothing connects {_ranks(topology, ends[0])} to "
                            f"{_ranks(topology, ends[1])}, so no schedule can compute this "
                            f"{collective.kind}", collective.span)


def _ranks(topology, ranks: tuple[int, ...]) -> str:
    names = [topology.devices[r].name for r in ranks]
    return names[0] if len(names) == 1 else f"{len(names)} ranks ({names[0]}, …)"


def _crossing(size: LinearBytes, capacity: CutCapacity, nominal: dict, memo: dict) -> Crossing:
    if not size or capacity.bandwidth is None or capacity.value is None:
        return Crossing(size, capacity, sympy.Integer(0), Fraction(0))
    key = ("bound", size, capacity.bandwidth, capacity.value)
    found = memo.get(key)
    if found is None:
        found = memo[key] = (linear_expr(size) / capacity.bandwidth,
                             linear_value(size, nominal) / capacity.value)
    return Crossing(size, capacity, *found)


def _cut_bound(cut: Cut, collective: Collective | None, nominal: dict,
               memo: dict | None = None) -> CutBound:
    """`memo` keeps what cuts of one collective share, across calls: the bytes that must
    cross, by side size and root, and the bound of each (bytes, bandwidth) pair."""
    memo = {} if memo is None else memo
    if collective is None:
        forward_bytes, backward_bytes = (), ()
    else:
        key: tuple = ("crosses", len(cut.side), collective.root in cut.side)  # all must_cross reads
        if KINDS[collective.kind].crossing_of is not None:  # ... unless the ranks matter
            key = ("crosses", frozenset(cut.side))
        if key not in memo:
            memo[key] = must_cross(collective, frozenset(cut.side))
        forward_bytes, backward_bytes = memo[key]
    forward = _crossing(forward_bytes, cut.forward, nominal, memo)
    backward = _crossing(backward_bytes, cut.backward or _mirror(cut.forward), nominal, memo)
    return CutBound(cut, forward, backward, "backward" if backward.value > forward.value else "forward")


def _mirror(capacity: CutCapacity) -> CutCapacity:
    """The backward capacity on a symmetric network: as wide; its resources (and sending
    side) are not yet known."""
    return CutCapacity((), capacity.bandwidth, capacity.value, frozenset())


def _with_backward(cut: Cut, finder: RankCuts) -> Cut:
    return replace(cut, backward=finder.backward(cut))


def _end_host(collective: Collective | None, cuts: tuple[CutBound, ...], nominal: dict) -> EndHost | None:
    sent = KINDS[collective.kind].end_host if collective is not None else None
    if collective is None or sent is None or len(collective.ranks) < 2:
        return None
    ways: dict[int, tuple[CutCapacity, CutCapacity]] = {}  # rank: (out of it, into it)
    for c in cuts:
        if len(c.cut.side) == 1:
            ways.setdefault(c.cut.side[0], (c.forward.capacity, c.backward.capacity))
        if len(c.cut.side) == len(c.cut.ranks) - 1:
            ways.setdefault(c.cut.rest[0], (c.backward.capacity, c.forward.capacity))
    capacities = [ways[r] for r in collective.ranks]
    if any(out.bandwidth is None or back.bandwidth is None for out, back in capacities):
        return None  # some rank has an unlimited way out or in: no bound from the ends
    p = len(collective.ranks)
    total = linear_scale(collective.size, sent(p))
    egress = sympy.Add(*[out.bandwidth for out, _ in capacities])
    ingress = sympy.Add(*[back.bandwidth for _, back in capacities])
    bytes_value = linear_value(total, nominal)
    out_value = bytes_value / sum(out.value or 0 for out, _ in capacities)  # all limited, above
    in_value = bytes_value / sum(back.value or 0 for _, back in capacities)
    bandwidth = egress if out_value >= in_value else ingress
    return EndHost(total, egress, ingress, sympy.factor_terms(linear_expr(total) / bandwidth),
                   max(out_value, in_value))


def _efficiency(session: Session, name: str, binding: CutBound | None, best: Fraction) -> Efficiency:
    program = session.program
    loads, timing = session.loads(name), session.timing(name)
    whole = merged(loads)
    overlapped = next(iter(cost(whole, program.topology, sympy.Integer(0), program.nominal).classes), None)
    value = nominal_value(overlapped.time, program.nominal) if overlapped else Fraction(0)
    busiest = None
    if overlapped is not None and overlapped.dominant is not None:
        busiest = overlapped.terms[overlapped.dominant].resources[0]
    cut_bytes: tuple[LinearBytes, LinearBytes] = ((), ())
    used = (0, 0)
    if binding is not None:
        cut_bytes = _moved_across(timing.schedule, frozenset(binding.cut.side),
                                  len(program.topology.devices))
        loaded = set(whole.resource.tolist())
        resources = binding.crossing.capacity.resources
        used = (sum(1 for r in resources if r in loaded), len(resources))
    ratio = timing.time / best if best > 0 else None
    return Efficiency(timing, overlapped, value, ratio, busiest, cut_bytes, used)


def _moved_across(schedule: Schedule, side: frozenset[int], devices: int) -> tuple[LinearBytes, LinearBytes]:
    """The bytes a schedule's transfers move from `side` to the other ranks, and back."""
    inside = np.zeros(devices, dtype=bool)
    inside[list(side)] = True
    moved: dict[tuple[int, int, LinearBytes], int] = {}  # integers first: exact, and cheap
    for b in schedule.rounds.batches():  # (a series' batches whole: sums need no rounds)
        src, dst = inside[b.src], inside[b.dst]
        for way, mask in ((0, src & ~dst), (1, ~src & dst)):
            length = int(b.length[mask].sum())
            if length:
                key = (way, b.den, b.size)
                moved[key] = moved.get(key, 0) + length
    totals: dict[tuple[int, sympy.Expr], Fraction] = {}
    for (way, den, size), length in moved.items():
        share = Fraction(length, den)
        for symbol, coeff in size:
            totals[(way, symbol)] = totals.get((way, symbol), Fraction(0)) + coeff * share
    out, back = (tuple(sorted(((s, c) for (w, s), c in totals.items() if w == way and c),
                              key=lambda sc: str(sc[0]))) for way in (0, 1))
    return out, back

"""What-if: every single failure of one class of items, each schedule's time on what is left.

`whatif(session, cls)` fails, one at a time, every item of a class — the links of a link
class (`nic`, `uplink`), or the devices of a kind (`switch`) or of a family (`spine`) — on
the machine of `schedc.model.changes`, and times each schedule there. Routes are recomputed by
the machine's own rules; a transfer left without a route makes that failure's time "no
route" (the worst there is).

Symmetric failures are computed once. When shifting every host to the next one is an
automorphism of the machine (`schedc.model.symmetry.host_shift`) and a schedule's rounds
are carried onto themselves by the shift (σ^k for the least such k), failing item x and
failing σ^k(x) take equally long: time(S, σf) = time(σ⁻¹S, f) = time(S, f). So one item per
orbit is timed and the others take its time, each labelled with the item it was computed
for. Whether a schedule is invariant is checked round by round (who sends how many bytes
to whom, reduced or copied), not assumed.

The weakest item of a schedule is the one whose failure costs it most; its time with that
item's bandwidth multiplied by a factor `d` (0 < d ≤ 1) is a formula in d, so "one NIC at
half speed costs X" is T(1/2) - T(1).
"""

from __future__ import annotations

import gc
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import sympy

from ..errors import (
    OUT_OF_MEMORY,
    LimitError,
    SourceFile,
    Span,
    TopologyError,
    UsageError,
    did_you_mean,
)
from ..limits import MAX_FAILURE_WORK
from ..model.changes import Item, apply, device_item, links_of_class
from ..model.ir import distinct, joined
from ..model.symmetry import host_shift
from ..model.topology import Topology
from ..session import Session
from ..units import DIMENSIONLESS

COLLECT_EVERY = 16
FACTOR = "d"  # the derating factor's name, unless the file has a param of that name


@dataclass(frozen=True)
class Outcome:
    """One schedule with one item failed: its time (None when a transfer has no route)."""

    time: Fraction | None
    formula: sympy.Expr | None
    no_route: str | None = None  # the error's message
    computed_for: str | None = None  # the item it was timed for, when by symmetry


@dataclass(frozen=True)
class Weakest:
    """A schedule's worst single failure, and its time with that item derated by d."""

    item: str
    time: Fraction | None
    derated: sympy.Expr | None  # the time formula, in the params and d
    in_factor: sympy.Expr | None  # the same at the nominal point of every other param
    factor: sympy.Symbol
    why_not: str | None = None  # why there is no formula in d


@dataclass(frozen=True)
class Symmetry:
    """How a schedule's failures were computed: `orbits` of `items`, under the shift by
    `step` hosts (of `hosts`); None when nothing was shared."""

    hosts: int
    step: int | None
    orbits: int
    items: int


@dataclass(frozen=True)
class WhatIf:
    cls: str
    items: tuple[Item, ...]
    schedules: tuple[str, ...]
    base: dict[str, Fraction]  # the nominal time of each schedule on the whole machine
    outcomes: dict[tuple[str, str], Outcome]  # (item name, schedule) -> outcome
    weakest: dict[str, Weakest]
    symmetry: dict[str, Symmetry]


def items_of(topology: Topology, cls: str) -> list[Item]:
    """The items of a class: the links of link class `cls`, else the devices of kind `cls`,
    else the devices of family `cls` (`spine` for spine[0], spine[1], ...)."""
    links = links_of_class(topology, cls)
    if links:
        return links
    devices = [d for d in topology.devices if d.kind == cls]
    if not devices:
        devices = [d for d in topology.devices if _family(d.name) == cls]
    if devices:
        return [device_item(topology, d.id) for d in devices]
    classes = sorted({r.cls for r in topology.resources})
    families = sorted({_family(d.name) for d in topology.devices})
    source = SourceFile("--class", cls)
    raise UsageError(f"no link of class '{cls}' and no device of that kind or family"
                     + did_you_mean(cls, [*classes, *families]), Span(source, 1, 1, 1, len(cls) + 1),
                     (f"link classes: {', '.join(classes)}",
                      f"device families: {', '.join(families)}"))


def _family(name: str) -> str:
    last = name.rsplit(".", 1)[-1]
    return last.split("[", 1)[0]


def whatif(session: Session, cls: str, schedules: tuple[str, ...],
           max_work: int = MAX_FAILURE_WORK) -> WhatIf:
    """Every single failure of class `cls`, timed for each schedule (verified beforehand by
    the caller); symmetric failures computed once; refused before any is timed when the
    failures × (devices + links + transfers) pass `max_work`. In phases: orbits under the
    machine's symmetry, the failures that change routes, those timed, the orbits filled in."""
    topology = session.program.topology
    items = items_of(topology, cls)
    names = tuple(schedules)
    base = {n: session.timing(n).time for n in names}
    orbits, symmetry = _symmetry(session, items, names)
    outcomes: dict[tuple[str, str], Outcome] = {}
    wanted, changed, dependence = _to_time(session, items, names, orbits, outcomes)
    check_work(session, cls, len(wanted), tuple(dict.fromkeys(n for k in wanted for n in wanted[k])),
               max_work)
    _time_failures(session, cls, items, wanted, changed, dependence, outcomes)
    for name in names:
        for k, rep in enumerate(orbits[name]):
            if rep != k:
                found = outcomes[(items[rep].name, name)]
                outcomes[(items[k].name, name)] = Outcome(found.time, found.formula,
                                                          found.no_route, items[rep].name)
    weakest = {name: _weakest(session, items, outcomes, name) for name in names}
    return WhatIf(cls, tuple(items), names, base, outcomes, weakest, symmetry)


def _symmetry(session: Session, items, names: tuple[str, ...]
              ) -> tuple[dict[str, list[int]], dict[str, Symmetry]]:
    """Each schedule's failures by orbit (the representative of each) under the host shift
    that leaves its transfers alike, and what that symmetry is."""
    topology = session.program.topology
    shift = host_shift(topology, list(range(len(topology.host_names))),
                       tuple(sorted({r for n in names for r in session.program.result(n).collective.ranks})))
    device_ids = {d.name: d.id for d in topology.devices}
    keys = [_key(topology, item, device_ids) for item in items]
    keyed = {key: k for k, key in enumerate(keys)}
    symmetry: dict[str, Symmetry] = {}
    orbits: dict[str, list[int]] = {}
    for name in names:
        step = _invariant_step(session, name, shift) if shift is not None else None
        orbits[name] = _orbits(topology, keys, keyed, shift, step)
        symmetry[name] = Symmetry(len(topology.host_names), step, len(set(orbits[name])),
                                  len(items))
    return orbits, symmetry


def _to_time(session: Session, items, names: tuple[str, ...], orbits: dict[str, list[int]],
             outcomes: dict[tuple[str, str], Outcome]):
    """The failures to time, each with the schedules whose routes it changes; one that
    changes none keeps the time (set here; Topology.route_depends_on)."""
    dependence = _dependence(session, names)
    wanted: dict[int, list[str]] = {}
    changed: dict[int, np.ndarray] = {}
    for name in names:
        for k in sorted(set(orbits[name])):
            if k not in changed:
                changed[k] = dependence.changed_by(items[k])
            if dependence.touches(name, changed[k]):
                wanted.setdefault(k, []).append(name)
            else:
                timing = session.timing(name)
                outcomes[(items[k].name, name)] = Outcome(timing.time, timing.cost.formula)
    return wanted, changed, dependence


def _time_failures(session: Session, cls: str, items, wanted: dict[int, list[str]],
                   changed: dict[int, np.ndarray], dependence,
                   outcomes: dict[tuple[str, str], Outcome]) -> None:
    """Each failure in `wanted` timed on its failed machine, unchanged routes carried over,
    one machine at a time (memory: one machine's; 2.7 GB for 800 NICs when all were kept)."""
    topology = session.program.topology
    for count, k in enumerate(sorted(wanted)):
        try:
            failed = session.on(apply(topology, [items[k]], [], dependence.kept(changed[k])))
            for name in wanted[k]:
                outcomes[(items[k].name, name)] = _timed(failed, name)
        except MemoryError:
            source = SourceFile("--class", cls)
            raise LimitError(f"{OUT_OF_MEMORY} (timing the failure of {items[k].name}, "
                             f"{count + 1:,} of {len(wanted):,})",
                             Span(source, 1, 1, 1, len(cls) + 1)) from None
        del failed
        # The failed machine's routes and caches hold reference cycles, and the command line
        # runs with the cyclic collector off (cli.main): collect what this failure made (the
        # youngest generation only: what was allocated since the last collection), every
        # COLLECT_EVERY failures, which costs a tenth of the timing.
        if count % COLLECT_EVERY == COLLECT_EVERY - 1:
            gc.collect(0)


def check_work(session: Session, cls: str, failures: int, names: tuple[str, ...],
               limit: int) -> None:
    """Refuse, before the first failure is timed, a run whose work — each failure a copy of
    the machine (its devices and links) routed and timed anew (its schedules' transfers) —
    passes `limit` units (200 hosts × 8 NICs of a rail machine took 51 s and 10 GB)."""
    topology = session.program.topology
    size = len(topology.devices) + len(topology.hops)
    transfers = sum(session.schedule(n).transfer_count for n in names)
    work = failures * (size + transfers)
    if work > limit:
        raise LimitError(
            f"whatif --class {cls} would time {failures:,} failures, each on a machine of "
            f"{len(topology.devices):,} devices and {len(topology.hops):,} links with "
            f"{transfers:,} transfers: {work:,} units of work; the limit is {limit:,} (raise it "
            "with --max-failure-work, or name a class with fewer items)")


@dataclass(frozen=True)
class Dependence:
    """Which routes of the schedules each hop's failure may change: `pairs` the distinct
    (src · devices + dst) of their transfers, sorted; `of_schedule` marks each schedule's
    among them; entry j says that failing `hop[j]` may change the route of pair
    `pair[j]` (sorted by hop)."""

    devices: int
    pairs: np.ndarray
    of_schedule: dict[str, np.ndarray]
    hop: np.ndarray
    pair: np.ndarray

    def changed_by(self, item: Item) -> np.ndarray:
        """The pairs (indices) whose routes failing `item` may change."""
        hops = np.array(sorted(item.hops), dtype=np.int64)
        lo = np.searchsorted(self.hop, hops, side="left")
        hi = np.searchsorted(self.hop, hops, side="right")
        return distinct(joined([self.pair[a:b] for a, b in zip(lo, hi)]))

    def touches(self, name: str, changed: np.ndarray) -> bool:
        return bool(self.of_schedule[name][changed].any())

    def kept(self, changed: np.ndarray) -> list[tuple[int, int]]:
        """The pairs whose routes a failure that changes `changed` leaves as they are."""
        keep = np.ones(len(self.pairs), dtype=bool)
        keep[changed] = False
        n = self.devices
        return [(p // n, p % n) for p in self.pairs[keep].tolist()]


def _dependence(session: Session, names: tuple[str, ...]) -> Dependence:
    """Every schedule's pairs, routed already by its base timing, and the hops each route
    depends on."""
    topology = session.program.topology
    n = len(topology.devices)
    keys = {name: distinct(joined([b.src * n + b.dst for b in session.schedule(name).rounds.batches()]))
            for name in names}
    pairs = distinct(joined(list(keys.values())))
    hops: list[int] = []
    owners: list[int] = []
    for index, key in enumerate(pairs.tolist()):
        depends = topology.route_depends_on(key // n, key % n)
        hops.extend(depends)
        owners.extend([index] * len(depends))
    hop, pair = np.array(hops, dtype=np.int64), np.array(owners, dtype=np.int64)
    order = np.argsort(hop, kind="stable")
    marks = {}
    for name, k in keys.items():
        marks[name] = np.zeros(len(pairs), dtype=bool)
        marks[name][np.searchsorted(pairs, k)] = True
    return Dependence(n, pairs, marks, hop[order], pair[order])


def _timed(session: Session, name: str) -> Outcome:
    try:
        timing = session.timing(name)
    except TopologyError as error:
        return Outcome(None, None, error.message)
    return Outcome(timing.time, timing.cost.formula)


def _key(topology: Topology, item: Item, device_ids: dict[str, int]) -> tuple:
    """What an item is, in device ids: its device, or the ends and class of its links."""
    if item.kind == "device":
        return ("device", device_ids[item.name])
    ends = {(topology.hops[h].src, topology.hops[h].dst) for h in item.hops}
    return ("link", frozenset(ends), item.cls)


def _image(key: tuple, mapping: np.ndarray) -> tuple:
    if key[0] == "device":
        return ("device", int(mapping[key[1]]))
    return ("link", frozenset((int(mapping[a]), int(mapping[b])) for a, b in key[1]), key[2])


def _orbits(topology: Topology, keys: list[tuple], keyed: dict[tuple, int], shift,
            step: int | None) -> list[int]:
    """Each item's representative: the first item of its orbit under the shift by `step`
    hosts (itself when there is no symmetry to use)."""
    representative = list(range(len(keys)))
    if shift is None or step is None:
        return representative
    powers = [shift.devices.power(j * step, np.arange(len(topology.devices)))
              for j in range(1, shift.order // step)]
    done = [False] * len(keys)
    for k, key in enumerate(keys):
        if done[k]:
            continue
        done[k] = True
        for mapping in powers:
            other = keyed.get(_image(key, mapping))
            if other is not None and not done[other]:
                done[other], representative[other] = True, k
    return representative


def _invariant_step(session: Session, name: str, shift) -> int | None:
    """The least k (dividing the number of hosts, below it) such that shifting every host k
    places carries each of the schedule's rounds onto itself; None if there is none."""
    schedule = session.schedule(name)
    if schedule.prologue or any(d.reduces for d in session.program.topology.devices):
        return None  # (a switch that reduces merges by region, which the check leaves out)
    ids = np.arange(len(session.program.topology.devices))
    for k in range(1, shift.order):
        if shift.order % k == 0 and _carried(schedule, shift.devices.power(k, ids)):
            return k
    return None


def _carried(schedule, mapping: np.ndarray) -> bool:
    seen: set[tuple] = set()
    for rnd in schedule.rounds:
        shape = tuple((b.src.tobytes(), b.dst.tobytes(), b.length.tobytes(), b.den, b.op,
                       id(b.size)) for b in rnd.batches)
        if shape in seen:
            continue
        seen.add(shape)
        rows: Counter = Counter()
        mapped: Counter = Counter()
        for b in rnd.batches:
            lengths = [Fraction(int(n), b.den) for n in b.length.tolist()]
            rows.update(zip(b.src.tolist(), b.dst.tolist(), lengths, [b.op] * len(b), [b.size] * len(b)))
            mapped.update(zip(mapping[b.src].tolist(), mapping[b.dst].tolist(), lengths,
                              [b.op] * len(b), [b.size] * len(b)))
        if rows != mapped:
            return False
    return True


def _weakest(session: Session, items: list[Item], outcomes: dict, name: str) -> Weakest:
    def badness(k: int) -> tuple:
        outcome = outcomes[(items[k].name, name)]
        return (outcome.time is None, outcome.time or 0, -k)
    worst = max(range(len(items)), key=badness)
    item = items[worst]
    found = outcomes[(item.name, name)]
    program = session.program
    topology = program.topology
    symbol_name = FACTOR if FACTOR not in program.params else f"{FACTOR}_whatif"
    factor = sympy.Symbol(symbol_name, positive=True)
    resources = item.resources if item.kind != "device" else tuple(dict.fromkeys(
        topology.hops[h].resources[0] for h in sorted(item.hops)))
    limited = tuple(r for r in resources if topology.resources[r].bandwidth is not None)
    if not limited:
        return Weakest(item.name, found.time, None, None, factor,
                       f"{item.name} has no bandwidth (it is never a bottleneck)")
    from ..elaborate.program import Param
    source = SourceFile("whatif", symbol_name)
    param = Param(symbol_name, factor, DIMENSIONLESS, Fraction(1), Span(source, 1, 1, 1, 2))
    derated_item = Item(item.name, "link", frozenset(), limited, item.cls)
    derated = session.on(apply(topology, [], [(derated_item, factor)]), {symbol_name: param})
    formula = derated.timing(name).cost.formula
    others = {s: v for s, v in program.nominal.items() if s != factor}
    return Weakest(item.name, found.time, formula, at_nominal(formula, others),
                   factor)


def at_nominal(expr: sympy.Expr, values: dict) -> sympy.Expr:
    """`expr` with `values` put in, its maxima and minima rebuilt without SymPy's pairwise
    comparisons of their arguments (most of the time of a plain xreplace): of the arguments
    that became numbers only the largest (smallest) is kept, which is exact."""
    if expr.func in (sympy.Max, sympy.Min):
        args = [at_nominal(a, values) for a in expr.args]
        numbers = [a for a in args if a.is_Number]
        others = [a for a in args if not a.is_Number]
        if numbers:
            others.append(max(numbers) if expr.func is sympy.Max else min(numbers))
        return others[0] if len(others) == 1 else expr.func(*others, evaluate=False)
    if not expr.args:
        return values.get(expr, expr)
    return expr.func(*[at_nominal(a, values) for a in expr.args])

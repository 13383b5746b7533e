"""Loads → the time of a fixed instance, with NumPy and exact fractions: no formula is built.

    T = Σ_rounds ( α + latency + max_e V[r,e] / B[e] )    (and with protocols, the least of
    launch_p + Σ_rounds ( start-up_p + latency + max_g V[r,g] / rate_p(B_g) ) over them)

evaluated round shape by round shape at the program's nominal point. The formula path
(`cost.formula`, `cost.protocols`) builds the same sum as SymPy expressions for every class of
rounds and substitutes the nominal point afterwards; this path never makes an expression, so
its work grows with the loads' entries only, and on a program compiled without formulas
(`Program.symbolic` false: every param its value) it never imports SymPy
(tests/test_numeric.py checks that both paths give the same exact time on every shipped file,
compiled either way).

Each term is chosen as the formula path chooses it: per round and bandwidth group the largest
load (`formula._bandwidth_groups`, split by link class), and under a protocol the rate of
that group capped by the classes of the links carrying that load. The largest is found in floating point first and settled exactly
among the entries within a relative 1e-9 of it, so ties and near-ties are compared as
fractions.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..model.ir import LinearBytes, Schedule, linear_value
from ..model.protocol import Protocol
from ..model.scalars import exact_value as value_at
from ..model.topology import Topology
from .lower import Loads, merged

NEAR = 1e-9  # entries within this relative distance of the float maximum are compared exactly


@dataclass(frozen=True)
class NumericTiming:
    """What `time --no-formula` reports about one schedule: its time at the nominal point and
    its traffic, without a formula, a regime or a bottleneck's formula."""

    schedule: Schedule
    time: Fraction  # seconds at the nominal point
    rounds: int
    cross_rounds: int
    bytes_cross: LinearBytes
    bytes_logical: LinearBytes
    nominal: dict
    protocol: str | None = None  # with protocols: the fastest at the nominal point (first on a tie)
    protocol_times: tuple[tuple[str, Fraction], ...] = ()  # with protocols: each one's time
    # the link classes that bound its rounds (before any protocol), each once, by first round
    bottlenecks: tuple[str, ...] = ()
    chunks: Fraction | None = None  # `step cost pipelined chunk Q`: C = max(1, size/Q)

    @property
    def name(self) -> str:
        return self.schedule.name

    def bytes_value(self, form: LinearBytes) -> Fraction:
        return linear_value(form, self.nominal)


def numeric_timing(schedule: Schedule, loads: Loads, topology: Topology, alpha, nominal: dict,
                   protocols: tuple[Protocol, ...] = (), overlapped: bool = False,
                   chunks: Fraction | None = None) -> NumericTiming:
    """The schedule's `NumericTiming` (see `numeric_time`)."""
    peaks, used = _peaks(loads, topology, nominal)
    times = _times(peaks, used, loads, topology, alpha, nominal, protocols, overlapped, chunks)
    best = min(range(len(times)), key=lambda k: times[k][1])  # (the first of equal times)
    return NumericTiming(schedule, times[best][1], loads.rounds, int(loads.cross_rounds.sum()),
                         loads.bytes_cross, loads.bytes_logical, nominal,
                         times[best][0] if protocols else None,
                         tuple(times) if protocols else (), bottlenecks(loads, peaks), chunks)


def bottlenecks(loads: Loads, peaks: list[list[tuple]]) -> tuple[str, ...]:
    """`compare`'s bottleneck column: per round shape, in the order of their first rounds,
    the classes of the links carrying its largest term (load / bandwidth, before any
    protocol; on a tie, the first class's by the links' order), each name once."""
    first = np.full(len(peaks), loads.rounds, dtype=np.int64)
    np.minimum.at(first, loads.shape_of, np.arange(loads.rounds, dtype=np.int64))
    names: list[str] = []
    for shape in np.argsort(first, kind="stable").tolist():
        terms = [(load / bandwidth, found) for load, bandwidth, found in peaks[shape]]
        if terms:
            most = max(value for value, _ in terms)
            name = "+".join(sorted(next(c for value, c in terms if value == most)))
            if name not in names:
                names.append(name)
    return tuple(names)


def numeric_time(loads: Loads, topology: Topology, alpha, nominal: dict,
                 protocols: tuple[Protocol, ...] = (), overlapped: bool = False,
                 chunks: Fraction | None = None) -> Fraction:
    """The schedule's time in seconds at the nominal point (see the module's docstring);
    `overlapped` (`step cost max`): a round costs max(start-up, its transfers), not the sum;
    `chunks` (`step cost pipelined`: C = max(1, size/chunk) at the nominal point): the rounds
    are a pipeline's stages, fill plus (C − 1) periods (`cost.pipeline`)."""
    peaks, used = _peaks(loads, topology, nominal)
    return min(t for _, t in _times(peaks, used, loads, topology, alpha, nominal, protocols,
                                    overlapped, chunks))


def _times(peaks: list[list[tuple]], used: list[set[str]], loads: Loads, topology: Topology,
           alpha, nominal: dict, protocols: tuple[Protocol, ...], overlapped: bool,
           chunks: Fraction | None) -> list[tuple[str, Fraction]]:
    """(protocol, time) for each protocol; without protocols one ("", the time)."""
    whole = _peaks(merged(loads), topology, nominal)[0] if chunks is not None else []
    latency = [value_at(x, nominal) for x in loads.shape_latency]
    counts = np.bincount(loads.shape_of, minlength=len(loads.shape_cross)).tolist()
    times = []
    for protocol in protocols or (None,):
        total = value_at(protocol.launch, nominal) if protocol else Fraction(0)
        stages = []
        for s in range(len(counts)):
            if not counts[s]:
                continue
            start = _startup(protocol, used[s], nominal) if protocol else value_at(alpha, nominal)
            stage = _step(start + latency[s], [load / _rate(protocol, bandwidth, classes, nominal)
                                               / (chunks or 1)
                                               for load, bandwidth, classes in peaks[s]],
                          overlapped)
            total += counts[s] * stage
            stages.append(stage)
        if chunks is not None:  # the period: the slowest stage or the busiest link, per chunk
            stages += [load / _rate(protocol, bandwidth, classes, nominal) / chunks
                       for load, bandwidth, classes in whole[0]] if whole else []
            total += (chunks - 1) * max(stages, default=Fraction(0))
        times.append((protocol.name if protocol else "", total))
    return times


def _peaks(loads: Loads, topology: Topology, nominal: dict
           ) -> tuple[list[list[tuple]], list[set[str]]]:
    """Per round shape, per bandwidth group it loads: (the largest load in bytes, the group's
    bandwidth, the classes of the links carrying that load), exactly; and per shape the
    classes of the links with a bandwidth it loads at all (a protocol's start-up reads them).
    A group is the resources of one class and one bandwidth: the formula path's groups (one
    per bandwidth expression, and per class for a class with a protocol's share or cap of its
    own) give the same largest term, since a protocol's rate differs only for those classes."""
    bandwidths: dict[object, Fraction] = {}  # a bandwidth expression → its value, once
    group_value = np.zeros(len(topology.resources), dtype=np.float64)
    exact_of: list[Fraction | None] = [None] * len(topology.resources)
    group_of = np.full(len(topology.resources), -1, dtype=np.int64)
    index: dict[tuple, int] = {}
    for r in topology.resources:
        bandwidth = r.effective_bandwidth
        if bandwidth is not None:
            if bandwidth not in bandwidths:
                bandwidths[bandwidth] = value_at(bandwidth, nominal)
            exact_of[r.id] = bandwidths[bandwidth]
            group_value[r.id] = float(bandwidths[bandwidth])
            key = (bandwidth, r.cls)
            group_of[r.id] = index.setdefault(key, len(index))
    basis = [value_at(b, nominal) / d for b, d in zip(loads.basis, loads.denominators)]
    amount = loads.amount
    exact_load = _exact_loads(amount, basis)
    approx = np.array([float(x) for x in exact_load]) if len(exact_load) else np.zeros(0)
    found: list[list[tuple]] = [[] for _ in range(len(loads.shape_cross))]
    used: list[set[str]] = [set() for _ in range(len(loads.shape_cross))]
    for k in np.flatnonzero(np.any(amount != 0, axis=1)) if len(amount) else ():
        carrier = topology.resources[int(loads.resource[k])]
        if carrier.bandwidth is not None:
            used[int(loads.shape[k])].add(carrier.cls)
    keys = loads.shape * (len(index) + 1) + group_of[loads.resource]
    order = np.argsort(keys, kind="stable")
    edges = np.flatnonzero(np.diff(keys[order])) + 1
    for run in np.split(order, edges) if len(order) else []:
        shape, first = int(loads.shape[run[0]]), int(loads.resource[run[0]])
        most = approx[run].max()
        near = [int(k) for k in run if approx[k] >= most * (1 - NEAR)]
        peak = max(exact_load[k] for k in near)
        if peak == 0:
            continue
        classes = frozenset(topology.resources[int(loads.resource[k])].cls for k in near
                            if exact_load[k] == peak)
        found[shape].append((peak, exact_of[first], classes))
    return found, used


def _exact_loads(amount: np.ndarray, basis: list[Fraction]) -> list[Fraction]:
    """Each entry's bytes: Σ_b amount[k, b] · basis[b] (the basis already over its
    denominator). Distinct rows are evaluated once: a ring's entries share a few."""
    if not len(amount):
        return []
    rows = [tuple(int(x) for x in row) for row in amount.tolist()]
    memo: dict[tuple, Fraction] = {}
    out = []
    for row in rows:
        value = memo.get(row)
        if value is None:
            value = memo[row] = sum((a * b for a, b in zip(row, basis) if a), Fraction(0))
        out.append(value)
    return out


def _step(startup: Fraction, terms: list[Fraction], overlapped: bool) -> Fraction:
    """`formula.step_time` at the nominal point: start-up + the largest term, or with
    `overlapped` the largest of the start-up and the terms."""
    if overlapped and terms:
        return max(startup, *terms)
    return startup + max(terms, default=Fraction(0))


def _startup(protocol: Protocol, classes: set[str], nominal: dict) -> Fraction:
    """`Protocol.startup`, at the nominal point: the largest of α_p and the classes' own."""
    own = [value_at(a, nominal) for c, a in protocol.class_alpha if c in classes]
    return max([value_at(protocol.alpha, nominal), *own])


def _rate(protocol: Protocol | None, bandwidth: Fraction, classes: frozenset[str],
          nominal: dict) -> Fraction:
    """The link's bandwidth without a protocol; with one, `Protocol.rate` at the nominal
    point: the share of B (each class's own `class C eff`, else eff; the smallest over the
    classes), capped by the classes' caps."""
    if protocol is None:
        return bandwidth
    own = dict(protocol.class_eff)
    shares = [value_at(own.get(c, protocol.eff), nominal) for c in sorted(classes)]
    share = min(shares) if shares else value_at(protocol.eff, nominal)
    caps = [value_at(cap, nominal) for c, cap in protocol.class_cap if c in classes]
    return min([share * bandwidth, *caps])

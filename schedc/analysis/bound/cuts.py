"""Cuts of the machine between groups of ranks, and their bandwidth, by max-flow / min-cut.

The flow network. Every device is a node and every hop (one direction of a link) an edge
whose capacity is the effective bandwidth of the resource it loads; parallel links add up.
A resource that several hops load (a half-duplex link, a shared slot) becomes an edge of its
own between two extra nodes, which every hop loading it passes through, so its bandwidth is
counted once. A resource without bandwidth is an edge without capacity (unlimited).
Capacities are exact integers: bandwidths at the nominal point times one common denominator.
Ranks may relay data (an algorithm can forward what it received), so flow may pass through
any rank and any device that forwards, but not through a GPU that is neither.

A shared node can join hops that do not meet in the machine (entering a shared slot from one
link and leaving it on another). That can only add paths, so a cut's bandwidth comes out at
least as large as the machine's, and a bound computed from it is still a lower bound.

Cuts are found at the nominal point by an exact integer max-flow (see `flow`) and reported
symbolically: the sum of the effective bandwidths of the resources cut.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from math import lcm

import networkx as nx
import sympy

from ... import progress
from ...model.symmetry import HostShift, host_shift
from ...model.topology import Topology
from .flow import ArrayFlow, NetworkxFlow
from .naming import SideNames

# Edges × max-flow problems from which scipy's max-flow pays for importing it (~0.3 s): below,
# networkx has solved them all first (the 1,024-rank ring: 4,112 edges × 12, 0.25 s).
ARRAYS_FROM = 100_000


@dataclass(frozen=True)
class CutCapacity:
    """The narrowest cut from one side's ranks to the other's, in one direction."""

    resources: tuple[int, ...]  # the resources cut, by id
    bandwidth: sympy.Expr | None  # Σ of their effective bandwidths; None: unlimited
    value: Fraction | None  # bytes/s at the nominal point; None: unlimited
    side: frozenset[int]  # the devices on the sending side of the cut (empty if unlimited)


class FlowNetwork:
    """The machine as a flow network with a source and a sink that can be attached to any
    ranks; max-flow on networkx's residual network, or on arrays (scipy) once
    `solve_on_arrays` says the capacities allow it (see `flow`)."""

    def __init__(self, topology: Topology, nominal: dict, ranks: tuple[int, ...]) -> None:
        self.topology = topology
        graph = _graph(topology, nominal, frozenset(ranks))
        self.scale = graph.graph["scale"]
        self.symmetric = _symmetric(graph)
        self.graph = graph
        self.arrays: ArrayFlow | None = None
        self._networkx: NetworkxFlow | None = None  # built on first use
        self._ranks = ranks

    def solve_on_arrays(self) -> bool:
        """Solve on arrays from now on, if the capacities fit them; whether they do."""
        self.arrays = ArrayFlow.of(self.graph)
        return self.arrays is not None

    def min_cut(self, sources: frozenset[int], sinks: frozenset[int]) -> CutCapacity:
        """The narrowest cut that separates `sources` from `sinks` (flow from the former)."""
        if self.arrays is not None:
            solved = self.arrays.min_cut(sources, sinks)
        else:
            if self._networkx is None:
                self._networkx = NetworkxFlow(self.graph, self._ranks)
            solved = self._networkx.min_cut(sources, sinks)
        if solved is None:  # a path without any bandwidth limit
            return CutCapacity((), None, None, frozenset())
        flow, devices, resources = solved
        bandwidth = sympy.Add(*[self.topology.resources[r].effective_bandwidth for r in resources])
        return CutCapacity(resources, bandwidth, Fraction(flow, self.scale), devices)


@dataclass(frozen=True)
class Cut:
    """A split of the ranks into two non-empty sides, with the narrowest cut each way.

    `backward` is None when the network is symmetric: it is then as wide as `forward`, and
    `RankCuts.backward` finds its resources on demand."""

    family: str  # host | halves | rank | min-cut (the order in which they are tried)
    name: str
    side: tuple[int, ...]  # ranks on the first side, in rank order
    ranks: tuple[int, ...] = field(repr=False)  # all ranks
    forward: CutCapacity  # side → rest
    backward: CutCapacity | None  # rest → side

    @property
    def rest(self) -> tuple[int, ...]:
        """The ranks on the other side, in rank order."""
        side = set(self.side)
        return tuple(r for r in self.ranks if r not in side)


class RankCuts:
    """The cuts a bound considers for a group of ranks (see `cuts`)."""

    def __init__(self, topology: Topology, nominal: dict, ranks: tuple[int, ...]) -> None:
        self.topology = topology
        self.ranks = ranks
        self.all = frozenset(ranks)
        self._position = {r: k for k, r in enumerate(ranks)}
        self.groups = _host_groups(topology, ranks)
        self.shift = host_shift(topology, [key for key, _, _ in self.groups], ranks)
        self.network = FlowNetwork(topology, nominal, ranks)
        if self.network.graph.number_of_edges() * self.work >= ARRAYS_FROM:
            self.network.solve_on_arrays()
        self.solved = 0  # max-flow problems solved so far
        # orbit key -> (the k of the side solved, its cut); see `HostShift.orbit`
        self._outward: dict[tuple, tuple[int, CutCapacity]] = {}
        self._inward: dict[tuple, tuple[int, CutCapacity]] = {}

    @property
    def work(self) -> int:
        """How many max-flow problems `cuts` solves at most, to refuse huge inputs early."""
        p, hosts = len(self.ranks), len(self.groups)
        if p < 2:
            return 0
        orbits = self.shift.order if self.shift is not None else 1  # one solved per orbit
        pairs = max(hosts - 1, 1) if orbits == 1 else 1  # the min-cut family
        splits = (hosts if hosts >= 2 else 0) // orbits + int(hosts >= 3) + pairs + -(-p // orbits)
        return pairs + splits * (1 if self.network.symmetric else 2)  # each way, unless symmetric

    def cuts(self) -> list[Cut]:
        """Each host against the rest; the first half of the hosts against the second; each
        single rank against the rest; the narrowest cut networkx finds between consecutive
        hosts (or, with fewer than two hosts, between the two halves of the ranks). Splits
        already seen are skipped, so a split keeps the name of the family that found it
        first, in this order."""
        if len(self.ranks) < 2:
            return []
        names = [name for _, name, _ in self.groups]
        members = [frozenset(m) for _, _, m in self.groups]
        splits: list[tuple[str, str, frozenset[int]]] = []
        if len(members) >= 2:
            whole = sum(len(m) for m in members) == len(self.ranks)  # no rank outside the hosts
            for name, group in zip(names, members):
                rest = names[1] if len(members) == 2 and whole else "rest"
                splits.append(("host", f"{name} | {rest}", group))
        if len(members) >= 3:
            k = len(members) // 2
            splits.append(("halves", f"{_span(names[:k])} | {_span(names[k:])}",
                           frozenset().union(*members[:k])))
        device = self.topology.devices
        splits += [("rank", f"{device[r].name} | rest", frozenset([r])) for r in self.ranks]
        splits += self._min_cuts(names, members)

        seen: set[frozenset[int]] = set()
        result = []
        p = len(self.ranks)
        ticker = progress.ticker("bound: cuts", len(splits))
        for family, name, side in splits:
            ticker.advance()
            # A split is seen again as either side: key it by its smaller side (the one with
            # the first rank when equal), so a single rank's split costs no p-sized set.
            small = 2 * len(side) < p or (2 * len(side) == p and self.ranks[0] in side)
            key = side if small else self.all - side
            if key in seen:
                continue
            seen.add(key)
            forward = self._split(side, outward=True)
            backward = None if self.network.symmetric else self._split(side, outward=False)
            result.append(Cut(family, name, tuple(sorted(side, key=self._position.__getitem__)),
                              self.ranks, forward, backward))
        ticker.finish()
        return result

    def backward(self, cut: Cut) -> CutCapacity:
        """The narrowest cut from `cut.rest` to `cut.side`."""
        if cut.backward is not None:
            return cut.backward
        return self._split(frozenset(cut.side), outward=False)

    def _min_cuts(self, names: list[str], members: list[frozenset[int]]) -> list[tuple[str, str, frozenset[int]]]:
        """The narrowest cut between consecutive hosts (or, with fewer than two hosts, between
        the two halves of the ranks), named by its own two sides."""
        if len(members) >= 2:
            pairs = [(members[k], members[k + 1]) for k in range(len(members) - 1)]
        else:
            half = len(self.ranks) // 2
            pairs = [(frozenset(self.ranks[:half]), frozenset(self.ranks[half:]))]
        found = []
        first = None
        namer = SideNames(self.topology, list(zip(names, members)), self.ranks)
        for k, (ga, gb) in enumerate(pairs):
            if self.shift is not None and first is not None:  # host k, k+1: host 0, 1 shifted by k
                cut = _renamed(first, self.shift, k)
            else:
                self.solved += 1
                cut = first = self.network.min_cut(ga, gb)
            if cut.bandwidth is not None:  # else no finite cut separates them
                side = cut.side & self.all  # the cut's own sides, not the pair it separates
                found.append(("min-cut", f"min cut {namer.sides(side)}", side))
        return found

    def _split(self, side: frozenset[int], outward: bool) -> CutCapacity:
        """The narrowest cut from `side` to the other ranks (outward) or back. A cut known up
        to a shift of hosts (the same orbit, found on demand) is renamed, not solved again."""
        cache = self._outward if outward else self._inward
        shift = self.shift
        key, k = shift.orbit(side) if shift is not None else ((side, ()), 0)
        known = cache.get(key)
        if known is None:
            rest = self.all - side  # only on a miss: p-sized
            self.solved += 1
            found = self.network.min_cut(side, rest) if outward else self.network.min_cut(rest, side)
            cache[key] = (k, found)
            return found
        solved_at, found = known
        if shift is None or (k - solved_at) % shift.order == 0:
            return found
        return _renamed(found, shift, (k - solved_at) % shift.order)


def _renamed(capacity: CutCapacity, shift: HostShift, k: int) -> CutCapacity:
    """A cut shifted by k hosts: the same bandwidth, through the images of its resources."""
    return CutCapacity(shift.resource_image(k, capacity.resources), capacity.bandwidth,
                       capacity.value, shift.image(k, capacity.side))


def _host_groups(topology: Topology, ranks: tuple[int, ...]) -> list[tuple[int, str, list[int]]]:
    """(host index, name, ranks) per host holding ranks, in order of their first rank. Ranks
    outside every host belong to no group (the single-rank cuts cover them)."""
    groups: dict[int, list[int]] = {}
    for r in ranks:
        host = topology.devices[r].host
        if host is not None:
            groups.setdefault(host, []).append(r)
    return [(key, topology.host_names[key], members) for key, members in groups.items()]


def _span(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{names[0]} … {names[-1]}"


def _graph(topology: Topology, nominal: dict, ranks: frozenset[int]) -> nx.DiGraph:
    """The flow network of the machine (see the module docstring). Edges carry `resources`
    (the ids they stand for), `bandwidth` (symbolic; None: unlimited) and `capacity`."""
    closed = {d.id for d in topology.devices if not d.forwards and d.id not in ranks}
    hops = [(index, hop) for index, hop in enumerate(topology.hops)
            if hop.src not in closed and hop.dst not in closed]
    uses = Counter(r for _, hop in hops for r in set(hop.resources)
                   if topology.resources[r].effective_bandwidth is not None)
    bandwidths = {r: topology.resources[r].effective_bandwidth for r in uses}  # none is None
    rate_of: dict[sympy.Expr, Fraction] = {}  # thousands of resources share a few bandwidths
    for b in bandwidths.values():
        if b not in rate_of:
            rate_of[b] = _exact(b.xreplace(nominal))  # type: ignore[union-attr]
    scale = lcm(*[v.denominator for v in rate_of.values()]) if rate_of else 1
    units = {r: rate_of[b].numerator * (scale // rate_of[b].denominator)
             for r, b in bandwidths.items()}  # the capacity of each, an exact integer
    graph = nx.DiGraph(scale=scale)
    graph.add_nodes_from(d.id for d in topology.devices)

    def add(u, v, resources: tuple[int, ...]) -> None:
        if graph.has_edge(u, v):  # parallel links add up; an unlimited one makes all unlimited
            old = graph[u][v]["resources"]
            resources = () if not old or not resources else old + resources
            graph.remove_edge(u, v)
        if not resources:
            graph.add_edge(u, v, resources=resources, bandwidth=None)
            return
        bandwidth = bandwidths[resources[0]] if len(resources) == 1 else \
            sympy.Add(*[bandwidths[r] for r in resources])
        graph.add_edge(u, v, resources=resources, bandwidth=bandwidth,
                       capacity=sum(units[r] for r in resources))

    for shared in sorted(r for r, n in uses.items() if n > 1):
        add(("in", shared), ("out", shared), (shared,))
    for index, hop in hops:
        limited = [r for r in hop.resources if r in uses]
        node: int | tuple = hop.src  # a device, or a node standing for a resource or a hop
        if not limited:
            add(node, hop.dst, ())
            continue
        for k, r in enumerate(limited):  # in series: the hop crosses each of them
            if uses[r] > 1:
                add(node, ("in", r), ())
                node = ("out", r)
            else:
                after = hop.dst if k == len(limited) - 1 else ("hop", index, k)
                add(node, after, (r,))
                node = after
        if node != hop.dst:
            add(node, hop.dst, ())
    return graph


def _symmetric(graph: nx.DiGraph) -> bool:
    """Whether every edge has a reverse edge of the same bandwidth: then the narrowest cut
    from A to B is exactly as wide as the narrowest from B to A."""
    def key(data: dict) -> tuple:
        return data.get("capacity"), data["bandwidth"]  # SymPy's == is structural

    return all(graph.has_edge(v, u) and key(graph[v][u]) == key(data)
               for u, v, data in graph.edges(data=True))


def _exact(value: sympy.Expr) -> Fraction:
    return Fraction(int(value.p), int(value.q))

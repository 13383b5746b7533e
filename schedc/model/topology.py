"""The machine: devices, directed resources, and deterministic routing on a networkx graph.

Resources. Each direction of a full-duplex link is one resource; a half-duplex link is one
resource for both directions; a shared resource (a PCIe slot, a bus) is one more resource,
per direction unless half-duplex, loaded by every link declared `via` it. A link without a
bandwidth is never a bottleneck, so its resource carries no load.

Latency and windows (seed §5). A resource may have a `latency` (seconds) and a `window`
(bytes in flight). A route's latency is the sum over its hops of the latencies of the
resources each hop crosses. A window caps the rate by Little's law: at most `window` bytes
are in flight, each for `latency`, so the effective bandwidth is min(B, window/latency).

Routing. A transfer takes a route with the fewest links. GPUs are endpoints: a route never
passes through one unless it is declared `forwards`; switches and NICs forward. When several
routes are equally short, the route is built from the source onward, each step taking the
first-declared link that still lies on a shortest route. Routes are computed once per
(source, destination) pair and cached.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx
import numpy as np
import sympy

from ..errors import Span, TopologyError

FORWARDING_KINDS = ("switch", "nic")


@dataclass(frozen=True)
class Device:
    id: int
    name: str
    kind: str  # gpu | nic | switch
    host: int | None  # the host instance it belongs to, if any
    forwards: bool
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True)
class Resource:
    """Something with a bandwidth that traffic crosses in one direction (or both, if half)."""

    id: int
    name: str
    cls: str
    bandwidth: sympy.Expr | None  # bytes/s; None: never a bottleneck
    latency: sympy.Expr | None = None  # seconds, for the latency/window model
    window: sympy.Expr | None = None  # bytes in flight
    span: Span | None = field(default=None, compare=False, repr=False)

    @property
    def effective_bandwidth(self) -> sympy.Expr | None:
        """min(B, window/latency) (Little's law); None: never a bottleneck."""
        if self.window is None:
            return self.bandwidth
        limit = self.window / self.latency
        return limit if self.bandwidth is None else sympy.Min(self.bandwidth, limit)

    def window_limited(self, nominal: dict) -> bool:
        """Whether window/latency, not the bandwidth, sets the rate at the nominal point."""
        if self.window is None:
            return False
        if self.bandwidth is None:
            return True
        return bool((self.window / self.latency).xreplace(nominal) < self.bandwidth.xreplace(nominal))


@dataclass(frozen=True)
class Hop:
    """One direction of one link: the resources a transfer loads by crossing it."""

    src: int
    dst: int
    resources: tuple[int, ...]
    span: Span = field(compare=False, repr=False)  # the link's declaration


@dataclass(eq=False)
class Topology:
    devices: list[Device]
    resources: list[Resource]
    hops: list[Hop]
    host_names: list[str]
    graph: nx.MultiDiGraph = field(init=False, repr=False)
    _routes: dict[tuple[int, int], tuple[int, ...]] = field(default_factory=dict, repr=False)
    _distances: dict[int, dict[int, int]] = field(default_factory=dict, repr=False)
    _entries: dict[int, list[dict[int, int]]] = field(default_factory=dict, repr=False)
    _latencies: dict[tuple[int, int], sympy.Expr] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.graph = nx.MultiDiGraph()
        self.graph.add_nodes_from(d.id for d in self.devices)
        for index, hop in enumerate(self.hops):
            self.graph.add_edge(hop.src, hop.dst, key=index)
        self.forwarding = {d.id for d in self.devices if d.forwards}
        self._fabric = self.graph.subgraph(self.forwarding).reverse(copy=True)
        # A device outside every host counts as a host of its own for "cross-host".
        self.host_key = np.array([d.host if d.host is not None else -1 - d.id for d in self.devices],
                                 dtype=np.int64)
        self.has_latency = any(r.latency is not None for r in self.resources)

    # ---- routing

    def route(self, src: int, dst: int, span: Span) -> tuple[int, ...]:
        """The hops (indices into `hops`) of the route from src to dst."""
        key = (src, dst)
        cached = self._routes.get(key)
        if cached is None:
            cached = self._routes[key] = self._find_route(src, dst, span)
        return cached

    def _find_route(self, src: int, dst: int, span: Span) -> tuple[int, ...]:
        if src == dst:
            raise TopologyError(f"a transfer from {self.devices[src].name} to itself", span)
        remaining = self._remaining_to(dst)
        steps = [r for v in self.graph.successors(src) if (r := remaining(v)) is not None]
        if not steps:
            raise self._no_route(src, dst, span)
        left = min(steps) + 1
        node, route = src, []
        while node != dst:
            if left == 1 and dst in self.graph[node]:  # the last hop: the first edge to dst,
                route.append(next(iter(self.graph[node][dst])))  # as the scan below finds it
                break
            for _, v, index in self.graph.out_edges(node, keys=True):
                if remaining(v) == left - 1:
                    route.append(index)
                    node, left = v, left - 1
                    break
        return tuple(route)

    def _remaining_to(self, dst: int):
        """A function: hops from a device to dst, passing through forwarding devices only."""
        tables = self._entries.get(dst)
        if tables is None:
            entries = sorted({u for u in self.graph.predecessors(dst) if u in self.forwarding})
            tables = self._entries[dst] = [self._hops_to(e) for e in entries]

        def remaining(node: int) -> int | None:
            if node == dst:
                return 0
            if node not in self.forwarding:
                return None
            return min((t[node] + 1 for t in tables if node in t), default=None)

        return remaining

    def _hops_to(self, target: int) -> dict[int, int]:
        """Hops from every forwarding device to the forwarding device `target`, cached."""
        found = self._distances.get(target)
        if found is None:
            found = self._distances[target] = nx.single_source_shortest_path_length(self._fabric, target)
        return found

    def _no_route(self, src: int, dst: int, span: Span) -> TopologyError:
        a, b = self.devices[src], self.devices[dst]
        neighbours = sorted({self.devices[v].name for v in self.graph.successors(src)})
        notes = [f"{a.name} is linked to: {', '.join(neighbours) if neighbours else 'nothing'}"]
        if any(self.devices[v].kind == "gpu" and not self.devices[v].forwards
               for v in self.graph.successors(src)):
            notes.append("GPUs do not forward traffic unless declared with `forwards`")
        return TopologyError(f"no route from {a.name} to {b.name}", span, tuple(notes))

    def route_resources(self, src: int, dst: int, span: Span) -> tuple[int, ...]:
        """The resources with a bandwidth that a transfer from src to dst loads, in route order."""
        return tuple(r for hop in self.route(src, dst, span) for r in self.hops[hop].resources
                     if self.resources[r].effective_bandwidth is not None)

    def route_latency(self, src: int, dst: int, span: Span) -> sympy.Expr:
        """The latency of the route from src to dst: Σ over its hops of their resources'
        latencies (0 where none is declared)."""
        key = (src, dst)
        found = self._latencies.get(key)
        if found is None:
            found = self._latencies[key] = sympy.Add(*[
                self.resources[r].latency for hop in self.route(src, dst, span)
                for r in self.hops[hop].resources if self.resources[r].latency is not None])
        return found

    def describe_route(self, src: int, dst: int, span: Span) -> str:
        names = [self.devices[src].name] + [self.devices[self.hops[h].dst].name
                                            for h in self.route(src, dst, span)]
        return " -> ".join(names)

"""The machine: devices, directed resources, and deterministic routing on a networkx graph.

Resources. Each direction of a full-duplex link is one resource; a half-duplex link is one
resource for both directions; a shared resource (a PCIe slot, a bus) is one more resource,
per direction unless half-duplex, loaded by every link declared `via` it. A link without a
bandwidth is never a bottleneck, so its resource carries no load.

Latency and windows (seed §5). A resource may have a `latency` (seconds) and a `window`
(bytes in flight). A route's latency is the sum over its hops of the latencies of the
resources each hop crosses. A window caps the rate by Little's law: at most `window` bytes
are in flight, each for `latency`, so the effective bandwidth is min(B, window/latency).

Routing (`schedc.model.routing` has the rules): pinned routes first, then routes inside
the host for two devices of one host (over the best link classes first), then the fewest links, and among equally short routes
an even split hop by hop (ECMP), or under `routing first` the first-declared link at each
step. Routes are computed once per (source, destination) pair and cached.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property

import networkx as nx
import numpy as np
import sympy

from ..errors import Span, TopologyError
from .routing import DEFAULT_PREFERENCE, Route, class_tiers, pinned, shortest

FORWARDING_KINDS = ("switch", "nic")


@dataclass(frozen=True)
class Device:
    id: int
    name: str
    kind: str  # gpu | nic | switch
    host: int | None  # the host instance it belongs to, if any
    forwards: bool
    span: Span = field(compare=False, repr=False)
    reduces: bool = False  # a switch that sums what is reduced into it (NVLS, SHARP)
    sm: int | None = None  # a GPU's compute capability, if declared (NCCL's tuning reads it)


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


@dataclass(frozen=True)
class PinnedRoute:
    """A `route` statement's route: its devices, source and destination included, and the
    parallel hops joining each device to the next."""

    devices: tuple[int, ...]
    legs: tuple[tuple[int, ...], ...]
    span: Span = field(compare=False, repr=False)


Scope = tuple[int | None, int | None]
EVERYWHERE: Scope = (None, None)


@dataclass(eq=False)
class Topology:
    devices: list[Device]
    resources: list[Resource]
    hops: list[Hop]
    host_names: list[str]
    policy: str = "ecmp"  # ecmp | first (see schedc.model.routing)
    pinned: dict[tuple[int, int], PinnedRoute] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # what a what-if changed (schedc.model.changes), for errors
    preference: tuple[str, ...] = DEFAULT_PREFERENCE  # link classes inside a host, best first
    _routes: dict[tuple[int, int], Route] = field(default_factory=dict, repr=False)
    # A scope is (host, tier): the forwarding devices of one host (None: of the machine)
    # and the tier of link classes its routes may use (an index into `tiers`; None: all).
    _distances: dict[tuple[Scope, int], dict[int, int]] = field(default_factory=dict, repr=False)
    _remaining: dict[tuple[Scope, int], dict[int, int]] = field(default_factory=dict, repr=False)
    _layers: dict[tuple[Scope, int], dict[int, list[int]]] = field(default_factory=dict, repr=False)
    _fabrics: dict[Scope, nx.MultiDiGraph] = field(default_factory=dict, repr=False)
    _latencies: dict[tuple[int, int], sympy.Expr] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.forwarding = {d.id for d in self.devices if d.forwards}
        # Out-links per device, as networkx lists them: by neighbour in the order of its
        # first link, then in declaration order (the order `routing first` picks from).
        by_neighbour: list[dict[int, list[int]]] = [{} for _ in self.devices]
        for index, hop in enumerate(self.hops):
            by_neighbour[hop.src].setdefault(hop.dst, []).append(index)
        self._out = [[(index, v) for v, indices in n.items() for index in indices]
                     for n in by_neighbour]
        self._out_forwarding = [[(index, v) for index, v in out if v in self.forwarding]
                                for out in self._out]
        self._links = {(u, v): [(index, v) for index in indices]
                       for u, n in enumerate(by_neighbour) for v, indices in n.items()}
        self.hop_class = [self.resources[h.resources[0]].cls if h.resources else "link"
                          for h in self.hops]
        self.tiers = class_tiers(self.preference, set(self.hop_class))
        self._forwarding_of: dict[int | None, list[int]] = {}  # host -> its forwarding devices
        for d in sorted(self.forwarding):
            self._forwarding_of.setdefault(self.devices[d].host, []).append(d)
        # A device outside every host counts as a host of its own for "cross-host".
        self.host_key = np.array([d.host if d.host is not None else -1 - d.id for d in self.devices],
                                 dtype=np.int64)
        self.has_latency = any(r.latency is not None for r in self.resources)

    @cached_property
    def graph(self) -> nx.MultiDiGraph:
        """The devices and hops (keyed by index), made when routing first needs them (a
        refused verification of 2,048 hosts × 8 GPUs never routes: 65,552 edges, ~0.2 s)."""
        graph = nx.MultiDiGraph()
        graph.add_nodes_from(d.id for d in self.devices)
        for index, hop in enumerate(self.hops):
            graph.add_edge(hop.src, hop.dst, key=index)
        return graph

    # ---- routing

    def route(self, src: int, dst: int, span: Span | None) -> Route:
        """The route from src to dst: its hops and their shares of the bytes."""
        key = (src, dst)
        cached = self._routes.get(key)
        if cached is None:
            cached = self._routes[key] = self._find_route(src, dst, span)
        return cached

    def adopt_route(self, route: Route) -> None:
        """Take a route found on another machine as this one's (a what-if's unchanged
        route, its hops numbered as here: `schedc.model.changes.apply`)."""
        self._routes[(route.src, route.dst)] = route

    def _find_route(self, src: int, dst: int, span: Span | None) -> Route:
        if src == dst:
            raise TopologyError(f"a transfer from {self.devices[src].name} to itself", span)
        first = self.policy == "first"
        fixed = self.pinned.get((src, dst))
        if fixed is not None:
            return pinned(src, dst, fixed.legs, fixed.devices, first)
        host = self.devices[src].host
        if host is not None and host == self.devices[dst].host:
            for tier in range(len(self.tiers)):
                scope = (host, tier if self.tiers[tier] is not None else None)
                remaining = self._remaining_to(dst, scope)
                found = shortest(src, dst, self._next_hops(dst, scope, remaining), remaining,
                                 first)
                if found is not None:
                    return found
        remaining = self._remaining_to(dst, EVERYWHERE)
        found = shortest(src, dst, self._next_hops(dst, EVERYWHERE, remaining), remaining, first)
        if found is None:
            raise self._no_route(src, dst, span)
        return found

    def _next_hops(self, dst: int, scope: Scope, remaining: dict[int, int]):
        """A function: the out-links (hop, next device), in networkx's order, of a device
        `left` hops from dst that may lie on a shortest route: the links to dst for the last
        hop, to forwarding devices before it, to any device from the source. A switch with
        many links (a spine) looks only at the few devices `left - 1` hops from dst. Under
        a tier of link classes, only links of those classes."""
        allowed = self._allowed(scope)
        if allowed is None:
            return self._unfiltered_next_hops(dst, scope, remaining)
        unfiltered = self._unfiltered_next_hops(dst, scope, remaining)
        hop_class = self.hop_class

        def next_hops(node: int, left: int | None) -> list[tuple[int, int]]:
            return [hv for hv in unfiltered(node, left) if hop_class[hv[0]] in allowed]
        return next_hops

    def _allowed(self, scope: Scope) -> frozenset[str] | None:
        return None if scope[1] is None else self.tiers[scope[1]]

    def _unfiltered_next_hops(self, dst: int, scope: Scope, remaining: dict[int, int]):
        def next_hops(node: int, left: int | None) -> list[tuple[int, int]]:
            if left is None:
                return self._out[node]
            if left == 1:
                return self._links.get((node, dst), [])
            out = self._out_forwarding[node]
            if len(out) <= 4:
                return out
            layers = self._layers.get((scope, dst))
            if layers is None:
                layers = self._layers[(scope, dst)] = {}
                for v, hops in remaining.items():
                    layers.setdefault(hops, []).append(v)
            candidates = layers.get(left - 1, ())
            if len(candidates) >= len(out):
                return out
            found = [hv for v in candidates for hv in self._links.get((node, v), ())]
            # networkx's order: by neighbour in the order of its first link, then by link.
            return sorted(found, key=lambda hv: (self._links[(node, hv[1])][0][0], hv[0]))
        return next_hops

    def _remaining_to(self, dst: int, scope: Scope) -> dict[int, int]:
        """Hops to dst from dst and from every forwarding device (of the scope's host and
        over its link classes) that reaches it through forwarding devices only; cached."""
        found = self._remaining.get((scope, dst))
        if found is None:
            fabric = self._fabric(scope)
            allowed = self._allowed(scope)
            entries = {u for u in self.graph.predecessors(dst) if u in fabric
                       and (allowed is None or any(self.hop_class[h] in allowed
                                                   for h, _ in self._links[(u, dst)]))}
            found = {}
            for entry in sorted(entries):
                for node, hops in self._hops_to(entry, scope).items():
                    if hops + 1 < found.get(node, hops + 2):
                        found[node] = hops + 1
            found[dst] = 0
            self._remaining[(scope, dst)] = found
        return found

    def _fabric(self, scope: Scope) -> nx.MultiDiGraph:
        """The forwarding devices of the scope's host, links (of its classes) reversed."""
        found = self._fabrics.get(scope)
        if found is None and scope == EVERYWHERE:
            found = self._fabrics[scope] = self.graph.subgraph(self.forwarding).reverse(copy=True)
        elif found is None:
            host, _ = scope
            members = self._fabric(EVERYWHERE).subgraph(self._forwarding_of.get(host, []))
            allowed = self._allowed(scope)
            if allowed is None:
                found = members.copy()
            else:  # reversed: an edge v -> u keyed by the hop u -> v
                found = nx.MultiDiGraph()
                found.add_nodes_from(members)
                found.add_edges_from((v, u, h) for v, u, h in members.edges(keys=True)
                                     if self.hop_class[h] in allowed)
            self._fabrics[scope] = found
        return found

    def _hops_to(self, target: int, scope: Scope) -> dict[int, int]:
        """Hops from every forwarding device (of the scope) to the forwarding device
        `target`, cached."""
        found = self._distances.get((scope, target))
        if found is None:
            found = self._distances[(scope, target)] = nx.single_source_shortest_path_length(
                self._fabric(scope), target)
        return found

    def _no_route(self, src: int, dst: int, span: Span | None) -> TopologyError:
        a, b = self.devices[src], self.devices[dst]
        neighbours = sorted({self.devices[v].name for v in self.graph.successors(src)})
        notes = [f"{a.name} is linked to: {', '.join(neighbours) if neighbours else 'nothing'}"]
        if any(self.devices[v].kind == "gpu" and not self.devices[v].forwards
               for v in self.graph.successors(src)):
            notes.append("GPUs do not forward traffic unless declared with `forwards`")
        notes.extend(self.notes)
        return TopologyError(f"no route from {a.name} to {b.name}", span, tuple(notes))

    def route_resources(self, src: int, dst: int, span: Span | None) -> tuple[tuple[int, Fraction], ...]:
        """The resources with a bandwidth that a transfer from src to dst loads, each with the
        share of the transfer's bytes it carries (a resource crossed twice counts twice), in
        the order the route first reaches them."""
        shares: dict[int, Fraction] = {}
        for hop, share in self.route(src, dst, span).shares:
            for r in self.hops[hop].resources:
                if self.resources[r].effective_bandwidth is not None:
                    shares[r] = shares[r] + share if r in shares else share
        return tuple(shares.items())

    def route_depends_on(self, src: int, dst: int) -> set[int]:
        """The hops whose removal may change the route from src to dst (routed already);
        removing any other hop leaves it as it is, hop for hop, with the same shares.

        Why: removing hops only lengthens distances. Under ECMP the route holds every hop
        of every shortest route in its scope, so removing a hop outside it keeps each of
        its devices' distance to dst (a shortest route from there lies inside it) and adds
        no candidate; the tiers before its own had no route and still have none. Under
        `routing first` the route is one path, and each step takes the first candidate in
        its device's order of out-links, which removing another out-link of that device
        may reorder (by neighbour: the neighbour of a removed first link moves): so every
        out-link of a device the path passes counts. A pinned route is its legs' hops."""
        route = self.route(src, dst, None)
        found: set[int] = set()
        for node, hops in route.steps:
            found.update(hops)
            if self.policy == "first":
                found.update(h for h, _ in self._out[node])
        return found

    def route_latency(self, src: int, dst: int, span: Span | None) -> sympy.Expr:
        """The latency of the route from src to dst: Σ over its hops of their resources'
        latencies (0 where none is declared); over several paths, the largest, since the
        transfer ends when its slowest share arrives."""
        key = (src, dst)
        found = self._latencies.get(key)
        if found is None:
            route = self.route(src, dst, span)
            after: dict[int, sympy.Expr] = {dst: sympy.Integer(0)}
            for node, hops in reversed(route.steps):
                after[node] = sympy.Max(*[self._hop_latency(h) + after[self.hops[h].dst]
                                          for h in hops])
            found = self._latencies[key] = after[src]
        return found

    def _hop_latency(self, hop: int) -> sympy.Expr:
        return sympy.Add(*[self.resources[r].latency for r in self.hops[hop].resources
                           if self.resources[r].latency is not None])

    def route_paths(self, src: int, dst: int, span: Span | None):
        """The route's paths, each as device names from src to dst, with its share."""
        route = self.route(src, dst, span)
        for hops, share in route.paths(self._hop_dst):
            yield [self.devices[src].name] + [self.devices[self.hops[h].dst].name for h in hops], share

    def _hop_dst(self, hop: int) -> int:
        return self.hops[hop].dst

    def path_count(self, src: int, dst: int, span: Span | None) -> int:
        return self.route(src, dst, span).path_count(self._hop_dst)

    def describe_route(self, src: int, dst: int, span: Span | None) -> str:
        """`a -> s -> b` for one path; `a -> s1 -> b (1/2); a -> s2 -> b (1/2)` for several."""
        paths = list(self.route_paths(src, dst, span))
        if len(paths) == 1:
            return " -> ".join(paths[0][0])
        return "; ".join(f"{' -> '.join(names)} ({share})" for names, share in paths)

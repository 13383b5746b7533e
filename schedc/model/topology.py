"""The machine: devices, directed resources, and deterministic routing on its own arrays.

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

import weakref
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from ..errors import Span, TopologyError
from .route_cache import CACHES, EVERYWHERE, RouteCache, Scope, derive_routing
from .routing import DEFAULT_PREFERENCE, Route, pinned, shortest

from .scalars import Scalar, largest, quotient, smallest, substitute, to_sympy, total

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
    bandwidth: Scalar | None  # bytes/s; None: never a bottleneck
    latency: Scalar | None = None  # seconds, for the latency/window model
    window: Scalar | None = None  # bytes in flight
    span: Span | None = field(default=None, compare=False, repr=False)

    @property
    def effective_bandwidth(self) -> Scalar | None:
        """min(B, window/latency) (Little's law); None: never a bottleneck."""
        if self.window is None:
            return self.bandwidth
        limit = quotient(self.window, self.latency)
        if self.bandwidth is None:
            return limit
        return smallest(self.bandwidth, limit)

    def window_limited(self, nominal: dict) -> bool:
        """Whether window/latency, not the bandwidth, sets the rate at the nominal point."""
        if self.window is None:
            return False
        if self.bandwidth is None:
            return True
        return bool(substitute(quotient(self.window, self.latency), nominal)
                    < substitute(self.bandwidth, nominal))


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


@dataclass(frozen=True, eq=False)
class Topology:
    """The machine, frozen: what routing derives from it is computed once in
    `__post_init__` (the out-links, the tiers, the host of each device), and what it finds
    on demand (routes, distances, latencies) lives outside the record, in `CACHES`."""

    devices: list[Device]
    resources: list[Resource]
    hops: list[Hop]
    host_names: list[str]
    policy: str = "ecmp"  # ecmp | first (see schedc.model.routing)
    pinned: dict[tuple[int, int], PinnedRoute] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # what a what-if changed (schedc.model.changes), for errors
    preference: tuple[str, ...] = DEFAULT_PREFERENCE  # link classes inside a host, best first
    # Bandwidths and latencies are SymPy expressions (else exact numbers: `model.scalars`)
    symbolic: bool = True

    # Derived once by `route_cache.derive_routing` (not arguments; `dataclasses.replace` derives them anew).
    forwarding: frozenset[int] = field(init=False, repr=False, compare=False)
    _out: list[list[tuple[int, int]]] = field(init=False, repr=False, compare=False)
    _in: list[list[int]] = field(init=False, repr=False, compare=False)
    _out_forwarding: list[list[tuple[int, int]]] = field(init=False, repr=False, compare=False)
    _links: dict[tuple[int, int], list[tuple[int, int]]] = field(init=False, repr=False,
                                                                 compare=False)
    hop_class: list[str] = field(init=False, repr=False, compare=False)
    tiers: list = field(init=False, repr=False, compare=False)
    _forwarding_of: dict[int | None, list[int]] = field(init=False, repr=False, compare=False)
    host_key: np.ndarray = field(init=False, repr=False, compare=False)
    has_latency: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name, value in derive_routing(self).items():
            object.__setattr__(self, name, value)

    @property
    def _cache(self) -> RouteCache:
        found = CACHES.get(id(self))
        if found is None:
            found = CACHES[id(self)] = RouteCache()
            weakref.finalize(self, CACHES.pop, id(self), None)
        return found

    # ---- routing

    def route(self, src: int, dst: int, span: Span | None) -> Route:
        """The route from src to dst: its hops and their shares of the bytes."""
        routes = self._cache.routes
        key = (src, dst)
        cached = routes.get(key)
        if cached is None:
            cached = routes[key] = self._find_route(src, dst, span)
        return cached

    def adopt_route(self, route: Route) -> None:
        """Take a route found on another machine as this one's (a what-if's unchanged
        route, its hops numbered as here: `schedc.model.changes.apply`)."""
        self._cache.routes[(route.src, route.dst)] = route

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
            layers = self._cache.layers.get((scope, dst))
            if layers is None:
                layers = self._cache.layers[(scope, dst)] = {}
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
        found = self._cache.remaining.get((scope, dst))
        if found is None:
            fabric = self._fabric(scope)
            allowed = self._allowed(scope)
            entries = {u for u in self._in[dst] if u in fabric
                       and (allowed is None or any(self.hop_class[h] in allowed
                                                   for h, _ in self._links[(u, dst)]))}
            found = {}
            for entry in sorted(entries):
                for node, hops in self._hops_to(entry, scope).items():
                    if hops + 1 < found.get(node, hops + 2):
                        found[node] = hops + 1
            found[dst] = 0
            self._cache.remaining[(scope, dst)] = found
        return found

    def _fabric(self, scope: Scope) -> dict[int, list[tuple[int, int]]]:
        """The forwarding devices of the scope's host, each with the (device, hop) pairs
        that reach it over one link (of the scope's classes) from that host's forwarding
        devices: the fabric reversed, for distances *to* a device."""
        fabrics = self._cache.fabrics
        found = fabrics.get(scope)
        if found is None and scope == EVERYWHERE:
            found = {v: [] for v in sorted(self.forwarding)}
            for index, hop in enumerate(self.hops):
                if hop.src in found and hop.dst in found:
                    found[hop.dst].append((hop.src, index))
        elif found is None:
            everywhere = self._fabric(EVERYWHERE)
            members = self._forwarding_of.get(scope[0], [])
            inside, allowed = set(members), self._allowed(scope)
            found = {v: [(u, h) for u, h in everywhere[v] if u in inside
                         and (allowed is None or self.hop_class[h] in allowed)]
                     for v in members}
        fabrics[scope] = found
        return found

    def _hops_to(self, target: int, scope: Scope) -> dict[int, int]:
        """Hops from every forwarding device (of the scope) to the forwarding device
        `target` (a breadth-first search over the reversed fabric), cached."""
        distances = self._cache.distances
        found = distances.get((scope, target))
        if found is None:
            fabric = self._fabric(scope)
            found = {target: 0}
            level = [target]
            while level:
                following = []
                for node in level:
                    for before, _ in fabric[node]:
                        if before not in found:
                            found[before] = found[node] + 1
                            following.append(before)
                level = following
            distances[(scope, target)] = found
        return found

    def _no_route(self, src: int, dst: int, span: Span | None) -> TopologyError:
        a, b = self.devices[src], self.devices[dst]
        successors = [v for _, v in self._out[src]]
        neighbours = sorted({self.devices[v].name for v in successors})
        notes = [f"{a.name} is linked to: {', '.join(neighbours) if neighbours else 'nothing'}"]
        if any(self.devices[v].kind == "gpu" and not self.devices[v].forwards
               for v in successors):
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

    def route_latency(self, src: int, dst: int, span: Span | None) -> Scalar:
        """The latency of the route from src to dst: Σ over its hops of their resources'
        latencies (0 where none is declared); over several paths, the largest, since the
        transfer ends when its slowest share arrives."""
        key = (src, dst)
        latencies = self._cache.latencies
        found = latencies.get(key)
        if found is None:
            route = self.route(src, dst, span)
            after: dict[int, Scalar] = {dst: self.zero}
            for node, hops in reversed(route.steps):
                after[node] = largest(*[self._hop_latency(h) + after[self.hops[h].dst]
                                        for h in hops])
            found = latencies[key] = after[src]
        return found

    @property
    def zero(self) -> Scalar:
        """0 s or 0 B, as the machine's figures are: SymPy's 0, or the number."""
        return to_sympy(0) if self.symbolic else 0

    def _hop_latency(self, hop: int) -> Scalar:
        return total([self.resources[r].latency for r in self.hops[hop].resources
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

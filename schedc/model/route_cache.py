"""What routing reads of a machine, derived once when the `Topology` is made
(`derive_routing`: out-links, tiers of link classes, each device's host), and what it finds
on demand, kept outside the frozen record (`RouteCache`, in `CACHES` by the machine's id)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .routing import Route, class_tiers
from .scalars import Scalar

if TYPE_CHECKING:
    from .topology import Topology

Scope = tuple[int | None, int | None]
EVERYWHERE: Scope = (None, None)


class RouteCache:
    """What routing finds on one machine, filled on demand: the routes by (src, dst), hops
    to each forwarding device and the layers of devices by hops, by scope; the reversed
    fabric of each scope; the latency of each route. Kept outside the frozen `Topology`
    (in `CACHES`, by identity), so the record itself never changes."""

    def __init__(self) -> None:
        self.routes: dict[tuple[int, int], Route] = {}
        # A scope is (host, tier): the forwarding devices of one host (None: of the machine)
        # and the tier of link classes its routes may use (an index into `tiers`; None: all).
        self.distances: dict[tuple[Scope, int], dict[int, int]] = {}
        self.remaining: dict[tuple[Scope, int], dict[int, int]] = {}
        self.layers: dict[tuple[Scope, int], dict[int, list[int]]] = {}
        self.fabrics: dict[Scope, dict[int, list[tuple[int, int]]]] = {}
        self.latencies: dict[tuple[int, int], Scalar] = {}


# Each machine's RouteCache by the machine's id, dropped when the machine is collected (a plain
# dict: routing asks for it per step, and a WeakKeyDictionary's lookups, 13,704 for hierarchical
# 128 × 8, took 0.26 s of a 7.9 s profile under load).
CACHES: dict[int, RouteCache] = {}


def derive_routing(topology: Topology) -> dict[str, object]:
    """What routing reads of a machine, computed once when it is made."""
    devices, hops = topology.devices, topology.hops
    forwarding = frozenset(d.id for d in devices if d.forwards)
    # Out-links per device, by neighbour in the order of its first link, then in
    # declaration order (the order `routing first` picks from).
    by_neighbour: list[dict[int, list[int]]] = [{} for _ in devices]
    into: list[list[int]] = [[] for _ in devices]
    for index, hop in enumerate(hops):
        by_neighbour[hop.src].setdefault(hop.dst, []).append(index)
        if not into[hop.dst] or into[hop.dst][-1] != hop.src:
            into[hop.dst].append(hop.src)
    out = [[(index, v) for v, indices in n.items() for index in indices] for n in by_neighbour]
    hop_class = [topology.resources[h.resources[0]].cls if h.resources else "link" for h in hops]
    forwarding_of: dict[int | None, list[int]] = {}  # host -> its forwarding devices
    for d in sorted(forwarding):
        forwarding_of.setdefault(devices[d].host, []).append(d)
    return {
        "forwarding": forwarding, "_out": out, "_in": into,
        "_out_forwarding": [[(index, v) for index, v in o if v in forwarding] for o in out],
        "_links": {(u, v): [(index, v) for index in indices]
                   for u, n in enumerate(by_neighbour) for v, indices in n.items()},
        "hop_class": hop_class,
        "tiers": class_tiers(topology.preference, set(hop_class)),
        "_forwarding_of": forwarding_of,
        # A device outside every host counts as a host of its own for "cross-host".
        "host_key": np.array([d.host if d.host is not None else -1 - d.id for d in devices],
                             dtype=np.int64),
        "has_latency": any(r.latency is not None for r in topology.resources)}

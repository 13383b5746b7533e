"""(H3) of `proof`: is a compiled instance a port machine, and by which rule do transfers
load its ports? Read on one instance; `proof` compares the rules of two.

A rank's *domain* is the rank and the forwarding devices private to it: a connected set of
forwarding devices of one copy that is linked to exactly one rank of that copy (a NIC
hanging off one GPU, a PCIe switch in front of it and its NIC) belongs to that rank. A
resource with a bandwidth is a *port* of a rank when its link has an end in that rank's
domain and the other end in the same domain or in no rank's (a switch shared by a host's
GPUs, a rail switch): an out-port when the routes that load it leave the rank, an in-port
when they enter it. The machine is a port machine when every resource with a bandwidth is
one direction of one link without latency or window and is a port, each rank has at most
one port per class and side, each class one bandwidth, and the route between any two ranks
loads, with all its bytes, the source's out-ports and the destination's in-ports of one set
of classes, the same set for all pairs inside one copy and for all pairs across two.

A route through devices with no bandwidth (a PCIe switch without a figure) loads nothing
there, so it is a port route too. A device shared by several ranks that carries a
bandwidth (one NIC for two GPUs) is no port of either: such a machine stays `checked`, with
a note naming the link.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction

import sympy

from ...errors import Span
from ...session import Session
from .portloads import FabricLink, PortRule, Unproved


def _where(span: Span | None) -> str:
    return f"{span.source.path}:{span.line}: " if span is not None else ""


def copy_of(name: str, copies: str) -> int | None:
    found = re.match(rf"{re.escape(copies)}\[(\d+)\]", name)
    return int(found.group(1)) if found else None


def domains(topo, copy: list[int | None], ranks: set[int]) -> dict[int, frozenset[int]]:
    """Device -> the ranks whose domain it is in: a rank is its own; a connected set of
    forwarding devices of one copy belongs to the ranks of the copy it touches (one rank:
    its private devices; several: a device they share, a *group*)."""
    neighbours: dict[int, set[int]] = {}
    for hop in topo.hops:
        neighbours.setdefault(hop.src, set()).add(hop.dst)
        neighbours.setdefault(hop.dst, set()).add(hop.src)
    owner = {r: frozenset({r}) for r in ranks}
    for device in topo.devices:
        d = device.id
        if d in owner or copy[d] is None or not device.forwards:
            continue
        component, todo, touched = {d}, [d], set()
        while todo:
            for m in neighbours.get(todo.pop(), ()):
                if copy[m] != copy[d]:
                    continue
                if m in ranks:
                    touched.add(m)
                elif topo.devices[m].forwards and m not in component:
                    component.add(m)
                    todo.append(m)
        owner.update({m: frozenset(touched) for m in component})
    return owner


def _ports(topo, owner: dict[int, frozenset[int]], copy: list[int | None]
           ) -> tuple[dict[int, tuple[frozenset[int], str]], dict[str, sympy.Expr], set[int]]:
    """Resource -> (the ranks it is a port of, its class); class -> bandwidth; the fabric's
    resources (a link between two devices outside every copy). A link between a rank's
    domain and a group's holding the rank (a GPU's link to its host's NVSwitch) is the
    rank's port."""
    carriers: dict[int, list] = {}
    for hop in topo.hops:
        for r in hop.resources:
            carriers.setdefault(r, []).append(hop)
    port: dict[int, tuple[frozenset[int], str]] = {}
    bandwidth: dict[str, sympy.Expr] = {}
    fabric: set[int] = set()
    for resource in topo.resources:
        if resource.effective_bandwidth is None:
            continue
        hops = carriers.get(resource.id, [])
        if len(hops) == 1 and resource.latency is None and resource.window is None \
                and copy[hops[0].src] is None and copy[hops[0].dst] is None:
            fabric.add(resource.id)
            continue
        ends = sorted({owner[d] for h in hops for d in (h.src, h.dst) if d in owner}, key=len)
        if len(hops) != 1 or not ends or not ends[0] or (len(ends) == 2 and not
                                                         ends[0] < ends[1]) \
                or resource.latency is not None or resource.window is not None:
            raise Unproved(f"{_where(resource.span)}a resource with a bandwidth that is not "
                           "one port of one device (one direction of one link, no latency, "
                           "an end that belongs to one rank or one group of ranks)")
        if bandwidth.setdefault(resource.cls, resource.bandwidth) != resource.bandwidth:
            raise Unproved(f"{_where(resource.span)}one class with two bandwidths")
        port[resource.id] = (ends[0], resource.cls)
    return port, bandwidth, fabric


def _group_size(port, coordinates, ranks, classes) -> dict[str, int]:
    """Class -> the size g of the groups whose ports it is: each group the g consecutive
    local positions g·q .. g·q + g - 1 of one copy (so its index is local // g)."""
    position = dict(zip(ranks, coordinates))
    sizes: dict[str, int] = {}
    for group, cls in port.values():
        if cls not in classes:
            continue
        local = sorted(position[r][1:] for r in group)
        g = len(local)
        if g > 1 and (any(len(c) != 1 for c in local) or len({position[r][0] for r in group}) != 1
                      or local[0][0] % g or [c[0] for c in local] != list(
                          range(local[0][0], local[0][0] + g))):
            raise Unproved("a device shared by ranks that are not consecutive local positions "
                           "of one copy, in blocks of one size")
        if sizes.setdefault(cls, g) != g:
            raise Unproved(f"the ports of class {cls} are shared by groups of several sizes")
    return sizes


def _placed(at: Session, name: str, copies: str, path: tuple[str, ...],
            coordinates: list[tuple[int, ...]]) -> list[int | None]:
    """Each device's copy, once every rank is the device its coordinates name (and forwards
    nothing) and no link joins two copies or a shared device of a copy to the rest."""
    topo = at.program.topology
    ranks = at.program.result(name).collective.ranks
    copy = [copy_of(d.name, copies) for d in topo.devices]
    if path[0] != copies or len(path) > 2:
        raise Unproved(f"the ranks are not the devices of the copies of {copies}")
    if len(coordinates) != len(ranks):
        raise Unproved("the ranks are not where their coordinates say")
    for r, coords in zip(ranks, coordinates):
        named = ".".join(f"{part}[{c}]" for part, c in zip(path, coords))
        if topo.devices[r].name != named or topo.devices[r].forwards:
            raise Unproved(f"rank {topo.devices[r].name} is not where its coordinates say, "
                           "or forwards traffic")
    return copy


@dataclass
class _Reading:
    """What the routes read so far agree on; each next route must agree with it."""

    side: dict[int, str] = field(default_factory=dict)  # port -> out | in
    bundle: dict[str, Fraction] = field(default_factory=dict)  # class -> each port's share
    seen: dict[tuple, frozenset[int]] = field(default_factory=dict)  # (group, side, class)
    cls: dict[bool, frozenset[tuple[str, str]]] = field(default_factory=dict)  # same copy?
    crossed: dict[tuple, frozenset] = field(default_factory=dict)  # local pair -> fabric


def _read_route(reading: _Reading, topo, a: int, b: int, port, fabric, copy, local) -> None:
    """The route from rank a to rank b, read into `reading`, or Unproved."""
    shown = f"the route from {topo.devices[a].name} to {topo.devices[b].name}"
    loaded = dict(topo.route_resources(a, b, None))
    # Equal-cost routes over several fabric links (two spines) share the bytes.
    through = frozenset((r, loaded[r]) for r in loaded if r in fabric)
    key = (local[a], local[b])
    if (through and copy[a] == copy[b]) or (
            copy[a] != copy[b] and reading.crossed.setdefault(key, through) != through):
        raise Unproved(f"{shown} crosses fabric links other than the pairs of its local "
                       "positions in other copies")
    # Per end and class one port with all the bytes, or a bundle of k ports that every
    # route of that end loads equally, 1/k each (a GPU's four NICs).
    ends: dict[tuple, dict[int, Fraction]] = {}
    for resource, share in loaded.items():
        if resource not in fabric:
            group, kind = port[resource]
            where = "out" if a in group and b not in group else \
                "in" if b in group and a not in group else None
            if where is None or reading.side.setdefault(resource, where) != where:
                where = None
            ends.setdefault((group, where, kind), {})[resource] = share
    found = set()
    for (group, where, kind), loads in ends.items():
        share = next(iter(loads.values()))
        if where is None or any(s != share for s in loads.values()) \
                or share * len(loads) != 1 or reading.bundle.setdefault(kind, share) != share \
                or reading.seen.setdefault((group, where, kind), frozenset(loads)) != set(loads):
            raise Unproved(f"{shown} does not load one port (or one bundle of ports, equally) "
                           "of each end per class, with all its bytes")
        found.add((where, kind))
    if reading.cls.setdefault(copy[a] == copy[b], frozenset(found)) != found:
        raise Unproved(f"{shown} loads other ports than the other pairs like it")


def port_rule(at: Session, name: str, copies: str, path: tuple[str, ...],
              coordinates: list[tuple[int, ...]], scaling: tuple | None = None) -> PortRule:
    """(H3) on one compiled instance, whose ranks' coordinates the symbolic order says are
    `coordinates`: the rule, or Unproved naming what fails. `scaling` = (statements, n0,
    n): the fabric links of those statements (`uniform.Uniform.scaled`) have a bandwidth
    n^k times one free of n, read here at n = n0 and given as a function of n."""
    topo = at.program.topology
    ranks = at.program.result(name).collective.ranks
    copy = _placed(at, name, copies, path, coordinates)
    owner = domains(topo, copy, set(ranks))
    for hop in topo.hops:
        if copy[hop.src] != copy[hop.dst]:
            inside = [d for d in (hop.src, hop.dst) if copy[d] is not None]
            if len(inside) == 2 or any(not owner.get(d) for d in inside):
                raise Unproved(f"{_where(hop.span)}a link between copies, or from a copy's "
                               "device that several ranks share to the rest")
    port, bandwidth, fabric = _ports(topo, owner, copy)
    local = {r: coords[1:] for r, coords in zip(ranks, coordinates)}
    reading = _Reading()
    for a in ranks:
        for b in ranks:
            if a != b:
                _read_route(reading, topo, a, b, port, fabric, copy, local)
    cls = reading.cls
    if False not in cls:
        raise Unproved("no two ranks of different copies to read the rule from")
    for kinds in cls.values():
        if {k for s, k in kinds if s == "out"} != {k for s, k in kinds if s == "in"} or not kinds:
            raise Unproved("a route loads other port classes at its source than at its "
                           "destination")
    classes = {same: tuple(sorted(k for s, k in kinds if s == "out"))
               for same, kinds in cls.items()}
    links = _fabric_links(topo, reading.crossed, scaling)
    used = {k for kinds in cls.values() for _, k in kinds}
    groups = {k: g for k, g in _group_size(port, coordinates, ranks, used).items() if g > 1}
    if groups and len(path) != 2:
        raise Unproved("a device shared by ranks that are copies of their own")
    shares = {k: sympy.Rational(v) for k, v in reading.bundle.items() if v != 1}
    return PortRule(0 if len(path) == 2 else None, classes.get(True), classes[False], bandwidth,
                    links, groups, shares)


def _fabric_links(topo, crossed: dict[tuple, frozenset],
                  scaling: tuple | None) -> tuple[FabricLink, ...]:
    """The fabric links some pair crosses, each with the pairs, the share of a transfer's
    bytes it carries (one share for all its pairs), and its bandwidth as a function of n."""
    scaled, n0, n = scaling if scaling is not None else ({}, 1, None)
    per_link: dict[int, dict[tuple, object]] = {}
    for key, through in crossed.items():
        for r, share in through:
            per_link.setdefault(r, {})[key] = share
    out = []
    for r in sorted(per_link, key=lambda r: topo.resources[r].name):
        resource, shares = topo.resources[r], per_link[r]
        if len(set(shares.values())) != 1:
            raise Unproved(f"{_where(resource.span)}a fabric link carrying different shares of "
                           "the bytes of different pairs")
        bandwidth = resource.effective_bandwidth
        k = scaled.get(str(resource.span), 0)
        if k:  # read at n0: B(n) = B(n0) * (n / n0)^k
            bandwidth = bandwidth * (n / sympy.Integer(n0)) ** k
        out.append(FabricLink(resource.name, bandwidth, frozenset(shares),
                              sympy.Rational(next(iter(shares.values())))))
    return tuple(out)

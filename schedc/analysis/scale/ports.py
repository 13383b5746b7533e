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


def port_rule(at: Session, name: str, copies: str, path: tuple[str, ...],
              coordinates: list[tuple[int, ...]]) -> PortRule:
    """(H3) on one compiled instance, whose ranks' coordinates the symbolic order says are
    `coordinates`: the rule, or Unproved naming what fails."""
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
    owner = domains(topo, copy, set(ranks))
    for hop in topo.hops:
        if copy[hop.src] != copy[hop.dst]:
            inside = [d for d in (hop.src, hop.dst) if copy[d] is not None]
            if len(inside) == 2 or any(not owner.get(d) for d in inside):
                raise Unproved(f"{_where(hop.span)}a link between copies, or from a copy's "
                               "device that several ranks share to the rest")
    port, bandwidth, fabric = _ports(topo, owner, copy)
    local = {r: coords[1:] for r, coords in zip(ranks, coordinates)}
    cls, crossed = _read_routes(topo, ranks, local, copy, port, fabric)
    if False not in cls:
        raise Unproved("no two ranks of different copies to read the rule from")
    for kinds in cls.values():
        if {k for s, k in kinds if s == "out"} != {k for s, k in kinds if s == "in"} or not kinds:
            raise Unproved("a route loads other port classes at its source than at its "
                           "destination")
    classes = {same: tuple(sorted(k for s, k in kinds if s == "out"))
               for same, kinds in cls.items()}
    links = tuple(FabricLink(topo.resources[r].name, topo.resources[r].effective_bandwidth,
                             frozenset(k for k, through in crossed.items() if r in through))
                  for r in sorted(fabric, key=lambda r: topo.resources[r].name)
                  if any(r in through for through in crossed.values()))
    used = {k for kinds in cls.values() for _, k in kinds}
    groups = {k: g for k, g in _group_size(port, coordinates, ranks, used).items() if g > 1}
    if groups and len(path) != 2:
        raise Unproved("a device shared by ranks that are copies of their own")
    return PortRule(0 if len(path) == 2 else None, classes.get(True), classes[False], bandwidth,
                    links, groups)


def _read_routes(topo, ranks, local: dict, copy: list, port: dict, fabric: set):
    """Every pair's route: the ports it loads (out of its source, into its destination, one
    per class, with all its bytes), alike for every pair inside a copy and for every pair
    across two, and across copies the fabric links of their local positions. (The port
    classes inside a copy (True) and across (False); the fabric links of each pair of local
    positions.)"""
    side: dict[int, str] = {}
    seen: dict[tuple[frozenset[int], str, str], int] = {}
    cls: dict[bool, frozenset[tuple[str, str]]] = {}
    crossed: dict[tuple, frozenset[int]] = {}  # local positions -> fabric resources
    for a in ranks:
        for b in ranks:
            if a == b:
                continue
            loaded = dict(topo.route_resources(a, b, None))
            through = frozenset(r for r in loaded if r in fabric)
            key = (local[a], local[b])
            if any(loaded[r] != 1 for r in through) or (through and copy[a] == copy[b]) or (
                    copy[a] != copy[b] and crossed.setdefault(key, through) != through):
                raise Unproved(f"the route from {topo.devices[a].name} to "
                               f"{topo.devices[b].name} crosses fabric links other than the "
                               "pairs of its local positions in other copies, or shares its "
                               "bytes among several")
            found = set()
            for resource, share in {r: s for r, s in loaded.items() if r not in fabric}.items():
                group, kind = port[resource]
                where = "out" if a in group and b not in group else \
                    "in" if b in group and a not in group else None
                if share != 1 or where is None or side.setdefault(resource, where) != where \
                        or seen.setdefault((group, where, kind), resource) != resource:
                    raise Unproved(f"the route from {topo.devices[a].name} to "
                                   f"{topo.devices[b].name} does not load exactly one port of "
                                   "each end per class, with all its bytes")
                found.add((where, kind))
            if cls.setdefault(copy[a] == copy[b], frozenset(found)) != found:
                raise Unproved(f"the route from {topo.devices[a].name} to "
                               f"{topo.devices[b].name} loads other ports than the other "
                               "pairs like it")
    return cls, crossed

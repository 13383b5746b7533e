"""What-if changes to a machine: failed devices, links and shared resources; derated links.

A change is one clean step over the topology, before anything is routed: `apply` returns a
new `Topology` with the failed items' hops removed and the derated resources' bandwidths
multiplied, so every route is recomputed by the machine's own rules (whatever they are) on
what is left. Devices keep their ids, so a schedule elaborated on the machine runs unchanged
on the changed one; a transfer left without a route is the usual positioned error naming
both ends, with a note saying what failed.

Items are named as the machine names them:

- a device: `node[0].g[3]`, `spine[1]` (every link touching it fails);
- a link: `A<->B` (both directions: every link joining A and B) or `A->B` (one direction);
- a shared resource: `node[0].slot` (every link declared `via` it fails; a derating
  scales the resource itself).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, fields, replace
from fractions import Fraction

from ..errors import SourceFile, Span, UsageError, did_you_mean
from .scalars import Scalar, to_sympy
from .topology import Hop, PinnedRoute, Topology


@dataclass(frozen=True)
class Item:
    """One failable item: what it is called, the hops that fail with it, and the resources
    (with a bandwidth or not) that a derating scales."""

    name: str
    kind: str  # device | link | shared
    hops: frozenset[int]
    resources: tuple[int, ...]
    cls: str = ""  # a link's class, a device's kind
    span: Span | None = field(default=None, compare=False)  # the command-line text naming it


@dataclass(frozen=True)
class Changes:
    """`--fail ITEM` (repeatable) and `--derate ITEM=FACTOR`, as given."""

    fail: tuple[str, ...] = ()
    derate: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.fail or self.derate)


NO_CHANGES = Changes()


def _argument(option: str, text: str) -> tuple[SourceFile, Span]:
    source = SourceFile(option, text)
    return source, Span(source, 1, 1, 1, max(2, len(text) + 1))


def resolve(topology: Topology, text: str, option: str = "--fail") -> Item:
    """The item a command-line name denotes, or a positioned usage error."""
    _, span = _argument(option, text)
    name = text.strip()
    names = {d.name: d.id for d in topology.devices}
    for arrow in ("<->", "->"):
        if arrow in name:
            a_name, _, b_name = (part.strip() for part in name.partition(arrow))
            a, b = (_device(names, n, span) for n in (a_name, b_name))
            ends = {(a, b), (b, a)} if arrow == "<->" else {(a, b)}
            hops = frozenset(i for i, h in enumerate(topology.hops) if (h.src, h.dst) in ends)
            if not hops:
                raise UsageError(f"no link joins {a_name} and {b_name}"
                                 + ("" if arrow == "<->" else " in that direction"), span,
                                 (f"{a_name} is linked to: {_neighbours(topology, a)}",))
            return link_item(topology, hops, span)
    if name in names:
        return device_item(topology, names[name], span)
    shared = shared_items(topology)
    if name in shared:
        return replace(shared[name], span=span)
    raise UsageError(f"no device, link or shared resource named '{name}' in the machine"
                     + did_you_mean(name, [*names, *shared]), span,
                     ("a link is named A<->B (both directions) or A->B (one)",))


def _device(names: dict[str, int], name: str, span: Span) -> int:
    if name not in names:
        raise UsageError(f"no device named '{name}' in the machine"
                         + did_you_mean(name, list(names)), span)
    return names[name]


def _neighbours(topology: Topology, device: int) -> str:
    found = sorted({topology.devices[h.dst].name for h in topology.hops if h.src == device})
    return ", ".join(found) or "nothing"


def device_item(topology: Topology, device: int, span: Span | None = None) -> Item:
    hops = frozenset(i for i, h in enumerate(topology.hops) if device in (h.src, h.dst))
    d = topology.devices[device]
    return Item(d.name, "device", hops, (), d.kind, span)


def link_item(topology: Topology, hops: frozenset[int], span: Span | None = None) -> Item:
    """The hops' own resources (the first of each hop; not those of a shared resource they
    go `via`), named `A<->B` when both directions are among them, else `A->B`."""
    ordered = sorted(hops)
    first = topology.hops[ordered[0]]
    a, b = topology.devices[first.src].name, topology.devices[first.dst].name
    both = any((topology.hops[i].src, topology.hops[i].dst) == (first.dst, first.src)
               for i in ordered)
    resources = tuple(dict.fromkeys(topology.hops[i].resources[0] for i in ordered))
    cls = topology.resources[first.resources[0]].cls
    return Item(f"{a}<->{b}" if both else f"{a}->{b}", "link", hops, resources, cls, span)


def shared_items(topology: Topology) -> dict[str, Item]:
    """Every shared resource (a resource that some hop crosses besides its own), by name:
    `node[0].slot`, whose two directions are `node[0].slot (forward)` and `(reverse)`."""
    found: dict[str, tuple[set[int], list[int]]] = {}
    for index, hop in enumerate(topology.hops):
        for r in hop.resources[1:]:
            name = topology.resources[r].name.removesuffix(" (forward)").removesuffix(" (reverse)")
            hops, resources = found.setdefault(name, (set(), []))
            hops.add(index)
            if r not in resources:
                resources.append(r)
    return {name: Item(name, "shared", frozenset(hops), tuple(sorted(resources)),
                       topology.resources[resources[0]].cls)
            for name, (hops, resources) in found.items()}


def links_of_class(topology: Topology, cls: str) -> list[Item]:
    """One item per pair of devices joined by links of class `cls`, in declaration order."""
    groups: dict[tuple[int, int], set[int]] = {}
    for index, hop in enumerate(topology.hops):
        if topology.resources[hop.resources[0]].cls == cls:
            groups.setdefault((min(hop.src, hop.dst), max(hop.src, hop.dst)), set()).add(index)
    items = [link_item(topology, frozenset(h)) for h in groups.values()]
    return sorted(items, key=lambda item: min(item.hops))


FACTOR = re.compile(r"\d+(\.\d+)?(/\d+)?%?")  # 0.5, 1/2, 50%: no exponent, no sign


def parse_factor(text: str, span: Span) -> Fraction:
    """`0.5`, `1/2` or `50%`: an exact factor in (0, 1]."""
    body = text.strip()
    if not FACTOR.fullmatch(body) or len(body) > 40:
        raise UsageError(f"--derate expects ITEM=FACTOR with a number as the factor (0.5, 1/2 "
                         f"or 50%), got {body[:40]!r}", span)
    try:
        value = Fraction(body[:-1]) / 100 if body.endswith("%") else Fraction(body)
    except ZeroDivisionError:
        raise UsageError(f"--derate: {body!r} divides by zero", span) from None
    if value <= 0:
        raise UsageError("a derating factor must be positive (a failed item is --fail ITEM)",
                         span)
    if value > 1:
        raise UsageError(f"a derating factor is at most 1 (100%): {body} would raise the "
                         "bandwidth", span)
    return value


def parse(topology: Topology, changes: Changes
          ) -> tuple[list[Item], list[tuple[Item, Scalar]]]:
    """The items `--fail` and `--derate` name, each derating with its factor."""
    failed = [resolve(topology, text, "--fail") for text in changes.fail]
    derated = []
    for text in changes.derate:
        target, sep, factor = text.rpartition("=")
        source, span = _argument("--derate", text)
        if not sep or not target.strip():
            raise UsageError(f"--derate expects ITEM=FACTOR (e.g. --derate 'a<->b=0.5'), got "
                             f"{text!r}", span)
        value = parse_factor(factor, Span(source, 1, len(target) + 2, 1, len(text) + 1))
        derated.append((resolve(topology, target, "--derate"),
                        to_sympy(value) if topology.symbolic else value))
    return failed, derated


def apply(topology: Topology, failed: list[Item], derated: list[tuple[Item, Scalar]],
          kept_routes: Iterable[tuple[int, int]] = ()) -> Topology:
    """The machine without the failed items and with the derated resources' bandwidths
    multiplied by their factors (a factor may be a symbol, such as `d`). `kept_routes`:
    pairs routed on `topology` whose routes the failures leave as they are
    (`Topology.route_depends_on` misses every failed hop), carried over, not routed anew."""
    factors: dict[int, Scalar] = {}
    for item, factor in derated:
        targets = item.resources
        if item.kind == "device":
            raise UsageError(f"--derate names a link or a shared resource, not the device "
                             f"{item.name}", item.span,
                             ("a link is named A<->B (both directions) or A->B (one)",))
        unlimited = [r for r in targets if topology.resources[r].bandwidth is None]
        if unlimited:
            raise UsageError(f"{item.name} has no bandwidth (it is never a bottleneck), so "
                             "derating it changes nothing", item.span)
        for r in targets:
            factors[r] = factors.get(r, to_sympy(1) if topology.symbolic else 1) * factor
    resources = [replace(r, bandwidth=r.bandwidth * factors[r.id]) if r.id in factors else r
                 for r in topology.resources]
    removed = frozenset().union(*(item.hops for item in failed)) if failed else frozenset()
    kept = [i for i in range(len(topology.hops)) if i not in removed]
    index = {old: new for new, old in enumerate(kept)}
    hops: list[Hop] = [topology.hops[i] for i in kept]
    pinned: dict[tuple[int, int], PinnedRoute] = {}
    for pair, route in topology.pinned.items():
        legs = tuple(tuple(index[h] for h in leg if h in index) for leg in route.legs)
        if all(legs):  # a pinned route that lost every link of a leg is routed anew
            pinned[pair] = replace(route, legs=legs)
    notes = [*topology.notes,
             *(f"what-if: {item.name} failed" for item in failed),
             *(f"what-if: {item.name} derated by {factor}" for item, factor in derated)]
    # Every public field is carried over (whatever the machine's model declares: a routing
    # preference, say) and every private one, the caches of routes, starts afresh.
    kept_fields = {f.name: getattr(topology, f.name) for f in fields(topology)
                   if f.init and not f.name.startswith("_")}
    changed = Topology(**{**kept_fields, "devices": list(topology.devices), "resources": resources,
                          "hops": hops, "host_names": list(topology.host_names), "pinned": pinned,
                          "notes": tuple(notes)})
    for src, dst in kept_routes:
        kept_route = topology.route(src, dst, None)
        changed.adopt_route(replace(
            kept_route,
            steps=tuple((node, tuple(index[h] for h in out)) for node, out in kept_route.steps),
            shares=tuple((index[h], share) for h, share in kept_route.shares)))
    return changed

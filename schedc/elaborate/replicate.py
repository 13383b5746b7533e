"""The instances of a host family after its first, copied from the first.

`host node[2048] { gpu g[8] ... }` elaborates the same body 2,048 times: each instance
evaluates the same expressions in the same environment and differs from the first only in
its name (`node[k].`), its host index and the ids of what it declares (devices, resources,
shared resources), which follow one another instance by instance. Evaluating the body once
per instance cost ~0.5 s of the 2,048 hosts; copying the first instance's devices, resources
and hops with those three things moved makes the same lists in the same order.

That holds when the body only declares devices, shared resources, links and lets, and never
names its own family (`node[0].g[1]` in instance k is not instance k's device); otherwise, or
when the copies would pass a limit (refused, with its message, where one instance at a time
meets it), every instance is elaborated.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..language import syntax as ast
from ..limits import MAX_DEVICES
from ..model.topology import Device, Hop, Resource

COPYABLE = (ast.Let, ast.DeviceDecl, ast.SharedDecl, ast.LinkDecl)


@dataclass(frozen=True)
class Marks:
    """How long the builder's lists were before the first instance was elaborated."""

    devices: int
    resources: int
    hops: int
    shared: int
    links: int
    host: int  # the first instance's host index


def marks(builder) -> Marks:
    return Marks(len(builder.devices), len(builder.resources), len(builder.hops),
                 len(builder.shared), builder.links, len(builder.host_names))


def copyable(stmt: ast.HostDecl, builder, first: Marks, count: int, max_links: int) -> bool:
    """Whether the instances after the first of `stmt` (whose first instance the builder has
    elaborated since `first`) may be copied from it."""
    family = stmt.name.name
    if not all(isinstance(s, COPYABLE) for s in stmt.body):
        return False
    if any(isinstance(node, ast.Name) and node.id == family for node in ast.walk(stmt.body)):
        return False
    more = count - 1
    return (builder.links + (builder.links - first.links) * more <= max_links
            and len(builder.devices) + (len(builder.devices) - first.devices) * more
            <= MAX_DEVICES)


def copy_instances(stmt: ast.HostDecl, builder, first: Marks, count: int) -> None:
    """Append instances 1..count-1 of `stmt` (host names, devices, resources, hops, shared
    resources, family tables) to the builder, copied from instance 0."""
    devices = builder.devices[first.devices:]
    resources = builder.resources[first.resources:]
    hops = builder.hops[first.hops:]
    shared = builder.shared[first.shared:]
    nd, nr, ns = len(devices), len(resources), len(shared)
    d_lo, d_hi = first.devices, first.devices + nd
    r_lo, r_hi = first.resources, first.resources + nr
    base = f"{builder.host_names[first.host]}."
    links = builder.links - first.links

    for k in range(1, count):
        name = f"{stmt.name.name}[{k}]"
        builder.host_names.append(name)
        here = f"{name}."

        def device(i: int, k: int = k) -> int:
            return i + k * nd if d_lo <= i < d_hi else i

        def resource(r: int, k: int = k) -> int:
            return r + k * nr if r_lo <= r < r_hi else r

        def renamed(text: str, here: str = here) -> str:
            # Only the first instance's members start with its name and a dot: no other
            # family can be named `node[0]`, and device names hold no arrows.
            return here + text[len(base):] if text.startswith(base) else text

        def resource_name(text: str) -> str:
            for arrow in ("<->", "->"):
                if arrow in text:
                    a, b = text.split(arrow)
                    return renamed(a) + arrow + renamed(b)
            return renamed(text)  # a shared resource: `node[0].pcie (forward)`

        builder.devices += [Device(d.id + k * nd, renamed(d.name), d.kind, first.host + k,
                                   d.forwards, d.span, d.reduces, d.sm) for d in devices]
        builder.resources += [Resource(r.id + k * nr, resource_name(r.name), r.cls, r.bandwidth,
                                       r.latency, r.window, r.span) for r in resources]
        builder.hops += [Hop(device(h.src), device(h.dst), tuple(resource(r) for r in h.resources),
                             h.span) for h in hops]
        builder.shared += [(resource(f), resource(b)) for f, b in shared]
        builder.links += links
    family = builder.namespace.family((stmt.name.name,))
    for member in family.children.values():
        step = ns if member.kind == "shared" else nd
        for k in range(1, count):
            member.table[k] = member.table[0] + k * step

"""`route` statements → pinned routes, checked against the machine's links once every
topology block has declared its links (so a route may come before the links it uses)."""

from __future__ import annotations

from ..errors import ElaborationError, Span
from ..model.topology import Device, Hop, PinnedRoute


def pinned_routes(devices: list[Device], hops: list[Hop],
                  pinned: list[tuple[tuple[int, ...], Span]]) -> dict[tuple[int, int], PinnedRoute]:
    """Every pinned route (its devices, ends included, and its statement's span) checked
    against the declared links: each step a link in its direction, every device between the
    ends one that forwards, no device twice, no pair pinned twice differently."""
    links: dict[tuple[int, int], list[int]] = {}
    for index, hop in enumerate(hops):
        links.setdefault((hop.src, hop.dst), []).append(index)
    found: dict[tuple[int, int], PinnedRoute] = {}
    for path, span in pinned:
        names = [devices[d].name for d in path]
        route = f"the route {names[0]} -> {names[-1]}"
        if path[0] == path[-1]:
            raise ElaborationError(f"a route from {names[0]} to itself", span)
        if len(set(path)) != len(path):
            again = next(n for n in names if names.count(n) > 1)
            raise ElaborationError(f"{route} passes {again} twice", span)
        for d in path[1:-1]:
            if not devices[d].forwards:
                raise ElaborationError(
                    f"{route} passes {devices[d].name}, which does not forward traffic",
                    span, ("GPUs are endpoints unless declared with `forwards`",))
        legs = []
        for a, b in zip(path, path[1:]):
            parallel = links.get((a, b))
            if not parallel:
                linked = sorted({devices[h.dst].name for h in hops if h.src == a})
                notes = [f"{devices[a].name} is linked to: {', '.join(linked) or 'nothing'}"]
                if len(path) == 2:
                    notes.append("a route without `via` is a single link; name the devices "
                                 "between the ends with `via`")
                raise ElaborationError(f"{route}: no link from {devices[a].name} to "
                                       f"{devices[b].name}", span, tuple(notes))
            legs.append(tuple(parallel))
        pin = PinnedRoute(path, tuple(legs), span)
        earlier = found.setdefault((path[0], path[-1]), pin)
        if earlier.devices != path:
            raise ElaborationError(f"{route} is pinned twice, differently (first at "
                                   f"{earlier.span})", span)
    return found

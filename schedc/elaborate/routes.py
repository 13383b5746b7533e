"""`route` statements → pinned routes, checked against the machine's links once every
topology block has declared its links (so a route may come before the links it uses);
`routing prefer` → the link classes routes inside a host prefer, checked the same way."""

from __future__ import annotations

from ..errors import ElaborationError, Span, did_you_mean
from ..language import syntax as ast
from ..model.topology import Device, Hop, PinnedRoute, Resource

Preference = tuple[tuple[str, ...], Span]


def class_preference(stmt: ast.RoutingPrefer, prefix: tuple[str, ...],
                     earlier: Preference | None) -> Preference:
    """A `routing prefer` statement's classes: stated once for the whole machine (again
    only with the same classes), each class once."""
    if prefix:
        raise ElaborationError("`routing prefer` applies to the whole machine; state it outside "
                               "host bodies", stmt.span)
    repeated = [c for i, c in enumerate(stmt.classes) if c in stmt.classes[:i]]
    if repeated:
        raise ElaborationError(f"the class '{repeated[0]}' is named twice", stmt.span)
    if earlier is not None and earlier[0] != stmt.classes:
        shown = ", ".join(earlier[0]) or "none"
        raise ElaborationError(f"routing already prefers {shown} (at {earlier[1]})", stmt.span)
    return stmt.classes, stmt.span


def checked_preference(preference: Preference | None,
                       resources: list[Resource]) -> tuple[str, ...] | None:
    """The preferred classes, once every link is declared: each must be the class of a link
    (a misspelt class would silently prefer nothing). None: the machine states none."""
    if preference is None:
        return None
    classes, span = preference
    present = sorted({r.cls for r in resources})
    for cls in classes:
        if cls not in present:
            raise ElaborationError(f"no link has the class '{cls}'"
                                   + did_you_mean(cls, present, "the machine's classes"), span)
    return classes


def pinned_routes(devices: list[Device], hops: list[Hop],
                  pinned: list[tuple[tuple[int, ...], Span]]) -> dict[tuple[int, int], PinnedRoute]:
    """Every pinned route (its devices, ends included, and its statement's span) checked
    against the declared links: each step a link in its direction, every device between the
    ends one that forwards, no device twice, no pair pinned twice differently."""
    if not pinned:
        return {}
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

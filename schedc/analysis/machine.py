"""What `schedc machine show` reports about a compiled machine: its hosts, devices by kind,
links (class, bandwidth per direction, shared resources), the classes of the routes between
GPUs, and per param the `from:`/`rule:` comment an imported machine carries above it."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from fractions import Fraction

import sympy

from ..elaborate.program import Program
from ..errors import SchedcError
from ..limits import MAX_ROUTES


@dataclass(frozen=True)
class LinkRow:
    a: str
    b: str
    cls: str
    forward: Fraction | None  # bytes/s a -> b at the nominal point; None: never a bottleneck
    backward: Fraction | None  # b -> a (None also when the link is one-way: see `one_way`)
    bandwidth: str  # the expression, as declared
    shared: tuple[str, ...]  # resources besides the link's own it loads (`via`, `half`)
    one_way: bool = False


@dataclass(frozen=True)
class RouteClass:
    scope: str  # "inside a host" | "between hosts"
    classes: tuple[str, ...]  # the link classes a path crosses, in order
    pairs: int  # GPU pairs (from the first GPU) with a path of these classes
    share: Fraction  # of the bytes the first GPU sends to each GPU of the scope, the share
    # taking such paths (1: all of it)


@dataclass(frozen=True)
class MachineSummary:
    path: str
    hosts: tuple[str, ...]
    devices: tuple[tuple[str, str, str | None], ...]  # name, kind, host
    links: tuple[LinkRow, ...]
    routes: tuple[RouteClass, ...]
    derived_from: dict[str, tuple[str, str, str]]  # param → (value, from, rule)
    gpu_sms: tuple[tuple[int | None, int], ...] = ()  # (sm or None if undeclared, GPUs)
    routed: tuple[int, int] = (0, 0)  # (GPUs the routes go to, GPUs besides the first)



def summarize(program: Program, max_routes: int = MAX_ROUTES) -> MachineSummary:
    topo = program.topology
    nominal = program.nominal
    hosts = tuple(topo.host_names)
    devices = tuple((d.name, d.kind, hosts[d.host] if d.host is not None else None)
                    for d in topo.devices)
    sms = Counter(d.sm for d in topo.devices if d.kind == "gpu")
    gpu_sms = tuple(sorted(sms.items(), key=lambda kv: (kv[0] is None, kv[0] or 0)))
    routes, routed = _routes(program, max_routes)
    return MachineSummary(program.path, hosts, devices, _links(program, nominal),
                          routes, _derived(program), gpu_sms, routed)


def _value(expr: sympy.Expr | None, nominal) -> Fraction | None:
    if expr is None:
        return None
    value = sympy.nsimplify(expr.xreplace(nominal)) if expr.free_symbols else expr
    return Fraction(int(value.p), int(value.q)) if isinstance(value, sympy.Rational) else \
        Fraction(str(float(value)))


def _links(program: Program, nominal) -> tuple[LinkRow, ...]:
    topo = program.topology
    by_pair: dict[tuple[int, int], list[int]] = {}
    order: list[tuple[int, int]] = []
    for index, hop in enumerate(topo.hops):
        key = (min(hop.src, hop.dst), max(hop.src, hop.dst))
        if key not in by_pair:
            order.append(key)
        by_pair.setdefault(key, []).append(index)
    rows = []
    for key in order:
        hops = [topo.hops[h] for h in by_pair[key]]
        first = hops[0]
        own = topo.resources[first.resources[0]] if first.resources else None
        back = next((h for h in hops if h.src == first.dst), None)
        back_own = topo.resources[back.resources[0]] if back is not None and back.resources else None
        shared = tuple(dict.fromkeys(topo.resources[r].name for h in hops for r in h.resources[1:]))
        if back_own is not None and own is not None and back_own.id == own.id:
            shared = (own.name,) + shared  # half-duplex: both directions share one resource
        rows.append(LinkRow(
            topo.devices[first.src].name, topo.devices[first.dst].name,
            own.cls if own is not None else "-",
            _value(own.effective_bandwidth, nominal) if own is not None else None,
            _value(back_own.effective_bandwidth, nominal) if back_own is not None else None,
            str(own.bandwidth) if own is not None and own.bandwidth is not None else "-",
            shared, one_way=back is None))
    return tuple(rows)


def _routes(program: Program, most: int) -> tuple[tuple[RouteClass, ...], tuple[int, int]]:
    """From the first GPU to every other GPU (to `most` of them, evenly spread, when there
    are more): the classes along each path of its route; and (GPUs routed to, of how many)."""
    topo = program.topology
    gpus = [d for d in topo.devices if d.kind == "gpu"]
    if len(gpus) < 2 or not program.has_machine:  # (an MSCCL file alone: devices, no links)
        return (), (0, 0)
    source, others = gpus[0], gpus[1:]
    chosen = others if len(others) <= most else \
        [others[k * len(others) // most] for k in range(most)]
    cls_of = {}
    for hop in topo.hops:
        cls_of[(hop.src, hop.dst)] = topo.resources[hop.resources[0]].cls if hop.resources else "-"
    name_to_id = {d.name: d.id for d in topo.devices}
    pairs: dict[tuple, set[int]] = {}
    shares: dict[tuple, Fraction] = {}
    targets: Counter = Counter()
    for target in chosen:
        scope = "inside a host" if source.host is not None and source.host == target.host \
            else "between hosts"
        targets[scope] += 1
        try:
            paths = list(topo.route_paths(source.id, target.id, None))
        except SchedcError:  # no route: a machine file may leave GPUs unjoined
            paths = [([source.name], Fraction(1))]
        for names, share in paths:
            ids = [name_to_id[n] for n in names]
            key = (scope, tuple(cls_of[(a, b)] for a, b in zip(ids, ids[1:])) or ("no route",))
            pairs.setdefault(key, set()).add(target.id)
            shares[key] = shares.get(key, Fraction(0)) + Fraction(share)
    return tuple(RouteClass(scope, classes, len(pairs[(scope, classes)]),
                            shares[(scope, classes)] / targets[scope])
                 for scope, classes in sorted(pairs)), (len(chosen), len(others))


def _derived(program: Program) -> dict[str, tuple[str, str, str]]:
    """`#   from:` and `#   rule:` comment lines right above a param's declaration."""
    out = {}
    for name, param in program.params.items():
        span = param.span
        if span is None:
            continue
        line = span.source.line  # (one line at a time: the file is not split per param)
        above: list[str] = []
        number = span.line - 1
        while number >= 1 and line(number).lstrip().startswith("#"):
            above.insert(0, line(number).strip().lstrip("#").strip())
            number -= 1
        source = next((t[5:].strip() for t in above if t.startswith("from:")), None)
        rule = next((t[5:].strip() for t in above if t.startswith("rule:")), None)
        if source is not None and rule is not None:
            text = line(span.line).split("=", 1)[-1].split("#")[0].strip()
            out[name] = (text, source, rule)
    return out

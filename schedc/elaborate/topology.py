"""Topology declarations → `Topology`: device families, host instances, links, shared resources.

Names form a tree: `node[2] { gpu g[8] }` makes the family `node.g`, addressed as
`node[h].g[i]` and stored as a table of device ids of shape (2, 8). Inside a host body its
own members are visible by their short names (`g[i]`, `nvswitch`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import partial

import numpy as np

from ..errors import ElaborationError, LimitError, Span, did_you_mean
from ..hardware.rules import KNOWN_SMS, not_a_known_sm
from ..language import syntax as ast
from ..limits import MAX_DEVICES
from ..model.routing import DEFAULT_PREFERENCE, POLICIES
from ..model.scalars import Scalar
from ..model.topology import FORWARDING_KINDS, Device, Hop, Resource, Topology
from ..model.values import (
    NeedScalar,
    SharedRef,
    TopoRef,
    as_number,
    check_positive,
    expect_device,
    expect_quantity,
    kind_of,
    one_lane,
    span_text,
)
from ..units import BYTES, RATE, SECONDS
from .evaluate import evaluate, lanewise
from .lanes import Env, expand_lanes, filter_lanes, lane_array
from .namespace import Family, Namespace
from .replicate import copy_instances, copyable, marks
from .routes import checked_preference, class_preference, pinned_routes

MAX_TOPOLOGY_ITEMS = 1_000_000  # hosts, links or routes (each takes microseconds)


@dataclass(frozen=True)
class _LinkAttributes:
    """A link's (or shared resource's) evaluated attributes; expressions in base units."""

    bandwidth: Scalar | None
    latency: Scalar | None
    window: Scalar | None
    cls: str
    half: bool
    via: tuple[tuple[int, int], ...]  # (forward, reverse) resources of each shared resource


class TopologyBuilder:
    """Accumulates `topology` blocks (from several files) and builds the `Topology` at the end."""

    def __init__(self, nominal: dict, symbolic: bool = True) -> None:
        self.namespace = Namespace()
        self.nominal = nominal  # param symbol → value (none without formulas)
        self.symbolic = symbolic
        self.devices: list[Device] = []
        self.resources: list[Resource] = []
        self.hops: list[Hop] = []
        self.host_names: list[str] = []
        self.shared: list[tuple[int, int]] = []  # (forward, reverse) resource ids
        self.links = 0
        self.planned = 0  # devices of every family declared so far, in all of its hosts
        self.policy: tuple[str, Span] | None = None  # a `routing` statement's policy
        self.preference: tuple[tuple[str, ...], Span] | None = None  # `routing prefer`
        self.pinned: list[tuple[tuple[int, ...], Span]] = []  # `route` statements' devices
        self.positive: set[tuple[Scalar, bool]] = set()  # (expr, zero_ok) already checked

    # ---- declarations

    def add(self, block: ast.Topology, env: Env) -> None:
        self._block(block.body, env, prefix=(), host=None)

    def _block(self, body, env: Env, prefix: tuple[str, ...], host: tuple[int, int] | None) -> None:
        for stmt in body:
            if isinstance(stmt, ast.Let):
                env = env.bind(stmt.name, evaluate(stmt.value, env))
            elif isinstance(stmt, ast.DeviceDecl):
                sm = _sm(stmt, env)
                for decl in stmt.names:
                    fam = self._declare(decl, stmt.kind, env, prefix, host)
                    self._fill(fam, decl, prefix, host,
                               partial(self._device, stmt=stmt, host=host, sm=sm))
                    env = self._local(env, decl.name, prefix, host)
            elif isinstance(stmt, ast.SharedDecl):
                fam = self._declare(stmt.name, "shared", env, prefix, host)
                self._fill(fam, stmt.name, prefix, host, partial(self._shared, stmt=stmt, env=env))
                env = self._local(env, stmt.name.name, prefix, host)
            elif isinstance(stmt, ast.HostDecl):
                if prefix:
                    raise ElaborationError("hosts cannot be nested", stmt.span)
                self._host(stmt, env)
                env = self._local(env, stmt.name.name, prefix, host)
            elif isinstance(stmt, ast.LinkDecl):
                self._link(stmt, env)
            elif isinstance(stmt, ast.RoutingPolicy):
                self._routing(stmt, prefix)
            elif isinstance(stmt, ast.RoutingPrefer):
                self.preference = class_preference(stmt, prefix, self.preference)
            elif isinstance(stmt, ast.RouteDecl):
                self._route(stmt, env)

    def _local(self, env: Env, name: str, prefix: tuple[str, ...], host) -> Env:
        """Inside a host body, members are visible by their short names."""
        if not prefix:
            return env
        indices = (host[1],) if self.namespace.family(prefix).size is not None else ()
        return env.bind(name, self.namespace.settle(TopoRef((*prefix, name), indices)))

    def _declare(self, decl: ast.DeclName, kind: str, env: Env, prefix, host) -> Family:
        families = self.namespace.family(prefix).children if prefix else self.namespace.root
        existing = families.get(decl.name)
        if existing is not None and not (prefix and host[1] > 0):
            raise ElaborationError(f"'{decl.name}' is already declared at {existing.span}", decl.span)
        size = None
        if decl.count is not None:
            size = _count(evaluate(decl.count, env), decl.count.span)
            if size == 0:  # nothing would be declared, and every use of it fail far from here
                count = span_text(decl.count.span)
                value = "" if count == "0" else f" ({count} = 0)"
                raise ElaborationError(f"the {kind} family '{decl.name}[{count}]' is empty{value}; "
                                       f"a family has at least one {kind}", decl.count.span)
        if existing is not None:  # a later instance of a host family: same shape
            if existing.size != size:
                raise ElaborationError(f"'{decl.name}' has {existing.size} items in the first "
                                       f"host and {size} here", decl.span)
            return existing
        outer = self._sized(prefix)
        items = math.prod(outer) * (size if size is not None else 1)
        where = decl.count.span if decl.count is not None else decl.span
        if kind == "host" and items > MAX_TOPOLOGY_ITEMS:
            raise LimitError(f"the topology would have more than {MAX_TOPOLOGY_ITEMS:,} hosts",
                             where)
        if kind != "host":  # counted when declared, so a family in every host counts whole
            if self.planned + items > MAX_DEVICES:
                here = f" ({items:,} here)" if self.planned else ""
                raise LimitError(f"the topology would have {self.planned + items:,} devices"
                                 f"{here}; the limit is {MAX_DEVICES:,}", where)
            self.planned += items
        fam = Family(kind, size, decl.span)
        families[decl.name] = fam
        fam.table = np.full((*outer, *([size] if size is not None else [])), -1, dtype=np.int64)
        return fam

    def _sized(self, prefix) -> list[int]:
        return self.namespace._sized(prefix) if prefix else []

    def _fill(self, fam: Family, decl: ast.DeclName, prefix, host, make) -> None:
        base = f"{self.host_names[host[0]]}." if prefix else ""
        outer = (host[1],) if prefix and self.namespace.family(prefix).size is not None else ()
        assert fam.table is not None  # _declare made it
        if fam.size is None:
            fam.table[outer] = make(base + decl.name)
            return
        if len(self.devices) + fam.size > MAX_DEVICES:
            raise LimitError(f"the topology would have more than {MAX_DEVICES:,} devices",
                             decl.span)
        for i in range(fam.size):
            fam.table[(*outer, i)] = make(f"{base}{decl.name}[{i}]")

    def _device(self, name: str, stmt: ast.DeviceDecl, host, sm: int | None) -> int:
        if stmt.reduces and stmt.kind != "switch":
            raise ElaborationError(f"only a switch reduces in the network, not a {stmt.kind}",
                                   stmt.span)
        device = Device(len(self.devices), name, stmt.kind, host[0] if host else None,
                        stmt.kind in FORWARDING_KINDS or stmt.forwards, stmt.span,
                        stmt.reduces, sm)
        self.devices.append(device)
        return device.id

    def _host(self, stmt: ast.HostDecl, env: Env) -> None:
        fam = self._declare(stmt.name, "host", env, (), None)  # refuses too many hosts
        count = fam.size if fam.size is not None else 1
        first = marks(self)
        for k in range(count):
            if k == 1 and copyable(stmt, self, first, count, MAX_TOPOLOGY_ITEMS):
                copy_instances(stmt, self, first, count)  # the rest, as instance 0 (replicate.py)
                return
            name = stmt.name.name if fam.size is None else f"{stmt.name.name}[{k}]"
            self.host_names.append(name)
            self._block(stmt.body, env, (stmt.name.name,), (len(self.host_names) - 1, k))

    # ---- resources

    def _quantity(self, expr: ast.Expr | None, env: Env, dim, what: str, positive: bool,
                  zero_ok: bool = False):
        if expr is None:
            return None
        q = expect_quantity(evaluate(expr, env), dim, expr.span, what)
        if positive and (q.expr, zero_ok) not in self.positive:
            check_positive(q, self.nominal, expr.span, what, zero_ok)
            self.positive.add((q.expr, zero_ok))
        return q.expr

    def _resource(self, name: str, attrs: _LinkAttributes, span: Span) -> int:
        resource = Resource(len(self.resources), name, attrs.cls, attrs.bandwidth, attrs.latency,
                            attrs.window, span)
        self.resources.append(resource)
        return resource.id

    def _shared(self, name: str, stmt: ast.SharedDecl, env: Env) -> int:
        if stmt.attrs.bw is None:
            raise ElaborationError("a shared resource needs a bandwidth (bw ...)", stmt.span)
        if stmt.attrs.via:
            raise ElaborationError("a shared resource cannot itself be 'via' another", stmt.span)
        attrs = replace(self._attributes(stmt, env), cls=stmt.attrs.cls or "shared")
        if attrs.half:
            one = self._resource(name, attrs, stmt.span)
            pair = (one, one)
        else:
            pair = (self._resource(f"{name} (forward)", attrs, stmt.span),
                    self._resource(f"{name} (reverse)", attrs, stmt.span))
        self.shared.append(pair)
        return len(self.shared) - 1

    # ---- links

    def _link(self, stmt: ast.LinkDecl, env: Env) -> None:
        lanes = _clause_lanes(stmt.clauses, env)
        if stmt.attrs.half and not stmt.both_ways:
            raise ElaborationError("'half' makes both directions of a link share one resource; a "
                                   "one-way link (->) has one direction", stmt.span)
        assert lanes.lanes is not None  # expand_lanes counts them
        if self.links + lanes.lanes > MAX_TOPOLOGY_ITEMS:
            raise LimitError(f"the topology would have more than {MAX_TOPOLOGY_ITEMS:,} links",
                             stmt.span)
        try:  # the common case: endpoints vary with the loop variables, attributes do not
            ends = [lane_array(expect_device(evaluate(e, lanes), e.span, "a link end").ids, lanes.lanes)
                    for e in (stmt.a, stmt.b)]
            attrs = self._attributes(stmt, lanes)
            for a, b in zip(*ends):
                self._add_link(stmt, int(a), int(b), attrs)
        except NeedScalar:
            for k in range(lanes.lanes):
                one = _one_lane(lanes, k)
                a, b = (int(expect_device(evaluate(e, one), e.span, "a link end").ids)
                        for e in (stmt.a, stmt.b))
                self._add_link(stmt, a, b, self._attributes(stmt, one))

    def _attributes(self, stmt: ast.LinkDecl | ast.SharedDecl, env: Env) -> _LinkAttributes:
        attrs = stmt.attrs
        via = []
        for expr in attrs.via:
            value = evaluate(expr, env)
            if not isinstance(value, SharedRef):
                raise ElaborationError(f"'via' names a shared resource, not {kind_of(value)}", expr.span)
            via.append(self.shared[value.resource])
        bandwidth = self._quantity(attrs.bw, env, RATE, "'bw'", positive=True)
        window = self._quantity(attrs.window, env, BYTES, "'window'", positive=True)
        if window is not None and attrs.latency is None:
            raise ElaborationError("a window needs a latency: a window of bytes in flight, each "
                                   "for the latency, allows window/latency",
                                   attrs.window.span if attrs.window else stmt.span)
        # Little's law divides by the latency, so with a window it must be positive.
        latency = self._quantity(attrs.latency, env, SECONDS, "'latency'", positive=True,
                                 zero_ok=window is None)
        return _LinkAttributes(
            bandwidth=bandwidth, latency=latency, window=window, cls=attrs.cls or "link", half=attrs.half,
            via=tuple(via))

    def _add_link(self, stmt: ast.LinkDecl, a: int, b: int, attrs: _LinkAttributes) -> None:
        if a == b:
            raise ElaborationError(f"a link from {self.devices[a].name} to itself", stmt.span)
        an, bn = self.devices[a].name, self.devices[b].name
        backward: int | None
        if stmt.both_ways and attrs.half:
            forward = backward = self._resource(f"{an}<->{bn}", attrs, stmt.span)
        else:
            forward = self._resource(f"{an}->{bn}", attrs, stmt.span)
            backward = self._resource(f"{bn}->{an}", attrs, stmt.span) if stmt.both_ways else None
        self.hops.append(Hop(a, b, (forward, *(f for f, _ in attrs.via)), stmt.span))
        if stmt.both_ways:
            assert backward is not None
            self.hops.append(Hop(b, a, (backward, *(r for _, r in attrs.via)), stmt.span))
        self.links += 1

    # ---- routing

    def _routing(self, stmt: ast.RoutingPolicy, prefix: tuple[str, ...]) -> None:
        if stmt.policy not in POLICIES:
            raise ElaborationError(f"unknown routing policy '{stmt.policy}'"
                                   + did_you_mean(stmt.policy, list(POLICIES), "policies"), stmt.span)
        if prefix:
            raise ElaborationError("`routing` applies to the whole machine; state it outside "
                                   "host bodies", stmt.span)
        if self.policy is not None and self.policy[0] != stmt.policy:
            raise ElaborationError(f"routing is already '{self.policy[0]}' (at {self.policy[1]})",
                                   stmt.span)
        self.policy = (stmt.policy, stmt.span)

    def _route(self, stmt: ast.RouteDecl, env: Env) -> None:
        """A pinned route, one per lane of its `for` clauses; checked against the links in
        `build`, once every topology block has declared its links."""
        lanes = _clause_lanes(stmt.clauses, env)
        assert lanes.lanes is not None  # _clause_lanes always counts its lanes
        exprs = (stmt.a, *stmt.via, stmt.b)
        what = "a device of a route"
        if len(self.pinned) + lanes.lanes > MAX_TOPOLOGY_ITEMS:
            raise LimitError(f"the topology would have more than {MAX_TOPOLOGY_ITEMS:,} routes",
                             stmt.span)
        try:
            columns = [lane_array(expect_device(evaluate(e, lanes), e.span, what).ids, lanes.lanes)
                       for e in exprs]
            rows = [tuple(int(x) for x in row) for row in zip(*columns)]
        except NeedScalar:
            rows = [tuple(int(expect_device(evaluate(e, one), e.span, what).ids) for e in exprs)
                    for one in (_one_lane(lanes, k) for k in range(lanes.lanes))]
        for row in rows:
            self.pinned.append((row, stmt.span))
            if stmt.both_ways:
                self.pinned.append((row[::-1], stmt.span))

    def build(self) -> Topology:
        policy = self.policy[0] if self.policy else "ecmp"
        preference = checked_preference(self.preference, self.resources)
        if preference is None:
            preference = DEFAULT_PREFERENCE
        return Topology(self.devices, self.resources, self.hops, self.host_names, policy,
                        pinned_routes(self.devices, self.hops, self.pinned), preference=preference,
                        symbolic=self.symbolic)


def _sm(stmt: ast.DeviceDecl, env: Env) -> int | None:
    """A GPU declaration's `sm N`: a compute capability NCCL knows (its tuning reads it)."""
    if stmt.sm is None:
        return None
    if stmt.kind != "gpu":
        raise ElaborationError(f"only a gpu has a compute capability (sm), not a {stmt.kind}",
                               stmt.sm.span)
    number = as_number(evaluate(stmt.sm, env))
    if not isinstance(number, int) or number not in KNOWN_SMS:
        raise ElaborationError(not_a_known_sm(f"sm {span_text(stmt.sm.span)}"), stmt.sm.span)
    return number


def _count(value: object, span: Span) -> int:
    number = as_number(value) if not isinstance(value, np.ndarray) else None
    if not isinstance(number, int) or number < 0:
        raise ElaborationError("a family size must be a non-negative integer", span)
    return number


def _clause_lanes(clauses: tuple[ast.CompFor, ...], env: Env) -> Env:
    """One lane per iteration of a statement's trailing `for ... [if ...]` clauses (lane by
    lane where an operation has no lane-wise form)."""
    lanes = replace(env, lanes=1)
    for clause in clauses:
        lanes = expand_lanes(lanes, clause.var, lanewise(clause.iter, lanes), clause.iter.span)
        if clause.cond is not None:
            lanes = filter_lanes(lanes, lanewise(clause.cond, lanes), clause.cond.span)
    return lanes


def _one_lane(lanes: Env, k: int) -> Env:
    """Lane k of an environment, as scalar values."""
    return replace(lanes, local={n: one_lane(v, k) for n, v in lanes.local.items()}, lanes=None)

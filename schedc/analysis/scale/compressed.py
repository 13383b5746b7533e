"""The compressed network of a machine built uniformly in n: the fabric and one copy per
class of copies (a side's, the rest's, ...), each copy's capacities times the number of
copies in its class, c·(m0 + m1·x) with n = r + step·x. Its narrowest cut is the machine's
(docs/scale.md, "Bounds in n"), and as a function of x it is the lower envelope of finitely
many lines, found exactly by parametric max-flow (Eisner and Severance 1976: the cuts at the
two ends of the range, then where their lines meet, recursively)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from math import lcm

import networkx as nx
import sympy
from networkx.algorithms.flow import edmonds_karp

from ...session import Session
from ..bound.cuts import FlowNetwork
from .portloads import Unproved

Kind = tuple[str, tuple[int, int], tuple[tuple[str, str], ...]]


@dataclass(frozen=True)
class Member:
    """One family's cut of `bound` (a split and a direction) on the compressed network."""

    order: int  # `bound`'s order: host, halves, rank, min-cut; forward before backward
    name: str
    kinds: tuple[Kind, ...]
    step: int = 1
    residue: int = 0
    from_n: int = 2

    def x(self, n: int) -> Fraction:
        return Fraction(n - self.residue, self.step)

    def holds(self, n: int) -> bool:
        return n >= self.from_n and (n - self.residue) % self.step == 0



class Machine:
    """The flow network of `bound` at one instance, split into one copy's block and the
    fabric, after checking that every copy is the same block joined the same way."""

    def __init__(self, at: Session, copies: str, ranks: tuple[int, ...], per_copy: int) -> None:
        topology = at.program.topology
        network = FlowNetwork(topology, at.program.nominal, ranks)
        graph = network.graph
        self.scale = network.scale
        self.symmetric = network.symmetric  # each cut as wide both ways
        pattern = re.compile(rf"{re.escape(copies)}\[(\d+)\]")
        copy: dict[object, int | None] = {}
        key: dict[object, str] = {}
        for node in graph.nodes:
            if not isinstance(node, int):
                raise Unproved("a resource that several hops share (a half-duplex link or a "
                               "slot): not covered")
            name = topology.devices[node].name
            found = pattern.match(name)
            copy[node] = int(found.group(1)) if found else None
            key[node] = pattern.sub(f"{copies}[*]", name, count=1) if found else name
        blocks: dict[int, list[tuple]] = {}
        self.fabric: list[tuple] = []
        for u, v, data in graph.edges(data=True):
            cu, cv = copy[u], copy[v]
            if cu is not None and cv is not None and cu != cv:
                raise Unproved("a link between two copies")
            row = (key[u], cu is None, key[v], cv is None, data.get("capacity"),
                   data.get("bandwidth"))
            if cu is None and cv is None:
                self.fabric.append(row)
            else:
                owner = cu if cu is not None else cv
                assert owner is not None
                blocks.setdefault(owner, []).append(row)
        shapes = {k: sorted(rows, key=str) for k, rows in blocks.items()}
        if len(shapes) < 2 or any(rows != shapes[0] for rows in shapes.values()):
            raise Unproved("the copies are not one block joined to the fabric the same way")
        self.block = shapes[0]
        local = [{key[r] for r in ranks if copy[r] == k} for k in sorted(shapes)]
        if any(copy[r] is None for r in ranks) or any(s != local[0] for s in local) \
                or len(local[0]) != per_copy:
            raise Unproved("the ranks are not the same devices of every copy")
        self.local = list(dict.fromkeys(key[r] for r in ranks))  # in rank order


Line = tuple[Fraction, Fraction]  # a width in n: A + B·n, in graph units
Edge = tuple[object, object, int | None, int, int, sympy.Expr | None, str | None]


@dataclass(frozen=True)
class Width:
    """One member's smallest minimum cut at one n."""

    side: frozenset
    value: Fraction  # bytes/s
    expr: sympy.Expr  # its width in n: Σ bandwidth × copies of its class


class Compressed:
    """The narrowest cuts of one machine's members (see `Member`), memoised."""

    def __init__(self, machine: Machine, n: sympy.Symbol) -> None:
        self.m, self.n = machine, n
        self._memo: dict = {}

    def _edges(self, member: Member, x: Fraction) -> list[Edge]:
        """(u, v, capacity of one copy, m0, m1, bandwidth, class) per edge: its capacity at
        x is capacity·(m0 + m1·x); None: unlimited. Fabric edges have class None."""
        out: list[Edge] = [(("F", u), ("F", v), cap, 1, 0, bw, None)
                           for u, _, v, _, cap, bw in self.m.fabric]
        for label, (m0, m1), roles in member.kinds:
            if m0 + m1 * x == 0:
                continue  # no copy of this class at this n
            for u, u_fabric, v, v_fabric, cap, bw in self.m.block:
                a = ("F", u) if u_fabric else (label, u)
                b = ("F", v) if v_fabric else (label, v)
                out.append((a, b, cap, m0, m1, bw, label))
            for local, role in roles:
                end = (label, local)
                out.append((("s",), end, None, 1, 0, None, None) if role == "source"
                           else (end, ("t",), None, 1, 0, None, None))
        return out

    def _cut(self, member: Member, x: Fraction, order: str = "value"):
        """The smallest minimum cut at x, by `order`: "value" (`bound`'s cut), "value, slope"
        (the line leaving x) or "slope, value" (the line as x -> oo): (its source side, its
        line in x, its crossing edges); None if unlimited."""
        key = (member, x, order)
        if key not in self._memo:
            self._memo[key] = self._solve(member, x, order)
        return self._memo[key]

    def _solve(self, member: Member, x: Fraction, order: str):
        edges = self._edges(member, x)
        p, q = x.numerator, x.denominator
        # Integer weights, lexicographic: (value at x, slope), or (slope, value at x); both
        # parts scaled by q, so the order of cuts is the order of (value, slope) pairs.
        pairs = {}
        for e in edges:
            if e[2] is not None:
                value, slope = e[2] * (e[3] * q + e[4] * p), e[2] * e[4] * q
                pairs[id(e)] = {"value": (value, 0), "value, slope": (value, slope),
                                 "slope, value": (slope, value)}[order]
        big = 1 + sum(second for _, second in pairs.values())
        graph = nx.DiGraph()
        unlimited = set()
        for e in edges:
            u, v = e[0], e[1]
            if (u, v) in unlimited:
                continue
            if e[2] is None:
                unlimited.add((u, v))
                graph.add_edge(u, v)
                graph[u][v].pop("capacity", None)
                continue
            first, second = pairs[id(e)]
            weight = first * big + second
            if graph.has_edge(u, v):
                weight += graph[u][v]["capacity"]
            graph.add_edge(u, v, capacity=weight)
        if not graph.has_node(("s",)) or not graph.has_node(("t",)):
            return None
        try:
            residual = edmonds_karp(graph, ("s",), ("t",))
        except nx.NetworkXUnbounded:
            return None
        side = {("s",)}
        stack: list = [("s",)]
        while stack:
            u = stack.pop()
            for v, data in residual[u].items():
                if v not in side and data["capacity"] - data["flow"] > 0:
                    side.add(v)
                    stack.append(v)
        crossing = [e for e in edges if e[0] in side and e[1] not in side]
        if any(e[2] is None for e in crossing):
            return None
        rise = Fraction(sum((e[2] or 0) * e[4] for e in crossing))  # every e[2] is set
        intercept = Fraction(sum((e[2] or 0) * e[3] for e in crossing))
        return frozenset(side), (intercept, rise), crossing

    def width(self, member: Member, n: int) -> Width | None:
        """The member's smallest minimum cut at n: its side, its width at n in bytes/s and
        as a formula in n (each edge's bandwidth times the copies of its class)."""
        found = self._cut(member, member.x(n))
        if found is None:
            return None
        side, (a, b), crossing = found
        value = (a + b * member.x(n)) / self.m.scale
        counts = {label: m0 + m1 * (self.n - member.residue) / member.step
                  for label, (m0, m1), _ in member.kinds}
        return Width(side, value, sympy.Add(*[
            e[5] if e[6] is None else e[5] * counts[e[6]] for e in crossing]))

    # ---- where a width changes its line: Eisner and Severance

    def start(self, member: Member) -> Fraction:
        """The first x from which every class has a copy and the member applies."""
        x = member.x(max(member.from_n, 2))
        x = Fraction(-(-x.numerator // x.denominator))
        while any(m0 + m1 * x < 1 for _, (m0, m1), _ in member.kinds) or \
                member.residue + member.step * x < member.from_n:
            x += 1
        return x

    def lines(self, member: Member) -> list[Line]:
        """The member's lines in n (A + B·n) on its whole range, from the lower envelope."""
        x0 = self.start(member)
        left, right = self._cut(member, x0, "value, slope"), self._cut(member, x0, "slope, value")
        if left is None or right is None:
            return []
        found: list[Line] = []
        self._between(member, left[1], right[1], found, 0)
        return [(a - b * Fraction(member.residue, member.step), b / member.step)
                for a, b in found]

    def _between(self, member: Member, one: Line, two: Line, found: list[Line],
                 depth: int) -> None:
        for line in (one, two):
            if line not in found:
                found.append(line)
        if one == two or one[1] == two[1] or depth > 40:
            return
        x = (two[0] - one[0]) / (one[1] - two[1])
        cut = self._cut(member, x)
        if cut is None or cut[1][0] + cut[1][1] * x >= one[0] + one[1] * x:
            return
        self._between(member, one, cut[1], found, depth + 1)
        self._between(member, cut[1], two, found, depth + 1)

    # ---- runs of n with one form

"""Max-flow / min-cut on the flow network of `cuts`, two ways that give the same cut.

`ArrayFlow` runs scipy's Dinic on integer arrays: the capacities divided by their greatest
common divisor, when they then fit its 32-bit counts with room to spare (a residual can reach
twice a capacity). `NetworkxFlow` runs networkx's shortest augmenting paths on one residual
network kept for every cut, for small networks (where importing scipy costs more than it
saves) and for capacities too large for the arrays. Either way the flow is exact
(integers) and the cut is the same: the devices the source still reaches once the flow is
maximal are the same for every maximum flow (the sending side of the smallest minimum cut).
"""

from __future__ import annotations

from collections import deque
from functools import reduce
from math import gcd

import networkx as nx
import numpy as np
from networkx.algorithms.flow import build_residual_network, shortest_augmenting_path

_SOURCE, _SINK = "source", "sink"

# A max-flow's answer: its value (in the graph's integer capacities), the devices on the
# sending side of the smallest minimum cut, and the resources of the edges leaving them, sorted;
# None when the flow is unbounded.
Solved = tuple[int, frozenset[int], tuple[int, ...]] | None

_SAFE = 2 ** 29  # scipy counts flows in int32, and a residual is at most twice a capacity


class ArrayFlow:
    """The flow network as arrays, for scipy.sparse.csgraph.maximum_flow: capacities divided
    by their greatest common divisor (`unit`), an unlimited edge given one more than all the
    finite ones together, which no finite cut can use up."""

    def __init__(self, graph: nx.DiGraph, unit: int, capacity: list[int | None]) -> None:
        nodes = list(graph.nodes)
        index = {n: k for k, n in enumerate(nodes)}
        edges = list(graph.edges(data=True))
        self.size = len(nodes)
        self.devices = np.array([n if isinstance(n, int) else -1 for n in nodes], dtype=np.int64)
        self.tail = np.array([index[u] for u, _, _ in edges], dtype=np.int64)
        self.head = np.array([index[v] for _, v, _ in edges], dtype=np.int64)
        self.resources = [data["resources"] for _, _, data in edges]
        self.unit = unit
        self.infinite = sum(c // unit for c in capacity if c is not None) + 1
        self.unlimited = np.array([c is None for c in capacity], dtype=bool)
        self.capacity = np.array([self.infinite if c is None else c // unit for c in capacity],
                                 dtype=np.int32)
        self.kept = (self.capacity > 0) & (self.tail != self.head)  # what max-flow sees

    @classmethod
    def of(cls, graph: nx.DiGraph) -> ArrayFlow | None:
        """The arrays of `graph`, or None if its capacities are too large for them."""
        capacity: list[int | None] = [data.get("capacity") for _, _, data in graph.edges(data=True)]
        finite = [c for c in capacity if c is not None]
        unit = reduce(gcd, finite, 0) or 1
        if sum(c // unit for c in finite) + 1 >= _SAFE:
            return None
        return cls(graph, unit, capacity)

    def min_cut(self, sources: frozenset[int], sinks: frozenset[int]) -> Solved:
        from scipy.sparse import csr_array  # type: ignore[import-untyped]  # no types
        from scipy.sparse.csgraph import breadth_first_order, maximum_flow  # type: ignore[import-untyped]

        n = self.size + 2
        source, sink = self.size, self.size + 1
        ins = np.fromiter(sources, np.int64, len(sources))
        outs = np.fromiter(sinks, np.int64, len(sinks))
        tail = np.concatenate([self.tail[self.kept], np.full(len(ins), source), outs])
        head = np.concatenate([self.head[self.kept], ins, np.full(len(outs), sink)])
        capacity = np.concatenate([self.capacity[self.kept],
                                   np.full(len(ins) + len(outs), self.infinite, np.int32)])
        unlimited = np.concatenate([self.unlimited[self.kept], np.ones(len(ins) + len(outs), bool)])
        # Unbounded when the sink is reached over unlimited edges alone (networkx's test).
        free = csr_array((np.ones(int(unlimited.sum()), np.int32),
                          (tail[unlimited], head[unlimited])), shape=(n, n))
        if (breadth_first_order(free, source, return_predecessors=False) == sink).any():
            return None
        network = csr_array((capacity, (tail, head)), shape=(n, n))
        result = maximum_flow(network, source, sink, method="dinic")
        residual = (network - result.flow).tocsr()
        residual.data = (residual.data > 0).astype(np.int8)
        residual.eliminate_zeros()
        reached = np.zeros(n, dtype=bool)
        reached[breadth_first_order(residual, source, return_predecessors=False)] = True
        devices = self.devices[reached[:self.size]]
        leaving = np.flatnonzero(reached[self.tail] & ~reached[self.head])
        resources = sorted({r for e in leaving.tolist() for r in self.resources[e]})
        return (int(result.flow_value) * self.unit, frozenset(devices[devices >= 0].tolist()),
                tuple(resources))


class NetworkxFlow:
    """The flow network as networkx's residual network, kept for every cut (each max-flow
    resets its flows): for small networks, and capacities too large for `ArrayFlow`."""

    def __init__(self, graph: nx.DiGraph, ranks: tuple[int, ...]) -> None:
        graph = graph.copy()
        for r in ranks:  # placeholders: the residual network keeps only edges with capacity
            graph.add_edge(_SOURCE, r, capacity=1)
            graph.add_edge(r, _SINK, capacity=1)
        self.graph = graph
        self.residual = build_residual_network(graph, "capacity")
        self.infinite = self.residual.graph["inf"]
        self._sources: set[int] = set(ranks)
        self._sinks: set[int] = set(ranks)
        self._attach(set(), set())

    def min_cut(self, sources: frozenset[int], sinks: frozenset[int]) -> Solved:
        self._attach(set(sources), set(sinks))
        try:
            shortest_augmenting_path(self.graph, _SOURCE, _SINK, residual=self.residual,
                                     value_only=True)
        except nx.NetworkXUnbounded:
            return None
        reached = self._reachable()
        devices = frozenset(n for n in reached if isinstance(n, int))
        resources = sorted({r for u in reached for v, data in self.graph[u].items()
                            if v not in reached and v != _SINK for r in data["resources"]})
        return self.residual.graph["flow_value"], devices, tuple(resources)

    def _attach(self, sources: set[int], sinks: set[int]) -> None:
        """Connect the source to `sources` and `sinks` to the sink, changing only what differs."""
        R = self.residual
        for r in self._sources ^ sources:
            R[_SOURCE][r]["capacity"] = self.infinite if r in sources else 0
        for r in self._sinks ^ sinks:
            R[r][_SINK]["capacity"] = self.infinite if r in sinks else 0
        self._sources, self._sinks = sources, sinks

    def _reachable(self) -> frozenset:
        """The devices the source still reaches in the residual network: the sending side."""
        R = self.residual
        seen, queue = {_SOURCE}, deque([_SOURCE])
        while queue:
            u = queue.popleft()
            for v, e in R[u].items():
                if v not in seen and e["capacity"] > e["flow"]:
                    seen.add(v)
                    queue.append(v)
        seen.discard(_SOURCE)
        return frozenset(seen)

"""The machine as ASTRA-sim's analytical network: dimensions of NPUs, each with one bandwidth
and one latency (astra-network-analytical's YAML: `topology`, `npus_count`, `bandwidth`
in GB/s = 2^30 B/s, `latency` in ns per hop).

ASTRA-sim numbers NPUs with dimension 0 fastest (congestion_unaware/MultiDimTopology.cpp,
`translate_address`) and charges a message at the bandwidth and latency of the FIRST
dimension in which its two NPUs differ (`get_dim_to_transfer`), with no contention
(the congestion-unaware backend; the congestion-aware one takes one dimension only).

So the machine is written as the dimensions that give every pair of ranks the schedule
uses its own time alone in schedc's model — α plus the route's latency, and the bytes over
its bottleneck (the route's resources, each carrying its share) — when some dimensions do:
one dimension of every rank, or two (the ranks of a host, then the hosts), each a
FullyConnected (one hop). When none does, the dimensions where the fewest pairs differ are
written, each pair charged the slowest of its dimension, and `mismatched` says how many.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..errors import UsageError
from ..model.topology import Topology


@dataclass(frozen=True)
class Dimension:
    npus: int
    bandwidth: Fraction  # bytes/s
    latency: Fraction  # s, per message (one hop)


@dataclass(frozen=True)
class Network:
    dimensions: tuple[Dimension, ...]
    pairs: int  # distinct (sender, receiver) rank pairs of the schedule
    mismatched: int  # of them, those ASTRA-sim charges otherwise than schedc's machine
    example: str = ""  # one mismatched pair, described

    def yaml(self) -> bytes:
        dims = self.dimensions
        rows = (("topology", ["FullyConnected"] * len(dims), ""),
                ("npus_count", [str(d.npus) for d in dims], ""),
                ("bandwidth", [repr(float(d.bandwidth / 2**30)) for d in dims],
                 "  # GB/s (2^30 B/s)"),
                ("latency", [repr(float(d.latency * 10**9)) for d in dims], "  # ns per hop"))
        return "".join(f"{key}: [ {', '.join(values)} ]{unit}\n"
                       for key, values, unit in rows).encode()


def network_of(topology: Topology, srcs: list[int], dsts: list[int], ranks: tuple[int, ...],
               alpha, nominal: dict) -> Network:
    """The network for the transfers from srcs[i] to dsts[i] (device ids) among `ranks`."""
    alone = _PairCosts(topology, alpha, nominal)
    position = {d: i for i, d in enumerate(ranks)}
    costs = [(position[a], position[b], *alone(a, b)) for a, b in zip(srcs, dsts)]
    best = None
    for shape in _shapes(topology, ranks):
        found = _fit(shape, costs, topology, ranks)
        if best is None or found.mismatched < best.mismatched:
            best = found
        if not found.mismatched:
            break
    assert best is not None
    return best


def _shapes(topology: Topology, ranks: tuple[int, ...]) -> list[tuple[int, ...]]:
    """One dimension; and (ranks per host, hosts) when the ranks are whole hosts, host after
    host, of the same size."""
    shapes: list[tuple[int, ...]] = [(len(ranks),)]
    hosts = [topology.devices[d].host for d in ranks]
    if None not in hosts:
        blocks = [hosts[0]]
        for h in hosts[1:]:
            if h != blocks[-1]:
                blocks.append(h)
        size = len(ranks) // len(blocks)
        if len(set(blocks)) == len(blocks) > 1 and size > 1 and all(
                hosts[i] == blocks[i // size] for i in range(len(ranks))):
            shapes.append((size, len(blocks)))
    return shapes


def _fit(shape: tuple[int, ...], costs, topology: Topology, ranks: tuple[int, ...]) -> Network:
    by_dim: list[list[tuple[int, int, Fraction, Fraction]]] = [[] for _ in shape]
    ends = np.array([(a, b) for a, b, _, _ in costs], dtype=np.int64).reshape(-1, 2)
    for cost, dim in zip(costs, first_dimension(ends[:, 0], ends[:, 1], shape).tolist()):
        assert dim >= 0, "a transfer between a rank and itself"
        by_dim[dim].append(cost)
    dims, mismatched, example = [], 0, ""
    for npus, pairs in zip(shape, by_dim):
        bandwidth = min((p[2] for p in pairs), default=Fraction(1))
        latency = max((p[3] for p in pairs), default=Fraction(0))
        dims.append(Dimension(npus, bandwidth, latency))
        for a, b, bw, lat in pairs:
            if bw != bandwidth or lat != latency:
                mismatched += 1
                if not example:
                    example = (f"{topology.devices[ranks[a]].name} → "
                               f"{topology.devices[ranks[b]].name}: {float(bw) / 1e9:g} GB/s "
                               f"in schedc's machine, {float(bandwidth) / 1e9:g} GB/s in "
                               "ASTRA-sim's")
    return Network(tuple(dims), len(costs), mismatched, example)


def first_dimension(a: np.ndarray, b: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """The first dimension in which NPUs a[i] and b[i] differ, the dimension whose bandwidth
    and latency ASTRA-sim charges (NPUs numbered dimension 0 fastest); -1 for the same NPU."""
    dim = np.full(len(a), -1)
    stride = 1
    for d, npus in enumerate(shape):
        dim[(dim < 0) & ((a // stride) % npus != (b // stride) % npus)] = d
        stride *= npus
    return dim


class _PairCosts:
    """(bandwidth, latency) of a lone transfer from a to b at the nominal point."""

    def __init__(self, topology: Topology, alpha, nominal: dict) -> None:
        self.topology, self.nominal = topology, nominal
        self.alpha = _value(alpha, nominal)
        self.bandwidths: dict[int, Fraction] = {}

    def __call__(self, a: int, b: int) -> tuple[Fraction, Fraction]:
        topology = self.topology
        slowest = max((share / self._bandwidth(r)
                       for r, share in topology.route_resources(a, b, None)), default=None)
        if slowest is None:
            raise UsageError(f"the route from {topology.devices[a].name} to "
                             f"{topology.devices[b].name} has no bandwidth limit; ASTRA-sim's "
                             "network needs one (give its links a `bw`)")
        latency = _value(topology.route_latency(a, b, None), self.nominal) \
            if topology.has_latency else Fraction(0)
        return 1 / slowest, self.alpha + latency

    def _bandwidth(self, resource: int) -> Fraction:
        found = self.bandwidths.get(resource)
        if found is None:
            bandwidth = self.topology.resources[resource].effective_bandwidth
            found = self.bandwidths[resource] = _value(bandwidth, self.nominal)
        return found


def _value(expr, nominal: dict) -> Fraction:
    return Fraction(str(expr.xreplace(nominal) if hasattr(expr, "xreplace") else expr))

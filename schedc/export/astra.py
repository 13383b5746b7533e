"""A schedule as an ASTRA-sim custom collective: per-rank Chakra execution traces of its sends
and receives, the workload that calls it, and the system, network and memory configurations.

How ASTRA-sim reads them (astra-sim/astra-sim, commit 518bd51):
- `"<coll>-implementation-custom": [PREFIX]` in the system JSON makes every call of that
  collective run `CustomAlgorithm` (system/astraccl/CollectiveImplLookup.cc:169), which reads
  `PREFIX.<rank>.et`, relative to the working directory (custom_collectives/CustomAlgorithm.cc:24).
- It issues every node whose dependencies are done: a COMM_SEND_NODE sends `comm_size` bytes
  to `comm_dst` with `comm_tag`, a COMM_RECV_NODE waits for `comm_size` bytes from `comm_src`
  (CustomAlgorithm.cc:55-85); the network matches a receive to a send by (tag, src, dst,
  size), in order (network_frontend/analytical/common/CallbackTracker.cc:29).
- The workload (`workload.<rank>.et`) is one COMM_COLL_NODE per rank, as ASTRA-sim's
  examples/workload/microbenchmarks/generator_scripts/all_reduce.py writes it.

schedc's rounds become dependencies: every node of a rank's round depends on all that rank's
nodes of its previous round with any (a rank waits for its own sends and receives, not for
the whole machine), and a transfer's tag is its round, so matching cannot cross rounds.
Local copies and reductions cost nothing in schedc's model and get no node.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

import numpy as np

from ..errors import UsageError
from ..model.ir import Batch, Schedule, Series, distinct, linear_value
from ..model.topology import Topology
from . import chakra
from .astra_network import Network, first_dimension, network_of
from .records import Records

CUSTOM_KEYS = {"allreduce": "all-reduce-implementation-custom",
               "allgather": "all-gather-implementation-custom",
               "reduce_scatter": "reduce-scatter-implementation-custom",
               "alltoall": "all-to-all-implementation-custom"}
TRACE_VERSION = "0.0.4"  # GlobalMetadata.version, as ASTRA-sim's own generators write it
MAX_NODES = 2**27  # nodes of all traces together: more is refused before any is written
BLOCK_BYTES = 2**24  # the byte matrix of one block of nodes: fast, and memory stays bounded
OPS = ("reduce", "copy", "send")  # a node's op, by index


@dataclass(frozen=True)
class AstraExport:
    """What `export astra` writes, made file by file when asked (`files`)."""

    prefix: str  # the custom collective's traces are PREFIX.<rank>.et
    kind: str
    ranks: int
    collective_bytes: int  # V at the nominal point: the workload's comm_size
    network: Network
    schedc_s: Fraction  # schedc's time of the schedule at the nominal point
    rounds_s: float  # Σ over rounds of the slowest message on the network written
    _nodes: _Nodes
    verified: bool = True  # False: written with --no-verify
    written: tuple[str, ...] = ()  # the files written (`schedc.export_astra(output=)`)

    @property
    def node_count(self) -> int:
        return len(self._nodes.rank)

    def files(self) -> Iterator[tuple[str, Iterator[bytes]]]:
        """(file name, its pieces) of every file, in a fixed order."""
        for rank, trace in enumerate(self._nodes.traces(self.ranks)):
            yield f"{self.prefix}.{rank}.et", iter((trace,))
        workload = self._workload()
        for rank in range(self.ranks):
            yield f"workload.{rank}.et", iter((workload,))
        yield "system.json", iter((self._system(),))
        yield "network.yml", iter((self.network.yaml(),))
        yield "remote_memory.json", iter((b'{"memory-type": "NO_MEMORY_EXPANSION"}\n',))

    def _workload(self) -> bytes:
        attrs = chakra.bool_attr("is_cpu_op", False) \
            + chakra.int_attr("comm_type", chakra.COLLECTIVE_TYPES[self.kind]) \
            + chakra.int_attr("comm_size", self.collective_bytes)
        return chakra.metadata(TRACE_VERSION) \
            + chakra.node(0, f"{self.prefix}_{self.kind}", chakra.COMM_COLL_NODE, attrs)

    def _system(self) -> bytes:
        config = {"scheduling-policy": "FIFO", "preferred-dataset-splits": 1,
                  CUSTOM_KEYS[self.kind]: [self.prefix], "local-mem-bw": 50}
        return (json.dumps(config, indent=2) + "\n").encode()

    def command(self, binary: str = "AstraSim_Analytical_Congestion_Unaware") -> str:
        """How to run ASTRA-sim on the files, from the folder that holds them."""
        return (f"{binary} --workload-configuration=workload "
                "--system-configuration=system.json --network-configuration=network.yml "
                "--remote-memory-configuration=remote_memory.json")


@dataclass(frozen=True, eq=False)
class _Nodes:
    """Every node of every trace, sorted by (rank, round, sends before receives)."""

    rank: np.ndarray
    round: np.ndarray
    send: np.ndarray  # bool
    peer: np.ndarray  # the other rank
    size: np.ndarray  # bytes
    op: np.ndarray  # index into OPS
    line: np.ndarray

    @cached_property
    def dependencies(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each node's id in its rank's trace, and its data dependencies: all the nodes of its
        rank's previous round with any, ids first .. first + count - 1."""
        rank, rounds = self.rank, self.round
        index = np.arange(len(rank))
        rank_start = np.searchsorted(rank, rank)
        new_group = np.ones(len(rank), dtype=bool)
        new_group[1:] = (rank[1:] != rank[:-1]) | (rounds[1:] != rounds[:-1])
        starts = np.flatnonzero(new_group)
        previous = np.concatenate([[0], starts[:-1]])
        same_rank = np.zeros(len(starts), dtype=bool)
        same_rank[1:] = rank[starts[1:]] == rank[starts[:-1]]
        group = np.cumsum(new_group) - 1
        count = np.where(same_rank, starts - previous, 0)[group]
        first = np.where(count > 0, previous[group] - rank_start, 0)
        return index - rank_start, first, count

    def traces(self, ranks: int) -> Iterator[bytes]:
        """The trace of each rank in turn, encoded a block of nodes at a time."""
        bounds = np.searchsorted(self.rank, np.arange(ranks + 1)).tolist()
        head = chakra.metadata(TRACE_VERSION)
        pending: list[bytes] = []  # the current rank's nodes from earlier blocks
        r = 0
        for lo, hi in self._blocks():
            data, ends = self._encode(lo, hi)
            starts = np.concatenate([[0], ends]).tolist()
            while r < ranks and bounds[r] < hi:
                a, z = max(bounds[r], lo) - lo, min(bounds[r + 1], hi) - lo
                pending.append(data[starts[a]:starts[z]].tobytes())
                if bounds[r + 1] > hi:
                    break
                yield head + b"".join(pending)
                pending, r = [], r + 1
        for _ in range(r, ranks):  # ranks with no node after the last block
            yield head

    def _blocks(self) -> Iterator[tuple[int, int]]:
        """Row ranges whose byte matrix (rows × the widest row) stays within BLOCK_BYTES."""
        width = 128 + 4 * self.dependencies[2]  # bytes a node may take, at most
        lo, total = 0, len(width)
        while lo < total:
            span = width[lo:lo + BLOCK_BYTES // 128]
            fits = np.arange(1, len(span) + 1) * np.maximum.accumulate(span) <= BLOCK_BYTES
            hi = lo + max(1, int(np.argmin(fits)) if not fits.all() else len(span))
            yield lo, hi
            lo = hi

    def _encode(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        ids, first, count = (a[lo:hi] for a in self.dependencies)
        receive = ~self.send[lo:hi]
        rounds, peer = self.round[lo:hi], self.peer[lo:hi]
        name = Records(hi - lo).const(b"r").decimal(rounds) \
            .choice([b" reduce", b" copy", b" send"], self.op[lo:hi]) \
            .choice([b" to ", b" from "], receive.astype(np.int64)).decimal(peer) \
            .const(b" (line ").decimal(self.line[lo:hi]).const(b")")
        return chakra.send_recv_nodes(ids, receive, first, count, self.size[lo:hi], peer,
                                      rounds, name)



def export_astra(schedule: Schedule, topology: Topology, alpha, nominal: dict,
                 schedc_s: Fraction, prefix: str | None = None,
                 verified: bool = True) -> AstraExport:
    """The ASTRA-sim files of `schedule` at the nominal point `nominal`."""
    kind = schedule.collective.kind
    if kind not in CUSTOM_KEYS:
        raise UsageError(f"'{schedule.name}' is a {kind}; ASTRA-sim runs custom "
                         f"{', '.join(CUSTOM_KEYS)} collectives only "
                         "(CollectiveImplLookup.cc:133-179)", schedule.collective.span)
    ranks = schedule.collective.ranks
    position = np.full(len(topology.devices), -1, dtype=np.int64)
    position[list(ranks)] = np.arange(len(ranks))
    nodes = _nodes(schedule, topology, position, nominal)
    total = linear_value(schedule.collective.size, nominal)
    if total.denominator != 1 or total <= 0:
        raise UsageError(f"the collective's size is {float(total):g} bytes at the nominal "
                         "point; ASTRA-sim's comm_size is a whole number of bytes",
                         schedule.collective.span)
    pairs = distinct(nodes.rank[nodes.send] * len(ranks) + nodes.peer[nodes.send])
    network = network_of(topology, [ranks[i] for i in (pairs // len(ranks)).tolist()],
                         [ranks[i] for i in (pairs % len(ranks)).tolist()], ranks, alpha, nominal)
    return AstraExport(prefix or schedule.name, kind, len(ranks), int(total), network,
                       schedc_s, _round_by_round(nodes, network), nodes, verified)


def _round_by_round(nodes: _Nodes, network: Network) -> float:
    """Σ over rounds of the slowest message as ASTRA-sim charges it on `network` (latency +
    bytes / bandwidth of the first dimension the two NPUs differ in): ASTRA-sim's time if
    every rank waited for the whole round; it waits for its own transfers only."""
    send = nodes.send
    rounds = nodes.round[send]
    dim = first_dimension(nodes.rank[send], nodes.peer[send],
                          [d.npus for d in network.dimensions])
    latency = np.array([float(d.latency) for d in network.dimensions])
    bandwidth = np.array([float(d.bandwidth) for d in network.dimensions])
    cost = latency[dim] + nodes.size[send] / bandwidth[dim]
    if not len(cost):
        return 0.0
    slowest = np.full(int(rounds.max()) + 1, 0.0)
    np.maximum.at(slowest, rounds, cost)
    return float(slowest.sum())


def _nodes(schedule: Schedule, topology: Topology, position: np.ndarray,
           nominal: dict) -> _Nodes:
    columns: list[list[np.ndarray]] = [[] for _ in range(6)]  # round src dst bytes op line
    count, base = 0, 0

    def add(batch: Batch, rounds: np.ndarray) -> None:
        nonlocal count
        src, dst = position[batch.src], position[batch.dst]
        if (src < 0).any() or (dst < 0).any():
            t = batch.transfer(int(np.flatnonzero((src < 0) | (dst < 0))[0]))
            raise UsageError(
                f"a transfer from {topology.devices[t.src].name} to "
                f"{topology.devices[t.dst].name} has an end that is not a rank; ASTRA-sim's "
                "custom collectives run between NPUs only (no in-network reduction)", batch.span)
        count += 2 * len(src)
        if count > MAX_NODES:
            raise UsageError(f"'{schedule.name}' needs more than {MAX_NODES:,} trace nodes (a "
                             "send and a receive per transfer); refused", schedule.span)
        for column, values in zip(columns, (rounds, src, dst, _whole_bytes(batch, nominal),
                                            np.full(len(src), OPS.index(batch.op)),
                                            np.full(len(src), batch.span.line))):
            column.append(values)

    for part in schedule.rounds.parts:
        if isinstance(part, Series):  # a round loop's batches, each over all its rounds
            for j, batch in enumerate(part.batches):
                lo, hi = int(part.starts[j, 0]), int(part.starts[j, -1])
                if hi > lo:
                    add(batch.take(slice(lo, hi)), base + part.round_of(j))
        else:
            for k, round_ in enumerate(part):
                for batch in round_.batches:
                    add(batch, np.full(len(batch), base + k))
        base += len(part)
    when, src, dst, size, op, line = (np.concatenate(c) if c else np.zeros(0, dtype=np.int64)
                                      for c in columns)
    rank = np.concatenate([src, dst])
    send = np.concatenate([np.ones(len(src), bool), np.zeros(len(src), bool)])
    rounds = np.concatenate([when, when])
    # By rank, then round, sends first; stable, so a round's transfers keep their order.
    order = np.argsort((rank * (base + 1) + rounds) * 2 + ~send, kind="stable")
    return _Nodes(rank[order], rounds[order], send[order], np.concatenate([dst, src])[order],
                  np.concatenate([size, size])[order], np.concatenate([op, op])[order],
                  np.concatenate([line, line])[order])


def _whole_bytes(batch, nominal: dict) -> np.ndarray:
    """The bytes of each transfer of a batch at the nominal point, refused unless whole."""
    whole = linear_value(batch.size, nominal)  # bytes of the buffer (or of a `send`)
    length, denominator = batch.length, batch.den * whole.denominator
    if len(length) and int(length.max()) * whole.numerator >= 2**62:  # beyond int64: exactly
        numerator = np.array([int(x) * whole.numerator for x in length.tolist()], dtype=object)
    else:
        numerator = length * whole.numerator
    bad = np.flatnonzero((numerator % denominator != 0) | (numerator <= 0))
    if len(bad):
        share = Fraction(int(numerator[bad[0]]), denominator)
        raise UsageError(f"a transfer of {float(share):g} bytes at the nominal point; "
                         "ASTRA-sim sends whole, positive numbers of bytes (comm_size): choose "
                         f"a size that {batch.den} divides", batch.span)
    return (numerator // denominator).astype(np.int64)

"""NCCL's choice for a size: `ncclTopoGetAlgoTime` (src/graph/tuning.cc:630-655) for every
algorithm × protocol that `updateCollCostTable` keeps (src/enqueue.cc:1989-2025), and the
first fastest of them (`topoGetAlgoInfo`, enqueue.cc:2028-2046: algorithms in NCCL's index
order, protocols within; a tie keeps the earlier). One operation (numPipeOps = 1), a sum,
no fp8, no tuner plugin, NCCL_ALGO/NCCL_PROTO unset.

The bands: over [1, max] bytes the time of each candidate is lat + n/(1000·bw) with lat
and bw fixed inside each stretch where the tree correction factor (one per power of two of
n/64) and the ring's plateau (n ≥ 64·nChannels·nRanks) stay put. Within a stretch the
fastest is found at its ends in NCCL's float arithmetic (numpy float32, as C++ does it) and
the stretch is halved until both ends agree; lines have the fastest of each size on one
interval each, so ends that agree hold between them. Every byte count of the last 4096
before a change is evaluated, so a boundary is the exact byte where NCCL's own
comparison changes its answer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import constants as K
from .comm import Comm
from .tuning import Table, f32, log2i

SCAN = 4096


@dataclass(frozen=True)
class Candidate:
    algorithm: int
    protocol: int

    @property
    def name(self) -> str:
        return f"{K.ALGORITHMS[self.algorithm]}/{K.PROTOCOLS[self.protocol]}"


@dataclass(frozen=True)
class Terms:
    """One candidate's time at one size, term by term (µs)."""

    candidate: Candidate
    latency: float  # the latency it is charged (after the ring's plateau factor)
    bandwidth: float  # GB/s, after the tree correction factor
    factor: str  # what changed either, or ""
    time: float  # lat + n / (1000 · bw), in float


@dataclass(frozen=True)
class Band:
    collective: int
    min_bytes: int
    max_bytes: int  # inclusive
    choice: Candidate | None  # None: no algorithm (NCCL fails the call)
    latency: float  # the chosen one's, in the band (µs)
    bandwidth: float  # GB/s


def candidates(comm: Comm, table: Table, f: int) -> list[Candidate]:
    """The pairs `updateCollCostTable` computes a time for with bw > 0 (enqueue.cc:1998-2024)."""
    if comm["nRanks"] == 1:
        return [Candidate(K.RING, K.SIMPLE)]
    out = []
    for a in range(len(K.ALGORITHMS)):
        if a in (K.COLLNET_DIRECT, K.COLLNET_CHAIN) and comm["collNetSupport"] != 1:
            continue
        if a in (K.COLLNET_DIRECT, K.COLLNET_CHAIN) and \
                comm["localRanks"] > K.NCCL_MAX_DIRECT_ARITY + 1:
            continue
        if a in (K.NVLS, K.NVLS_TREE) and (not comm["nvlsSupport"] or (
                f != K.ALLREDUCE and comm["localRanks"] > K.NCCL_MAX_NVLS_ARITY)):
            continue
        if a == K.NVLS and comm["collNetSupport"] != 1 and comm["nNodes"] > 1:
            continue
        out += [Candidate(a, p) for p in range(3) if table.bandwidth[f][a][p] != 0]
    return out


def _factors(comm: Comm, table: Table, f: int, c: Candidate, n: int) -> tuple[float, float, str]:
    """(lat, bw, what adjusted them) at n bytes (tuning.cc:639-650)."""
    if comm["nRanks"] == 1:
        return 0.0, float("inf"), ""
    bw = table.bandwidth[f][c.algorithm][c.protocol]
    lat = table.latency[f][c.algorithm][c.protocol]
    note = []
    log_size = log2i(n >> 6)
    tree = c.algorithm == K.TREE and f == K.ALLREDUCE and 0 <= log_size < 23
    nvls_tree = c.algorithm == K.NVLS_TREE and f == K.ALLREDUCE and 0 <= log_size < 24 and \
        comm["minCompCap"] >= 100 and comm["cpuArch"] == "x86"
    if tree or nvls_tree:
        factor = f32(K.TREE_CORRECTION_FACTOR[c.protocol][log_size])
        bw = f32(bw * factor)
        note.append(f"bw × treeCorrectionFactor[{K.PROTOCOLS[c.protocol]}][{log_size}] = "
                    f"{float(factor):.6g} (tuning.cc:623-646)")  # float32 to FLT_DIG
    if c.algorithm == K.RING and c.protocol == K.SIMPLE and comm["nNodes"] > 1 and \
            f == K.ALLREDUCE and n // (comm["nChannels"] * comm["nRanks"]) >= 64:
        plateau = 1.9 if comm["minCompCap"] < 80 else 1.4
        lat = f32(lat * plateau)
        note.append(f"lat × {plateau}, the ring's plateau: n/(nChannels·nRanks) ≥ 64 "
                    "(tuning.cc:647-650)")
    return lat, bw, "; ".join(note)


def terms(comm: Comm, table: Table, f: int, n: int) -> list[Terms]:
    out = []
    for c in candidates(comm, table, f):
        lat, bw, note = _factors(comm, table, f, c, n)
        time = 0.0 if comm["nRanks"] == 1 else \
            float(np.float32(lat) + np.float32(n) / np.float32(f32(1000 * bw)))
        out.append(Terms(c, lat, bw, note, time))
    return out


def _lines(comm: Comm, table: Table, f: int, n: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Each candidate's float latency and 1000·bw in the stretch of n (None: one rank)."""
    if comm["nRanks"] == 1:
        return None
    cands = candidates(comm, table, f)
    factors = [_factors(comm, table, f, c, n) for c in cands]
    return (np.array([lat for lat, _, _ in factors], dtype=np.float32)[:, None],
            np.array([f32(1000 * bw) for _, bw, _ in factors], dtype=np.float32)[:, None])


def _winners(lines: tuple[np.ndarray, np.ndarray] | None, count: int,
             sizes: np.ndarray) -> np.ndarray:
    """The index (into `candidates`) NCCL picks at each size of one stretch; -1: none."""
    if lines is None:
        return np.zeros(len(sizes), dtype=np.int64)
    if count == 0:
        return np.full(len(sizes), -1, dtype=np.int64)
    lat, rate = lines
    times = lat + sizes.astype(np.float32)[None, :] / rate  # float32 throughout, as in C++
    # argmin keeps the first of equal minima, as `<` over NCCL's order does.
    return np.argmin(times, axis=0)


def _stretches(comm: Comm, f: int, lo: int, hi: int) -> list[tuple[int, int]]:
    """[lo, hi] cut where a correction factor or the plateau changes."""
    cuts = {64 << k for k in range(25)}
    cuts.add(64 * comm["nChannels"] * comm["nRanks"])
    points = sorted(c for c in cuts if lo < c <= hi)
    starts = [lo, *points]
    ends = [p - 1 for p in points] + [hi]
    return list(zip(starts, ends, strict=True))


def bands(comm: Comm, table: Table, f: int, max_bytes: int) -> list[Band]:
    cands = candidates(comm, table, f)
    pieces: list[tuple[int, int, int]] = []  # (lo, hi, winner index)
    for lo, hi in _stretches(comm, f, 1, max_bytes):
        _split(_lines(comm, table, f, lo), len(cands), lo, hi, pieces)
    merged: list[list[int]] = []
    for lo, hi, w in pieces:
        if merged and merged[-1][2] == w and merged[-1][1] == lo - 1:
            merged[-1][1] = hi
        else:
            merged.append([lo, hi, w])
    out = []
    for lo, hi, w in merged:
        choice = cands[w] if w >= 0 else None
        lat, bw = (table.latency[f][choice.algorithm][choice.protocol],
                   table.bandwidth[f][choice.algorithm][choice.protocol]) if choice and \
            comm["nRanks"] > 1 else (0.0, 0.0)
        out.append(Band(f, lo, hi, choice, lat, bw))
    return out


def _split(lines, count: int, lo: int, hi: int, out: list[tuple[int, int, int]]) -> None:
    if hi - lo < SCAN:
        sizes = np.arange(lo, hi + 1, dtype=np.int64)
        winners = _winners(lines, count, sizes)
        changes = np.flatnonzero(np.diff(winners)) + 1
        starts = [0, *changes.tolist()]
        ends = [c - 1 for c in changes.tolist()] + [len(sizes) - 1]
        out.extend((lo + s, lo + e, int(winners[s])) for s, e in zip(starts, ends, strict=True))
        return
    at_ends = _winners(lines, count, np.array([lo, hi], dtype=np.int64))
    if at_ends[0] == at_ends[1]:
        out.append((lo, hi, int(at_ends[0])))
        return
    mid = (lo + hi) // 2
    _split(lines, count, lo, mid, out)
    _split(lines, count, mid + 1, hi, out)

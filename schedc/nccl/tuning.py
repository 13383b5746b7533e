"""`ncclTopoTuneModel` (src/graph/tuning.cc:243-585 at v2.30.7-1): the latency (µs) and
bandwidth (GB/s) of every collective × algorithm × protocol, in NCCL's arithmetic.

NCCL computes in C++ `float` with `double` constants; `f32` rounds each value where NCCL
stores it in a float (a float operation done in double and rounded once gives the same
float: +, -, ×, ÷ of two floats are exact or innocuously rounded in double). The comments
give each step's line.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from . import constants as K
from .comm import Comm

F32_MAX = float(np.finfo(np.float32).max)
_FLOATS = [True]  # False inside `real_arithmetic`: the same model in doubles, for formulas


def f32(x: float) -> float:
    """x rounded to the nearest C++ float, as a Python float (exactly representable)."""
    if not _FLOATS[0]:
        return float(x)
    with np.errstate(over="ignore"):  # beyond FLT_MAX is inf, as in C, and not a warning
        return float(np.float32(x))


@contextmanager
def real_arithmetic() -> Iterator[None]:
    """The model without NCCL's float rounding (formulas.py reads exact coefficients off it)."""
    _FLOATS[0] = False
    try:
        yield
    finally:
        _FLOATS[0] = True


def log2i(n: int) -> int:
    """src/include/bitops.h:292-320 (log2Down): ⌊log2 n⌋, -1 for 0."""
    return n.bit_length() - 1


def compcap_index(sm: int) -> int:  # tuning.cc:263-266
    return K.BLACKWELL if sm >= 100 else K.HOPPER if sm >= 90 else K.AMPERE if sm >= 80 else \
        K.VOLTA


def path_index(name: str) -> int:
    return K.PATH_TYPES.index(name)


@dataclass(frozen=True)
class Table:
    """latency[f][a][p] (µs), bandwidth[f][a][p] (GB/s; 0: not used), both floats as NCCL
    stores them, and maxThreads[a][p] (the `Max NThreads` row of NCCL's printout)."""

    latency: tuple[tuple[tuple[float, ...], ...], ...]
    bandwidth: tuple[tuple[tuple[float, ...], ...], ...]
    max_threads: tuple[tuple[int, ...], ...]


def _max_threads(comm: Comm) -> tuple[tuple[int, ...], ...]:  # tuning.cc:244-257
    ring = comm.graph("ring")
    threads = [[0, 0, 0] for _ in K.ALGORITHMS]
    simple = 256 if f32(ring.bwIntra * ring.nChannels) <= K.PCI_BW else K.NCCL_SIMPLE_MAX_NTHREADS
    threads[K.RING][K.SIMPLE] = simple
    threads[K.TREE][K.SIMPLE] = K.NCCL_SIMPLE_MAX_NTHREADS
    for a in (K.COLLNET_DIRECT, K.COLLNET_CHAIN, K.NVLS, K.NVLS_TREE):
        threads[a][K.SIMPLE] = K.NCCL_MAX_NTHREADS
    for a in (K.RING, K.TREE):
        threads[a][K.LL] = K.NCCL_LL_MAX_NTHREADS
        threads[a][K.LL128] = K.NCCL_LL128_MAX_NTHREADS
    return tuple(tuple(t) for t in threads)


def pat_enabled(comm: Comm) -> bool:  # tuning.cc:215-223 (NCCL_PAT_ENABLE unset: 2)
    return comm["minCompCap"] >= 60 and comm["nNodes"] == comm["nRanks"] and \
        comm["netDeviceType"] == "HOST"


def net_overhead(comm: Comm) -> float:  # tuning.cc:228-233 (NCCL_NET_OVERHEAD unset)
    return 2.0 if (comm["cpuArch"], comm["cpuVendor"]) == ("x86", "AMD") else 1.0


def tune_model(comm: Comm) -> Table:
    n_nodes, n_ranks = comm["nNodes"], comm["nRanks"]
    lat = [[[0.0] * 3 for _ in K.ALGORITHMS] for _ in K.FUNCTIONS]
    bws = [[[0.0] * 3 for _ in K.ALGORITHMS] for _ in K.FUNCTIONS]
    threads = _max_threads(comm)
    if n_ranks <= 1:  # :261
        return Table(_freeze(lat), _freeze(bws), threads)
    cc = compcap_index(comm["minCompCap"])
    index2 = n_nodes - 1 if n_nodes <= 2 else 2  # :267
    amd = comm["cpuVendor"] in ("AMD", "MIXED")
    index1 = cc if n_nodes == 1 else (1 if amd else 0)  # :269-271
    ll_max_bw = K.LL_MAX_BWS[index1][index2]
    tree_bw = K.PER_CH_MAX_TREE_BWS[cc][index2]
    ring_ll128_bw = K.PER_CH_MAX_RING_LL128_BWS[cc][index2]
    tree_ll128_bw = K.PER_CH_MAX_TREE_LL128_BWS[cc][index2]
    nvls_tree_bw = K.PER_CH_MAX_NVLS_TREE_BWS[cc][index2]
    hw_lat = [[list(p) for p in a] for a in K.HW_LATENCIES]
    if comm["cpuArch"] == "POWER":  # :278-280
        hw_lat[K.HW_PCI][K.TREE][K.SIMPLE] = hw_lat[K.HW_PCI][K.RING][K.SIMPLE]
    ppn = f32(f32(n_ranks) / f32(n_nodes))  # :281
    graphs = [comm.graph(a) for a in K.ALGORITHMS]
    intra_hw = [K.HW_NVLINK if g.typeIntra == "NVL" else K.HW_PCI for g in graphs]  # :284-285
    hw = [h if n_nodes == 1 else K.HW_NET for h in intra_hw]  # :286
    for f in range(len(K.FUNCTIONS)):
        nsteps = 2 * (n_ranks - 1) if f == K.ALLREDUCE else \
            n_ranks - 1 if f in (K.REDUCE_SCATTER, K.ALLGATHER) else n_ranks  # :289-291
        for a, g in enumerate(graphs):
            if not considered(comm, f, a):
                continue
            for p in range(3):
                if not pair_allowed(comm, f, a, p):
                    continue
                busbw = _bus_bandwidth(comm, f, a, p, g, cc, ppn, ll_max_bw, tree_bw,
                                       ring_ll128_bw, tree_ll128_bw, nvls_tree_bw)
                if busbw is None:
                    continue  # NVLS with fewer than 2 channels (:309): left at 0
                if not (a != K.RING and f in (K.ALLGATHER, K.REDUCE_SCATTER)):  # :377-382
                    ratio = f32(1.0 * n_ranks / nsteps) if a in (K.RING, K.NVLS, K.NVLS_TREE) \
                        else f32(0.5)
                    busbw = f32(busbw * ratio)
                bws[f][a][p] = busbw
                lat[f][a][p] = _latency(comm, f, a, p, g, nsteps, ppn, hw_lat, intra_hw, hw)
    _apply_enables(comm, bws)
    return Table(_freeze(lat), _freeze(bws), threads)


def considered(comm: Comm, f: int, a: int) -> bool:
    """The algorithms tuning.cc computes for a collective (:294-298)."""
    if f in (K.BROADCAST, K.REDUCE) and a != K.RING:
        return False
    if f in (K.REDUCE_SCATTER, K.ALLGATHER) and a not in (K.PAT, K.RING, K.NVLS,
                                                          K.COLLNET_DIRECT):
        return False
    return not (f == K.ALLREDUCE and a == K.PAT)


def pair_allowed(comm: Comm, f: int, a: int, p: int) -> bool:  # :301-304
    if a in (K.NVLS, K.NVLS_TREE) and p != K.SIMPLE:
        return False
    return not (f in (K.REDUCE_SCATTER, K.ALLGATHER) and a == K.PAT and
                (p != K.SIMPLE or not pat_enabled(comm)))


def _bus_bandwidth(comm, f, a, p, g, cc, ppn, ll_max_bw, tree_bw, ring_ll128_bw,
                   tree_ll128_bw, nvls_tree_bw) -> float | None:
    n_nodes = comm["nNodes"]
    collnet = a in (K.COLLNET_DIRECT, K.COLLNET_CHAIN)
    bw = g.bwIntra if n_nodes <= 2 or collnet else g.bwInter  # :306
    bw = f32(bw)
    if a in (K.NVLS_TREE, K.NVLS):  # :307-323
        if g.nChannels < 2:
            return None
        intra = f32(f32(f32(f32(g.bwIntra) * f32(K.NVLS_EFFICIENCY[cc])) * (g.nChannels - 1))
                    / g.nChannels)
        intra = f32(intra * 2.0) if f == K.ALLREDUCE else f32(intra * f32(f32(ppn - 1) / ppn))
        inter = f32(f32(g.bwInter) * (2 if n_nodes <= 2 and a == K.NVLS_TREE else 1))
        bw = min(intra, inter, f32(nvls_tree_bw) if a == K.NVLS_TREE else F32_MAX)
    busbw = f32(g.nChannels * bw)  # :324
    if a == K.RING and p == K.LL:  # :327
        busbw = f32(min(ll_max_bw, busbw * .5))
    if a == K.RING and p == K.LL128:  # :328-329
        busbw = f32(min(busbw * 0.92, g.nChannels * ring_ll128_bw))
    if a == K.TREE and f == K.ALLREDUCE:  # :330-331
        busbw = f32(min(busbw * .92, g.nChannels * tree_bw))
    if a == K.TREE and p == K.LL:  # :332
        busbw = f32(min(busbw * 1.0 / 3.8, ll_max_bw))
    if a == K.TREE and p == K.LL128:  # :333-335
        busbw = f32(min(busbw * (7.0 / 9.0 if n_nodes == 1 else 120.0 / 128.0),
                        g.nChannels * tree_ll128_bw))
    if a == K.TREE and comm["maxTreePattern"] == K.PATTERN_TREE:  # :336
        busbw = f32(busbw * .85)
    if a == K.PAT:  # :337
        busbw = f32(busbw * .75)
    if collnet and p != K.SIMPLE:  # :338-339
        busbw = 0.0
    if a == K.COLLNET_DIRECT and p == K.SIMPLE:  # :340-350
        if f in (K.ALLGATHER, K.REDUCE_SCATTER):
            busbw = f32(ppn * f32(min(f32(g.bwIntra), f32(f32(g.bwInter) * f32(0.9)))))
        elif g.nChannels == 0:
            busbw = 0.0  # C++ gets NaN here; with no channels NCCL disables CollNet (init.cc:1452)
        else:
            factor = f32(ppn / (1.0 * g.nChannels))
            factor = f32(factor - f32(f32(factor - 1) / 2))
            busbw = f32(busbw / factor)
            if comm["minCompCap"] >= 90:
                busbw = f32(busbw * .85)
    if a in (K.NVLS, K.COLLNET_DIRECT) and p == K.SIMPLE and \
            f in (K.ALLGATHER, K.REDUCE_SCATTER) and n_nodes > 1:
        busbw = 0.0  # :353-374: schedc models no CollNet plugin with iallgather/ireducescatter
    return busbw


def _latency(comm, f, a, p, g, nsteps, ppn, hw_lat, intra_hw, hw) -> float:  # :384-435
    n_nodes, n_ranks = comm["nNodes"], comm["nRanks"]
    latency = f32(K.BASE_LATENCIES[a][p])
    intra_lat = f32(hw_lat[intra_hw[a]][a][p])
    inter_lat = f32(hw_lat[K.HW_NET][K.TREE][p] if ppn == 1 else hw_lat[K.HW_NET][a][p])
    inter_lat = f32(inter_lat + f32(g.latencyInter))
    if p == K.SIMPLE:
        inter_lat = f32(inter_lat + f32(g.latencyInter))
    local = n_ranks // n_nodes
    if a == K.RING:
        step = f32(hw_lat[hw[a]][a][p])
        if f in (K.REDUCE, K.BROADCAST):
            if g.sameChannels:
                return f32(latency + step)
            if p == K.SIMPLE:
                step = f32(hw_lat[hw[a]][K.TREE][p])
            return f32(latency + f32(nsteps * step))
        overhead = 0.0
        if n_nodes > 1:
            overhead = net_overhead(comm)
            if p == K.SIMPLE:
                overhead = f32(overhead * 3)
        intra_lat = max(intra_lat, overhead)
        inter_steps = 0 if n_nodes == 1 else 2 * (n_nodes - 1) if f == K.ALLREDUCE else n_nodes - 1
        return f32(latency + f32(f32((nsteps - inter_steps) * intra_lat) +
                                 f32(inter_steps * inter_lat)))
    if a == K.TREE:
        if f == K.ALLREDUCE:
            inner = f32(f32((local - 1) * intra_lat) + f32(log2i(n_nodes) * inter_lat))
            return f32(latency + f32(2 * inner))
        return latency
    if a == K.COLLNET_DIRECT:
        extra = 2 * (f32(min(1, local - 1) * intra_lat) + (local - 1) * 0.4) + inter_lat
        return f32(latency + extra)
    if a == K.COLLNET_CHAIN:
        return f32(latency + f32(f32(2 * (local - 1) * intra_lat) + inter_lat))
    if a == K.NVLS:
        return f32(intra_lat + inter_lat) if n_nodes > 1 else intra_lat
    if a == K.NVLS_TREE:
        return f32(latency + f32(intra_lat + f32(2 * log2i(n_nodes) * inter_lat)))
    if f in (K.ALLGATHER, K.REDUCE_SCATTER):  # PAT
        return f32(latency + (log2i(n_nodes) * (inter_lat / 3.5) + n_ranks * 2.8))
    return latency


def _apply_enables(comm: Comm, bws: list) -> None:
    """:440-541 with NCCL_ALGO and NCCL_PROTO unset: LL128 only where its rule allows,
    NVLS-tree not on one node, CollNet only with collnetEnable, CollNet direct only on an
    NVSwitch system."""
    n_nodes, cc_min, cc_max = comm["nNodes"], comm["minCompCap"], comm["maxCompCap"]
    for f in range(len(K.FUNCTIONS)):
        for a in range(len(K.ALGORITHMS)):
            g = comm.graph(K.ALGORITHMS[a])
            disable = (n_nodes == 1 and a == K.NVLS_TREE) or \
                (not comm["collnetEnable"] and (a in (K.COLLNET_DIRECT, K.COLLNET_CHAIN) or
                                               (a == K.NVLS and n_nodes > 1))) or \
                (comm["collnetEnable"] and a == K.COLLNET_CHAIN and
                 not comm["collNetChainSupport"]) or \
                (comm["nvsCount"] == 0 and a == K.COLLNET_DIRECT)
            for p in range(3):
                enable = True
                if p == K.LL128:  # :518-536 (NCCL_LL128_C2C unset: 1)
                    inter = path_index(g.typeInter)
                    enable = inter <= K.PATH_PXN if cc_min >= 90 else inter <= K.PATH_PXB
                    enable = enable and path_index(g.typeIntra) <= K.PATH_NVB
                    enable = enable and (cc_min == cc_max or cc_min >= 90) and cc_min >= 70
                if disable or not enable:
                    bws[f][a][p] = 0.0


def _freeze(rows: list) -> tuple:
    return tuple(tuple(tuple(p) for p in a) for a in rows)


def printed(value: float, width: int) -> str:
    """A value as NCCL's "%8.1f" / "%6.1f" prints it (C rounds half to even on the binary
    value, as Python's format does)."""
    return f"{value:{width}.1f}"


assert math.isclose(f32(0.1), 0.10000000149011612)

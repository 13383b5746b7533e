"""NCCL's tuning constants, each with its line in the NCCL version the model follows.

The lines are of `src/graph/tuning.cc` unless the name says otherwise, at tag v2.30.7-1
(commit 73cf112295c33aee2b895f329f592f2a9b4b0f97 of github.com/NVIDIA/nccl). The values
are typed in from there; `tests/test_nccl_model.py` reads them back out of the mirror of
that commit when it is present, so a typing slip cannot go unnoticed.
"""

from __future__ import annotations

from ..choices import NCCL_PROTOCOLS

VERSION = "2.30.7"
TAG = "v2.30.7-1"
COMMIT = "73cf112295c33aee2b895f329f592f2a9b4b0f97"

# Index order of NCCL's arrays (src/include/plugin/nccl_tuner.h:28-40, nccl_common.h:74-78).
ALGORITHMS = ("tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat")
NCCL_ALGO_NAMES = ("Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT")
NCCL_PROTO_NAMES = NCCL_PROTOCOLS  # "LL", "LL128", "Simple": ncclProtoStr
PROTOCOLS = tuple(name.lower() for name in NCCL_PROTO_NAMES)  # as the tuner plugin reads them
FUNCTIONS = ("broadcast", "reduce", "allgather", "reduce_scatter", "allreduce")
NCCL_FUNC_NAMES = ("Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce")
TREE, RING, COLLNET_DIRECT, COLLNET_CHAIN, NVLS, NVLS_TREE, PAT = range(7)
LL, LL128, SIMPLE = range(3)
BROADCAST, REDUCE, ALLGATHER, REDUCE_SCATTER, ALLREDUCE = range(5)
HW_NVLINK, HW_PCI, HW_NET = range(3)  # nccl_tuner.h:45-47
VOLTA, AMPERE, HOPPER, BLACKWELL = range(4)  # nccl_tuner.h:50-53

# Path types (src/include/graph.h:117-147) and tree patterns (graph.h:160-169).
PATH_TYPES = ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "NET", "DIS")
PATH_NVB, PATH_PXB, PATH_PXN = 2, 5, 7
PATTERN_TREE = 3
PATTERNS = {1: "BALANCED_TREE", 2: "SPLIT_TREE", 3: "TREE", 4: "RING", 5: "NVLS",
            6: "COLLNET_DIRECT"}

# src/include/device.h:91-114, :199, :213; src/graph/topo.h:25 (PCI_BW).
MAXCHANNELS = 64
NCCL_MAX_NTHREADS = 640
NCCL_SIMPLE_MAX_NTHREADS = 512
NCCL_LL_MAX_NTHREADS = 512
NCCL_LL128_MAX_NTHREADS = 640
NCCL_MAX_DIRECT_ARITY = 7
NCCL_MAX_NVLS_ARITY = 32
PCI_BW = 12.0
WARP_SIZE = 32

NVLS_EFFICIENCY = (0.0, 0.0, 0.85, 0.74)  # :139-144 (float)
BASE_LATENCIES = (  # :150-155, [algorithm][protocol], µs
    (6.8, 14.0, 8.4), (6.6, 14.0, 8.4), (0, 0, 0), (0, 0, 0), (0, 0, 0), (0, 0, 0),
    (8.0, 8.0, 8.0))
HW_LATENCIES = (  # :157-176, [NVLINK|PCI|NET][algorithm][protocol], µs
    ((0.6, 1.25, 4.0), (0.6, 1.9, 3.4), (0, 0, 3.7), (0, 0, 2.8), (0, 0, 25), (0, 0, 25),
     (0, 0, 4.0)),
    ((1.0, 1.9, 4.0), (1.0, 2.5, 5.7), (0, 0, 3.7), (0, 0, 2.8), (0, 0, 0), (0, 0, 0),
     (0, 0, 4.0)),
    ((5.0, 8.5, 14), (2.7, 4.0, 14.0), (0, 0, 31), (0, 0, 30), (0, 0, 18), (0, 0, 20.9),
     (0, 0, 14)))
LL_MAX_BWS = (  # :178-183, [compcap or CPU row][1 node, 2 nodes, more], GB/s
    (39.0, 39.0, 20.4), (87.7, 22.5, 19.0), (141.0, 45.0, 35.0), (2 * 141.0, 2 * 45.0, 2 * 35.0))
PER_CH_MAX_RING_LL128_BWS = (  # :185-190
    (20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 36.7), (40.0, 40.0, 40.0))
PER_CH_MAX_TREE_LL128_BWS = (  # :192-197
    (20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 29.0), (55.6, 31.67, 20.0))
PER_CH_MAX_TREE_BWS = (  # :199-204
    (26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (38.7, 41.4, 36.0), (70.0, 42.8, 24.0))
PER_CH_MAX_NVLS_TREE_BWS = (  # :206-211
    (26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (0.0, 57.7, 45.5), (0.0, 96.0, 80.0))
TREE_CORRECTION_FACTOR = (  # :623-627 (float), [protocol][log2(nBytes >> 6)]
    (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0,
     1.0, 1.0, 1.0),
    (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9,
     1.0, 1.0, 1.0),
    (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9,
     .9, .9))

# Where each rule of the model is, for the text and the JSON (--explain cites them).
LINES = {
    "nvlsEfficiency": "tuning.cc:139-144", "baseLatencies": "tuning.cc:150-155",
    "hwLatencies": "tuning.cc:157-176", "llMaxBws": "tuning.cc:178-183",
    "perChMaxRingLL128Bws": "tuning.cc:185-190", "perChMaxTreeLL128Bws": "tuning.cc:192-197",
    "perChMaxTreeBws": "tuning.cc:199-204", "perChMaxNVLSTreeBws": "tuning.cc:206-211",
    "patEnable": "tuning.cc:215-223", "netOverhead": "tuning.cc:228-233",
    "indices": "tuning.cc:263-276", "nsteps": "tuning.cc:289-291",
    "pairs": "tuning.cc:294-304", "bw": "tuning.cc:306", "nvls_bw": "tuning.cc:307-323",
    "busBw": "tuning.cc:324", "refinements": "tuning.cc:327-337",
    "collnet_bw": "tuning.cc:338-374", "algBw": "tuning.cc:376-382",
    "latency": "tuning.cc:384-435", "enable": "tuning.cc:440-541",
    "treeCorrectionFactor": "tuning.cc:623-627", "time": "tuning.cc:630-655",
    "costTable": "enqueue.cc:1989-2025", "choice": "enqueue.cc:2028-2046",
    "nBytes": "enqueue.h:39-41 (ncclFuncMaxSendRecvCount)",
    "MAXCHANNELS": "device.h:91",
}

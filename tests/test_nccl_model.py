"""NCCL's tuning model (schedc/nccl) against a table and choices NCCL itself printed, and
against tuning.cc by hand.

The real log: NCCL 2.29.7 (git master 3619159) with NCCL_DEBUG_SUBSYS=TUNING, two ranks of
one RTX 5090 (SM 120) on two "hosts" (NCCL_HOSTID differs, so nNodes = 2, one GPU per node)
over NET/Socket, quoted from docs/tmp/default-suboptimal-search.md of the public repository
yunwei37/nccl-eBPF (found with the code search; lines excerpted). Its tuning.cc differs from
v2.30.7-1, the version schedc follows, only in formatting and in perChMaxNVLSTreeBws for
Blackwell beyond two nodes (43.8 → 80.0), which no entry of this log uses.

The log prints no graph, so its graph inputs are read off three of its own entries: ring
Broadcast Simple 2.4 GB/s = nChannels × bw (nsteps = nRanks: ratio 1), and PAT AllGather
3.6 GB/s = 0.75 × the tree graph's nChannels × bw (tuning.cc:337), and the tree pattern from tree AllReduce Simple (below). Every other entry — all
latencies, and the LL, LL128, tree and all-reduce bandwidths — then follows from the model.
"""

from __future__ import annotations

import pytest

from schedc.nccl import constants as K
from schedc.nccl.choice import bands, candidates, terms
from schedc.nccl.comm import given
from schedc.nccl.tuning import printed, tune_model

# NCCL INFO lines (latency/bandwidth per protocol LL | LL128 | Simple), as printed.
LOG = {
    ("Broadcast", "Ring"): "9.3/   1.2 |    18.0/   0.0 |    22.4/   2.4",
    ("AllGather", "Ring"): "11.6/   2.4 |    22.5/   0.0 |    22.4/   4.8",
    ("AllGather", "CollNetDirect"): "5.0/   0.0 |     8.5/   0.0 |    14.0/   0.0",
    ("AllReduce", "Tree"): "16.8/   0.5 |    31.0/   0.0 |    36.4/   1.9",
    ("AllReduce", "Ring"): "16.6/   1.2 |    31.0/   0.0 |    36.4/   2.4",
    ("AllReduce", "CollNetDirect"): "5.0/   0.0 |     8.5/   0.0 |    14.0/   0.0",
    ("AllReduce", "CollNetChain"): "5.0/   0.0 |     8.5/   0.0 |    14.0/   0.0",
    ("AllReduce", "NVLS"): "0.0/   0.0 |     0.0/   0.0 |     0.0/   0.0",
    ("AllGather", "PAT"): "0.0/   0.0 |     0.0/   0.0 |    17.6/   3.6",
    ("ReduceScatter", "PAT"): "0.0/   0.0 |     0.0/   0.0 |    17.6/   3.6",
    ("AllReduce", "PAT"): "0.0/   0.0 |     0.0/   0.0 |     0.0/   0.0",
}
# "Broadcast: N Bytes -> Algo RING proto P" lines of the same run (sizes 1 KiB × 2^k).
LOG_CHOICES = {1024: "ring/ll", 8192: "ring/ll", 16384: "ring/ll", 32768: "ring/simple",
               131072: "ring/simple", 134217728: "ring/simple"}


def _graph(name: str, channels: int, bw: float, intra: str, inter: str) -> dict:
    return {f"{name}.nChannels": channels, f"{name}.bwIntra": bw, f"{name}.bwInter": bw,
            f"{name}.typeIntra": intra, f"{name}.typeInter": inter,
            f"{name}.latencyInter": 0.0, f"{name}.sameChannels": 1}


def socket_pair():
    values = {"nNodes": 2, "nRanks": 2, "localRanks": 1, "minCompCap": 120,
              "maxCompCap": 120, "cpuArch": "x86", "cpuVendor": "INTEL",
              "netDeviceType": "HOST", "nChannels": 2,
              # one GPU per node: all NIC traffic to/from the same GPU, NCCL_TOPO_PATTERN_TREE
              # (graph.h:166), and the tree's ×.85 (tuning.cc:336) that the log's 1.9 shows
              "maxTreePattern": 3,
              "collnetEnable": 0, "collNetChainSupport": 0, "collNetSupport": 0,
              "nvlsSupport": 0, "nvlsChannels": 0, "nvsCount": 0,
              # Socket through the host bridge: SYS; LL128 then off (tuning.cc:522), as logged
              **_graph("ring", 2, 1.2, "LOC", "SYS"), **_graph("tree", 2, 2.4, "LOC", "SYS"),
              **_graph("nvls", 0, 0.0, "LOC", "SYS"),
              **_graph("collnet_direct", 0, 0.0, "LOC", "SYS"),
              **_graph("collnet_chain", 0, 0.0, "LOC", "SYS")}
    return given(values, "the log")


@pytest.mark.parametrize(("func", "algo"), sorted(LOG))
def test_table_matches_nccls_printout(func: str, algo: str) -> None:
    table = tune_model(socket_pair())
    f, a = K.NCCL_FUNC_NAMES.index(func), K.NCCL_ALGO_NAMES.index(algo)
    ours = " |".join(f"{printed(table.latency[f][a][p], 8)}/{printed(table.bandwidth[f][a][p], 6)}"
                     for p in range(3))
    assert ours.strip() == LOG[func, algo]


def test_choice_matches_nccls_log() -> None:
    comm = socket_pair()
    found = bands(comm, tune_model(comm), K.BROADCAST, 2**28)
    for size, expected in LOG_CHOICES.items():
        (band,) = [b for b in found if b.min_bytes <= size <= b.max_bytes]
        assert band.choice.name == expected, size


def test_broadcast_boundary_by_hand() -> None:
    """LL 9.3 µs + n/1.2 GB/s against Simple 22.4 µs + n/2.4 GB/s (float values of the
    table): equal at n = (22.4 - 9.3) / (1/1200 - 1/2400) µs/B ≈ 31440 B; the exact byte
    where NCCL's float comparison turns is within a few bytes of it, and the two bands
    meet there."""
    comm = socket_pair()
    table = tune_model(comm)
    lat_ll, lat_simple = table.latency[K.BROADCAST][K.RING][K.LL], \
        table.latency[K.BROADCAST][K.RING][K.SIMPLE]
    by_hand = (lat_simple - lat_ll) / (1 / 1200 - 1 / 2400)
    first, second = bands(comm, table, K.BROADCAST, 2**20)[:2]
    assert (first.choice.name, second.choice.name) == ("ring/ll", "ring/simple")
    assert abs(first.max_bytes - by_hand) < 4 and second.min_bytes == first.max_bytes + 1
    at = {t.candidate.name: t.time for t in terms(comm, table, K.BROADCAST, first.max_bytes)}
    assert at["ring/ll"] <= at["ring/simple"]
    after = {t.candidate.name: t.time for t in terms(comm, table, K.BROADCAST, second.min_bytes)}
    assert after["ring/simple"] < after["ring/ll"]


def test_pat_only_with_one_gpu_per_node_and_never_for_allreduce() -> None:
    comm = socket_pair()
    table = tune_model(comm)
    assert "pat/simple" in {c.name for c in candidates(comm, table, K.ALLGATHER)}
    assert all(c.algorithm != K.PAT for c in candidates(comm, table, K.ALLREDUCE))
    two = comm.with_value("localRanks", 2, "test").with_value("nRanks", 4, "test")
    assert all(c.algorithm != K.PAT for c in candidates(two, tune_model(two), K.ALLGATHER))


def test_constants_are_nccls(nccl_tuning_source: str | None) -> None:
    """The constants typed into constants.py, read back out of tuning.cc at the commit."""
    if nccl_tuning_source is None:
        pytest.skip("no NVIDIA/nccl mirror under /work/.mirror")
    lines = nccl_tuning_source.splitlines()
    assert "{  6.8, 14.0,  8.4 }, {  6.6, 14.0,  8.4 },  // Tree, Ring" in lines[150]
    assert "{ { 5.0, 8.5, 14 }, { 2.7, 4.0, 14.0 }," in lines[170]
    assert "{141.0, 45.0 /*avg of ring & tree*/, 35.0}" in lines[180]
    assert "{38.7, 41.4, 36.0}, /* Hopper (N1/N2/N4) */" in lines[201]
    assert "busBw = std::min(llMaxBw, busBw * .5);" in lines[326]
    assert "lat *= comm->minCompCap < 80 ? 1.9 : 1.4;" in lines[648]
    assert K.BASE_LATENCIES[K.RING] == (6.6, 14.0, 8.4)
    assert K.HW_LATENCIES[K.HW_NET][K.RING] == (2.7, 4.0, 14.0)
    assert K.PER_CH_MAX_TREE_BWS[K.HOPPER] == (38.7, 41.4, 36.0)


@pytest.fixture
def nccl_tuning_source() -> str | None:
    import subprocess
    from pathlib import Path
    mirror = Path("/work/.mirror/NVIDIA+nccl/repo")
    if not mirror.is_dir():
        return None
    out = subprocess.run(["git", "-C", str(mirror), "show", f"{K.COMMIT}:src/graph/tuning.cc"],
                         capture_output=True, text=True, check=False)
    return out.stdout if out.returncode == 0 else None


def test_boundary_formulas_hold_at_a_count_they_were_not_checked_at() -> None:
    """A formula in nNodes against the boundary found byte by byte at nNodes = 16 and 12
    (neither among the counts the formula was checked at)."""
    import schedc
    from schedc.nccl.formulas import at_nodes
    model = schedc.nccl_model(schedc.load("schedules/seed/nvlink_2x8.sched"))
    formulas = model.formulas["allgather"]
    (b,) = [x for x in formulas if (x.below, x.above) == ("ring/ll", "ring/ll128")]
    assert 16 not in b.checked_at and 12 not in b.checked_at
    for n in (12, 16):
        at = model.comm.with_value("nNodes", n, "test").with_value("nRanks", 8 * n, "test")
        found = bands(at, tune_model(at), K.ALLGATHER, 2**30)
        (edge,) = [x.max_bytes for x, y in zip(found, found[1:])
                   if (x.choice.name, y.choice.name) == ("ring/ll", "ring/ll128")]
        assert abs(edge - at_nodes(b.formula, n)) <= 2


def test_the_seeds_tree_boundary_formula_by_hand() -> None:
    """tree/LL → tree/LL128 on the seed's hosts, nNodes ≥ 3 (docs/nccl.md): latencies
    15.2 + 10 L and 31.5 + 17 L µs, bandwidths 10.2 × 0.5 and 145 × 0.6 GB/s (correction
    factors at log2(n/64) = 11): n = 1000 (16.3 + 7 L) / (1/5.1 - 1/87)."""
    import sympy

    import schedc
    from schedc.nccl.formulas import LOG2_NODES
    model = schedc.nccl_model(schedc.load("schedules/seed/nvlink_2x8.sched"),
                              collective="allreduce")
    (b,) = [x for x in model.formulas["allreduce"] if (x.below, x.above) == ("tree/ll",
                                                                            "tree/ll128")]
    r = sympy.Rational
    by_hand = 1000 * (r("16.3") + 7 * LOG2_NODES) / (1 / r("5.1") - 1 / r(87))
    assert sympy.simplify(b.formula - by_hand) == 0

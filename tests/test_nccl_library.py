"""NCCL's algorithms (schedules/lib/nccl.sched): every one verifies, on even and odd host
counts, and their time formulas equal closed forms derived by hand here, round by round.
Routing inside a host prefers NVLink (docs/routing.md): the double binary tree on the
machine where two GPUs share a NIC behind a PCIe switch, under both rules."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import sympy
from conftest import SCHEDULES, flat_machine, timings, write

import schedc

LIB = SCHEDULES / "lib" / "nccl.sched"
STUDY = SCHEDULES / "algorithms" / "shared_nic_2x8.sched"
MiB = 2**20


def _symbols(program):
    return {name: param.symbol for name, param in program.params.items()}


def _formulas(tmp_path, machine: str, body: str, *sets: str):
    path = write(tmp_path, "case.sched", f'{machine}\nimport "{LIB}"\n{body}')
    program, times = timings(path, *sets)
    return _symbols(program), {name: t.cost.formula for name, t in times.items()}


def _same(a, b) -> bool:
    return sympy.simplify(a - b) == 0


# ---- every algorithm verifies

def _hosts_machine(hosts: int, gpus: int) -> str:
    """hosts × gpus: NVLink to an NVSwitch that reduces, a NIC per GPU on its rail (the rails
    reduce too: SHARP), the rails joined by a spine."""
    return f"""param alpha = 1 us
param B_L = 450 GB/s
param B_N = 50 GB/s
topology {{
  host node[{hosts}] {{
    gpu g[{gpus}]
    switch nvs reduces
    link g[i] <-> nvs bw B_L class nvlink for i in 0..{gpus - 1}
  }}
  switch rail[{gpus}] reduces
  switch spine
  link node[h].g[i] <-> rail[i] bw B_N class nic for h in 0..{hosts - 1} for i in 0..{gpus - 1}
  link rail[i] <-> spine for i in 0..{gpus - 1}
}}
let ranks = [node[h].g[i] for h in 0..{hosts - 1} for i in 0..{gpus - 1}]
let G = [node[h].g for h in 0..{hosts - 1}]
let heads = [node[h].g[0] for h in 0..{hosts - 1}]
"""


def _every_algorithm(hosts: int, gpus: int) -> str:
    last = hosts - 1
    return f"""allreduce V over ranks
schedule ring = nccl_ring_allreduce([ranks, [ranks[{hosts * gpus - 1} - i] for i in 0..{hosts * gpus - 1}]], 2)
schedule tree = nccl_tree_allreduce([G, [[node[h].g[(i + 1) % {gpus}] for i in 0..{gpus - 1}] for h in 0..{last}]], 3)
schedule nvls_tree = nccl_nvls_tree_allreduce(G, [node[h].nvs for h in 0..{last}], 3)
schedule collnet_direct = nccl_collnet_direct_allreduce(G, rail, 3)
schedule collnet_chain = nccl_collnet_chain_allreduce(G, rail[0], 3)
allgather V over ranks
schedule ring_ag = nccl_ring_allgather([ranks, ranks], 2)
reduce_scatter V over ranks
schedule ring_rs = nccl_ring_reduce_scatter([ranks, ranks], 2)
allgather V over heads
schedule pat_ag = nccl_pat_allgather(heads)
reduce_scatter V over heads
schedule pat_rs = nccl_pat_reduce_scatter(heads)
let one = node[0].g
allreduce V over one
schedule nvls = nccl_nvls_allreduce(one, node[0].nvs, 3)
"""


def test_the_suite_covers_every_nccl_schedule():
    defined = set(re.findall(r"^schedule (\w+)\(", LIB.read_text(), re.M))
    called = set(re.findall(r"= (nccl_\w+)\(", _every_algorithm(2, 2)))
    assert defined == called


@pytest.mark.parametrize(("hosts", "gpus"), [(1, 4), (2, 4), (3, 2), (5, 2), (6, 1), (7, 3)])
def test_every_nccl_algorithm_verifies(tmp_path, hosts, gpus):
    text = _hosts_machine(hosts, gpus) + f'import "{LIB}"\nparam V = 64 MiB\n' + _every_algorithm(hosts, gpus)
    verdicts = schedc.verify(schedc.load(write(tmp_path, "suite.sched", text)))
    assert len(verdicts) == 10
    assert [v.name for v in verdicts if not v.ok] == []


def test_a_broken_tree_is_caught(tmp_path):
    """The verifier is not vacuous here: a tree over chains of two of each host's three GPUs
    leaves the third without the sum."""
    text = _hosts_machine(2, 3) + f'import "{LIB}"\nparam V = 64 MiB\n' + """allreduce V over ranks
schedule short = nccl_tree_allreduce([[[node[h].g[i] for i in 0..1] for h in 0..1]], 2)
"""
    verdict, = schedc.verify(schedc.load(write(tmp_path, "short.sched", text)))
    assert not verdict.ok  # node[h].g[2] are in the collective but not in the tree


# ---- formulas, derived by hand on the textbook machine (one port of bandwidth B per rank)

@pytest.mark.parametrize(("n", "rings", "loops"), [(8, 1, 1), (8, 2, 3), (5, 3, 2)])
def test_ring_with_channels_and_loops(tmp_path, n, rings, loops):
    """Each of the 2(n-1)·loops steps, every rank sends one chunk per channel, V/(rings·loops·n)
    each, so V/(loops·n) through its port: T = 2(n-1)·loops·α + 2(n-1)·V/(n·B)."""
    ring_list = ", ".join(["ranks"] * rings)
    body = f"""allreduce V over ranks
schedule ar = nccl_ring_allreduce([{ring_list}], {loops})
allgather V over ranks
schedule ag = nccl_ring_allgather([{ring_list}], {loops})
reduce_scatter V over ranks
schedule rs = nccl_ring_reduce_scatter([{ring_list}], {loops})
"""
    s, f = _formulas(tmp_path, flat_machine(n), body)
    alpha, V, B = s["alpha"], s["V"], s["B"]
    assert _same(f["ar"], 2 * (n - 1) * loops * alpha + 2 * (n - 1) * V / (n * B))
    assert _same(f["ag"], (n - 1) * loops * alpha + (n - 1) * V / (n * B))
    assert _same(f["rs"], (n - 1) * loops * alpha + (n - 1) * V / (n * B))


def test_pat_steps(tmp_path):
    """n = 8: step s sends 2^s pieces of V/8 (offsets o < 8 - dist): 3α + 7V/(8B). n = 6
    (ranks 0-5 of 8): distances 4, 2, 1; pieces with o + dist < 6: {0}, {0} (4 + 2 = 6 is
    out), {0, 2, 4}: 3α + 5V/(6B). Reduce-scatter runs the same trees backwards."""
    body = """allgather V over ranks
schedule ag8 = nccl_pat_allgather(ranks)
reduce_scatter V over ranks
schedule rs8 = nccl_pat_reduce_scatter(ranks)
let six = [ranks[i] for i in 0..5]
allgather V over six
schedule ag6 = nccl_pat_allgather(six)
reduce_scatter V over six
schedule rs6 = nccl_pat_reduce_scatter(six)
"""
    s, f = _formulas(tmp_path, flat_machine(8), body)
    alpha, V, B = s["alpha"], s["V"], s["B"]
    assert _same(f["ag8"], 3 * alpha + 7 * V / (8 * B))
    assert _same(f["rs8"], 3 * alpha + 7 * V / (8 * B))
    assert _same(f["ag6"], 3 * alpha + 5 * V / (6 * B))
    assert _same(f["rs6"], 3 * alpha + 5 * V / (6 * B))


def test_tree_on_one_host_is_a_pipelined_chain(tmp_path):
    """One host, chain g0 - g1 - g2, c = 4 chunks, both trees on the chain (V/8 a chunk each,
    V/4 a round per link direction). Link g2 -> g1 (level 0) goes up in round x, down in x + 3;
    g1 -> g0 (level 1) up in x + 1, down in x + 2. g1's port is the busiest: out it carries
    up-chunks in rounds 1..4 and down-chunks in 3..6, in it receives in 0..3 and 2..5. Rounds
    0..6: two chunks in rounds 2..4, one in 0, 1, 5, 6: 7α + (3·2 + 4)·V/(4B) = 7α + 5V/(2B)."""
    body = """let chain = [ranks[i] for i in 0..2]
allreduce V over chain
schedule tree = nccl_tree_allreduce([[chain]], 4)
"""
    s, f = _formulas(tmp_path, flat_machine(4), body)
    assert _same(f["tree"], 7 * s["alpha"] + 5 * s["V"] / (2 * s["B"]))


def test_tree_across_two_hosts(tmp_path):
    """One GPU per host (k = 1), two hosts, c = 4, pieces of V/8. Tree 0 has host 0 as its root,
    tree 1 host 1: each round g1 sends chunk s up tree 0 and chunk s-1 down tree 1, and g0
    the mirror image; rounds 1..3 move two pieces per port, rounds 0 and 4 one:
    5α + (3·2 + 2)·V/(8B) = 5α + V/B."""
    body = """let two = [ranks[0], ranks[1]]
allreduce V over two
schedule tree = nccl_tree_allreduce([[[g[0]], [g[1]]]], 4)
"""
    s, f = _formulas(tmp_path, flat_machine(2), body)
    assert _same(f["tree"], 5 * s["alpha"] + s["V"] / s["B"])


def test_tree_across_three_hosts(tmp_path):
    """Three hosts of one GPU, c = 4, pieces of V/8. ncclGetBtree(3): tree 0 is 1 -> 2 -> 0;
    shifted by one, tree 1 is 2 -> 0 -> 1. Levels 0 and 1 below the root (level 2), so an
    edge at level λ goes up in round x + λ and down in x + 3 - λ. Per port, the offsets of
    its sends: g0 out {1, 2, 3}, g0 in {0, 1, 2}, g2 out {0, 1, 3}, g2 in {0, 2, 3}, g1 fewer.
    Rounds 0..6 move 1, 2, 3, 3, 3, 2, 1 pieces: 7α + 15·V/(8B)."""
    body = """let three = [ranks[i] for i in 0..2]
allreduce V over three
schedule tree = nccl_tree_allreduce([[[g[0]], [g[1]], [g[2]]]], 4)
"""
    s, f = _formulas(tmp_path, flat_machine(3), body)
    assert _same(f["tree"], 7 * s["alpha"] + 15 * s["V"] / (8 * s["B"]))


def _reducing_flat(n: int) -> str:
    return flat_machine(n).replace("switch sw", "switch sw reduces")


def test_nvls_and_collnet_chain(tmp_path):
    """NVLS, c = 4: each rank reduces V/4 into the switch and receives V/4 back per round,
    5 rounds of which the first and last move one chunk: 5α + 5V/(4B).
    CollNet chain, two hosts [g0, g1] and [g2, g3], c = 4: g0's port (head) sends up to X in
    stage 1 and down in stage 3, receives in stages 0 and 2; rounds 0..6, two chunks in
    rounds 2..4, one in 0, 1, 5, 6: 7α + 10V/(4B)."""
    body = """let four = [ranks[i] for i in 0..3]
allreduce V over four
schedule nvls = nccl_nvls_allreduce(four, sw, 4)
schedule chain = nccl_collnet_chain_allreduce([[g[0], g[1]], [g[2], g[3]]], sw, 4)
"""
    s, f = _formulas(tmp_path, _reducing_flat(4), body)
    alpha, V, B = s["alpha"], s["V"], s["B"]
    assert _same(f["nvls"], 5 * alpha + 5 * V / (4 * B))
    assert _same(f["chain"], 7 * alpha + 10 * V / (4 * B))


def test_collnet_direct(tmp_path):
    """Two hosts [g0, g1], [g2, g3] on the reducing switch, c = 4, pieces of V/(2c). Stage 0:
    each GPU sends its other part to that part's head (out 1, in 1); 1: heads reduce into the
    switch (out 1); 2: the switch sends back (in 1); 3: heads broadcast (out 1, in 1). Per
    port and round, the stages running: s = 0: 1 piece; 1, 2: 2; 3: 3; 4: 2 (stages 1-3: out
    1 and 3, in 2 and 3); 5: 2; 6: 1. 13 pieces: 7α + 13V/(8B)."""
    body = """let four = [ranks[i] for i in 0..3]
allreduce V over four
schedule direct = nccl_collnet_direct_allreduce([[g[0], g[1]], [g[2], g[3]]], [sw, sw], 4)
"""
    s, f = _formulas(tmp_path, _reducing_flat(4), body)
    assert _same(f["direct"], 7 * s["alpha"] + 13 * s["V"] / (8 * s["B"]))


def test_nvls_tree(tmp_path):
    """Two hosts of two GPUs, each GPU a port of B to its host's reducing switch and one of B
    to the network switch; c = 8 (in units of V/c: stage 0 out 1 to the switch, 1 in 1/2,
    2 and 3 the host trees 1/4 each way over the network port, 4 out 1/2, 5 in 1). Rounds
    0-3 and c+1..c+4 move 1, rounds 4..c move 3/2: 13α + (8 + 3/2·5)·V/8/B = 13α + 31V/(16B)."""
    machine = """param alpha = 1 us
param B = 25 GB/s
topology {
  host node[2] {
    gpu g[2]
    switch nvs reduces
    link g[i] <-> nvs bw B class nvlink for i in 0..1
  }
  switch net
  link node[h].g[i] <-> net bw B class nic for h in 0..1 for i in 0..1
}
let ranks = [node[h].g[i] for h in 0..1 for i in 0..1]
param V = 64 MiB
"""
    body = """allreduce V over ranks
schedule nvls_tree = nccl_nvls_tree_allreduce([node[h].g for h in 0..1], [node[h].nvs for h in 0..1], 8)
"""
    s, f = _formulas(tmp_path, machine, body)
    assert _same(f["nvls_tree"], 13 * s["alpha"] + 31 * s["V"] / (16 * s["B"]))


# ---- routing inside a host prefers NVLink: the double binary tree on a shared NIC

def _tree_by_hand(alpha, V, B_L, B_N, rule: str):
    """The tree of shared_nic_2x8.sched (one channel, c = 1): 30 rounds of V/2 per tree. In 28
    of them each host sends V/2 from chain GPU i to i-1 (or back down); 16 of those join two
    GPUs of one PCIe switch (pairs (1,0), (3,2), (5,4), (7,6), four times each: up on the
    child host, up on the root host, down on each). Preferring NVLink, all of it crosses the
    NVSwitch; under equal-cost multipath half goes through the bandwidth-less PCIe switch,
    so those rounds take V/(4·B_L). The two other rounds move V/2 each way over NIC 0."""
    pcie_pair = 16 * (V / (2 * B_L) if rule == "nvlink" else V / (4 * B_L))
    return 30 * alpha + pcie_pair + 12 * V / (2 * B_L) + 2 * V / (2 * B_N)


def test_the_tree_on_a_shared_nic_under_both_rules(tmp_path):
    program, preferred = timings(STUDY, names=["tree"])
    split = write(tmp_path, "split.sched", f"""import "{SCHEDULES}/machines/shared_nic_2x8.sched"
import "{LIB}"
topology {{ routing prefer none }}
param V = 192 MiB
allreduce V over ranks
schedule tree = nccl_tree_allreduce([hosts], 1)
""")
    _, ecmp = timings(split, names=["tree"])
    s = _symbols(program)
    args = (s["alpha"], s["V"], s["B_L"], s["B_N"])
    assert _same(preferred["tree"].cost.formula, _tree_by_hand(*args, "nvlink"))
    assert _same(ecmp["tree"].cost.formula, _tree_by_hand(*args, "ecmp"))
    # The figures at the machine's values, by hand: α = 0.83 µs, V = 192 MiB, 450 GB/s, 50 GB/s.
    nominal = {s["alpha"]: sympy.Rational(83, 10**8), s["V"]: 192 * MiB,
               s["B_L"]: 450 * 10**9, s["B_N"]: 50 * 10**9}
    assert float(_tree_by_hand(*args, "nvlink").xreplace(nominal)) == pytest.approx(10.3149e-3, rel=1e-4)
    assert float(_tree_by_hand(*args, "ecmp").xreplace(nominal)) == pytest.approx(8.5254e-3, rel=1e-4)
    assert float(preferred["tree"].time) == pytest.approx(10.3149e-3, rel=1e-4)
    assert float(ecmp["tree"].time) == pytest.approx(8.5254e-3, rel=1e-4)


STUDIES = [STUDY, SCHEDULES / "algorithms" / "nccl_one_host.sched",
           SCHEDULES / "algorithms" / "nccl_pat_4.sched"]


def test_the_studies_label_every_nccl_algorithm():
    """Every result schedule of the three studies stands for an NCCL algorithm (simple
    protocol), together all seven of NCCL's names, and all of them verify."""
    labels = []
    for study in STUDIES:
        text = study.read_text()
        assert len(re.findall(r"^schedule \w+ ", text, re.M)) == len(
            re.findall(r"^schedule \w+ as \w+/\w+ =", text, re.M))
        labels += re.findall(r"^schedule \w+ as (\w+)/(\w+)", text, re.M)
        verdicts = schedc.verify(schedc.load(study))
        assert verdicts and [v.name for v in verdicts if not v.ok] == []
    assert {a for a, _ in labels} == {"ring", "tree", "nvls", "nvls_tree", "collnet_direct",
                                      "collnet_chain", "pat"}
    assert {p for _, p in labels} == {"simple"}


# ---- the language: a conditional in lanes evaluates each branch on its own lanes

def test_a_conditional_in_lanes_evaluates_only_the_branch_taken(tmp_path):
    """The tree needs `L if m == 0 else log2(m & -m)` and `G[h][i - 1] if i > 0 else ...`
    inside rounds: before, both branches were evaluated on every lane (log2(0), index -1)."""
    body = """allreduce V over ranks
schedule x {
  for s in 0..0 round {
    for j in 0..7 {
      let level = 9 if j == 0 else log2(j & -j)
      let dst = ranks[j - 1] if j > 0 else ranks[7]
      if level == 1: copy all from ranks[j] to dst
    }
  }
}
"""
    s, f = _formulas(tmp_path, flat_machine(8), body)
    # level 1 for j = 2, 6 (lowest set bit 2): two copies, to ranks 1 and 5, one port each.
    assert _same(f["x"], s["alpha"] + s["V"] / s["B"])
    program, times = timings(write(tmp_path, "lanes.sched", flat_machine(8) + body))
    transfers = [(t.src, t.dst) for r in times["x"].schedule.rounds for t in r.transfers()]
    names = {d.id: d.name for d in program.topology.devices}
    assert sorted((names[a], names[b]) for a, b in transfers) == [("g[2]", "g[1]"), ("g[6]", "g[5]")]


# ---- PAT against NCCL's own PatAGAlgorithm / PatRSAlgorithm

NCCL = Path("/work/.mirror/NVIDIA+nccl/repo")  # the fetched mirror (skipped without it)
NCCL_COMMIT = "5067397c2676d5aed50042fc39e5c8ee96eb0027"
HARNESS = r"""
// Runs NCCL's host-callable PAT classes (src/include/collectives.h) for every rank and prints
// each op that is not skipped: sendDim, recvDim and the rank whose data it moves.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#define __device__
#define __host__
#define COMPILER_FFS(x) __builtin_ffs(x)
#define COMPILER_POPCOUNT32(x) __builtin_popcount(x)
static constexpr int PatUsed = 0x1, PatSkipped = 0x2;
template <typename Int> static int log2Up(Int x) { int n = 0; while ((Int(1) << n) < x) n++; return n; }
#include "pat.h"
int main(int argc, char** argv) {
  int nranks = atoi(argv[1]), rs = argv[2][0] == 'r';
  size_t count = 1 << 20;  // floats per rank, one chunk: NCCL_STEPS = 8 sets the aggregation
  for (int rank = 0; rank < nranks; rank++) {
    ncclPatStep ps;
    int n = 0;
    PatAGAlgorithm<float> ag(count * 4, 8, 16, 0, count, count, count, rank, nranks);
    PatRSAlgorithm<float> rsa(count * 4, 8, 16, 0, count, count, count, rank, nranks);
    do {
      if (rs) rsa.getNextOp(&ps); else ag.getNextOp(&ps);
      if (!(ps.flags & PatSkipped))
        printf("%d %d %d %zu\n", rank, ps.sendDim, ps.recvDim, (rs ? ps.inpIx : ps.outIx) / count);
    } while (ps.last != 2 && ++n < 100000);
  }
}
"""


def _nccl_source(path: str) -> str:
    """A file of the NVIDIA/nccl mirror at NCCL_COMMIT, to compile with g++ (else skip)."""
    if not NCCL.is_dir() or shutil.which("g++") is None:
        pytest.skip("needs the NVIDIA/nccl mirror and g++")
    return subprocess.run(["git", "-C", str(NCCL), "show", f"{NCCL_COMMIT}:{path}"],
                          capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def nccl_pat(tmp_path_factory):
    """A program running NCCL's PAT classes, compiled from the mirror's collectives.h."""
    header = _nccl_source("src/include/collectives.h")
    start = header.index("struct ncclPatStep {")
    end = header.index("\n};", header.index("class PatAGAlgorithm")) + 3
    folder = tmp_path_factory.mktemp("pat")
    (folder / "pat.h").write_text(header[start:end] + "\n")
    (folder / "harness.cc").write_text(HARNESS)
    subprocess.run(["g++", "-O1", "-std=c++17", "-o", str(folder / "harness"), str(folder / "harness.cc")],
                   check=True, capture_output=True)
    return folder / "harness"


def _nccl_sends(harness, n: int, kind: str) -> set[tuple[int, int, int]]:
    """(rank, dimension, offset of the data's rank from the sender, mod n) of every send."""
    out = subprocess.run([str(harness), str(n), kind], capture_output=True, text=True, check=True).stdout
    sends = set()
    for line in out.splitlines():
        rank, send_dim, _, data = (int(x) for x in line.split())
        if send_dim >= 0:
            sends.add((rank, send_dim, (data - rank) % n))
    return sends


def _schedc_sends(tmp_path, n: int, kind: str) -> set[tuple[int, int, int]]:
    """The same of schedc's PAT. NCCL's all-gather sends over dimension d to rank - 2^d and
    its reduce-scatter to rank + 2^d (src/device/prims_simple.h: `int sendPeer = mode ==
    primsModePatAg ? (rank - delta + nranks) % nranks : (rank + delta) % nranks;`)."""
    collective = "allgather" if kind == "ag" else "reduce_scatter"
    call = "nccl_pat_allgather" if kind == "ag" else "nccl_pat_reduce_scatter"
    body = f"{collective} V over ranks\nschedule pat = {call}(ranks)\n"
    path = write(tmp_path, f"pat_{n}_{kind}.sched", flat_machine(n) + f'import "{LIB}"\n' + body)
    program, times = timings(path)
    index = {d.id: int(d.name[2:-1]) for d in program.topology.devices if d.kind == "gpu"}
    sends = set()
    for r in times["pat"].schedule.rounds:
        for t in r.transfers():
            src, dst = index[t.src], index[t.dst]
            piece = int(t.region[0] * n)
            dist = (src - dst) % n if kind == "ag" else (dst - src) % n
            assert dist & (dist - 1) == 0  # a power of two: one dimension
            sends.add((src, dist.bit_length() - 1, (piece - src) % n))
    return sends


@pytest.mark.parametrize("kind", ["ag", "rs"])
@pytest.mark.parametrize("n", [2, 3, 5, 6, 8, 12, 16, 17, 32])
def test_pat_sends_what_nccls_pat_sends(nccl_pat, tmp_path, n, kind):
    """Every rank sends, over every dimension 2^d, the same pieces (as offsets from itself)
    as NCCL's PatAGAlgorithm / PatRSAlgorithm, run from NCCL's source: the binomial trees
    rooted at every rank. (NCCL orders and groups them by its aggregation; schedc's rounds
    send each dimension's pieces together.)"""
    nccl = _nccl_sends(nccl_pat, n, "r" if kind == "rs" else "a")
    assert nccl  # the harness ran NCCL's code
    assert _schedc_sends(tmp_path, n, kind) == nccl


# ---- the double binary tree against NCCL's own ncclGetDtree

TREES = r"""
// Prints NCCL's double binary tree (src/graph/trees.cc) for every rank:
// rank, parent in tree 0, child type in tree 0, parent in tree 1, child type in tree 1.
#include <cstdio>
#include <cstdlib>
typedef enum { ncclSuccess = 0 } ncclResult_t;
#include "trees.inc"
int main(int argc, char** argv) {
  int n = atoi(argv[1]);
  for (int r = 0; r < n; r++) {
    int u0, a, b, t0 = 0, u1, c, d, t1 = 0;
    ncclGetDtree(n, r, &u0, &a, &b, &t0, &u1, &c, &d, &t1);
    printf("%d %d %d %d %d\n", r, u0, t0, u1, t1);
  }
}
"""


@pytest.fixture(scope="module")
def nccl_trees(tmp_path_factory):
    source = _nccl_source("src/graph/trees.cc")
    folder = tmp_path_factory.mktemp("trees")
    (folder / "trees.inc").write_text(source.replace('#include "nccl.h"', ""))
    (folder / "trees.cc").write_text(TREES)
    subprocess.run(["g++", "-O1", "-o", str(folder / "trees"), str(folder / "trees.cc")],
                   check=True, capture_output=True)
    return folder / "trees"


@pytest.mark.parametrize("hosts", [2, 3, 4, 5, 6, 7, 8, 11, 13, 16])
def test_the_host_trees_are_nccls(nccl_trees, tmp_path, hosts):
    """Every host's chain head reduces into its parent host as ncclGetDtree says, in both
    trees, at the GPU NCCL_TOPO_PATTERN_BALANCED_TREE attaches it to (connect.cc,
    ncclTopoPreset: child 0 of a parent -> the parent's chain GPU 1, child 1 -> GPU 0)."""
    out = subprocess.run([str(nccl_trees), str(hosts)], capture_output=True, text=True,
                         check=True).stdout
    expected = set()
    for line in out.splitlines():
        rank, up0, type0, up1, type1 = (int(x) for x in line.split())
        for tree, up, kind in ((0, up0, type0), (1, up1, type1)):
            if up >= 0:
                expected.add((tree, rank, up, 1 if kind == 0 else 0))
    text = _hosts_machine(hosts, 2) + f'import "{LIB}"\nparam V = 64 MiB\n' + \
        "allreduce V over ranks\nschedule tree = nccl_tree_allreduce([G], 2)\n"
    program, times = timings(write(tmp_path, "tree.sched", text))
    host_of = {d.id: d.host for d in program.topology.devices}
    gpu_of = {d.id: int(d.name.rsplit("[", 1)[1][:-1]) for d in program.topology.devices
              if d.kind == "gpu"}
    found = set()
    for r in times["tree"].schedule.rounds:
        for t in r.transfers():
            if t.op == "reduce" and host_of[t.src] != host_of[t.dst]:
                assert gpu_of[t.src] == 0  # the chain's head talks to the parent host
                found.add((int(t.region[0] * 2), host_of[t.src], host_of[t.dst], gpu_of[t.dst]))
    assert found == expected

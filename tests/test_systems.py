"""The library of real systems (schedules/machines/systems/): each compiles under each
fabric, and the seed's three all-reduces run and verify on it; the contiguous ring's time is
checked against the data-sheet figures cited in the file, worked out here by hand."""

from __future__ import annotations

from fractions import Fraction

import pytest
from conftest import ROOT

import schedc

SYSTEMS = ROOT / "schedules" / "machines" / "systems"
GB, GBIT = 10**9, Fraction(10**9, 8)

# system: (GPUs per host, NVLink per direction, the network bandwidth the last GPU of a host
# reaches another host with), from the figures each file cites.
FIGURES = {
    "dgx_a100": (8, 300 * GB, 200 * GBIT),
    "dgx_h100": (8, 450 * GB, 400 * GBIT),
    "dgx_h200": (8, 450 * GB, 400 * GBIT),
    "dgx_b200": (8, 900 * GB, 400 * GBIT),
    "gb200_nvl72": (72, 900 * GB, 400 * GBIT),
    "aws_p4d": (8, 300 * GB, 100 * GBIT),  # g[7] and g[6] share one 100 Gb/s EFA
    "aws_p5": (8, 450 * GB, 4 * 100 * GBIT),  # four 100 Gb/s EFAs per GPU
    "gcp_a3_high": (8, 450 * GB, 200 * GBIT),  # one 200 Gb/s NIC per pair of GPUs
    "gcp_a3_mega": (8, 450 * GB, 200 * GBIT),
    "nd_a100_v4": (8, 300 * GB, 200 * GBIT),
    "nd_h100_v5": (8, 450 * GB, 400 * GBIT),
}

SEED_ALLREDUCES = """\
import "{system}"
import "{lib}"
param V = 192 MiB
allreduce V over ranks
schedule ring = ring_allreduce(ranks)
schedule interleaved = ring_allreduce([node[h].g[i] for i in 0..gpus-1 for h in 0..hosts-1])
schedule hierarchical {{
  parallel for h in 0..hosts-1: ring_reduce_scatter(node[h].g)
  parallel for i in 0..gpus-1: ring_allreduce([node[h].g[i] for h in 0..hosts-1], part(i of gpus))
  parallel for h in 0..hosts-1: ring_allgather(node[h].g)
}}
"""


def test_every_system_is_in_the_table():
    assert {p.stem for p in SYSTEMS.glob("*.sched")} == set(FIGURES)


FABRIC_START = "# The cross-host network, chosen by the structural param `fabric`"


def test_every_system_ends_with_the_same_fabric_block():
    blocks = {p.name: p.read_text(encoding="utf-8").partition(FABRIC_START)[2]
              for p in sorted(SYSTEMS.glob("*.sched"))}
    assert all(blocks.values())
    assert len(set(blocks.values())) == 1, "the fabric block differs between system files"


def _study(tmp_path, name: str):
    path = tmp_path / f"{name}_seed.sched"
    path.write_text(SEED_ALLREDUCES.format(system=SYSTEMS / f"{name}.sched",
                                           lib=ROOT / "schedules" / "lib" / "ring.sched"),
                    encoding="utf-8")
    return path


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_the_seed_allreduces_run_on_each_system(tmp_path, name):
    gpus, b_l, network = FIGURES[name]
    session = schedc.load(_study(tmp_path, name))
    assert session.structural()["hosts"] == 2
    assert all(v.ok for v in schedc.verify(session))
    times = {t.name: t.time for t in schedc.compare(session)}
    assert set(times) == {"ring", "interleaved", "hierarchical"}
    # The contiguous ring over 2·G ranks: 2(2G-1) rounds of V/(2G) per rank; the slowest hop
    # is the one cross-host hop at the network bandwidth, or NVLink if that is slower.
    p = 2 * gpus
    rounds = 2 * (p - 1)
    alpha = Fraction(83, 10**8)
    V = 192 * 2**20
    assert times["ring"] == rounds * alpha + rounds * Fraction(V, p) / min(b_l, network)


@pytest.mark.parametrize("fabric", [1, 2, 3])
def test_each_fabric_compiles_and_keeps_the_ring_when_non_blocking(tmp_path, fabric):
    session = schedc.load(_study(tmp_path, "dgx_h100"), [f"fabric={fabric}"])
    times = {t.name: t.time for t in schedc.compare(session)}
    classes = {r.cls for r in session.program.topology.resources}
    assert ("uplink" in classes) == (fabric != 2)
    alpha, V = Fraction(83, 10**8), 192 * 2**20
    assert times["ring"] == 30 * alpha + 30 * Fraction(V, 16) / (400 * GBIT)


@pytest.mark.parametrize("values, message", [
    (["fabric=0"], "fabric is 1 (rail-optimised), 2 (one switch) or 3 (leaf-spine), not 0"),
    (["fabric=4"], "fabric is 1 (rail-optimised), 2 (one switch) or 3 (leaf-spine), not 4"),
    (["spines=0"], "spines counts spine switches: at least 1, not 0"),
])
@pytest.mark.parametrize("system", sorted(FIGURES))
def test_a_fabric_outside_the_block_is_refused_at_its_set(tmp_path, system, values, message):
    # Without the file's `if ...: error` guards, fabric 4 declared no network at all (every
    # link's `if fabric == k` false) and spines 0 divided by zero in a `let`.
    with pytest.raises(schedc.SchedcError) as caught:
        schedc.load(_study(tmp_path, system), values)
    assert message in str(caught.value)
    assert caught.value.render().startswith(f"--set {values[0].split('=')[0]}:1:1: error:")


def test_an_oversubscribed_leaf_spine_slows_the_hierarchical_rounds(tmp_path):
    # fabric 3 on DGX H100, 2 hosts: a leaf per host, 2 spines, uplinks of 8·B_N/(2·2) at
    # oversub 2. The hierarchical schedule's 2 cross-host rounds send V/16 from each of the 8
    # GPUs: V/2 up from a leaf, V/4 per uplink of 2·B_N: V/(8·B_N) a round, where the NIC
    # alone takes V/(16·B_N).
    session = schedc.load(_study(tmp_path, "dgx_h100"), ["fabric=3", "oversub=2"])
    hierarchical = {t.name: t.time for t in schedc.compare(session)}["hierarchical"]
    alpha, V, b_n = Fraction(83, 10**8), 192 * 2**20, 400 * GBIT
    assert hierarchical == 16 * alpha + 14 * Fraction(V, 8 * 450 * GB) + 2 * Fraction(V, 8 * b_n)


def test_a_link_whose_if_holds_for_no_iteration_declares_nothing(tmp_path):
    # The fabric file's links carry `if fabric == 1`: false for every iteration of the other
    # fabrics. Such a link declares no link (it used to lose its loop variables: 'unknown
    # name h').
    path = tmp_path / "none.sched"
    path.write_text("param n = 2\ntopology {\n  gpu g[n]\n  switch s\n}\n"
                    "let ports = [g[i] for i in 0..n-1]\n"
                    "topology {\n  link ports[i] <-> s bw 1 GB/s for i in 0..n-1 if n == 3\n}\n",
                    encoding="utf-8")
    session = schedc.load(path)
    assert session.program.topology.hops == []

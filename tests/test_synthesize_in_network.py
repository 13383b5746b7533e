"""`synthesize --collective allreduce` through switches that reduce in the network (NVLS,
SHARP), and `bound`'s optimum there: all-reduce's own cut over all cuts. Every expected figure
below is derived by hand from the machine written in the test."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

import schedc
from schedc.analysis.synthesize.innetwork import Pipeline

ROOT = Path(__file__).parents[1]
GIB = 2 ** 30


def machine(tmp_path: Path, hosts: int, nic: str | None = "50 GB/s", nvlink: str = "280 GB/s",
            extra: str = "") -> Path:
    """`hosts` hosts of 4 GPUs, each GPU on its host's reducing switch at `nvlink` (and at
    `nic` on one spine that does not reduce)."""
    lines = ["param V = 1 GiB", "topology {", f"  host node[{hosts}] {{", "    gpu g[4]",
             "    switch sw reduces", f"    link g[i] <-> sw bw {nvlink} for i in 0..3", "  }"]
    if nic is not None:
        lines += ["  switch spine",
                  f"  link node[h].g[i] <-> spine bw {nic} for h in 0..{hosts - 1} for i in 0..3"]
    lines += [extra, "}",
              f"let ranks = [node[h].g[i] for h in 0..{hosts - 1} for i in 0..3]",
              "allreduce V over ranks"]
    path = tmp_path / f"reducing_{hosts}.sched"
    path.write_text("\n".join(lines) + "\n")
    return path


def synthesized(tmp_path: Path, source: Path, **options):
    out = tmp_path / "out.sched"
    return out, schedc.synthesize(source, "allreduce", output=out, **options)


def test_one_switch_reaches_a_rank_link(tmp_path):
    # One host: each rank must receive the sum, V, over its one 400 GB/s link (and send V):
    # the optimum is V / 400 GB/s, and reduce-into-switch then multicast reaches it as the
    # chunks grow (K + 1 rounds of V/K: B(K) = (K + 1)/K · V/400 GB/s).
    source = machine(tmp_path, 1, nic=None, nvlink="400 GB/s")
    out, s = synthesized(tmp_path, source)
    bound = Fraction(GIB, 400 * 10 ** 9)
    assert s.method == "in-network" and s.depth == 2
    assert s.optimum == bound
    assert s.bandwidth_time == bound * Fraction(s.chunks + 1, s.chunks)
    assert bound < s.bandwidth_time <= bound * Fraction(101, 100)
    assert s.chunks == 100  # the fewest K with (K + 1)/K ≤ 1.01
    assert "reduce d from G[0][i] to S[0]" in s.text
    (b,) = schedc.bound(schedc.load(source))
    assert b.optimum.value == bound and b.best_value == bound  # a lower bound, and the best
    # The written file is a file like any other: it compiles and verifies on its own.
    assert schedc.time(schedc.load(out), s.name).time == s.time


def test_two_hosts_reach_the_host_cut(tmp_path):
    # Two hosts: the host cut has 4 × 50 GB/s = 200 GB/s each way, below one rank's
    # 280 + 50: the optimum is V / 200 GB/s. The schedule's steady state: a rank's NVLink
    # carries V + V/4 each way (its data in, its quarter back), 1.25 V / 280 GB/s = V/224 GB/s;
    # its NIC a quarter over the ring of 2 hosts twice, 2·(1/2)·(V/4) / 50 GB/s = V/200 GB/s.
    # Trees (reduce-scatter, then all-gather) need 2·(7/8)·V through a rank's 330 GB/s, more.
    source = machine(tmp_path, 2)
    _, s = synthesized(tmp_path, source)
    bound = Fraction(GIB, 200 * 10 ** 9)
    assert s.method == "in-network" and s.depth == 6
    assert s.optimum == bound and s.reached == pytest.approx(1.0, abs=1e-12)
    assert bound < s.bandwidth_time <= bound * Fraction(101, 100)
    assert "node[0] | node[1]" in s.optimum_cuts[0] or "node[1] | node[0]" in s.optimum_cuts[0]


def test_three_hosts_reach_the_hosts_end_bound(tmp_path):
    # Three hosts: the narrowest cut is still V / 200 GB/s (one host against two), but the
    # hosts, each an end that reduces, must send and receive 2(H-1)·V = 4V in all through
    # 3 × 200 GB/s: V / 150 GB/s, the larger. The quarters' ring over 3 hosts moves
    # 2·(2/3)·(V/4) = V/3 through each 50 GB/s NIC: V / 150 GB/s, so it reaches it.
    source = machine(tmp_path, 3)
    _, s = synthesized(tmp_path, source)
    bound = Fraction(GIB, 150 * 10 ** 9)
    assert s.method == "in-network" and s.optimum == bound
    assert s.reached == pytest.approx(1.0, abs=1e-12)
    assert bound < s.bandwidth_time <= bound * Fraction(101, 100)
    assert "end-host bound over hosts" in s.optimum_cuts[0]
    (b,) = schedc.bound(schedc.load(source))
    assert b.end_host is not None and b.end_host.hosts == 3 and b.end_host.value == bound
    assert b.best_value == bound and b.optimum.value == Fraction(GIB, 200 * 10 ** 9)


def test_a_slow_switch_link_is_said(tmp_path):
    # Two hosts with 240 GB/s to the switch: the bound is V / 200 GB/s (host cut, and 2V over
    # 2 × 200 GB/s), but a rank's switch link carries V + V/4 each way: 1.25 V / 240 GB/s =
    # V / 192 GB/s, so the schedule reaches 192/200 = 96 % of the optimum's rate, and says so;
    # `--within` is then taken of its own limit. (Trees: 2·(7/8)·V over 290 GB/s, slower.)
    source = machine(tmp_path, 2, nvlink="240 GB/s")
    _, s = synthesized(tmp_path, source)
    assert s.method == "in-network" and s.optimum == Fraction(GIB, 200 * 10 ** 9)
    assert s.reached == pytest.approx(0.96, rel=1e-12)
    assert "many-chunk limit is 1.041667x it" in s.text
    goal = Fraction(GIB, 192 * 10 ** 9)
    assert goal < s.bandwidth_time <= goal * Fraction(101, 100)


def test_trees_are_kept_where_they_do_better(tmp_path):
    # Four GPUs on a 400 GB/s reducing switch, also linked pairwise at 400 GB/s: reduce-
    # scatter then all-gather can use 4 × 400 GB/s into a rank, 2·(3/4)·V / 1600 GB/s =
    # 3V/3200 GB/s, below the switch's V/400 GB/s.
    links = "  link node[0].g[i] <-> node[0].g[j] bw 400 GB/s for i in 0..3 for j in 0..3 if i < j"
    source = machine(tmp_path, 1, nic=None, nvlink="400 GB/s", extra=links)
    _, s = synthesized(tmp_path, source)
    assert s.method == "trees"
    assert s.optimum == Fraction(3 * GIB, 3200 * 10 ** 9)


def test_the_pipeline_model_is_the_compiled_time(tmp_path):
    # B(K) = steady + excess/K holds for every K ≥ stages - 1: fitted at K = 5 and 10 (the
    # 6 stages of 2 hosts, less one), it gives the compiled time (no start-ups here: all
    # bandwidth) at other counts exactly, and its steady state is the host cut's V / 200 GB/s.
    out, s = synthesized(tmp_path, machine(tmp_path, 2))
    compiled = {k: schedc.time(schedc.load(out, sets=(f"chunks={k}",)), s.name).time
                for k in (5, 10, 7, 25)}
    model = Pipeline.of(6, compiled[5], compiled[10])
    assert model.at(7) == compiled[7] and model.at(25) == compiled[25]
    assert model.steady == Fraction(GIB, 200 * 10 ** 9)


def test_the_fastest_count_at_alpha(tmp_path):
    source = machine(tmp_path, 2)
    text = source.read_text().replace("param V = 1 GiB", "param V = 1 GiB\nparam alpha = 5 us")
    source.write_text(text)
    out, s = synthesized(tmp_path, source)
    times = {k: schedc.time(schedc.load(out, sets=(f"chunks={k}",)), s.name).time
             for k in (s.alpha_chunks - 1, s.alpha_chunks, s.alpha_chunks + 1)}
    assert times[s.alpha_chunks] == min(times.values())


@pytest.mark.parametrize("name", ["nvidia_dgxc_1node_8xH100_nvlink_allreduce",
                                  "aws_2node_p5_16xH100_efa_allreduce"])
def test_as_fast_as_nccl_at_192_mib(name):
    # The library's NVLS (one host) and NVLS-tree (two) schedules are this family at 8 and 16
    # chunks; at the α-optimal count the synthesized one is at least as fast.
    source = ROOT / "schedules" / "calibration" / f"{name}.sched"
    session = schedc.load(source, sets=("V=192MiB",))
    rows = schedc.compare(session, with_synthesized=True)
    ours = [r for r in rows if r.name.startswith("synthesized_")]
    assert ours and ours[0].time <= min(r.time for r in rows if r not in ours)


def test_the_written_groups_follow_the_host_count(tmp_path):
    # Host-major ranks and switches named node[h].sw: the file writes the groups as a loop
    # over the ranks, so with the machine's `hosts` param set to 3 it is the 3-host schedule,
    # the same as synthesizing at 3 hosts with the same chunks.
    text = machine(tmp_path, 2).read_text().replace("node[2]", "node[hosts]").replace(
        "0..1", "0..hosts-1")
    source = tmp_path / "hosts.sched"
    source.write_text("param hosts = 2\n" + text)
    out, s = synthesized(tmp_path, source, chunks=12)
    assert "for h in 0..len(synthesized_allreduce_ranks) // 4 - 1]" in s.text
    three = schedc.synthesize(source, "allreduce", chunks=12, sets=("hosts=3",))
    assert schedc.time(schedc.load(out, sets=("hosts=3",)), s.name).time == three.time


@pytest.mark.parametrize("bad", ["g[0]; copy all from a to b", "g[0]\nschedule x {}", "g[-1]"])
def test_a_name_that_is_not_an_expression_is_not_written(bad):
    # Names come from the compiler, but the writer takes nothing on trust: only an
    # identifier with indices and members may reach the file.
    from schedc.errors import TopologyError
    from schedc.export.sched_innetwork import in_network_text
    with pytest.raises(TopologyError, match="write a group with the device"):
        in_network_text(machine="m.sched", size="V", over="g", name="x", chunks=1,
                        groups=[["g[1]", bad]], switches=["sw"], positions=[[0, 1]], header=[])

"""What-if: `--fail`, `--derate` and `schedc whatif`, against times derived by hand.

Every expected time below is worked out in the test from the machine's figures (α = 0.83 µs,
V = 192 MiB, the bandwidths in the machine files) and the schedule's rounds, not read from
the compiler."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
import sympy
from conftest import ROOT

import schedc
from schedc.errors import SchedcError, TopologyError, UsageError

SEED = ROOT / "schedules" / "seed" / "nvlink_2x8.sched"
FAT_TREE = ROOT / "schedules" / "algorithms" / "fat_tree_4x8.sched"
SYSTEMS = ROOT / "schedules" / "machines" / "systems"

ALPHA = Fraction(83, 10**8)
V = 192 * 2**20
B_L = 450 * 10**9
B_N = 50 * 10**9  # 400 Gbit/s
B_E = Fraction(100 * 10**9, 8)  # one EFA device of 100 Gbit/s


def _times(session) -> dict[str, Fraction]:
    return {t.name: t.time for t in schedc.compare(session)}


def test_a_derated_nic_slows_the_ring_on_every_round():
    # The contiguous ring's 30 rounds each move V/16 per rank; node[0].g[7] -> node[1].g[0]
    # crosses node[0].g[7]'s NIC, now at B_N/2: each round takes V/16 / (B_N/2).
    session = schedc.load(SEED, derate=["node[0].g[7]<->rail[7]=0.5"])
    ring = _times(session)["ring"]
    assert ring == 30 * ALPHA + 30 * Fraction(V, 16) / (Fraction(B_N, 2))
    # The hierarchical schedule's two cross-host rounds move V/16 over each NIC: the same
    # slowdown on those two; the 14 NVLink rounds (V/8 each at B_L) unchanged.
    hierarchical = _times(session)["hierarchical"]
    assert hierarchical == 16 * ALPHA + 14 * Fraction(V, 8 * B_L) + 2 * Fraction(V, 16) / Fraction(B_N, 2)


def test_derating_accepts_fractions_and_percent_and_refuses_nonsense():
    half = _times(schedc.load(SEED, derate=["node[0].g[7]<->rail[7]=1/2"]))
    percent = _times(schedc.load(SEED, derate=["node[0].g[7]<->rail[7]=50%"]))
    assert half == percent
    for bad, message in (("node[0].g[7]<->rail[7]=0", "positive"),
                         ("node[0].g[7]<->rail[7]=x", "a number"),
                         ("rail[0]<->spine=0.5", "no bandwidth"),
                         ("node[0].g[7]=0.5", "not the device")):
        with pytest.raises(UsageError, match=message) as caught:
            schedc.load(SEED, derate=[bad])
        assert caught.value.span is not None and str(caught.value.span).startswith("--derate:1:")


def test_a_failed_nic_leaves_a_transfer_without_a_route_named_at_both_ends():
    session = schedc.load(SEED, fail=["node[0].g[7]<->rail[7]"])
    with pytest.raises(TopologyError) as caught:
        schedc.compare(session, ["ring"])
    error = caught.value
    assert "node[0].g[7]" in error.message and "node[1].g[0]" in error.message
    assert error.span is not None and error.span.line > 0  # the transfer's statement
    assert any("node[0].g[7]<->rail[7] failed" in note for note in error.notes)


def test_an_unknown_item_is_a_positioned_usage_error():
    with pytest.raises(UsageError, match="did you mean 'spine'") as caught:
        schedc.load(SEED, fail=["spin"])
    assert str(caught.value.span) == "--fail:1:1"
    with pytest.raises(UsageError, match="no link joins"):
        schedc.load(SEED, fail=["node[0].g[0]<->node[1].g[0]"])


def test_one_failed_spine_of_the_leaf_spine_fabric():
    # fat_tree_4x8: 4 hosts, a leaf each, 2 spines, uplinks of B_up = 8·B_N/2 = 4·B_N. The
    # hierarchical all-reduce's 6 cross-host rounds each send V/32 from every GPU: a leaf's
    # 8 GPUs put V/4 on its uplinks. Over 2 spines that is V/8 per uplink, V/(32·B_N), as
    # long as the NIC's own V/32 / B_N. With spine[0] failed all V/4 takes the one uplink
    # left: V/(16·B_N) per round. The 14 NVLink rounds (V/8 at B_L) do not change.
    session = schedc.load(FAT_TREE, fail=["spine[0]"])
    times = _times(session)
    B_up = 4 * B_N
    assert times["hierarchical"] == (20 * ALPHA + 14 * Fraction(V, 8 * B_L)
                                     + 6 * Fraction(V, 4) / B_up)
    assert times["hierarchical"] == 20 * ALPHA + 7 * Fraction(V, 4 * B_L) + 3 * Fraction(V, 8 * B_N)
    # The ring's cross-host hops move V/32 each; only one GPU per leaf sends up (node[h].g[7]
    # to node[h+1].g[0]), V/32 on the one uplink left, V/(128 B_N): the NIC stays the limit.
    assert times["ring"] == 62 * ALPHA + 62 * Fraction(V, 32 * B_N)


def test_whatif_spines_reports_the_failed_spine_and_the_formula_in_d():
    session = schedc.load(FAT_TREE)
    result = schedc.whatif(session, "spine")
    assert [i.name for i in result.items] == ["spine[0]", "spine[1]"]
    worst = result.weakest["hierarchical"]
    assert worst.item == "spine[0]"
    assert worst.time == 20 * ALPHA + 7 * Fraction(V, 4 * B_L) + 3 * Fraction(V, 8 * B_N)
    # spine[0]'s uplinks at d·B_up carry V/8 (ECMP splits evenly): V/(32·d·B_N) per round,
    # which overtakes the NIC's V/(32·B_N) for d < 1. At d = 1/2 that is the failed time.
    at_half = worst.in_factor.subs(worst.factor, sympy.Rational(1, 2))
    assert Fraction(str(at_half)) == worst.time


def _p5_ring(tmp_path):
    study = tmp_path / "p5_ring.sched"
    study.write_text(f'import "{SYSTEMS / "aws_p5.sched"}"\nimport "{ROOT / "schedules/lib/ring.sched"}"\n'
                     "param V = 192 MiB\nallreduce V over ranks\n"
                     "schedule ring = ring_allreduce(ranks)\n", encoding="utf-8")
    return schedc.load(study)


def test_one_failed_nic_of_four_on_aws_p5(tmp_path):
    # p5: each GPU's 4 EFA devices (B_E each) on its own rails. The ring's cross-host hops
    # (node[0].g[7] -> node[1].g[0] and back) move V/16 a round, split over the 4 EFAs of
    # each end: V/64 per EFA, so each round takes V/(64·B_E) (NVLink's V/(16·B_L) is less).
    session = _p5_ring(tmp_path)
    base = _times(session)["ring"]
    assert base == 30 * ALPHA + 30 * Fraction(V, 64) / B_E
    # With node[0].efa[28] (one of g[7]'s four) failed, its three others carry V/48 each.
    failed = _times(schedc.load(session.program.path, fail=["node[0].efa[28]<->rail[28]"]))["ring"]
    assert failed == 30 * ALPHA + 30 * Fraction(V, 48) / B_E
    result = schedc.whatif(session, "nic")
    assert len(result.items) == 64
    # The 64 EFA links of 2 hosts: swapping the hosts carries the ring onto itself, so 32
    # classes of two, each timed once.
    assert result.symmetry["ring"].orbits == 32 and result.symmetry["ring"].step == 1
    times = {item.name: result.outcomes[(item.name, "ring")].time for item in result.items}
    assert times["node[0].efa[28]<->rail[28]"] == failed
    assert times["node[1].efa[28]<->rail[28]"] == failed  # g[7] of host 1 sends to host 0
    assert times["node[0].efa[8]<->rail[8]"] == base  # g[2]'s EFAs carry nothing cross-host
    assert result.outcomes[("node[1].efa[28]<->rail[28]", "ring")].computed_for == \
        "node[0].efa[28]<->rail[28]"
    assert result.weakest["ring"].time == failed


def test_whatif_on_the_seed_says_which_failures_have_no_route():
    result = schedc.whatif(schedc.load(SEED), "nic")
    assert len(result.items) == 16
    ring = {i.name: result.outcomes[(i.name, "ring")] for i in result.items}
    # The contiguous ring only crosses hosts at g[7] -> g[0]: those NICs leave no route.
    assert ring["node[0].g[7]<->rail[7]"].time is None
    assert ring["node[0].g[3]<->rail[3]"].time == result.base["ring"]
    # The interleaved ring is not carried onto itself by swapping the hosts: all 16 timed.
    assert result.symmetry["interleaved"].step is None
    assert result.symmetry["interleaved"].orbits == 16
    assert result.symmetry["ring"].orbits == 8


def test_an_unknown_class_is_refused():
    with pytest.raises(SchedcError, match="no link of class 'nics'"):
        schedc.whatif(schedc.load(SEED), "nics")


PCIE = ROOT / "schedules" / "seed" / "pcie_2x4.sched"


def test_a_failed_shared_slot_cuts_the_host_off_and_a_derated_one_slows_it():
    # pcie_2x4: all of a host's cross-host traffic crosses its NIC's slot (B_slot = 32 GB/s).
    with pytest.raises(TopologyError, match="no route"):
        schedc.compare(schedc.load(PCIE, fail=["node[0].slot"]), ["ring"])
    # The ring's 14 rounds move V/8 per rank; the cross-host hops cross the slot, now at
    # 16 GB/s, which is slower than the GPU links' 32 GB/s.
    ring = _times(schedc.load(PCIE, derate=["node[0].slot=0.5"]))["ring"]
    assert ring == 14 * ALPHA + 14 * Fraction(V, 8) / (16 * 10**9)


def test_a_pinned_route_through_a_failed_device_is_routed_anew(tmp_path):
    # Two GPUs, two switches; the route is pinned through s0. With s0 failed the transfer
    # takes the only route left, through s1: one hop of V at 10 GB/s each way.
    path = tmp_path / "pinned.sched"
    path.write_text("param V = 1 MB\ntopology {\n  gpu g[2]\n  switch s[2]\n"
                    "  link g[i] <-> s[j] bw 10 GB/s for i in 0..1 for j in 0..1\n"
                    "  route g[0] -> g[1] via s[0]\n}\n"
                    "allreduce V over [g[0], g[1]]\n"
                    "schedule one { copy all from g[0] to g[1] }\n", encoding="utf-8")
    pinned = schedc.load(path)
    assert "s[0]" in pinned.program.topology.describe_route(0, 1, None)
    failed = schedc.load(path, fail=["s[0]"])
    assert failed.program.topology.describe_route(0, 1, None) == "g[0] -> s[1] -> g[1]"
    # The change is a new machine: routes cached on the old one are not carried over.
    from schedc.model.changes import apply, resolve
    topology = pinned.program.topology
    changed = apply(topology, [resolve(topology, "s[0]")], [])
    assert changed.describe_route(0, 1, None) == "g[0] -> s[1] -> g[1]"
    assert "s[0]" in topology.describe_route(0, 1, None)
    assert failed.timing("one").time == Fraction(10**6, 10 * 10**9)


def test_the_whatif_command_text_and_json(run):
    code, out, err = run("whatif", FAT_TREE, "--class", "spine", "--worst")
    assert code == 0 and err == ""
    assert "hierarchical: spine[0]: 2.3095 ms (+754.97 µs, x1.486)" in out
    assert "(nothing)" not in out  # --worst: no table
    code, out, _ = run("whatif", SEED, "-s", "ring", "--json")
    document = json.loads(out)
    assert code == 0 and document["schema"] == "schedc.whatif/1"
    assert len(document["failures"]) == 16
    ring = {f["item"]: f["schedules"]["ring"] for f in document["failures"]}
    assert ring["node[0].g[7]<->rail[7]"]["no_route"].startswith("no route from")
    assert ring["node[1].g[3]<->rail[3]"]["computed_for"] == "node[0].g[3]<->rail[3]"
    assert document["schedules"][0]["symmetry"] == {"hosts": 2, "shift_hosts": 1,
                                                    "failures": 16, "computed": 8}
    worst = document["worst"]["ring"]
    # At d = 1/2 the ring's 30 rounds wait for V/16 over B_N/2.
    assert worst["at_half_s"] == pytest.approx(
        float(30 * ALPHA + 30 * Fraction(V, 16) / Fraction(B_N, 2)), rel=1e-12)


def test_bad_options_exit_2_with_no_traceback(run):
    code, out, err = run("compare", SEED, "--fail", "node[9].g[0]")
    assert code == 2 and "--fail:1:1: error: no device" in err and "Traceback" not in err
    code, out, err = run("whatif", SEED, "--class", "nics")
    assert code == 2 and "--class:1:1: error: no link of class 'nics'" in err
    code, out, err = run("time", SEED, "--derate", "node[0].g[7]<->rail[7]")
    assert code == 2 and "--derate expects ITEM=FACTOR" in err


def test_structural_instances_keep_the_changes():
    # `at` compiles other host counts with the same --derate: node[0].g[7]'s NIC at half
    # speed slows the contiguous ring at 2 and at 3 hosts alike (its one cross-host hop
    # from node[0] crosses that NIC).
    session = schedc.load(ROOT / "schedules" / "seed" / "nvlink_hosts.sched",
                          derate=["node[0].g[7]<->rail[7]=0.5"])
    three = session.at({"hosts": 3})
    p = 24
    assert three.timing("ring").time == 2 * (p - 1) * (ALPHA + Fraction(V, p) / Fraction(B_N, 2))

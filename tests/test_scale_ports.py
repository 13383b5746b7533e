"""Forwarding devices in the port argument (issue 37, item 1; docs/scale.md, "Proof for every
n", hypothesis 3): a GPU that reaches the fabric through its own PCIe switch and NIC has
those devices' links as its own ports, so its schedules are proved in hosts; a switch and
NIC that two consecutive GPUs share is a port of the pair, its load the sum of theirs
(proved per group); GPUs sharing one out of order stay `checked`."""

from __future__ import annotations

import functools
import json
from fractions import Fraction

import pytest
from conftest import SCHEDULES, write

import schedc

# The params and the host of the machines here and in test_scale_unseen.py: G GPUs on one
# NVSwitch (B_L), each GPU behind its own PCIe switch (B_P on the GPU's link) and its own NIC
# (no figure on the switch-NIC link).
PARAMS = """\
param alpha = 0.83 us
param B_L = 450 GB/s
param B_P = 64 GB/s
param B_N = 400 Gbit/s
param V = 64 MiB
param hosts = 2
"""
HOST = """\
  host node[hosts] {{
    gpu g[{G}]
    switch nvswitch
    switch plx[{G}]
    nic cx[{G}]
    link g[i] <-> nvswitch bw B_L class nvlink for i in 0..{last}
    link g[i] <-> plx[i] bw B_P class pcie for i in 0..{last}
    link plx[i] <-> cx[i] class pcie for i in 0..{last}
  }}
"""
# Each host as HOST, NIC i on rail switch i (B_N).
PER_GPU = """\
import "{lib}/ring.sched"
import "{lib}/hierarchical.sched"
""" + PARAMS + "topology {{\n" + HOST + """\
  switch rail[{G}]
  switch spine
  link node[h].cx[i] <-> rail[i] bw B_N class nic for h in 0..hosts-1 for i in 0..{last}
  link rail[i] <-> spine for i in 0..{last}
}}
let ranks = [node[h].g[i] for h in 0..hosts-1 for i in 0..{last}]
allreduce V over ranks
schedule ring = ring_allreduce(ranks)
schedule hier = hierarchical_allreduce([node[h].g for h in 0..hosts-1])
"""

ALPHA, V = Fraction(83, 10**8), 64 * 2**20
B_L, B_P, B_N = 450 * 10**9, 64 * 10**9, 50 * 10**9


def ring_by_hand(n: int, g: int) -> Fraction:
    """The ring over p = g·n ranks: 2(p - 1) rounds; in every round each GPU sends V/p to
    the next, over NVLink inside a host and over its PCIe link and NIC (both ends) across
    hosts; both kinds occur in every round, so each round waits for the slowest of the
    three: here the NIC (50 GB/s)."""
    p = g * n
    return 2 * (p - 1) * (ALPHA + Fraction(V, p * min(B_L, B_P, B_N)))


def hier_by_hand(n: int, g: int) -> Fraction:
    """Reduce-scatter and all-gather inside each host, g - 1 rounds each of V/g over
    NVLink; between them g rail rings over n hosts, 2(n - 1) rounds of V/(g·n) over each
    GPU's PCIe link and NIC."""
    inside = 2 * (g - 1) * (ALPHA + Fraction(V, g * B_L))
    return inside + 2 * (n - 1) * (ALPHA + Fraction(V, g * n * min(B_P, B_N)))


def _scale(run, path, *args) -> dict:
    code, out, err = run("scale", path, "--in", "hosts", "--no-bound", "--json", *args)
    assert code == 0, err
    return json.loads(out)


def _compiled(path, n: int, name: str) -> Fraction:
    """A direct compile (no verification: thousands of ranks are past the verifier's cap)."""
    return Fraction(schedc.time(_loaded(path, n), name, verify=False).time)


@functools.lru_cache(maxsize=3)  # a test's three sizes
def _loaded(path, n: int) -> schedc.Session:
    """The file at `hosts = n`, loaded once for all its schedules (a session elaborates and
    times each schedule on its own, when asked: sharing it shares the machine's parse and
    routes, not an answer)."""
    return schedc.load(path, [f"hosts={n}"], max_transfers=10**8, max_rounds=10**6)


def test_gpus_behind_their_own_switch_and_nic_are_proved(run, tmp_path):
    case = write(tmp_path, "per_gpu.sched", PER_GPU.format(lib=SCHEDULES / "lib", G=2, last=1))
    sizes = (7, 64, 1000)
    document = _scale(run, case, *[a for n in sizes for a in ("--at", str(n))])
    for piece in document["schedules"]:
        assert (piece["status"], piece["valid_from"], piece["valid_to"]) == ("proved", 2, None)
        assert piece["argument"].startswith("Presburger (isl): transfers affine in hosts, "
                                            "port machine uniform in node[...]")
    hand = {"ring": ring_by_hand, "hier": hier_by_hand}
    for name, values in document["at"].items():
        for at in values:
            assert at["method"] == "formula"  # from the proved form, nothing compiled
            compiled = _compiled(case, at["n"], name)
            assert compiled == hand[name](at["n"], 2)  # the compiler agrees with the hand
            assert at["time_s"] == float(compiled)  # and so does the proved form


SHARED = PER_GPU.replace("switch plx[{G}]", "switch plx[{half}]").replace(
    "nic cx[{G}]", "nic cx[{half}]").replace(
    "link g[i] <-> plx[i] bw B_P class pcie for i in 0..{last}",
    "link g[i] <-> plx[i // 2] class pcie for i in 0..{last}").replace(
    "link plx[i] <-> cx[i] class pcie for i in 0..{last}",
    "link plx[j] <-> cx[j] class pcie for j in 0..{half_last}").replace(
    "link node[h].cx[i] <-> rail[i] bw B_N class nic for h in 0..hosts-1 for i in 0..{last}",
    "link node[h].cx[j] <-> rail[j] bw B_N class nic for h in 0..hosts-1 for j in 0..{half_last}")


def shared_ring_by_hand(n: int, g: int) -> Fraction:
    """The host-major ring with two GPUs on each NIC: inside a host NVLink; the one hop a
    round from the last GPU of a host to the first of the next is the only transfer on its
    NICs (different groups), V/p each: the NIC binds."""
    p = g * n
    return 2 * (p - 1) * (ALPHA + Fraction(V, p * min(B_L, B_N)))


def shared_hier_by_hand(n: int, g: int) -> Fraction:
    """The rail rings of the hierarchical all-reduce: in each of their 2(n - 1) rounds both
    GPUs of a pair send V/(g·n) across hosts through their one NIC, 2V/(g·n) on it."""
    inside = 2 * (g - 1) * (ALPHA + Fraction(V, g * B_L))
    return inside + 2 * (n - 1) * (ALPHA + Fraction(2 * V, g * n * B_N))


def test_two_gpus_behind_one_nic_are_proved_per_pair(run, tmp_path):
    """The seed's PCIe case in small: GPUs 2j and 2j + 1 share PCIe switch j and its NIC,
    whose rail link has a bandwidth: a port of the pair, carrying the sum of both GPUs'
    transfers in each round."""
    text = SHARED.format(lib=SCHEDULES / "lib", G=4, last=3, half=2, half_last=1)
    case = write(tmp_path, "shared.sched", text)
    document = _scale(run, case, *[a for n in (5, 64, 1000) for a in ("--at", str(n))])
    for piece in document["schedules"]:
        assert (piece["status"], piece["valid_from"], piece["valid_to"]) == ("proved", 2, None)
    hand = {"ring": shared_ring_by_hand, "hier": shared_hier_by_hand}
    for name, values in document["at"].items():
        for at in values:
            assert at["method"] == "formula"
            compiled = _compiled(case, at["n"], name)
            assert compiled == hand[name](at["n"], 4)
            assert at["time_s"] == float(compiled)


def test_gpus_sharing_a_nic_out_of_order_stay_checked(run, tmp_path):
    """GPUs 0 and 2 on one NIC, 1 and 3 on the other: the pair's port index is no quotient
    of the local position (i % 2), so the loads are not read per group."""
    text = SHARED.format(lib=SCHEDULES / "lib", G=4, last=3, half=2, half_last=1).replace(
        "plx[i // 2]", "plx[i % 2]")
    case = write(tmp_path, "shared.sched", text)
    document = _scale(run, case, "-s", "hier")
    for piece in document["schedules"]:
        assert piece["status"] == "checked" and piece["valid_to"] is not None
        assert "not proved: a device shared by ranks that are not consecutive local " \
               "positions of one copy, in blocks of one size" in piece["notes"]


@pytest.mark.parametrize("G", [2, 4])
def test_the_derived_rule_names_each_gpus_own_ports(G, tmp_path):
    """Read on one instance: inside a host a transfer loads NVLink ports, across hosts the
    source's and the destination's PCIe link and NIC."""
    from schedc.analysis.scale.ports import port_rule
    case = write(tmp_path, "per_gpu.sched",
                 PER_GPU.format(lib=SCHEDULES / "lib", G=G, last=G - 1))
    at = schedc.load(case, ["hosts=3"])
    rule = port_rule(at, "ring", "node", ("node", "g"),
                     [(h, i) for h in range(3) for i in range(G)])
    assert (rule.copy_coord, rule.same, rule.cross) == (0, ("nvlink",), ("nic", "pcie"))


# Rail-major orders (issue 37, item 2): `[node[h].g[i] for i in 0..G-1 for h in
# 0..hosts-1]` puts GPU i of host h at index i·hosts + h, not affine in (i, h, hosts); the
# outer loop has constant bounds, so the list is unrolled into G affine pieces.
RAIL_MAJOR = PER_GPU.replace(
    "let ranks = [node[h].g[i] for h in 0..hosts-1 for i in 0..{last}]",
    "let ranks = [node[h].g[i] for i in 0..{last} for h in 0..hosts-1]").replace(
    "schedule hier =", "schedule host_ring = ring_allreduce("
    "[node[h].g[i] for h in 0..hosts-1 for i in 0..{last}])\nschedule hier =")


def rail_ring_by_hand(n: int, g: int) -> Fraction:
    """The ring in rail-major order: (h, i) -> (h + 1, i), and (n - 1, i) -> (0, i + 1):
    every hop crosses hosts (n >= 2), so each of the 2(p - 1) rounds loads every GPU's PCIe
    link and NIC by V/p and no NVLink: the NIC binds, as for the host-major ring."""
    p = g * n
    return 2 * (p - 1) * (ALPHA + Fraction(V, p * min(B_P, B_N)))


def test_rail_major_orders_are_unrolled_and_proved(run, tmp_path):
    case = write(tmp_path, "rail.sched", RAIL_MAJOR.format(lib=SCHEDULES / "lib", G=2, last=1))
    document = _scale(run, case, *[a for n in (5, 64, 1000) for a in ("--at", str(n))])
    assert [(p["name"], p["status"], p["valid_to"]) for p in document["schedules"]] == [
        ("ring", "proved", None), ("host_ring", "proved", None), ("hier", "proved", None)]
    hand = {"ring": rail_ring_by_hand, "host_ring": ring_by_hand, "hier": hier_by_hand}
    for name, values in document["at"].items():
        for at in values:
            assert at["method"] == "formula"
            compiled = _compiled(case, at["n"], name)
            assert compiled == hand[name](at["n"], 2)
            assert at["time_s"] == float(compiled)


RAIL_MAJOR_SEED = """\
import "{schedules}/machines/nvlink_hosts.sched"
import "{schedules}/lib/hierarchical.sched"
param V = 192 MiB
allreduce V over [node[h].g[i] for i in 0..7 for h in 0..hosts-1]
schedule hier = hierarchical_allreduce([node[h].g for h in 0..hosts-1])
"""


def test_a_rail_major_collective_is_verified_for_every_host_count(run, tmp_path):
    """The data flow in rank coordinates (the rail-major index is affine only piece by
    piece): the hierarchical all-reduce over the seed machine's ranks in rail-major order is
    proved. (With 2 GPUs a host, isl's closure of the same flow is not exact: unknown.)"""
    case = write(tmp_path, "rail.sched", RAIL_MAJOR_SEED.format(schedules=SCHEDULES))
    code, out, err = run("verify", case, "--for-all", "hosts", "--json")
    assert code == 0, err
    ((file,),) = [json.loads(out)["files"]]
    (found,) = file["schedules"]
    assert found["for_all"]["status"] == "proved", found["for_all"]


def test_an_outer_loop_that_varies_too_is_not_unrolled(tmp_path):
    """Unrolling needs the outer loops' bounds to be constants: `for i in 0..hosts-1` around
    a varying inner loop is refused, naming the clause (a valid file at 2 hosts)."""
    from schedc.analysis.forall.affine import Outside
    from schedc.analysis.forall.family import symbolic_result
    text = RAIL_MAJOR_SEED.format(schedules=SCHEDULES).replace(
        "allreduce V over [node[h].g[i] for i in 0..7 for h in 0..hosts-1]",
        "allreduce V over [node[h].g[i] for i in 0..hosts-1 for h in 0..hosts-1]")
    case = write(tmp_path, "varying.sched", text)
    with pytest.raises(Outside, match="its outer loops' bounds are not constants to unroll"):
        symbolic_result(schedc.load(case), "hosts", "hier")

"""Machines written the way the systems library writes them, but none of the shipped ones
(issue 37's unseen machines): GPUs behind their own PCIe switch and NIC, a rail-major ring,
a rail-optimised fabric of two spines at 2:1 oversubscription whose uplinks' bandwidth is
written in hosts, the ports listed by a `let`, a leaf family declared for another choice of
fabric, and NCCL's ring in two loops run one after another. Each proved form equals a
derivation by hand and direct compiles at 5, 64 and 1,000 hosts; each hypothesis that fails
leaves the pieces `checked` with its note (docs/scale.md, "Proof for every n")."""

from __future__ import annotations

from fractions import Fraction

import pytest
from conftest import SCHEDULES, write
from test_scale_ports import ALPHA, B_L, B_N, HOST, PARAMS, V, _compiled, _scale


# (ALPHA ... B_N: the params of PARAMS, in base units)
MACHINE = """\
import "{lib}/ring.sched"
import "{lib}/hierarchical.sched"
import "{lib}/nccl.sched"
""" + PARAMS + """\
param fabric = 1
param spines = 2
param oversub = 2.0
topology {{
""" + HOST.replace("{G}", "2").replace("{last}", "1") + """\
}}
let ports = [node[h].cx for h in 0..hosts-1]
let P = len(ports[0])
let B_up = hosts * B_N / (spines * oversub)
topology {{
  switch rail[P]
  switch spine[spines]
  switch leaf[hosts]
  link ports[h][i] <-> rail[i] bw B_N class nic for h in 0..hosts-1 for i in 0..P-1 if fabric == 1
  link rail[i] <-> spine[s] bw B_up class uplink for i in 0..P-1 for s in 0..spines-1 if fabric == 1
  link ports[h][i] <-> leaf[h] bw B_N class nic for h in 0..hosts-1 for i in 0..P-1 if fabric == 3
  link leaf[h] <-> spine[s] bw B_up class uplink for h in 0..hosts-1 for s in 0..spines-1 if fabric == 3
}}
let ranks = [node[h].g[i] for h in 0..hosts-1 for i in 0..1]
allreduce V over ranks
schedule ring = ring_allreduce(ranks)
schedule rail_major = ring_allreduce([node[h].g[i] for i in 0..1 for h in 0..hosts-1])
schedule hier = hierarchical_allreduce([node[h].g for h in 0..hosts-1])
schedule nccl2 = nccl_ring_allreduce([ranks for q in 0..0], {loops})
"""


def ring_by_hand(n: int) -> Fraction:
    """The host-major ring over p = 2n ranks: 2(p - 1) rounds of V/p per transfer. Across
    hosts GPU 1 of every host sends to GPU 0 of the next, rail 1 -> spine -> rail 0: n
    transfers of V/p, split over 2 spines, V/4 on each uplink, whose bandwidth is
    n·B_N/(2·2): V/(n·B_N), twice a NIC's V/(2n·B_N) (PCIe: 64 GB/s > 50). The uplink
    binds."""
    return 2 * (2 * n - 1) * (ALPHA + Fraction(V, n * B_N))


def rail_major_by_hand(n: int) -> Fraction:
    """Rank i·n + h is node[h].g[i]: every hop crosses hosts, only two (GPU 0 of the last
    host to GPU 1 of the first, and back) climb to the spines: V/(2p) on an uplink of
    n·B_N/4, V/(n²·B_N), at most a NIC's V/(2n·B_N) from n = 2 on. The NIC binds."""
    return 2 * (2 * n - 1) * (ALPHA + Fraction(V, 2 * n * B_N))


def hier_by_hand(n: int) -> Fraction:
    """Reduce-scatter and all-gather inside each host (one round each, V/2 over NVLink);
    between them two rail rings over n hosts, 2(n - 1) rounds of V/(2n) on each NIC, no
    spine."""
    return 2 * (ALPHA + Fraction(V, 2 * B_L)) + 2 * (n - 1) * (ALPHA + Fraction(V, 2 * n * B_N))


def nccl2_by_hand(n: int) -> Fraction:
    """NCCL's ring in two loops one after the other: the host-major ring on V/2, twice."""
    return 2 * 2 * (2 * n - 1) * (ALPHA + Fraction(V, 2 * n * B_N))


HAND = {"ring": ring_by_hand, "rail_major": rail_major_by_hand, "hier": hier_by_hand,
        "nccl2": nccl2_by_hand}


def _machine(tmp_path, loops: object = 2, change: tuple[str, str] = ("", "")) -> object:
    text = MACHINE.format(lib=SCHEDULES / "lib", loops=loops)
    assert change[0] in text
    return write(tmp_path, "unseen.sched", text.replace(*change))


def test_the_unseen_machine_is_proved_and_its_forms_are_the_compiles(run, tmp_path):
    case = _machine(tmp_path)
    document = _scale(run, case, *[a for n in (5, 64, 1000) for a in ("--at", str(n))])
    for piece in document["schedules"]:
        assert (piece["status"], piece["valid_from"], piece["valid_to"]) == ("proved", 2, None), \
            piece["notes"]
    assert {p["name"] for p in document["schedules"]} == set(HAND)
    for name, values in document["at"].items():
        assert [at["n"] for at in values] == [5, 64, 1000]
        for at in values:
            assert at["method"] == "formula"  # from the proved form, nothing compiled
            compiled = _compiled(case, at["n"], name)
            assert compiled == HAND[name](at["n"])  # the compiler agrees with the hand
            assert at["time_s"] == float(compiled)  # and so does the proved form


@pytest.mark.parametrize("loops, change, schedule, why", [
    # An uplink bandwidth not written as a product of factors, each n or free of it, is
    # refused, even where (as here) its value is n times one free of n.
    (2, ("let B_up = hosts * B_N", "let B_up = (hosts + 0) * B_N"), "ring",
     "a link's ends or attributes depend on hosts"),
    # The leaf-spine choice: the leaf family, sized by hosts, is linked, a second family.
    (2, ("param fabric = 1", "param fabric = 3"), "ring",
     "a family sized by hosts other than one family of hosts copies"),
    # A link condition on hosts is not decided from the file's values.
    (2, ("for s in 0..spines-1 if fabric == 1", "for s in 0..spines-1 if hosts > 1"), "ring",
     "a link loop over something other than 0..hosts-1"),
    # NCCL's loops, as many as hosts: a sequential loop whose count varies is not unrolled.
    ("hosts", ("", ""), "nccl2",
     "a sequential loop whose iterations' lengths vary with the param, and whose count is "
     "not a constant"),
])
def test_a_hypothesis_that_fails_leaves_the_unseen_machine_checked(run, tmp_path, loops, change,
                                                                   schedule, why):
    case = _machine(tmp_path, loops, change)
    document = _scale(run, case, "-s", schedule)
    for piece in document["schedules"]:
        assert piece["status"] == "checked"
        assert any(note.startswith("not proved: ") and why in note for note in piece["notes"]), \
            piece["notes"]


# Each GPU behind its PCIe switch with two NICs, each NIC on its own rail: a route splits its
# bytes over the two equally (a bundle of ports, docs/scale.md hypothesis 3).
BUNDLE = ("nic cx[2]", "nic cx[{nics}]"), \
    ("link plx[i] <-> cx[i] class pcie for i in 0..1",
     "link plx[j // 2] <-> cx[j] class pcie for j in 0..{last}")


def _bundled(tmp_path, nics: int):
    text = MACHINE.format(lib=SCHEDULES / "lib", loops=2)
    for old, new in BUNDLE:
        assert old in text
        text = text.replace(old, new.format(nics=nics, last=nics - 1))
    return write(tmp_path, "bundle.sched", text)


def bundled_ring_by_hand(n: int) -> Fraction:
    """Host-major ring, p = 2n: GPU 1 of each host sends V/p to GPU 0 of the next over its
    PCIe link (V/p over 64 GB/s) and its two NICs (V/(2p) each), rails 2, 3 -> 2 spines ->
    rails 0, 1: each uplink carries a quarter of each of the n transfers, V/8, over
    n·B_N/4: V/(2n·B_N), above PCIe's V/(2n·64 GB/s) and a NIC's V/(4n·B_N). It binds."""
    return 2 * (2 * n - 1) * (ALPHA + Fraction(V, 2 * n * B_N))


def test_a_bundle_of_nics_per_gpu_is_proved(run, tmp_path):
    case = _bundled(tmp_path, 4)
    document = _scale(run, case, "-s", "ring", *[a for n in (5, 64, 1000) for a in ("--at", str(n))])
    (piece,) = document["schedules"]
    assert (piece["status"], piece["valid_from"], piece["valid_to"]) == ("proved", 2, None), \
        piece["notes"]
    for at in document["at"]["ring"]:
        assert at["method"] == "formula"
        compiled = _compiled(case, at["n"], "ring")
        assert compiled == bundled_ring_by_hand(at["n"]) and at["time_s"] == float(compiled)


def test_bundles_of_two_sizes_stay_checked(run, tmp_path):
    """Three NICs a host: two behind GPU 0's switch, one behind GPU 1's (j // 2 of 0..2)."""
    document = _scale(run, _bundled(tmp_path, 3), "-s", "ring")
    for piece in document["schedules"]:
        assert piece["status"] == "checked"
        assert any(note.startswith("not proved: ") and "does not load one port (or one bundle "
                   "of ports, equally) of each end per class" in note
                   for note in piece["notes"]), piece["notes"]

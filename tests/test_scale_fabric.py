"""Pieces of finite fabrics proved (issue 37, item 4; docs/scale.md, "Proof for every n"):
links between rail switches and a spine with a bandwidth are shared by every host, so the
regime changes at a host count; each piece between the exact boundaries is proved on its
range, and the proved forms equal direct compiles (and the hand) past every instance the
fit used. Routes that split their bytes equally over two spines are proved too (each
spine link carries its share); a bandwidth written in the hosts other than as n^k times one
free of n leaves the pieces `checked`, naming why (tests/test_scale_unseen.py proves an
uplink of hosts·B/(spines·oversub))."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from conftest import ROOT, SCHEDULES, write
from test_scale_ports import ALPHA, B_N, B_P, PER_GPU, V, _compiled

RAIL_SPINE = ROOT / "tests" / "scale" / "rail_spine_hosts.sched"

# PER_GPU's machine (each GPU behind its own PCIe switch and NIC) with a finite spine: the
# rails' links to it carry B_S each way, the bandwidth of 8 NICs: a rail of n hosts is
# oversubscribed n:8 from 9 hosts on (2:1 at 16).
SPINE = PER_GPU.format(lib=SCHEDULES / "lib", G=2, last=1).replace(
    "param hosts = 2", "param hosts = 2\nparam B_S = 400 GB/s").replace(
    "link rail[i] <-> spine for i in 0..1",
    "link rail[i] <-> spine bw B_S class spine for i in 0..1")
B_S = 400 * 10**9


def ring_by_hand(n: int) -> Fraction:
    """The host-major ring over p = 2n ranks: 2(p - 1) rounds; each GPU sends V/p per round
    (NVLink inside a host, its PCIe link and NIC across); the n hops from GPU 1 of a host to
    GPU 0 of the next all climb rail 1 -> spine -> rail 0, so those two links carry
    n · V/p = V/2 each round. The NIC (50 GB/s, below PCIe's 64) binds while
    V/(p·B_N) >= V/(2·B_S), i.e. n <= B_S/B_N = 8; the spine from 9 hosts on."""
    p = 2 * n
    return 2 * (p - 1) * (ALPHA + max(Fraction(V, p * min(B_N, B_P)), Fraction(V, 2 * B_S)))


def _scale(run, path, *args) -> dict:
    code, out, err = run("scale", path, "--in", "hosts", "--no-bound", "--json", *args)
    assert code == 0, err
    return json.loads(out)


def test_each_piece_of_a_finite_spine_is_proved_on_its_range(run, tmp_path):
    case = write(tmp_path, "spine.sched", SPINE)
    sizes = (5, 8, 9, 64, 1000)
    document = _scale(run, case, "-s", "ring", *[a for n in sizes for a in ("--at", str(n))])
    first, second = document["schedules"]
    assert (first["status"], first["valid_from"], first["valid_to"]) == ("proved", 2, 8)
    assert first["ends"] == "B_S/hosts >= B_N is false from hosts = 9"
    assert (second["status"], second["valid_from"], second["valid_to"]) == ("proved", 9, None)
    for piece in (first, second):
        assert "port machine uniform in node[...] with 4 fabric resources shared by its " \
               "copies" in piece["argument"]
    for at in document["at"]["ring"]:
        assert at["method"] == "formula"
        compiled = _compiled(case, at["n"], "ring")
        assert compiled == ring_by_hand(at["n"])
        assert at["time_s"] == float(compiled)


def test_the_rail_spine_trap_of_issue_20_is_proved_piece_by_piece(run):
    """tests/test_scale_traps.py derives both pieces by hand and compiles them at 100 hosts;
    here both are proved, the boundary at 51 stated."""
    document = _scale(run, RAIL_SPINE, "-s", "ring")
    first, second = document["schedules"]
    assert (first["status"], first["valid_to"], first["ends"]) == (
        "proved", 50, "B_S/hosts >= B_N is false from hosts = 51")
    assert (second["status"], second["valid_from"], second["valid_to"]) == ("proved", 51, None)


def test_a_fabric_outside_the_argument_stays_checked(run, tmp_path):
    """The uplink's bandwidth written in the hosts, but not as a product of factors each
    hosts or free of it (hypothesis 2 reads the source): refused even where, as here, the
    value does not change."""
    case = write(tmp_path, "spine.sched", SPINE.replace("bw B_S class spine",
                                                        "bw (hosts + 1) * B_S / (hosts + 1) class spine"))
    document = _scale(run, case, "-s", "ring")
    for piece in document["schedules"]:
        assert piece["status"] == "checked" and piece["valid_to"] is not None
        assert any(note.startswith("not proved: ") and "a link's ends or attributes depend on "
                   "hosts" in note for note in piece["notes"]), piece["notes"]


def test_routes_split_over_two_spines_are_proved(run, tmp_path):
    """Two spines, each rail's link to each of B_S/2: equal-cost routing splits every
    rail-to-rail transfer over both, half its bytes on each link of half the bandwidth, so
    the figures are the one spine's (ring_by_hand), both pieces proved."""
    text = SPINE.replace("switch spine\n", "switch spine[2]\n").replace(
        "link rail[i] <-> spine bw B_S class spine for i in 0..1",
        "link rail[i] <-> spine[s] bw B_S / 2 class spine for i in 0..1 for s in 0..1")
    case = write(tmp_path, "spines.sched", text)
    document = _scale(run, case, "-s", "ring", *[a for n in (5, 64, 1000) for a in ("--at", str(n))])
    first, second = document["schedules"]
    assert (first["status"], first["valid_to"], second["status"], second["valid_from"]) == (
        "proved", 8, "proved", 9)
    assert "with 8 fabric resources shared by its copies" in second["argument"]
    for at in document["at"]["ring"]:
        assert at["method"] == "formula"
        compiled = _compiled(case, at["n"], "ring")
        assert compiled == ring_by_hand(at["n"]) and at["time_s"] == float(compiled)


def test_a_fabric_link_carrying_unequal_shares_stays_checked(run, tmp_path):
    """Three rails, rails 0 and 1 on both spines, rail 2 on spine 0 only: rail 0's link to
    spine 0 carries half of a transfer to rail 1 (two equal-cost routes) but all of one to
    rail 2, so its load is no one share of the pairs crossing it (hypothesis 3)."""
    text = PER_GPU.format(lib=SCHEDULES / "lib", G=3, last=2).replace(
        "param hosts = 2", "param hosts = 2\nparam B_S = 400 GB/s").replace(
        "switch spine\n", "switch spine[2]\n").replace(
        "link rail[i] <-> spine for i in 0..2",
        "link rail[i] <-> spine[s] bw B_S class spine for i in 0..1 for s in 0..1\n"
        "  link rail[2] <-> spine[0] bw B_S class spine")
    case = write(tmp_path, "unequal.sched", text)
    document = _scale(run, case, "-s", "ring")
    for piece in document["schedules"]:
        assert piece["status"] == "checked"
        assert any(note.startswith("not proved: ") and "a fabric link carrying different "
                   "shares of the bytes of different pairs" in note
                   for note in piece["notes"]), piece["notes"]

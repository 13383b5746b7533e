"""Routes inside a host prefer link classes (`routing prefer`, default nvlink, pcie, the
rest), as NCCL ranks paths by type: src/graph/paths.cc ncclTopoSetPaths (NVIDIA/nccl
5067397c, 2.30.7), lines 94-96: `newType = std::max(path->type, newType);` and "Update if
better path type, OR same type with higher bw, OR same type/bw with strickly fewer hops" —
a path's type is its worst link's, and the type decides before the hop count."""

from __future__ import annotations

import subprocess
from fractions import Fraction
from pathlib import Path

import pytest
from conftest import SCHEDULES, write
from test_routing import shares
from test_topology import MACHINE

import schedc
from schedc.elaborate.loader import load_program
from schedc.model.routing import class_tiers

SHARED_NIC = (SCHEDULES / "machines" / "shared_nic_2x8.sched").as_posix()
NCCL = "/work/.mirror/NVIDIA+nccl/repo"

# g0 and g1 of host n: two links through the NVSwitch (nvlink), two through a PCIe switch.
PAIR = ("host n {{ gpu g0\n gpu g1\n switch nvs\n switch pci\n"
        " link g0 <-> nvs bw 4 * B class nvlink\n link g1 <-> nvs bw 4 * B class nvlink\n"
        " link g0 <-> pci bw B class pcie\n link g1 <-> pci bw B class pcie }}\n {extra}")


def _pair(tmp_path, extra: str = ""):
    body = PAIR.format(extra=extra)
    return load_program(write(tmp_path, "t.sched", MACHINE.format(
        body=body, ranks="n.g0, n.g1", schedule="copy all from n.g0 to n.g1")))


def test_tiers_of_classes():
    assert class_tiers(("nvlink", "pcie"), {"nvlink", "pcie", "nic"}) == (
        frozenset({"nvlink"}), frozenset({"nvlink", "pcie"}), None)
    assert class_tiers(("nvlink", "pcie"), {"pcie", "uplink"}) == (frozenset({"pcie"}), None)
    assert class_tiers(("nvlink", "pcie"), {"nvlink", "pcie"}) == (frozenset({"nvlink"}), None)
    assert class_tiers((), {"nvlink", "pcie"}) == (None,)


def test_nvlink_is_preferred_by_default(tmp_path):
    program = _pair(tmp_path)
    assert shares(program, "n.g0", "n.g1") == {"n.g0->n.nvs": 1, "n.nvs->n.g1": 1}


def test_without_preference_equal_routes_split(tmp_path):
    program = _pair(tmp_path, "routing prefer none")
    assert shares(program, "n.g0", "n.g1") == {
        "n.g0->n.nvs": Fraction(1, 2), "n.nvs->n.g1": Fraction(1, 2),
        "n.g0->n.pci": Fraction(1, 2), "n.pci->n.g1": Fraction(1, 2)}


def test_a_declared_order_wins(tmp_path):
    program = _pair(tmp_path, "routing prefer pcie, nvlink")
    assert shares(program, "n.g0", "n.g1") == {"n.g0->n.pci": 1, "n.pci->n.g1": 1}


def test_a_route_is_ranked_by_its_worst_link(tmp_path):
    """Through `cpu` g0 reaches g1 in two links, one of them a CPU link (class uplink: the
    rest); through the PCIe switches in three, all pcie. The all-PCIe route wins although it
    is longer (NCCL: PATH_PXB before PATH_PHB)."""
    body = ("host n { gpu g0\n gpu g1\n switch cpu\n switch p0\n switch p1\n"
            " link g0 <-> cpu bw B class pcie\n link cpu <-> g1 bw B class uplink\n"
            " link g0 <-> p0 bw B class pcie\n link p0 <-> p1 bw B class pcie\n"
            " link p1 <-> g1 bw B class pcie }")
    program = load_program(write(tmp_path, "t.sched", MACHINE.format(
        body=body, ranks="n.g0, n.g1", schedule="copy all from n.g0 to n.g1")))
    assert set(shares(program, "n.g0", "n.g1")) == {"n.g0->n.p0", "n.p0->n.p1", "n.p1->n.g1"}
    none = load_program(write(tmp_path, "u.sched", MACHINE.format(
        body=body + "\n routing prefer none", ranks="n.g0, n.g1",
        schedule="copy all from n.g0 to n.g1")))
    assert set(shares(none, "n.g0", "n.g1")) == {"n.g0->n.cpu", "n.cpu->n.g1"}


def test_between_hosts_classes_do_not_count(tmp_path):
    """a.g -> b.g: two links through the NIC switch (class nic) or three through a pcie
    chain outside the hosts: the fewest links win, whatever their class."""
    body = ("host a { gpu g }\n host b { gpu g }\n switch tor\n switch x\n switch y\n"
            " link a.g <-> tor bw B class nic\n link tor <-> b.g bw B class nic\n"
            " link a.g <-> x bw B class nvlink\n link x <-> y bw B class nvlink\n"
            " link y <-> b.g bw B class nvlink")
    program = load_program(write(tmp_path, "t.sched", MACHINE.format(
        body=body, ranks="a.g, b.g", schedule="copy all from a.g to b.g")))
    assert set(shares(program, "a.g", "b.g")) == {"a.g->tor", "tor->b.g"}


def test_the_shared_nic_machine_routes_its_pairs_over_nvlink():
    program = load_program(SHARED_NIC)
    for j in range(4):
        a, b = f"node[0].g[{2 * j}]", f"node[0].g[{2 * j + 1}]"
        assert shares(program, a, b) == {f"{a}->node[0].nvswitch": 1, f"node[0].nvswitch->{b}": 1}
    # The NIC still carries the traffic between hosts: GPU 1 of host 0 to GPU 1 of host 1.
    assert "node[0].nic[0]->rail[0]" in shares(program, "node[0].g[1]", "node[1].g[1]")


ERRORS = [
    ("routing prefer nvlnk", "no link has the class 'nvlnk'; did you mean 'nvlink'?"),
    ("routing prefer pcie, pcie", "the class 'pcie' is named twice"),
    ("routing prefer pcie\n routing prefer nvlink", "routing already prefers pcie"),
    ("host m { routing prefer pcie }", "`routing prefer` applies to the whole machine"),
]


@pytest.mark.parametrize(("extra", "message"), ERRORS)
def test_preference_errors(run, tmp_path, extra, message):
    path = write(tmp_path, "t.sched", MACHINE.format(body=PAIR.format(extra=extra),
                                                     ranks="n.g0, n.g1",
                                                     schedule="copy all from n.g0 to n.g1"))
    code, out, err = run("time", path)
    assert code == 2 and out == "" and "Traceback" not in err
    first = err.splitlines()[0]
    assert first.startswith(f"{path}:") and message in first, err
    line = int(first[len(str(path)) + 1:].split(":")[0])
    assert "routing prefer" in path.read_text().splitlines()[line - 1]


def test_the_same_preference_twice_is_accepted(tmp_path):
    program = _pair(tmp_path, "routing prefer pcie\n routing prefer pcie")
    assert program.topology.preference == ("pcie",)


def test_prefer_stays_an_ordinary_name(tmp_path):
    path = write(tmp_path, "n.sched", "let prefer = 2\nreport r = prefer + 1\n")
    (report,) = schedc.evaluate(schedc.load(path))
    assert report.name == "r" and report.value == 3


def test_the_quoted_rule_is_nccls():
    """The lines quoted above, read from the fetched NCCL mirror (skipped without it)."""
    if not Path(NCCL).is_dir():
        pytest.skip("no NCCL mirror")
    text = subprocess.run(["git", "-C", NCCL, "show",
                           "5067397c2676d5aed50042fc39e5c8ee96eb0027:src/graph/paths.cc"],
                          capture_output=True, text=True, check=True).stdout
    lines = text.splitlines()
    assert lines[93].strip() == "newType = std::max(path->type, newType);"
    assert "Update if better path type, OR same type with higher bw" in lines[95]

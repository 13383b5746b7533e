"""`schedc machine import`: real NCCL topology files (tests/fixtures/topo/README.md names each
one's source and license) into machines that compile, with figures derived by hand from
NCCL's rules (NVIDIA/nccl 5067397c), quoted here with their lines:

- topo.cc:657 `bw = width * speed / 80.0;` with topo.cc:655 `if (width == 0) width = 16;` and
  kvDictPciGen (topo.cc:545-556): "16 GT/s" 120, "32.0 GT/s PCIe" 240, "8 GT/s" 60, fallback 60.
- topo.cc:418 `net->net.bw = mbps / 8000.0;`
- topo.cc:856 `count * nvlBw / localDevsCount` with SM90_NVLINK_BW 20.6, SM80_NVLINK_BW 20.0
  (topo.h:21-22).
- topo.cc:923 `float c2cBw = (bw * linkCount) / 1000.0;`
- topo.cc:769 a <nic> under a <cpu> at LOC_BW (5000.0, topo.h:17).
- ncclTopoGetInterCpuBw (topo.cc:60): AMD_BW 16, SKL_QPI_BW 10 (Intel model >= 0x55),
  SRP_QPI_BW 22 (model >= 0x8F) (topo.h:26-29).
"""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

import pytest
import sympy
from conftest import ROOT

import schedc
from schedc.errors import SchedcError
from schedc.hardware import rules

TOPO = ROOT / "tests" / "fixtures" / "topo"
NCCL_MIRROR = ROOT.parent / ".mirror" / "NVIDIA+nccl" / "repo"


def params(text: str) -> dict[str, str]:
    return dict(re.findall(r"^param (\w+) = (.+?)\s*(?:#.*)?$", text, re.M))


def study(tmp_path: Path, machine: str, gpus: int) -> Path:
    """The seed's three all-reduces (ring, interleaved ring, hierarchical) on a machine."""
    (tmp_path / "machine.sched").write_text(machine, encoding="utf-8")
    last = gpus - 1
    path = tmp_path / "study.sched"
    path.write_text(f"""import "machine.sched"
import "{ROOT / 'schedules' / 'lib' / 'ring.sched'}"
param V = 192 MiB
allreduce V over ranks
schedule ring = ring_allreduce(ranks)
schedule interleaved = ring_allreduce([node[h].g[i] for i in 0..{last} for h in 0..hosts-1])
schedule hierarchical {{
  parallel for h in 0..hosts-1: ring_reduce_scatter(node[h].g)
  parallel for i in 0..{last}: ring_allreduce([node[h].g[i] for h in 0..hosts-1], part(i of {gpus}))
  parallel for h in 0..hosts-1: ring_allgather(node[h].g)
}}
""", encoding="utf-8")
    return path


def test_rules_by_hand():
    assert rules.pci_bandwidth(16, rules.pci_lane_rate("16 GT/s")) == 24  # 16 × 120 / 80
    assert rules.pci_bandwidth(16, rules.pci_lane_rate("32.0 GT/s PCIe")) == 48
    assert rules.pci_lane_rate("32 GT/s PCIe/s") == 240  # prefix match, as kvConvertToInt
    assert rules.pci_lane_rate("") is None  # → the fallback, 60
    assert rules.pci_bandwidth(0, 60) == 12  # width 0 → 16 lanes
    assert rules.net_bandwidth(400000) == 50 and rules.net_bandwidth(-1) == Fraction(10000, 8000)
    assert rules.nvlink_per_link(90) * 18 == Fraction("370.8")
    assert rules.nvlink_per_link(86) == 12 and rules.nvlink_per_link(89) == 20
    assert rules.inter_cpu("x86_64", "GenuineIntel", 6, 85)[0] == 10


@pytest.mark.skipif(not NCCL_MIRROR.is_dir(), reason="no NVIDIA/nccl mirror")
def test_rules_match_ncclsource():
    import subprocess
    topo_cc = subprocess.run(["git", "-C", str(NCCL_MIRROR), "show", "HEAD:src/graph/topo.cc"],
                             capture_output=True, text=True, check=True).stdout
    for speed, rate in rules.PCI_GEN:
        assert f'{{"{speed}", {rate}}}' in topo_cc
    assert "bw = width * speed / 80.0;" in topo_cc and "net->net.bw = mbps / 8000.0;" in topo_cc
    for prefix, _ in rules.PCI_CLASSES:
        assert f'"{prefix}"' in topo_cc or prefix in ("0x060400", "0x068000")


def test_ndv4_pci_tree_alone(tmp_path):
    text = schedc.import_machine(TOPO / "ndv4-topo.xml", hosts=2, nic_speed="200Gbit/s",
                                 nvlinks=12, sm=80)
    found = params(text)
    assert found["B_pcie4_x16"] == "24 GB/s"  # link_width="16" link_speed="16 GT/s"
    assert found["B_net_200g"] == "25 GB/s"  # --nic-speed: the file knows NICs by class only
    assert found["B_nvlink_240"] == "240 GB/s"  # assumed 12 × SM80's 20 GB/s
    assert found["B_sys"] == "16 GB/s"  # AMD_BW: vendor="AuthenticAMD"
    assert "#   from: link_width=\"16\" link_speed=\"16 GT/s\"" in text
    session = schedc.load(study(tmp_path, text, 8))
    ring = schedc.time(session, "ring")
    # Each of the 30 steps moves V/16 over every GPU's PCIe x16 link (24 GB/s, slower than
    # the NIC's 25 GB/s) on the way to the NIC: T = 30α + 30·V/(16·B_pcie).
    B, V, alpha = (sympy.Symbol(n, positive=True) for n in ("B_pcie4_x16", "V", "alpha"))
    assert sympy.simplify(ring.cost.formula.xreplace(session.program.nominal | {})
                          - (30 * alpha + 30 * V / (16 * B)).xreplace(session.program.nominal)) == 0
    assert [v.ok for v in schedc.verify(session)] == [True, True, True]


def test_ncv4_quirks(tmp_path):
    """link_speed="", link_width="0", an NVLink to the GPU's own bus id, a NIC under a CPU."""
    text = schedc.import_machine(TOPO / "ncv4-topo.xml", hosts=2)
    found = params(text)
    assert found["B_pcie3_x16"] == "12 GB/s"  # 16 lanes (width 0) × fallback 60 / 80
    assert found["B_loc"] == "5000 GB/s" and found["B_net_100g"] == "12.5 GB/s"
    assert not any(name.startswith("B_nvlink") for name in found)
    assert text.count("names its own GPU") == 4
    session = schedc.load(study(tmp_path, text, 4))
    assert len(schedc.compare(session)) == 3


def test_p4d_comments_and_class_only_nics(tmp_path):
    with pytest.raises(SchedcError, match="known only by its class") as error:
        schedc.import_machine(TOPO / "p4d-24xl-topo.xml")
    assert error.value.span.line == 20
    text = schedc.import_machine(TOPO / "p4d-24xl-topo.xml", hosts=2, nic_speed="100Gbit/s",
                                 nvlinks=12, sm=80)
    found = params(text)
    assert found["B_pcie3_x16"] == "12 GB/s" and found["B_sys"] == "10 GB/s"  # 8 GT/s; SKL
    assert len(schedc.compare(schedc.load(study(tmp_path, text, 8)))) == 3


def test_ndv5_gen5(tmp_path):
    text = schedc.import_machine(TOPO / "ndv5-topo.xml", hosts=2, nic_speed="400Gbit/s",
                                 nvlinks=18, sm=90)
    found = params(text)
    assert found["B_pcie5_x16"] == "48 GB/s" and found["B_sys"] == "22 GB/s"
    assert found["B_nvlink_370_8"] == "370.8 GB/s" and found["B_net_400g"] == "50 GB/s"
    assert len(schedc.compare(schedc.load(study(tmp_path, text, 8)))) == 3


def test_full_dump_nvswitch_and_fabrics(tmp_path):
    for fabric in ("rail", "single-switch", "fat-tree:spines=2,oversub=2"):
        text = schedc.import_machine(TOPO / "hgx-h100-dump-constructed.xml", hosts=2,
                                     fabric=fabric)
        found = params(text)
        assert found["B_nvlink_370_8"] == "370.8 GB/s"  # (5+5+4+4) × 20.6
        assert found["B_net_400g"] == "50 GB/s"  # speed="400000" / 8000
        session = schedc.load(study(tmp_path, text, 8))
        summary = schedc.machine_summary(session)
        inside = [r for r in summary.routes if r.scope == "inside a host"]
        assert [r.classes for r in inside] == [("nvlink", "nvlink")]  # NVLink, never PCI
        if fabric.startswith("fat-tree"):
            uplinks = {link.forward for link in summary.links if link.cls == "uplink"}
            assert uplinks == {Fraction(100 * 10**9)}  # 8 × 50 GB/s / (2 spines × 2)
        assert len(schedc.compare(session)) == 3
    bigger = schedc.load(study(tmp_path, text, 8), ["hosts=4"])
    assert len([d for d in bigger.program.topology.devices if d.kind == "gpu"]) == 32


def test_c2c(tmp_path):
    found = params(schedc.import_machine(TOPO / "gh200-dump-constructed.xml"))
    assert found["B_c2c"] == "450 GB/s"  # bw="45000" × count="10" / 1000


def test_same_input_same_bytes():
    first = schedc.import_machine(TOPO / "ndv4-topo.xml", nic_speed="200Gbit/s")
    assert first == schedc.import_machine(TOPO / "ndv4-topo.xml", nic_speed="200Gbit/s")


# ---- errors: positioned, exit 2, no output file

BAD = {
    "msccl.xml": ('<algo name="x" proto="Simple" nchannels="1" coll="allreduce">\n</algo>\n',
                  1, "not an NCCL topology file"),
    "other.xml": ("<html><body/></html>\n", 1, "not an NCCL topology file"),
    "malformed.xml": ('<system version="1">\n  <cpu numaid="0">\n</system>\n', 3, "malformed XML"),
    "entity.xml": ('<?xml version="1.0"?>\n<!DOCTYPE system [<!ENTITY a "aaaa">]>\n'
                   '<system version="1"/>\n', 2, "document type declaration"),
    "external.xml": ('<!DOCTYPE system SYSTEM "file:///etc/passwd">\n<system version="1"/>\n', 1,
                     "document type declaration"),
    "class.xml": ('<system version="1">\n  <cpu numaid="0">\n    <pci busid="0000:01:00.0" '
                  'class="0x010802" link_speed="16 GT/s" link_width="4"/>\n  </cpu>\n</system>\n',
                  3, "unknown PCI class"),
    "speed.xml": ('<system version="1">\n  <cpu numaid="0">\n    <pci busid="0000:01:00.0" '
                  'class="0x030200" link_speed="3 GT/s" link_width="16"/>\n  </cpu>\n</system>\n',
                  3, "unknown PCI link speed"),
    "count.xml": ('<system version="1">\n  <cpu numaid="0">\n    <pci busid="0000:01:00.0" '
                  'class="0x030200" link_speed="16 GT/s" link_width="16">\n      <gpu dev="0" '
                  'sm="80" rank="0" gdr="1">\n        <nvlink target="0000:02:00.0" count="0" '
                  'tclass="0x068000"/>\n      </gpu>\n    </pci>\n  </cpu>\n</system>\n', 5,
                  'count="0" of <nvlink> must be at least 1'),
    "nvlinks.xml": ('<system version="1">\n  <cpu numaid="0">\n    <pci busid="0000:01:00.0" '
                    'class="0x030200" link_speed="16 GT/s" link_width="16">\n      <gpu dev="0" '
                    'sm="90" rank="0" gdr="1">\n        <nvlink target="0000:02:00.0" '
                    'count="999999999" tclass="0x068000"/>\n      </gpu>\n    </pci>\n  </cpu>\n'
                    '</system>\n', 5, "no GPU has more than 18 NVLinks"),
    "too_many.xml": ('<system version="1">\n  <cpu numaid="0">\n' + "".join(
        f'    <pci busid="0000:{b:02x}:00.0" class="0x030200" link_speed="16 GT/s" '
        'link_width="16"/>\n' for b in range(255)) + '  </cpu>\n</system>\n', 257,
        "more than 256 elements: NCCL's reader is limited to 256"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_files(run, tmp_path, name):
    text, line, message = BAD[name]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    out = tmp_path / "out.sched"
    code, stdout, stderr = run("machine", "import", path, "-o", out)
    assert code == 2 and not out.exists()
    assert f"{path}:{line}:" in stderr and message in stderr and "^" in stderr


def test_msccl_file_named(run):
    code, _, stderr = run("machine", "import", ROOT / "schedules" / "examples" / "pair_allreduce.xml")
    assert code == 2 and "the file is an MSCCL algorithm" in stderr


def test_missing_class_of_real_file(run):
    code, _, stderr = run("machine", "import", TOPO / "g5.48xl-topo.xml")
    assert code == 2 and "g5.48xl-topo.xml:14:5: error: " in stderr and "no class" in stderr


def test_detector_for_other_readers():
    from schedc.errors import SourceFile
    from schedc.xmltree import foreign_kind, parse
    data = (TOPO / "ncv4-topo.xml").read_bytes()
    (root,) = parse(SourceFile("ncv4-topo.xml", data.decode()), data)
    assert foreign_kind(root) == "this is an NCCL topology file: use `schedc machine import`"


def test_cli_writes_file(run, tmp_path):
    out = tmp_path / "m.sched"
    code, stdout, _ = run("machine", "import", TOPO / "hgx-h100-dump-constructed.xml",
                          "--hosts", "2", "-o", out)
    assert code == 0 and stdout == "" and out.read_text().startswith(
        "# Imported by `schedc machine import hgx-h100-dump-constructed.xml --hosts 2`")


def test_direct_nvlinks_pcilinks_and_bare_gpus(tmp_path):
    """Two <nvlink>s to one GPU add up (ncclTopoConnectNodes adds to an existing link,
    topo.cc:181: 2 + 2 links × 20 GB/s on sm 70 = 80 GB/s each way); a <pcilink> joins two
    PCIe switches at LOC_BW (topo.cc:891); a GPU without <gpu> has no NVLink."""
    def gpu(bus: str, dev: int, peer: str) -> str:
        return (f'<pci busid="{bus}" class="0x030200" link_speed="8 GT/s" link_width="16">'
                f'<gpu dev="{dev}" sm="70" rank="{dev}" gdr="1">'
                f'<nvlink target="{peer}" count="2" tclass="0x030200"/>'
                f'<nvlink target="{peer}" count="2" tclass="0x030200"/></gpu></pci>')
    path = tmp_path / "dgx1ish.xml"
    path.write_text('<system version="1">\n<cpu numaid="0" arch="x86_64" vendor="GenuineIntel" '
                    'familyid="6" modelid="79">\n'
                    '<pci busid="0000:10:00.0" class="0x060400" link_speed="8 GT/s" link_width="16">'
                    + gpu("0000:11:00.0", 0, "0000:21:00.0") +
                    '<pcilink class="0x060400" link="1" target="0000:20:00.0"/></pci>\n'
                    '<pci busid="0000:20:00.0" class="0x060400" link_speed="8 GT/s" link_width="16">'
                    + gpu("0000:21:00.0", 1, "0000:11:00.0") +
                    '<pci busid="0000:22:00.0" class="0x030200" link_speed="8 GT/s" link_width="16"/>'
                    '</pci>\n</cpu>\n</system>\n', encoding="utf-8")
    text = schedc.import_machine(path)
    assert "param B_nvlink_80 = 80 GB/s" in text
    assert "link g[0] <-> g[1] bw B_nvlink_80 class nvlink" in text  # both sides' files agree
    assert "link pci[0] <-> pci[1] bw B_loc class loc" in text
    assert "1 GPU(s) without a <gpu> child (0000:22:00.0)" in text
    (tmp_path / "m.sched").write_text(text)
    summary = schedc.machine_summary(schedc.load(tmp_path / "m.sched"))
    assert ("nvlink",) in {r.classes for r in summary.routes}


def test_detector_by_name():
    from schedc.xmltree import foreign_kind
    assert foreign_kind("system") == "this is an NCCL topology file: use `schedc machine import`"
    assert foreign_kind("algo").startswith("this is an MSCCL algorithm")
    assert foreign_kind("html") is None


def test_rtp_llm_bare_gpus_and_speedless_nets(tmp_path, run):
    """<gpu dev="0"/> (no sm, no NVLinks: NCCL completes it at run time) and <net>s without a
    speed, which need --nic-speed; PCIe Gen6 x16 = 16 × 480 / 80 = 96 GB/s, the 4-port NIC's
    x2 Gen4 link 2 × 120 / 80 = 3 GB/s, Intel model 173 (0xAD >= 0x8F) SRP_QPI_BW 22."""
    code, _, stderr = run("machine", "import", TOPO / "rtp-llm-topo.xml")
    assert code == 2 and "rtp-llm-topo.xml:11:11: error: <net name=\"mlx5_bond_0\"> gives no speed" in stderr
    text = schedc.import_machine(TOPO / "rtp-llm-topo.xml", nic_speed="400Gbit/s", hosts=2)
    found = params(text)
    assert (found["B_pcie6_x16"], found["B_pcie5_x16"], found["B_pcie4_x2"], found["B_sys"]) == \
        ("96 GB/s", "48 GB/s", "3 GB/s", "22 GB/s")
    assert "    gpu g[8]\n    nic n[9]\n" in text and "switch rail[12]" in text  # 8 + 4 ports
    assert len(schedc.compare(schedc.load(study(tmp_path, text, 8)))) == 3

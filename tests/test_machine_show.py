"""`schedc machine show` and `schedc machine import --nvidia-smi`: figures checked by hand."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from conftest import ROOT

import schedc
from schedc.errors import SchedcError, SourceFile
from schedc.xmltree import parse

TOPO = ROOT / "tests" / "fixtures" / "topo"
SEED = ROOT / "schedules" / "machines" / "nvlink_2x8.sched"


def test_show_seed_machine(run):
    code, out, _ = run("machine", "show", SEED)
    assert code == 0
    assert "hosts: 2" in out and "16 gpu" in out
    # B_L = 450 GB/s per GPU to the NVSwitch; B_N = 400 Gbit/s = 50 GB/s per NIC (the file).
    assert any(line.split()[:2] == ["nvlink", "16"] and "450 GB/s" in line for line in out.splitlines())
    assert any(line.split()[:2] == ["nic", "16"] and "50 GB/s" in line for line in out.splitlines())


def test_show_json(run):
    code, out, _ = run("machine", "show", SEED, "--json")
    document = json.loads(out)
    assert code == 0 and document["schema"] == "schedc.machine/1"
    assert document["hosts"] == ["node[0]", "node[1]"]
    gpus = [d for d in document["devices"] if d["kind"] == "gpu"]
    assert len(gpus) == 16 and gpus[0]["host"] == "node[0]"
    nvlink = next(link for link in document["links"] if link["class"] == "nvlink")
    assert nvlink["bandwidth_Bps"] == {"a_to_b": 450 * 10**9, "b_to_a": 450 * 10**9}
    assert document["derived_from"] == {}  # written by hand: nothing imported


def test_show_imported_derived_from_and_svg(run, tmp_path):
    machine = tmp_path / "m.sched"
    assert run("machine", "import", TOPO / "hgx-h100-dump-constructed.xml", "--hosts", "2",
               "-o", machine)[0] == 0
    host, fabric = tmp_path / "host.svg", tmp_path / "fabric.svg"
    code, out, _ = run("machine", "show", machine, "--json", "--host-svg", host,
                       "--fabric-svg", fabric)
    document = json.loads(out)
    nvlink = document["derived_from"]["B_nvlink_370_8"]
    assert nvlink["value"] == "370.8 GB/s" and "sm=\"90\"" in nvlink["from"]
    assert "topo.cc:856" in nvlink["rule"]
    for svg in (host, fabric):
        data = svg.read_bytes()
        (root,) = parse(SourceFile(str(svg), data.decode()), data)
        assert root.name == "svg"
    assert host.read_text().count("<rect") == 8 + 8 + 2 + 8 + 1  # GPUs, NICs, CPUs, PCIe, NVSwitch


def test_nvidia_smi(tmp_path):
    text = schedc.import_machine(TOPO / "dgx-a100-like-nvidia-smi.txt", nvidia_smi=True,
                                 sm=80, nic_speed="200Gbit/s", hosts=2)
    # NV12 on all 28 pairs: 12 × 7 links would exceed an A100's 12, so an NVSwitch with
    # 12 × 20 GB/s per GPU; PXB: GPU0, GPU1 and NIC0 share one PCIe switch.
    assert "param B_nvlink_240 = 240 GB/s" in text and "switch nvswitch" in text
    assert "    switch pci[4]" in text and "    switch cpu[2]" in text
    assert "link n[0] <-> pci[0]" in text and "link g[1] <-> pci[0]" in text
    (tmp_path / "m.sched").write_text(text)
    summary = schedc.machine_summary(schedc.load(tmp_path / "m.sched"))
    inside = {r.classes for r in summary.routes if r.scope == "inside a host"}
    assert inside == {("nvlink", "nvlink")}
    between = {r.classes: r.share for r in summary.routes if r.scope == "between hosts"}
    assert sum(between.values()) == 1 and all(isinstance(s, Fraction) for s in between.values())


def test_a_real_nvidia_smi_output(tmp_path):
    """A DGX-1's `nvidia-smi topo -m` (kept by microsoft/msccl-tools, see the fixtures'
    README): the hybrid cube mesh, each V100 with one NVLink to two peers (NV1) and two to two
    others (NV2). NCCL's per-link NVLink bandwidth for SM70 is 20 GB/s (SM70_NVLINK_BW,
    NVIDIA/nccl 5067397c src/graph/topo.h:20), so 8 NV1 pairs of 20 GB/s and 8 NV2 pairs of 40 GB/s, direct GPU-to-GPU
    links (no NVSwitch); PIX: each mlx5 NIC shares a PCIe switch with two GPUs."""
    text = schedc.import_machine(TOPO / "dgx1-nvidia-smi-msccl-tools.txt", nvidia_smi=True,
                                 sm=70, nic_speed="100Gbit/s", hosts=2)
    assert "param B_nvlink_20 = 20 GB/s" in text and "param B_nvlink_40 = 40 GB/s" in text
    assert "switch nvswitch" not in text
    (tmp_path / "m.sched").write_text(text)
    summary = schedc.machine_summary(schedc.load(tmp_path / "m.sched"))
    nvlinks = [link for link in summary.links if link.cls == "nvlink"]
    by_rate = {}
    for link in nvlinks:
        by_rate[link.bandwidth] = by_rate.get(link.bandwidth, 0) + 1
    assert sorted(by_rate.values()) == [16, 16]  # 8 pairs each, per host, on 2 hosts


def test_nvidia_smi_errors(tmp_path):
    with pytest.raises(SchedcError, match="--sm"):
        schedc.import_machine(TOPO / "dgx-a100-like-nvidia-smi.txt", nvidia_smi=True,
                              nic_speed="200Gbit/s")
    bad = tmp_path / "bad.txt"
    bad.write_text((TOPO / "dgx-a100-like-nvidia-smi.txt").read_text().replace("PXB", "PXQ", 1))
    with pytest.raises(SchedcError, match='unknown path type "PXQ"') as error:
        schedc.import_machine(bad, nvidia_smi=True, sm=80, nic_speed="200Gbit/s")
    assert error.value.span.line == 2 and error.value.span.col > 1
    with pytest.raises(SchedcError, match="GPU0"):
        empty = tmp_path / "empty.txt"
        empty.write_text("nothing here\n")
        schedc.import_machine(empty, nvidia_smi=True, sm=80)


def test_nvidia_smi_rows_must_match_the_header(tmp_path):
    lines = (TOPO / "dgx-a100-like-nvidia-smi.txt").read_text().split("\n")
    cut = tmp_path / "cut.txt"
    cut.write_text("\n".join(line for line in lines if not line.startswith("NIC2\t")))
    with pytest.raises(SchedcError, match="no row for NIC2, which the header names") as error:
        schedc.import_machine(cut, nvidia_smi=True, sm=80, nic_speed="200Gbit/s")
    assert error.value.span.line == 1
    twice = tmp_path / "twice.txt"
    twice.write_text("\n".join([lines[0].replace("GPU7", "GPU6")] + lines[1:]))
    with pytest.raises(SchedcError, match="the header names GPU6 twice"):
        schedc.import_machine(twice, nvidia_smi=True, sm=80, nic_speed="200Gbit/s")


def _smi(tmp_path, text: str):
    path = tmp_path / "smi.txt"
    path.write_text(text)
    return schedc.import_machine(path, nvidia_smi=True, sm=80, nic_speed="200Gbit/s")


def test_nvidia_smi_as_a_terminal_capture_prints_it(tmp_path):
    # On a terminal nvidia-smi underlines the header's names with ANSI escapes (ESC[4m ...
    # ESC[0m); a capture through `script` or a log keeps them. The matrix is the same.
    plain = (TOPO / "dgx-a100-like-nvidia-smi.txt").read_text()
    head, rest = plain.split("\n", 1)
    underlined = "\t".join(f"\x1b[4m{c}\x1b[0m" if c else c for c in head.split("\t"))
    assert _smi(tmp_path, underlined + "\n" + rest) == _smi(tmp_path, plain)


def test_nvidia_smi_last_nic_before_single_spaced_titles(tmp_path):
    # A header whose last device runs into the affinity titles with single spaces
    # (`mlx5_1 CPU Affinity NUMA Affinity`, as a documentation page printed it): both NICs.
    text = ("\tGPU0\tGPU1\tmlx5_0\tmlx5_1 CPU Affinity NUMA Affinity\n"
            "GPU0\t X \tNV4\tPHB\tSYS\t0-7\t0\n"
            "GPU1\tNV4\t X \tSYS\tPHB\t8-15\t1\n"
            "mlx5_0\tPHB\tSYS\t X \tSYS\t\t\n"
            "mlx5_1\tSYS\tPHB\tSYS\t X \t\t\n")
    machine = _smi(tmp_path, text)
    assert "nic n[2]" in machine
    assert "# mlx5_1 (line 5)" in machine


def test_nvidia_smi_row_the_header_does_not_name(tmp_path):
    text = ("\tGPU0\tGPU1\tmlx5_0\tCPU Affinity\n"
            "GPU0\t X \tNV4\tPHB\t0-7\n"
            "GPU1\tNV4\t X \tSYS\t8-15\n"
            "mlx5_0\tPHB\tSYS\t X \t\n"
            "mlx5_1\tSYS\tPHB\tSYS\t\n")
    with pytest.raises(SchedcError, match="a row for mlx5_1, which the header does not name") \
            as error:
        _smi(tmp_path, text)
    assert (error.value.span.line, error.value.span.col) == (5, 1)


def test_the_import_command_line_records_sm(run, tmp_path):
    code, out, err = run("machine", "import", "--nvidia-smi",
                         TOPO / "dgx-a100-like-nvidia-smi.txt", "--sm", "80",
                         "--nic-speed", "200Gbit/s")
    assert code == 0, err
    assert out.splitlines()[0] == ("# Imported by `schedc machine import --nvidia-smi "
                                   "dgx-a100-like-nvidia-smi.txt --nic-speed 200Gbit/s --sm 80`")


def test_an_rccl_topology_dump_is_named(tmp_path):
    # RCCL writes NCCL_TOPO_XML_VERSION 2 (ROCm/rccl src/graph/xml.h:47 at 0cbce2a) with
    # <xgmi> links between AMD GPUs; NCCL reads version 1 only.
    path = tmp_path / "rccl.xml"
    path.write_text('<system version="2">\n  <cpu numaid="0" affinity="ff" arch="x86_64">\n'
                    '    <pci busid="0000:15:00.0" class="0x120000" link_speed="32.0 GT/s PCIe" '
                    'link_width="16">\n      <gpu dev="0" sm="94" rank="0" gdr="1">\n'
                    '        <xgmi target="0000:1e:00.0" count="1" tclass="0x120000"/>\n'
                    '      </gpu>\n    </pci>\n  </cpu>\n</system>\n')
    with pytest.raises(SchedcError, match=r"this looks like RCCL's \(AMD\) dump") as error:
        schedc.import_machine(path)
    assert error.value.span.line == 1

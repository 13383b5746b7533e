"""A GPU's compute capability (`gpu g[8] sm 80`): declared in the language, checked where it
is written, carried into every copy of a host, read by NCCL's model instead of a silent
default, written by `machine import` from a dump's <gpu sm>, shown by `machine show`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT

import schedc
from schedc.errors import SchedcError

RING = (ROOT / "schedules" / "lib" / "ring.sched").as_posix()
SYSTEMS = ROOT / "schedules" / "machines" / "systems"


def _machine(tmp_path, gpus: str, ranks: str = "g") -> str:
    path = tmp_path / "m.sched"
    path.write_text(f"""param V = 1 MiB
topology {{
  host node[3] {{
{gpus}
    switch s
    link g[i] <-> s bw 100 GB/s for i in 0..3
  }}
  switch spine
  link node[h].s <-> spine bw 50 GB/s for h in 0..2
}}
import "{RING}"
let ranks = [node[h].g[i] for h in 0..2 for i in 0..3]
allreduce V over ranks
schedule ring = ring_allreduce(ranks)
""")
    return str(path)


def test_every_copy_of_a_host_keeps_the_sm(tmp_path):
    session = schedc.load(_machine(tmp_path, "    gpu g[4] sm 80"))
    gpus = [d for d in session.program.topology.devices if d.kind == "gpu"]
    assert len(gpus) == 12 and {d.sm for d in gpus} == {80}
    assert {d.sm for d in session.program.topology.devices if d.kind != "gpu"} == {None}


@pytest.mark.parametrize("decl, message, column", [
    ("    gpu g[4] sm 81", "sm 81: not a compute capability NCCL runs on", 17),
    ("    gpu g[4] sm 8.0", "sm 8.0: not a compute capability NCCL runs on", 17),
    ("    gpu g[4]\n    switch t sm 90", "only a gpu has a compute capability (sm), not a switch",
     17),
])
def test_a_wrong_sm_is_refused_where_it_is_written(tmp_path, run, decl, message, column):
    path = _machine(tmp_path, decl)
    code, out, err = run("time", path)
    assert code == 2 and out == ""
    line = 4 + decl.count("\n")
    assert f"m.sched:{line}:{column}: error: {message}" in err


def test_nccl_reads_the_declared_sm_and_derives_by_it(run):
    # NCCL enables NVLS only from SM 90 on (nvlsSupport, src/transport/nvls.cc): the DGX A100
    # file (sm 80) has none, the DGX H100 file (sm 90) its 16 channels (NVLS_NCHANNELS_SM90).
    a100 = schedc.nccl_model(schedc.load(SYSTEMS / "dgx_a100.sched"))
    h100 = schedc.nccl_model(schedc.load(SYSTEMS / "dgx_h100.sched"))
    assert (a100.comm["minCompCap"], a100.comm["nvlsSupport"]) == (80, 0)
    assert (h100.comm["minCompCap"], h100.comm["nvlsSupport"], h100.comm["nvlsChannels"]) == \
        (90, 1, 16)
    assert a100.comm.values["minCompCap"].derived_from.startswith("the machine: sm 80 at ")
    # --sm still decides, and says so.
    forced = schedc.nccl_model(schedc.load(SYSTEMS / "dgx_a100.sched"), sm=90)
    assert (forced.comm["minCompCap"], forced.comm.values["minCompCap"].derived_from) == (90, "--sm")


def test_an_undeclared_sm_is_the_named_default(tmp_path):
    model = schedc.nccl_model(schedc.load(_machine(tmp_path, "    gpu g[4]")))
    assert model.comm["minCompCap"] == 90
    assert "--sm's default 90: the machine declares no sm" in model.comm.values["minCompCap"].derived_from


@pytest.mark.parametrize("gpus, words", [
    ("    gpu g[2] sm 80\n    gpu x[2] sm 90", "the ranks' GPUs are of 2 models (sm 80 at"),
    ("    gpu g[2] sm 80\n    gpu x[2]", "some ranks' GPUs declare their sm and others do not"),
])
def test_ranks_of_several_or_unknown_models_are_refused(tmp_path, gpus, words):
    text = _machine(tmp_path, gpus)
    path = tmp_path / "m.sched"
    # four GPUs per host, two of each family: the ranks take both
    path.write_text(Path(text).read_text()
                    .replace("link g[i] <-> s bw 100 GB/s for i in 0..3",
                             "link g[i] <-> s bw 100 GB/s for i in 0..1\n"
                             "    link x[i] <-> s bw 100 GB/s for i in 0..1")
                    .replace("[node[h].g[i] for h in 0..2 for i in 0..3]",
                             "[d for h in 0..2 for d in [node[h].g[0], node[h].g[1], "
                             "node[h].x[0], node[h].x[1]]]"))
    with pytest.raises(SchedcError, match="pass --sm") as error:
        schedc.nccl_model(schedc.load(path))
    assert words in str(error.value)
    assert schedc.nccl_model(schedc.load(path), sm=80).comm["minCompCap"] == 80


def test_machine_import_writes_the_dumps_sm_and_show_prints_it(run, tmp_path):
    out = tmp_path / "hgx.sched"
    code, _, err = run("machine", "import", "tests/fixtures/topo/hgx-h100-dump-constructed.xml",
                       "--nic-speed", "400Gbit/s", "-o", str(out))
    assert code == 0, err
    assert "    gpu g[8] sm 90" in out.read_text().splitlines()
    code, text, _ = run("machine", "show", str(out))
    assert code == 0 and "GPU compute capability: sm 90 (8 GPUs)" in text.splitlines()
    code, text, _ = run("machine", "show", "--json", str(out))
    assert json.loads(text)["gpu_sm"] == [{"sm": 90, "gpus": 8}]
    model = schedc.nccl_model(schedc.load(out))
    assert model.comm.values["minCompCap"].derived_from.startswith(f"the machine: sm 90 at {out}:")


def _smi_import(run, tmp_path, sm: str) -> str:
    """The .sched file `machine import --nvidia-smi` writes for the DGX A100-like matrix."""
    out = tmp_path / "smi.sched"
    code, _, err = run("machine", "import", "--nvidia-smi",
                       "tests/fixtures/topo/dgx-a100-like-nvidia-smi.txt", "--sm", sm,
                       "--nic-speed", "200Gbit/s", "-o", str(out))
    assert code == 0, err
    return out.read_text()


def test_nvidia_smi_import_writes_the_given_sm(run, tmp_path):
    assert any(line.strip().startswith("gpu g[") and line.endswith(" sm 80")
               for line in _smi_import(run, tmp_path, "80").splitlines())


def test_nccl_on_a_machine_without_gpus_is_a_usage_error(run, tmp_path):
    # No ranks declare an sm when there are no ranks: the default, then derive's own refusal
    # (this was `((found, device),) = {}.items()`, an internal error, exit 70).
    path = tmp_path / "switches.sched"
    path.write_text("topology {\n  switch a, b\n  link a <-> b bw 1 GB/s\n}\n")
    code, out, err = run("nccl", path)
    assert (code, out) == (2, "") and "NCCL's model needs GPUs" in err
    assert "internal error" not in err


def test_nvidia_smi_import_of_an_sm_nccl_does_not_know_writes_none(run, tmp_path):
    # `--sm 81` passes the import's range check (10..200), but `gpu g[8] sm 81` is refused by
    # the language: the file written must load, with a note saying why no sm is declared.
    text = _smi_import(run, tmp_path, "81")
    assert "--sm 81 is not a compute capability NCCL runs on: no sm" in " ".join(
        line.lstrip("# ") for line in text.splitlines())
    assert not any(line.strip().startswith("gpu g[") and " sm " in line
                   for line in text.splitlines())
    code, shown, err = run("machine", "show", str(tmp_path / "smi.sched"))
    assert code == 0, err
    assert "GPU compute capability: not declared (8 GPUs;" in shown


@pytest.mark.parametrize("name, sm", [("oci_2node_16xA100-SXM4-40GB_rdma_allreduce", 80),
                                      ("nvidia_dgxc_1node_8xH100_nvlink_allreduce", 90)])
def test_the_calibration_machines_give_predict_nccl_their_sm(name, sm):
    # Their logs' GPUs (A100, H100, named in each file's header) are declared, so
    # `predict --nccl` needs no --sm for them (it took 90 for the A100 logs before).
    model = schedc.nccl_model(schedc.load(ROOT / "schedules" / "calibration" / f"{name}.sched"))
    assert model.comm["minCompCap"] == sm
    assert model.comm.values["minCompCap"].derived_from.startswith(f"the machine: sm {sm} at ")


def test_machine_show_promises_the_default_only_when_no_gpu_declares_one(run, tmp_path):
    # Some GPUs declaring an sm and others not: `schedc nccl` refuses (above), so `machine
    # show` must not say it assumes 90 for the rest.
    path = tmp_path / "mixed.sched"
    path.write_text("topology {\n  gpu g[2] sm 80\n  gpu x[2]\n  switch s\n"
                    "  link g[i] <-> s bw 100 GB/s for i in 0..1\n"
                    "  link x[i] <-> s bw 100 GB/s for i in 0..1\n}\n")
    code, text, err = run("machine", "show", path)
    assert code == 0, err
    assert "GPU compute capability: sm 80 (2 GPUs), not declared (2 GPUs)" in text.splitlines()
    path.write_text(path.read_text().replace(" sm 80", ""))
    code, text, err = run("machine", "show", path)
    assert code == 0, err
    assert "GPU compute capability: not declared (4 GPUs; `schedc nccl` assumes sm 90 unless " \
        "--sm)" in text.splitlines()


def test_a_dump_where_only_some_gpus_give_their_sm_writes_none_and_says_so(run, tmp_path):
    text = (ROOT / "tests/fixtures/topo/hgx-h100-dump-constructed.xml").read_text()
    start = text.index('<gpu dev="0"')
    end = text.index("</gpu>", start) + len("</gpu>")
    dump = tmp_path / "dump.xml"
    dump.write_text(text[:start] + '<gpu dev="0"/>' + text[end:])  # GPU 0: a bare <gpu>
    out = tmp_path / "m.sched"
    code, _, err = run("machine", "import", str(dump), "--nic-speed", "400Gbit/s", "-o", str(out))
    assert code == 0, err
    written = out.read_text()
    assert "    gpu g[8]" in written.splitlines() and " sm 90" not in written
    assert "only some GPUs give their sm (90): no sm is written" in written.replace("\n# ", " ")


def test_nccl_reads_a_dumps_gpu_sm_as_its_compute_capability():
    # NVIDIA/nccl src/graph/topo.cc:513 (v2.30.7-1): ncclTopoAddGpu reads
    #   NCCLCHECK(xmlGetAttrInt(xmlGpu, "sm", &gpu->gpu.cudaCompCap));
    # so a dump's <gpu sm="90"> is compute capability 90: what `machine import` writes as
    # `gpu g[8] sm 90` (test above) and NCCL's tuning takes as minCompCap.
    import subprocess
    mirror = ROOT.parent / ".mirror" / "NVIDIA+nccl" / "repo"  # as test_machine_import.py
    if not mirror.is_dir():
        pytest.skip("no NVIDIA/nccl mirror")
    topo_cc = subprocess.run(["git", "-C", str(mirror), "show", "v2.30.7-1:src/graph/topo.cc"],
                             capture_output=True, text=True, check=True).stdout
    assert 'xmlGetAttrInt(xmlGpu, "sm", &gpu->gpu.cudaCompCap)' in topo_cc

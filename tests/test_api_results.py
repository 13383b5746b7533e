"""The commands that tests/test_api.py does not compare with their API call (issue 35, item 1):
each command's output is its API call's result rendered by the same `schedc.render`
function, on shipped files, so the command line decides nothing the API does not."""

from __future__ import annotations

from conftest import ROOT, SCHEDULES

import schedc
from schedc.render.forall import for_all_text
from schedc.render.machine import machine_text
from schedc.render.nccl import nccl_text
from schedc.render.whatif import whatif_text

SEED = SCHEDULES / "seed" / "nvlink_2x8.sched"
HOSTS = SCHEDULES / "seed" / "nvlink_hosts.sched"
TOPO = ROOT / "tests" / "fixtures" / "topo" / "ndv4-topo.xml"
XML = ROOT / "tests" / "fixtures" / "hierarchical.xml"
FLAT = SCHEDULES / "algorithms" / "flat_8.sched"


def test_nccl_is_nccl_model(run):
    code, out, _ = run("nccl", SEED, "--collective", "allreduce", "--max-bytes", "1048576")
    model = schedc.nccl_model(schedc.load(SEED), collective="allreduce", max_bytes=2**20)
    assert code == 0 and out == nccl_text(model)


def test_whatif_is_whatif(run):
    code, out, _ = run("whatif", SEED, "--class", "nic")
    assert code == 0 and out == whatif_text(str(SEED), schedc.whatif(schedc.load(SEED), "nic"))


def test_machine_show_and_import_are_the_api(run):
    code, out, _ = run("machine", "show", SEED, "--max-routes", "4")
    assert code == 0
    assert out == machine_text(schedc.machine_summary(schedc.load(SEED), max_routes=4))
    code, out, _ = run("machine", "import", TOPO, "--hosts", "2", "--nic-speed", "200Gbit/s")
    text = schedc.import_machine(TOPO, hosts=2, nic_speed="200Gbit/s")
    assert code == 0 and out == text
    # the provenance the file cites is the command line that makes it again (the API's)
    assert "schedc machine import ndv4-topo.xml --hosts 2 --nic-speed 200Gbit/s" in text


def test_verify_for_all_and_against_an_executor_are_the_api(run):
    code, out, _ = run("verify", HOSTS, "--for-all", "hosts")
    results = schedc.verify_for_all(HOSTS, "hosts")
    assert code == 0 and out == "\n".join(for_all_text(r) for r in results) + "\n"
    code, out, _ = run("verify", XML, "--executor", "msccl")
    assert code == 0 and out == schedc.validate_msccl(str(XML), "msccl") + "\n"


def test_synthesize_prints_the_api_text(run, monkeypatch):
    monkeypatch.chdir(ROOT)  # (the text imports FILE relative to the current folder)
    code, out, _ = run("synthesize", FLAT, "--collective", "allgather")
    assert code == 0 and out == schedc.synthesize(FLAT, "allgather").text

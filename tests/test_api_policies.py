"""Policies the command line used to own, now in the API (issue 35): which machine each log
of a calibration fits and the refusals around it, and writing a fit (`write_calibration`),
each checked through the API and through the command, which must agree."""

from __future__ import annotations

import pytest
from conftest import SCHEDULES, needs_shared_data

import schedc
from schedc.errors import UsageError

CALIBRATIONS = SCHEDULES / "calibration"
DGX = "nvidia_dgxc_1node_8xH100_nvlink_allreduce"
XML = SCHEDULES / "examples" / "pair_allreduce.xml"


@pytest.mark.parametrize(("logs", "machines", "manifest", "message"), [
    (["a.txt"], [], None, "give LOG... and --machine M... (or --manifest FILE)"),
    ([], ["m.sched"], None, "give LOG... and --machine M... (or --manifest FILE)"),
    (["a.txt"], ["m.sched"], "x.txt", "give either --manifest or LOG... --machine M..., not both"),
    (["a.txt", "b.txt", "c.txt"], ["m.sched", "n.sched"], None,
     "3 logs and 2 --machine files: give one machine for all logs, or one per log"),
    (["a.txt"], [XML], None,
     f"--machine {XML}: calibrate fits the params of a .sched file (its machine, collective "
     "and schedule); an MSCCL algorithm has no params of its own: `schedc predict FILE.xml "
     "--machine M.sched --against LOG`"),
])
def test_calibrate_refuses_what_it_cannot_pair(run, logs, machines, manifest, message):
    with pytest.raises(UsageError) as refused:
        schedc.calibration_pairs(logs, machines, manifest)
    assert refused.value.message == message
    with pytest.raises(UsageError):
        schedc.calibrate_files(logs, machines, manifest=manifest)
    args = [*logs, *(a for m in machines for a in ("--machine", m)),
            *(["--manifest", manifest] if manifest else [])]
    code, out, err = run("calibrate", *args)
    assert (code, out, err) == (2, "", refused.value.render() + "\n")


def test_one_machine_serves_every_log():
    assert schedc.calibration_pairs(["a.txt", "b.txt"], ["m.sched"]) == \
        [("a.txt", "m.sched"), ("b.txt", "m.sched")]
    assert schedc.calibration_pairs(["a.txt", "b.txt"], ["m.sched", "n.sched"]) == \
        [("a.txt", "m.sched"), ("b.txt", "n.sched")]


def test_the_api_writes_the_fit_the_command_writes(run, tmp_path):
    """The DGX log's fit has a flagged param (a_LL128): not trusted, so `write_calibration` refuses it
    (the command notes that and exits 1, writing nothing) unless forced; forced, the API and
    the command write the same file, its provenance the command line."""
    log = str(needs_shared_data("nccl-tests", f"{DGX}.txt"))
    machine = str(CALIBRATIONS / f"{DGX}.sched")
    fitted = schedc.calibrate_files([log], [machine], sets=["V=1MiB"])
    assert not fitted.trusted
    assert fitted.made_by == (f"schedc calibrate {log} --machine {machine} --set V=1MiB "
                              "--split interleaved --every 4")
    mine, theirs = tmp_path / "api.sched", tmp_path / "cli.sched"
    with pytest.raises(schedc.FitNotWritten) as refused:
        schedc.write_calibration(fitted, mine)
    assert "the fit is not trustworthy" in refused.value.message and not mine.exists()
    code, _, err = run("calibrate", log, "--machine", machine, "--set", "V=1MiB",
                       "--write", mine)
    assert code == 1 and err == f"schedc: {refused.value.message}\n" and not mine.exists()
    schedc.write_calibration(fitted, mine, force=True)
    code, _, _ = run("calibrate", log, "--machine", machine, "--set", "V=1MiB",
                     "--write", theirs, "--force")
    assert code == 1 and mine.read_text() == theirs.read_text()
    assert mine.read_text().startswith(f"# Fitted by: {fitted.made_by} --force\n")


TUNER = SCHEDULES / "examples" / "tuner_nvlink_2x8.sched"
FLAT = SCHEDULES / "examples" / "tuner_flat_8.sched"


@pytest.mark.parametrize(("kwargs", "args", "message"), [
    ({"nodes": "1,2", "against_nccl": "5%"}, ("--nodes", "1,2", "--against-nccl"),
     "--against-nccl compares on the file's own machine: drop --nodes"),
    ({"against_nccl": "lots"}, ("--against-nccl", "--margin", "lots"),
     "--margin expects a share like 5%, got 'lots'"),
    ({"against_nccl": "-1%"}, ("--against-nccl", "--margin", "-1%"),
     "--margin -1%: between 0% and 1000%"),
])
def test_tune_against_nccl_refuses_alike(run, kwargs, args, message):
    """The refusals of `tune --against-nccl`, which the command used to make itself after
    the tables were tuned, come from the API, before any work."""
    with pytest.raises(UsageError) as refused:
        schedc.tune(schedc.load(FLAT), "allreduce", "8B:16GB", **kwargs)
    assert refused.value.message == message
    code, out, err = run("tune", FLAT, "--collective", "allreduce", "--sizes", "8B:16GB", *args)
    assert (code, out, err) == (2, "", refused.value.render() + "\n")


def test_tune_against_nccl_gives_the_commands_rows(run, tmp_path):
    session = schedc.load(TUNER)
    tuning = schedc.tune(session, "allreduce", "1KB:1GB", against_nccl="5%")
    (table,) = tuning.tables
    assert tuning.margin == "5%" and table.against and table.against_notes
    plain = schedc.tune(session, "allreduce", "1KB:1GB").tables[0]
    assert plain.against == () and (table.against, table.against_notes) == \
        schedc.against_nccl(session, plain, "allreduce", 0.05)
    out = tmp_path / "nccl_tuner.conf"
    code, _, err = run("tune", TUNER, "--collective", "allreduce", "--sizes", "1KB:1GB",
                       "--against-nccl", "-o", out)
    assert code == 0, err
    rows = [line.split(",") for line in out.read_text().splitlines() if not line.startswith("#")]
    assert [(int(r[1]), int(r[2])) for r in rows] == \
        [(a.min_bytes, a.max_bytes) for a in table.against]


def test_sweep_writes_the_csv_and_the_plot_the_command_writes(run, tmp_path):
    """Issue 35: writing `sweep`'s CSV and plot is the API's; the command only prints the
    summary. Both sides write the same bytes; a path that cannot be written is refused
    before any work (a directory), as the command refuses it while parsing."""
    pcie = SCHEDULES / "seed" / "pcie_2x4.sched"
    mine, theirs = tmp_path / "api.csv", tmp_path / "cli.csv"
    swept = schedc.sweep(schedc.load(pcie), "B_L=4GB/s:128GB/s:6", csv=mine,
                         plot=tmp_path / "api.svg")
    code, out, err = run("sweep", pcie, "--vary", "B_L=4GB/s:128GB/s:6", "--csv", theirs,
                         "--plot", tmp_path / "cli.svg")
    assert code == 0, err
    assert mine.read_bytes() == theirs.read_bytes()
    assert len(mine.read_text().splitlines()) == 1 + len(swept.values) == 7
    assert (tmp_path / "api.svg").stat().st_size > 0 and out.startswith("wrote 6 points")
    with pytest.raises(UsageError, match="directory"):
        schedc.sweep(schedc.load(pcie), "B_L=4GB/s:128GB/s:6", csv=tmp_path)


def test_export_msccl_writes_and_refuses_to_replace_as_the_command_does(run, tmp_path):
    """Writing `export msccl -o` and refusing to replace a file without --force are the
    API's (`output=`, `force=`)."""
    pcie = SCHEDULES / "seed" / "pcie_2x4.sched"
    mine, theirs = tmp_path / "api.xml", tmp_path / "cli.xml"
    text = schedc.export_msccl(schedc.load(pcie), "ring", output=mine)
    code, out, err = run("export", "msccl", pcie, "-s", "ring", "-o", theirs)
    assert code == 0 and out == "", err
    assert mine.read_text() == theirs.read_text() == text
    with pytest.raises(UsageError) as refused:
        schedc.export_msccl(schedc.load(pcie), "ring", output=mine)
    assert refused.value.message == f"{mine} exists; --force replaces it"
    code, out, err = run("export", "msccl", pcie, "-s", "ring", "-o", mine)
    assert (code, out, err) == (2, "", refused.value.render() + "\n")
    assert schedc.export_msccl(schedc.load(pcie), "ring", output=mine, force=True) == text

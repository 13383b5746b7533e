"""Policies the command line used to own, now in the API (issue 35): which machine each log
of a calibration fits and the refusals around it, and writing a fit (`write_calibration`),
each checked through the API and through the command, which must agree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SCHEDULES, needs_shared_data

import schedc
from schedc.errors import UsageError
from schedc.render.errors import error_json

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


PCIE = SCHEDULES / "seed" / "pcie_2x4.sched"
HOSTS = SCHEDULES / "seed" / "nvlink_hosts.sched"
FLAT_8 = SCHEDULES / "algorithms" / "flat_8.sched"
TOPO = SCHEDULES.parent / "tests" / "fixtures" / "topo" / "ndv4-topo.xml"
RD = SCHEDULES.parent / "tests" / "fixtures" / "forall" / "recursive_doubling.sched"
NO_LOG = "no-such-log.txt"  # never read: the refusals come first


def test_synthesize_writes_and_refuses_to_replace_as_the_command_does(run, tmp_path):
    """Issue 35: refusing to replace an existing output without --force was the command's
    own `if`; now `synthesize(output=, force=)` writes the file and refuses it, before any
    work, with the words the command prints."""
    mine, theirs = tmp_path / "api.sched", tmp_path / "cli.sched"
    made = schedc.synthesize(FLAT_8, "allgather", output=mine)
    code, _, err = run("synthesize", FLAT_8, "--collective", "allgather", "-o", theirs)
    assert code == 0, err
    assert mine.read_text() == theirs.read_text() == made.text  # (same folder: same import)
    with pytest.raises(UsageError) as refused:
        schedc.synthesize(FLAT_8, "allgather", output=mine)
    assert refused.value.message == f"{mine} exists; --force replaces it"
    code, out, err = run("synthesize", FLAT_8, "--collective", "allgather", "-o", mine)
    assert (code, out, err) == (2, "", refused.value.render() + "\n")
    mine.write_text("old")
    schedc.synthesize(FLAT_8, "allgather", output=mine, force=True)
    assert mine.read_text() == made.text


def test_report_names_and_writes_its_page_as_the_command_does(run, tmp_path, monkeypatch):
    """The page's default name (FILE's stem + .html, in the current folder) is the API's
    (`report_path`), and so is writing it: the command's page and the API's are one text."""
    monkeypatch.chdir(tmp_path)
    session = schedc.load(PCIE)
    assert schedc.report_path(session) == Path("pcie_2x4.html")
    assert schedc.report_path(session, tmp_path / "x.html") == tmp_path / "x.html"
    page = schedc.report(session, output=tmp_path / "api.html")
    code, _, err = run("report", PCIE)
    assert code == 0 and err.startswith("wrote pcie_2x4.html (")
    assert (tmp_path / "pcie_2x4.html").read_text(encoding="utf-8") == page == \
        (tmp_path / "api.html").read_text(encoding="utf-8")
    with pytest.raises(UsageError) as refused:  # before any work: no page is made
        schedc.report(session, output=tmp_path)
    assert refused.value.message == f"cannot write {tmp_path}: it is a directory"
    code, out, err = run("report", PCIE, "-o", tmp_path)
    assert (code, out, err) == (2, "", refused.value.render() + "\n")


@pytest.mark.parametrize(("options", "args", "message"), [
    ({"executor": "msccl", "json": True}, ("--executor", "msccl", "--json"),
     "--executor checks one MSCCL XML file (FILE.xml) and takes no --schedule, --set, --json, "
     "--machine, --ranks or --for-all"),
    ({"executor": "msccl", "for_all": "hosts"}, ("--executor", "msccl", "--for-all", "hosts"),
     "--executor checks one MSCCL XML file (FILE.xml) and takes no --schedule, --set, --json, "
     "--machine, --ranks or --for-all"),
    ({"max_steps": 8}, ("--max-steps", "8"), "--max-steps goes with --executor"),
    ({"require_proof": True}, ("--require-proof",),
     "--from and --require-proof go with --for-all PARAM"),
    ({"start": 2}, ("--from", "2"), "--from and --require-proof go with --for-all PARAM"),
    ({"for_all": "hosts", "ranks": "ranks"}, ("--for-all", "hosts", "--ranks", "ranks"),
     "--for-all reads a .sched file; --machine and --ranks are for MSCCL XML"),
])
def test_verify_says_what_goes_with_what_as_the_api_does(run, options, args, message):
    """`verify`'s exclusions (which options go with --executor, which with --for-all) were
    `if`s of the command; they are `VerifyOptions`' now, and the command dispatches on its
    `mode`."""
    from schedc.api.verifying import VerifyOptions
    with pytest.raises(UsageError) as refused:
        VerifyOptions(**options)
    assert refused.value.message == message
    code, out, err = run("verify", HOSTS, *args)
    assert (code, err) == (2, refused.value.render() + "\n")
    # (with --json the error is on stdout too, as a schedc.error/1 object)
    assert out == ("" if "--json" not in args else error_json([refused.value]))
    assert VerifyOptions(executor="msccl").mode == "executor"
    assert VerifyOptions(for_all="hosts", require_proof=True).mode == "for-all"
    assert VerifyOptions(schedules=("ring",)).mode == "files"


def test_the_for_all_verdict_is_the_apis_and_the_command_maps_it(run):
    """--require-proof's exit code: the API says whether the run holds (`for_all_holds`),
    the command maps False to 1. Recursive doubling is outside the affine class: unknown
    (docs/verification.md), so it holds without --require-proof and not with it."""
    results = schedc.verify_for_all(RD, "hosts")
    assert [r.status for r in results] == ["unknown"]
    assert schedc.for_all_holds(results) and not schedc.for_all_holds(results,
                                                                      require_proof=True)
    assert run("verify", RD, "--for-all", "hosts")[0] == 0
    assert run("verify", RD, "--for-all", "hosts", "--require-proof")[0] == 1
    # by the rule, on statuses alone: a refuted schedule never holds
    from types import SimpleNamespace as Result
    assert not schedc.for_all_holds([Result(status="proved"), Result(status="refuted")])
    assert schedc.for_all_holds([Result(status="proved")], require_proof=True)


@pytest.mark.parametrize(("kwargs", "args", "message"), [
    ({"sm": 90}, ("--sm", "90"), "--sm and --input go with --nccl (NCCL's own tuning model)"),
    ({"inputs": ("ring.bwIntra=20",)}, ("--input", "ring.bwIntra=20"),
     "--sm and --input go with --nccl (NCCL's own tuning model)"),
    ({"nccl": True, "fitted": "fit.sched"}, ("--nccl", "--fitted", "fit.sched"),
     "--nccl predicts by NCCL's own constants: --fitted has no params there"),
])
def test_predict_says_what_goes_with_nccl_as_the_api_does(run, kwargs, args, message):
    with pytest.raises(UsageError) as refused:
        schedc.predict_against(schedc.load(PCIE), [NO_LOG], **kwargs)
    assert refused.value.message == message
    code, out, err = run("predict", PCIE, "--against", NO_LOG, *args)
    assert (code, out, err) == (2, "", refused.value.render() + "\n")


def test_tune_writes_the_table_the_command_writes(run, tmp_path):
    mine, theirs = tmp_path / "api.conf", tmp_path / "cli.conf"
    tuning = schedc.tune(schedc.load(FLAT), "allreduce", "8B:16GB", output=mine)
    code, _, err = run("tune", FLAT, "--collective", "allreduce", "--sizes", "8B:16GB",
                       "-o", theirs)
    assert code == 0 and err == f"wrote {theirs}\n"
    assert mine.read_text() == theirs.read_text() == schedc.tuning_csv(tuning)
    # the envelope's two stretches (doubling, then ring: the API's docstring) are its rows
    rows = [line.split(",") for line in mine.read_text().splitlines() if line[0] != "#"]
    assert len(rows) == len(tuning.tables[0].envelope.stretches) == 2


def test_machine_import_writes_and_notes_as_the_command_does(run, tmp_path):
    """`machine import -o`: the API writes the file; the command says so and prints the
    notes of its head (`machine_notes`), one line each, on stderr."""
    mine, theirs = tmp_path / "api.sched", tmp_path / "cli.sched"
    text = schedc.import_machine(TOPO, nic_speed="200Gbit/s", output=mine)
    notes = schedc.machine_notes(text)
    # ndv4's file gives no <gpu dev> and no <gpu> with NVLinks (tests/fixtures/topo/
    # ndv4-topo.xml: its GPUs are <pci class="0x030200"> only): two notes, in that order
    assert [n.split(":")[0] for n in notes] == [
        "GPUs are numbered by PCI bus id",
        "GPUs are known only by their PCI class (no <gpu> with an sm or NVLinks)"]
    code, out, err = run("machine", "import", TOPO, "--nic-speed", "200Gbit/s", "-o", theirs)
    assert (code, out) == (0, "")
    assert err == f"wrote {theirs}\n" + "".join(f"note: {n}\n" for n in notes)
    assert mine.read_text() == theirs.read_text() == text


def test_machine_show_draws_what_the_command_draws(run, tmp_path):
    session = schedc.load(SCHEDULES / "seed" / "nvlink_2x8.sched")
    schedc.machine_summary(session, 4, host_svg=tmp_path / "h1.svg",
                           fabric_svg=tmp_path / "f1.svg")
    code, _, err = run("machine", "show", SCHEDULES / "seed" / "nvlink_2x8.sched",
                       "--max-routes", "4", "--host-svg", tmp_path / "h2.svg",
                       "--fabric-svg", tmp_path / "f2.svg")
    assert code == 0 and err == f"wrote {tmp_path / 'h2.svg'}\nwrote {tmp_path / 'f2.svg'}\n"
    for kind in "hf":
        drawn = (tmp_path / f"{kind}1.svg").read_text()
        assert drawn.startswith("<svg") or drawn.startswith("<?xml")
        assert drawn == (tmp_path / f"{kind}2.svg").read_text()


def test_nccl_says_what_its_inputs_do_not_see_as_the_api_does(run):
    """Which note `nccl` prints under a --derate was the command's; the API's model carries
    it (`NcclModel.notes`), the command prints each as `note: ...` on stderr."""
    seed = SCHEDULES / "seed" / "nvlink_2x8.sched"
    derate = "node[0].g[0]<->rail[0]=0.5"
    model = schedc.nccl_model(schedc.load(seed, derate=[derate]), collective="allreduce",
                              max_bytes=2**20)
    assert [n.split(";")[0] for n in model.notes] == \
        ["what-if: node[0].g[0]<->rail[0] derated by 1/2"]
    assert schedc.nccl_model(schedc.load(seed), collective="allreduce",
                             max_bytes=2**20).notes == ()
    code, _, err = run("nccl", seed, "--derate", derate, "--collective", "allreduce",
                       "--max-bytes", "1MiB")
    assert code == 0 and err == "".join(f"note: {n}\n" for n in model.notes)


def test_export_astra_writes_the_folder_the_command_writes(run, tmp_path):
    """`export astra -o DIR`: the API writes the folder (`output=`, `force=`) and names the
    files it wrote; a folder holding files is refused alike, before any work."""
    seed = SCHEDULES / "seed" / "nvlink_2x8.sched"
    mine, theirs = tmp_path / "api", tmp_path / "cli"
    astra = schedc.export_astra(schedc.load(seed), "hierarchical", output=mine)
    code, out, err = run("export", "astra", seed, "-s", "hierarchical", "-o", theirs, "--json")
    assert code == 0, err
    # 16 ranks: a trace and a workload each, and the system, network and memory files
    assert len(astra.written) == 2 * 16 + 3 == len(json.loads(out)["files"])
    assert list(astra.written) == json.loads(out)["files"]
    for name in astra.written:
        assert (mine / name).read_bytes() == (theirs / name).read_bytes(), name
    with pytest.raises(UsageError) as refused:
        schedc.export_astra(schedc.load(seed), "hierarchical", output=mine)
    code, out, err = run("export", "astra", seed, "-s", "hierarchical", "-o", mine)
    assert (code, out, err) == (2, "", refused.value.render() + "\n")
    assert schedc.export_astra(schedc.load(seed), "hierarchical", output=mine,
                               force=True).written == astra.written


@pytest.mark.parametrize("words", [
    ("export", "msccl", PCIE, "-s", "ring", "-o"), ("tune", FLAT, "--collective", "allreduce",
                                                   "--sizes", "8B:16GB", "-o"),
    ("report", PCIE, "-o"), ("machine", "import", TOPO, "--nic-speed", "200Gbit/s", "-o"),
    ("synthesize", FLAT_8, "--collective", "allgather", "-o"),
    ("sweep", PCIE, "--vary", "V=1MiB:2MiB:2", "--csv"), ("sweep", PCIE, "--vary",
                                                           "V=1MiB:2MiB:2", "--plot"),
    ("solve", PCIE, "time(ring) = 1 s", "--for", "V", "--plot"),
    ("machine", "show", PCIE, "--host-svg"), ("machine", "show", PCIE, "--fabric-svg"),
    ("calibrate", NO_LOG, "--machine", PCIE, "--write"),
    ("predict", PCIE, "--against", NO_LOG, "--plot"),
], ids=lambda w: " ".join(str(x) for x in w[:2]) + " " + str(w[-1]))
def test_an_output_that_is_a_directory_is_refused_in_the_apis_words(run, tmp_path, words):
    """Every file output of every command is checked by the API's `check_output` (click no
    longer refuses a directory first, in its own words), before any work."""
    with pytest.raises(UsageError) as refused:
        schedc.check_output(tmp_path)
    code, out, err = run(*words, tmp_path)
    assert (code, out, err) == (2, "", refused.value.render() + "\n")


def test_a_calibration_says_its_outliers_as_the_command_lists_them(run):
    """The rows a fit leaves out as outliers are the API's result (`Calibration.outliers`),
    which the command prints; the command used to read the logs again for them. At a factor
    of 1.05 the DGX log has some (its rows' two times differ by up to 1.23: 95th percentile
    of the shared logs, measure/noise.py)."""
    log = str(needs_shared_data("nccl-tests", f"{DGX}.txt"))
    machine = str(CALIBRATIONS / f"{DGX}.sched")
    fitted = schedc.calibrate_files([log], [machine], sets=["V=1MiB"], outlier_factor=1.05)
    assert fitted.outliers and list(fitted.outliers) == schedc.outlier_rows([log], 1.05)
    code, out, _ = run("calibrate", log, "--machine", machine, "--set", "V=1MiB",
                       "--outlier-factor", "1.05", "--json")
    assert code in (0, 1)
    assert [(o["log"], o["line"]) for o in json.loads(out)["outliers"]] == \
        [(p, r.span.line) for p, r in fitted.outliers]

"""Issue 22: `schedc predict --nccl`, a log against NCCL's own tuning model on the file's
machine (nothing fitted). The expected times are worked out by hand from NCCL's constants
(NVIDIA/nccl v2.30.7-1, src/graph/tuning.cc), not read back from schedc.nccl."""

from __future__ import annotations

import json

import pytest
from conftest import SCHEDULES, SHARED_DATA, needs_shared_data

LOGS = SHARED_DATA / "nccl-tests"
CALIBRATIONS = SCHEDULES / "calibration"
DGX = "nvidia_dgxc_1node_8xH100_nvlink_allreduce"
OCI = "oci_2node_16xA100-SXM4-40GB_rdma_allreduce"


def _predict(run, name: str, *extra: str):
    log = needs_shared_data("nccl-tests", f"{name}.txt")
    code, out, err = run("predict", CALIBRATIONS / f"{name}.sched", "--against", log, "--nccl",
                         *extra, "--json")
    assert code == 0, err
    return json.loads(out)


def test_two_hosts_small_size_is_the_tree_ll_latency(run):
    # 2 hosts × 8 A100 (sm 80), 8 B: NCCL picks tree/LL; its latency (tuning.cc:385-417) is
    # baseLat[tree][LL] 6.8 + 2 × ((8 - 1) × hwLat[NVLINK][tree][LL] 0.6 + log2(2) ×
    # hwLat[NET][tree][LL] 5.0) = 6.8 + 2 × (4.2 + 5.0) = 25.2 µs; 8 B / bw adds < 0.01 µs.
    got = _predict(run, OCI, "--sm", "80")
    first = got["rows"][0]
    assert first["size"] == 8 and first["protocol"] == "tree/ll"
    assert first["predicted_s"] == pytest.approx(25.2e-6, abs=0.01e-6)
    assert got["schedule"] == "NCCL 2.30.7's tuning model (sm 80)" and got["fitted"] is None


def test_one_host_small_size_is_the_ring_ll_latency(run):
    # One host of 8 H100: no network, NCCL's ring/LL at 8 B costs baseLat[ring][LL] 6.6 +
    # nsteps 2 × (8 - 1) = 14 steps × hwLat[NVLINK][ring][LL] 0.6 = 15.0 µs (tuning.cc:399-412).
    got = _predict(run, DGX, "--sm", "90")
    first = got["rows"][0]
    assert first["protocol"] == "ring/ll"
    assert first["predicted_s"] == pytest.approx(15.0e-6, abs=0.01e-6)
    # Measured 13.67 µs (the log's first row): the error is the model's, row by row.
    assert first["error"] == pytest.approx(15.0 / 13.67 - 1, abs=1e-3)


def test_an_input_override_moves_nccls_choice(run):
    # tree.latencyInter = 75 (what aws-ofi-nccl reports for p4d/p5, src/platform-aws.cpp) is
    # added to each of the tree's 2 · log2(2) inter-node steps (tuning.cc:389): tree/LL would
    # cost 25.2 + 150 µs, so NCCL takes ring/LL instead: baseLat[ring][LL] 6.6 + (30 - 2)
    # intra steps × max(hwLat[NVLINK][ring][LL] 0.6, netOverhead 1.0) + 2 inter steps ×
    # hwLat[NET][ring][LL] 2.7 = 6.6 + 28 + 5.4 = 40.0 µs (tuning.cc:399-412).
    more = _predict(run, OCI, "--sm", "80", "--input", "tree.latencyInter=75")["rows"][0]
    assert more["protocol"] == "ring/ll"
    assert more["predicted_s"] == pytest.approx(40.0e-6, abs=0.01e-6)


def test_text_says_nothing_is_fitted(run):
    log = needs_shared_data("nccl-tests", f"{DGX}.txt")
    code, out, err = run("predict", CALIBRATIONS / f"{DGX}.sched", "--against", log, "--nccl")
    assert code == 0, err
    assert out.startswith("predict NCCL 2.30.7's tuning model (sm 90) against 32 measured "
                          "rows, by NCCL's model alone, nothing fitted\n")
    assert "ring/ll" in out and "geomean |error|" in out


def test_plot_marks_nccls_picks(run, tmp_path):
    log = needs_shared_data("nccl-tests", f"{DGX}.txt")
    out = tmp_path / "nccl.svg"
    code, _, err = run("predict", CALIBRATIONS / f"{DGX}.sched", "--against", log, "--nccl",
                       "--plot", out)
    assert code == 0, err
    svg = out.read_text()
    # NCCL's pick changes from ring/LL to NVLS/Simple between 1 and 2 MiB: marked there.
    assert "ring/ll→nvls/simple" in svg


@pytest.mark.parametrize("args, said", [
    (("--sm", "80"), "--sm and --input go with --nccl"),
    (("--input", "nNodes=2"), "--sm and --input go with --nccl"),
    (("--nccl", "--fitted", str(CALIBRATIONS / "nccl_constants.sched")), "--fitted has no"),
    (("--nccl", "--input", "nosuch=1"), "not an input of NCCL's tuning model"),
])
def test_misused_options_are_refused(run, args, said):
    log = LOGS / f"{DGX}.txt"
    code, out, err = run("predict", CALIBRATIONS / f"{DGX}.sched", "--against", log, *args)
    assert code == 2 and out == "" and said in err and "Traceback" not in err


# ---- --split leave-one-out:SIZE: transfer plus the new machine's smallest rows ----------------

def _runs(*names: str):
    import schedc
    from schedc.analysis.calibrate.calibration import Run
    from schedc.measure.nccl_tests import read_log
    out = []
    for name in names:
        log = needs_shared_data("nccl-tests", f"{name}.txt")
        session = schedc.load(CALIBRATIONS / f"{name}.sched")
        out.append(Run(session, "nccl,nccl_1", str(log), read_log(log).table()))
    return out


def test_leave_one_out_fits_the_own_params_on_the_smallest_rows():
    """Each log held out in turn: its shared constants are the other log's fit, its own
    param (the fabric's latency) is fitted on its rows <= 16 B (8 B and 16 B), and only its
    other rows count as held out."""
    # (the OCI fold's own lat_rdma is keyed as shared in a one-log fit; p4de has none)
    import sympy

    from schedc.analysis.calibrate.calibration import Split
    from schedc.analysis.calibrate.fit import calibrate_runs
    runs = _runs("aws_2node_p4de_16xA100-80GB_efa_allreduce", OCI)  # both A100: every shared
    # constant of the one is fitted on the other
    cal = calibrate_runs(runs, split=Split("leave-one-out", own_below=16))
    plain = calibrate_runs(runs, split=Split("leave-one-out"))
    points = cal.comparison.points
    assert [p.size for p in points if p.fit] == [8, 16, 8, 16]
    held, fold = runs[0], dict(cal.folds)[runs[0].log]
    own = [p for p in fold.params if p.log == held.log]
    assert [p.name for p in own] == ["lat_efa"]
    # The row at 1 GiB is the SymPy formula of the held-out machine at the other log's shared
    # constants and its own fitted latency.
    program = held.session.program
    values = dict(program.nominal)
    for p in fold.params:
        if (p.log is None or p.log == held.log) and p.name in program.params:
            values[program.params[p.name].symbol] = sympy.Rational(p.value)
    formula = sympy.Min(*(held.session.timing(s).cost.formula for s in ("nccl", "nccl_1")))
    k = next(k for k, p in enumerate(points) if p.log == held.log and p.size == 2**30)
    at = {**values, program.params["V"].symbol: 2**30}
    assert float(formula.xreplace(at)) == pytest.approx(cal.comparison.predicted[k], rel=1e-9)
    # Its 160 µs floor, 66 % low at the file's 2.7 µs, is now met on the fit rows (8, 16 B)
    # and carries to the held-out small rows (32 B .. 1 KiB within 15 %).
    small = [abs(e) for p, e in zip(points, cal.comparison.errors)
             if p.log == held.log and 32 <= p.size <= 1024]
    before = [abs(e) for p, e in zip(plain.comparison.points, plain.comparison.errors)
              if p.log == held.log and 32 <= p.size <= 1024]
    assert max(small) < 0.15 < 0.6 < min(before)


@pytest.mark.parametrize("split, said", [
    ("leave-one-out:0B", "expected interleaved, size:SIZE"),
    ("leave-one-out:8B", "its rows <= 8 B for its own params lat_rdma: 1 fit rows cannot check"),
])
def test_leave_one_out_size_misuse_is_refused(run, split, said):
    logs = [needs_shared_data("nccl-tests", f"{n}.txt") for n in (DGX, OCI)]
    code, out, err = run("calibrate", *logs, "--machine", CALIBRATIONS / f"{DGX}.sched",
                         "--machine", CALIBRATIONS / f"{OCI}.sched", "--split", split)
    assert code == 2 and out == "" and said in err and "Traceback" not in err


def test_leave_one_out_size_json(run):
    logs = [needs_shared_data("nccl-tests", f"{n}.txt") for n in (DGX, OCI)]
    code, out, err = run("calibrate", *logs, "--machine", CALIBRATIONS / f"{DGX}.sched",
                         "--machine", CALIBRATIONS / f"{OCI}.sched", "--split",
                         "leave-one-out:16B", "--json")
    document = json.loads(out)
    assert code in (0, 1) and document["split"] == {"kind": "leave-one-out", "every": 4,
                                                    "size": 16}
    # The single host declares no own param: none of its rows is fitted; OCI's 8 and 16 B
    # rows fit its lat_rdma, which its fold lists with the log's name.
    assert [(r["log"], r["size"]) for r in document["rows"] if r["fit"]] == \
        [(str(logs[1]), 8), (str(logs[1]), 16)]
    folds = {f["heldout_log"]: f for f in document["folds"]}
    assert f"lat_rdma@{logs[1]}" in folds[str(logs[1])]["params"]
    assert any("no own params" in n for n in document["notes"])

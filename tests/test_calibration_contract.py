"""Issue 22: the log reader's contract as `calibrate` and `predict` meet it (each defect the
issue lists, with a test), the splits, several logs in one fit, and the model checks.

Small logs are the real single-host sweep (../shared/data/nccl-tests, not shipped) with one
thing changed, written to tmp_path; its machine file is the shipped one."""

from __future__ import annotations

import json

import pytest
import sympy
from conftest import SCHEDULES, SHARED_DATA, needs_shared_data, write

import schedc
from schedc.analysis.calibrate.calibration import Run, Split
from schedc.analysis.calibrate.fit import calibrate_runs
from schedc.measure.nccl_tests import read_log

LOGS = SHARED_DATA / "nccl-tests"
CALIBRATIONS = SCHEDULES / "calibration"
DGX = "nvidia_dgxc_1node_8xH100_nvlink_allreduce"
P4DE = "aws_2node_p4de_16xA100-80GB_efa_allreduce"
P5 = "aws_2node_p5_16xH100_efa_allreduce"
OCI = "oci_2node_16xA100-SXM4-40GB_rdma_allreduce"
BOTH = "nccl,nccl_1"  # each machine's schedules, pipelined and not: the faster of the two
# The 1 MiB row of the single-host log, out-of-place time 27.37 µs.
ROW = "     1048576        262144     float     sum      -1    27.37"


def _machine(name: str = DGX):
    return CALIBRATIONS / f"{name}.sched"


def _changed(tmp_path, old: str, new: str, name: str = "log.txt"):
    text = needs_shared_data("nccl-tests", f"{DGX}.txt").read_text()
    assert old in text
    return write(tmp_path, name, text.replace(old, new, 1))


def _line_of(path, text: str) -> int:
    return next(k for k, x in enumerate(path.read_text().splitlines(), 1) if text in x)


@pytest.mark.parametrize("time", ["0", "0.0", "inf", "nan", "-27.37", "x27"])
@pytest.mark.parametrize("command", ["calibrate", "predict"])
def test_a_bad_time_is_a_positioned_error(run, tmp_path, time, command):
    log = _changed(tmp_path, ROW, ROW.replace("27.37", time.rjust(5)))
    args = (("calibrate", log, "--machine", _machine()) if command == "calibrate"
            else ("predict", _machine(), "--against", log))
    code, out, err = run(*args)
    line = _line_of(log, "1048576        262144")
    assert code == 2 and out == "" and f"{log}:{line}:" in err and "time" in err
    assert "Traceback" not in err and "Warning" not in err


@pytest.mark.parametrize("size", ["-1048576", "1048576.5", "1M"])
def test_a_bad_size_is_a_positioned_error(run, tmp_path, size):
    log = _changed(tmp_path, ROW, ROW.replace("     1048576", size.rjust(12)))
    code, out, err = run("calibrate", log, "--machine", _machine())
    assert code == 2 and out == "" and f"{log}:{_line_of(log, '262144     float     sum      -1    27.37')}:" in err


def test_rows_with_wrong_results_are_refused_or_dropped(run, tmp_path):
    wrong = ROW + "   38.31   67.04      3"
    log = _changed(tmp_path, ROW + "   38.31   67.04      0", wrong)
    line = _line_of(log, wrong)
    code, out, err = run("calibrate", log, "--machine", _machine())
    assert code == 2 and out == "" and f"(lines {line})" in err and "--drop-wrong" in err
    code, out, err = run("predict", _machine(), "--against", log)
    assert code == 2 and "nonzero #wrong" in err
    code, out, err = run("calibrate", log, "--machine", _machine(), "--drop-wrong")
    assert code in (0, 1) and f"left out (--drop-wrong): lines {line}" in out
    assert "1 MiB" not in [x.split()[0] + " " + x.split()[1] for x in out.splitlines()
                           if x.strip().endswith(("fit", "held out", "LL", "LL128", "Simple"))
                           and len(x.split()) > 1]


def test_an_all_gather_table_is_not_fitted_as_all_reduce(run, tmp_path):
    """No `# Collective test starting` line, no binary named: the rows' `redop none` says
    it does not reduce, so an all-reduce machine refuses it."""
    text = needs_shared_data("nccl-tests", f"{DGX}.txt").read_text()
    log = write(tmp_path, "ag.txt", text.replace("float     sum      -1", "float    none      -1"))
    code, out, err = run("calibrate", log, "--machine", _machine())
    assert code == 2 and out == "" and "no reduction" in err and "allreduce" in err


def test_the_collective_from_the_binary_name(tmp_path):
    text = needs_shared_data("nccl-tests", f"{DGX}.txt").read_text()
    log = write(tmp_path, "ag.txt", "$ ./build/all_gather_perf -b 8 -e 16G -f 2 -g 1\n" + text)
    table = read_log(log).table()
    assert (table.collective, table.collective_from, table.arguments) == \
        ("all_gather", "binary", (("g", 1),))
    log2 = write(tmp_path, "ar.txt", "# Collective test starting: all_reduce_perf\n"
                 "$ ./build/all_gather_perf -g 2\n" + text)
    assert read_log(log2).table().collective_from == "starting"  # the starting line wins


def test_a_mismatched_collective_is_an_error(run, tmp_path):
    text = needs_shared_data("nccl-tests", f"{DGX}.txt").read_text()
    log = write(tmp_path, "ag.txt", "./all_gather_perf -b 8 -e 16G\n" + text)
    code, _, err = run("calibrate", log, "--machine", _machine())
    assert code == 2 and "measures all_gather (the binary it names)" in err


def test_the_rank_check_says_when_it_was_skipped_and_reads_busbw(run):
    """The 2×8 H100 log has no `#  Rank` lines: the output says the rank check there was
    skipped, and the rows' busbw/algbw (487.09 / 259.78 = 1.875 = 2(n-1)/n: n = 16) still
    tells a single-host machine of 8 ranks from the right one."""
    log = needs_shared_data("nccl-tests", f"{P5}.txt")
    code, out, err = run("calibrate", log, "--machine", _machine(P5))
    assert "rank check skipped: the log lists no '#  Rank' lines" in out
    assert "16 ranks from its busbw/algbw" in out and err == ""
    code, out, err = run("calibrate", log, "--machine", _machine(DGX))
    assert code == 2 and "busbw/algbw of 1.8750 means 16 ranks" in err and "over 8" in err


def test_hosts_from_the_rank_lines(run, tmp_path):
    text = needs_shared_data("nccl-tests", f"{DGX}.txt").read_text()
    log = write(tmp_path, "two.txt", text.replace("on pool0-01806 device  7",
                                                  "on pool0-01807 device  7"))
    assert read_log(log).table().hosts == 2
    code, _, err = run("calibrate", log, "--machine", _machine())
    assert code == 2 and "ran on 2 hosts" in err


def test_no_library_warning_reaches_stderr(run):
    log = needs_shared_data("nccl-tests", f"{DGX}.txt")
    code, out, err = run("calibrate", log, "--machine", _machine())
    assert err == "" and "geomean" in out


def test_an_exactly_determined_fit_is_refused(run):
    log = needs_shared_data("nccl-tests", f"{DGX}.txt")
    # 32 rows (every row kept: --outlier-factor inf), every 8th and the last: 5 fit rows for
    # 7 params (the call's latency, and each protocol's start-up and share); every 5th and
    # the last: 8 rows, more than 7.
    keep = ("--outlier-factor", "inf")
    code, _, err = run("calibrate", log, "--machine", _machine(), "--every", "8", *keep)
    assert code == 2 and "5 fit rows cannot check 7 params" in err
    code, _, err = run("calibrate", log, "--machine", _machine(), "--every", "5", *keep)
    assert code in (0, 1) and err == ""
    # By default its one outlier (32 B, 5.04x) is left out: 31 rows, every 5th and the last
    # (the 31st is a 5th) are 7, as many as the params
    code, _, err = run("calibrate", log, "--machine", _machine(), "--every", "5")
    assert code == 2 and "7 fit rows cannot check 7 params" in err


def test_duplicated_sizes_are_noted(run, tmp_path):
    text = needs_shared_data("nccl-tests", f"{DGX}.txt").read_text()
    row = next(x for x in text.splitlines() if x.strip().startswith("1048576 "))
    log = write(tmp_path, "dup.txt", text.replace(row, row + "\n" + row))
    code, out, _ = run("calibrate", log, "--machine", _machine())
    assert "sizes measured more than once, each row kept: 1048576" in out


def _runs(*names):
    out = []
    for name in names:
        path = needs_shared_data("nccl-tests", f"{name}.txt")
        session = schedc.load(_machine(name))
        out.append(Run(session, BOTH, str(path), read_log(path).table(),
                       session.program.path))
    return out


def test_shared_and_own_params_over_two_logs():
    """The two A100 logs: the protocol constants come from the library both machine files
    import (one unknown each), each fabric's latency from its own file (one per log)."""
    runs = _runs(P4DE, OCI)
    cal = calibrate_runs(runs)
    keys = [(p.name, p.log) for p in cal.params]
    assert ("e_Simple_ampere", None) in keys and ("a_LL", None) in keys
    assert ("lat_efa", runs[0].log) in keys and ("lat_rdma", runs[1].log) in keys
    assert len(keys) == len(set(keys)) == 7  # b_call, a_LL, a_Simple, 2 shares, 2 latencies


def test_size_split_fits_below_and_holds_out_above():
    cal = calibrate_runs(_runs(DGX), split=Split("size", size=64 * 2**20))
    c = cal.comparison
    assert all(p.fit == (p.size <= 64 * 2**20) for p in c.points)
    ranges = c.by_range(False)
    assert [n for _, n, _ in ranges] == [0, 0, 8]  # 128 MiB .. 16 GiB


def test_leave_one_out_predicts_each_log_from_the_others():
    """Each log's rows are the SymPy formula of its machine at the constants fitted on the
    other log (the shared ones) and at its own file's values (its fabric's latency)."""
    runs = _runs(P4DE, OCI)
    cal = calibrate_runs(runs, split=Split("leave-one-out"))
    assert not any(p.fit for p in cal.comparison.points)
    assert [log for log, _ in cal.folds] == [r.log for r in runs]
    held, fold = runs[0], dict(cal.folds)[runs[0].log]
    # Fitted on the OCI log only: its params, lat_rdma (OCI's own) among them.
    assert {p.name for p in fold.params} >= {"e_Simple_ampere", "lat_rdma"}
    program = held.session.program
    values = dict(program.nominal)
    for p in fold.params:
        if p.log is None and p.name in program.params:
            values[program.params[p.name].symbol] = sympy.Rational(p.value)
    formula = sympy.Min(*(held.session.timing(s).cost.formula for s in BOTH.split(",")))
    first = next(k for k, p in enumerate(cal.comparison.points) if p.log == held.log)
    point = cal.comparison.points[first]
    at = {**values, program.params["V"].symbol: point.size}
    assert float(formula.xreplace(at)) == pytest.approx(cal.comparison.predicted[first], rel=1e-9)


def test_protocol_labels_cannot_swap(tmp_path):
    """Started with LL slower than Simple (start-up 50 µs against 1 µs, share 0.5 against
    0.02), the fit still ends with LL's start-up and share at most Simple's."""
    runs = _runs(DGX)
    session = schedc.load(_machine(), ["a_LL=50us", "a_Simple=1us",
                                       "e_LL_hopper=0.5", "e_Simple_hopper=0.02"])
    cal = calibrate_runs([Run(session, BOTH, runs[0].log, runs[0].table)])
    v = {p.name: p.value for p in cal.params}
    assert v["a_LL"] <= v["a_LL128"] <= v["a_Simple"]
    assert v["e_LL_hopper"] <= v["e_LL128_hopper"] <= v["e_Simple_hopper"]


def test_the_fit_does_not_depend_on_the_file_values(tmp_path):
    runs = _runs(DGX)
    other = schedc.load(_machine(), ["a_LL=5us", "e_Simple_hopper=0.3"])
    a = calibrate_runs(runs)
    b = calibrate_runs([Run(other, BOTH, runs[0].log, runs[0].table)])
    for p, q in zip(a.params, b.params):
        assert q.value == pytest.approx(p.value, rel=0.02)


def test_an_inadequate_machine_is_reported(run, tmp_path):
    """The OCI machine file with one 100 Gbit/s port per GPU instead of two: even with every
    share at its upper bound and no start-up it cannot reach the log's 237.94 GB/s busbw at
    8 GiB, so it is inadequate (and nothing is trusted); the shipped file is not."""
    log = needs_shared_data("nccl-tests", f"{OCI}.txt")
    text = _machine(OCI).read_text().replace("let B_NIC = 200 Gbit/s", "let B_NIC = 100 Gbit/s")
    text = text.replace('import "', f'import "{CALIBRATIONS}/')
    slow = write(tmp_path, "slow.sched", text)
    code, out, _ = run("calibrate", log, "--machine", slow, "--json")
    document = json.loads(out)
    assert code == 1 and not document["trusted"]
    check = next(c for c in document["checks"] if c.startswith("INADEQUATE"))
    assert "below the log's 237.9 GB/s" in check
    code, out, _ = run("calibrate", log, "--machine", _machine(OCI), "--json")
    assert not [c for c in json.loads(out)["checks"] if c.startswith("INADEQUATE")]


def test_systematic_misfit_is_reported():
    """The 2×8 A100 EFA log fitted below 64 MiB: every larger size is predicted too slow by
    more than 10 %, a run the check reports with its range."""
    from schedc.analysis.calibrate.checks import misfit_runs
    cal = calibrate_runs(_runs(P4DE), split=Split("size", size=64 * 2**20))
    errors = [e for p, e in zip(cal.comparison.points, cal.comparison.errors) if not p.fit]
    assert len(errors) == 5 and all(e > 0.10 for e in errors)
    low, high = sorted(errors)[0], sorted(errors)[-1]
    expected = (f"systematic misfit at 128 MiB-2 GiB: +{low * 100:.0f} % to "
                f"+{high * 100:.0f} % over 5 consecutive sizes")
    assert expected in misfit_runs(cal) and expected in cal.checks


def test_manifest(run, tmp_path):
    log = needs_shared_data("nccl-tests", f"{DGX}.txt")
    manifest = write(tmp_path, "m.txt", f"# one pair\n{log} {_machine()}\n")
    code, out, err = run("calibrate", "--manifest", manifest)
    assert code in (0, 1) and str(log) in out and err == ""
    bad = write(tmp_path, "bad.txt", f"{log}\n")
    code, _, err = run("calibrate", "--manifest", bad)
    assert code == 2 and f"{bad}:1:1: error: expected 'LOG MACHINE'" in err


def test_predict_with_the_fitted_library_labels_it(run):
    log = needs_shared_data("nccl-tests", f"{DGX}.txt")
    fitted = CALIBRATIONS / "nccl_constants.sched"
    code, out, _ = run("predict", _machine(), "--against", log, "--fitted", fitted)
    assert code == 0 and out.splitlines()[0].endswith(f"at the params of {fitted}")
    code, out, _ = run("predict", _machine(), "--against", log, "--json")
    document = json.loads(out)
    assert document["fitted"] is None and "mean_error" in document


def test_gpus_per_process_must_divide_the_ranks(run, tmp_path):
    """`# nThread 1 nGpus 3`: each process drives 3 GPUs, which cannot make 8 ranks."""
    log = _changed(tmp_path, "# nThread 1 nGpus 1 ", "# nThread 1 nGpus 3 ")
    assert read_log(log).table().per_process() == (3, "the '# nThread' header")
    code, _, err = run("calibrate", log, "--machine", _machine())
    assert code == 2 and "3 GPUs per process (the '# nThread' header) cannot make the 8 ranks" \
        in err


def test_a_zero_thread_or_gpu_count_says_nothing(run, tmp_path):
    """`# nThread 0` (no real run prints it; the fuzzer did) gave a ZeroDivisionError, exit 70;
    it now gives no GPUs-per-process figure, as a header without the field does."""
    log = _changed(tmp_path, "# nThread 1 nGpus 1 ", "# nThread 0 nGpus 1 ")
    assert read_log(log).table().per_process() is None
    code, _, err = run("calibrate", log, "--machine", _machine())
    assert code in (0, 1) and "Traceback" not in err and "internal error" not in err


# fuzz_c11 (../shared/repros/turn4): 1,000 rows of four sizes, each repeated. The model's time
# depends on the size alone, so the rows give four equations for the 7 params of the DGX file
# (the call's latency, each protocol's start-up and share): refused before the search, which
# on these rows ran every start to its evaluation limit (8.5 s, then --max-fit-work).
_HEAD = ("# nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 "
         "iters: 20\n# Collective test starting: all_reduce_perf\n#       size         count"
         "      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
         "#wrong\n#        (B)    (elements)                               (us)  (GB/s)  "
         "(GB/s)            (us)  (GB/s)  (GB/s)\n")


def _repeated_sizes_log(tmp_path, sizes: int, rows: int = 1000):
    # 1 GiB and doubling, about 260 µs per MiB (the repro's times); each size rows/sizes times.
    lines = []
    for k in range(rows):
        size = 2 ** (30 + k % sizes)
        time_us = 0.26 * size / 2**10
        lines.append(f"{size} {size // 4} float sum -1 {time_us:.1f} 0.0 0.0 0 {time_us:.1f} "
                     "0.0 0.0 0\n")
    return write(tmp_path, f"rep{sizes}.txt", _HEAD + "".join(lines))


def test_repeated_sizes_count_once_and_are_refused_before_the_search(tmp_path, monkeypatch):
    import schedc.analysis.calibrate.fit as fit

    def no_search(*_args, **_kwargs):
        raise AssertionError("the search started")

    monkeypatch.setattr(fit, "search", no_search)
    log = _repeated_sizes_log(tmp_path, 4)
    session = schedc.load(_machine())
    run_ = Run(session, BOTH, str(log), read_log(log).table(), session.program.path)
    # Every 4th of the 1,000 rows sorted by size, and the last: 250 + 1 fit rows.
    with pytest.raises(schedc.SchedcError, match="251 fit rows of 4 distinct sizes cannot "
                                                  "check 7 params"):
        calibrate_runs([run_])


def test_repeated_sizes_refused_from_the_command_line(run, tmp_path):
    code, out, err = run("calibrate", _repeated_sizes_log(tmp_path, 4), "--machine", _machine())
    assert code == 2 and out == "" and "of 4 distinct sizes cannot check 7 params" in err

"""nccl-tests' terms (issue 34, items 5 and 6): algbw and busbw beside every time, by
nccl-tests' own factors; power-of-two sweeps; rows whose two times disagree flagged as
outliers and left out of fits and error figures; `predict --against` as the log's table with
a verdict per row."""

from __future__ import annotations

import json
import math
import re

import pytest
from conftest import ROOT, SCHEDULES, needs_shared_data, write

from schedc.analysis.calibrate.calibration import Comparison, Point
from schedc.analysis.predicted_log import bands_line, held_out_bands
from schedc.api import fitted_bands
from schedc.measure.bandwidth import busbw_factor, format_gbps
from schedc.measure.nccl_tests import read_log
from schedc.measure.noise import is_outlier, twin_ratio

NOISY = ROOT / "tests" / "fixtures" / "nccl-tests" / "noisy_allreduce_8.txt"
SEED = SCHEDULES / "seed" / "nvlink_2x8.sched"

# nccl-tests' busbw factors, quoted from NVIDIA/nccl-tests at a0b82b2 (src/<binary>.cu, the
# `*GetBw` function of each test, at the line given), with the kind of the language they are.
QUOTED = {
    "allreduce": ("all_reduce.cu:63",
                  "double factor = ((double)(2*(nranks - 1)))/((double)nranks);"),
    "reduce_scatter": ("reduce_scatter.cu:41",
                       "double factor = ((double)(nranks - 1))/((double)nranks);"),
    "allgather": ("all_gather.cu:42", "double factor = ((double)(nranks - 1))/((double)nranks);"),
    "alltoall": ("alltoall.cu:52", "double factor = ((double)(nranks-1))/((double)(nranks));"),
    "broadcast": ("broadcast.cu:38", "double factor = 1;"),
    "reduce": ("reduce.cu:39", "*busBw = baseBw;"),  # (no factor: busbw is algbw)
}


def _quoted_factor(line: str, nranks: int) -> float:
    """The C line's factor at nranks: its right-hand side with the casts dropped, evaluated
    as the same arithmetic in Python (`*busBw = baseBw` is a factor of 1)."""
    if "factor" not in line:
        return 1.0
    expression = line.split("=", 1)[1].rstrip(";").replace("(double)", "")
    return float(eval(expression, {"__builtins__": {}}, {"nranks": nranks}))


@pytest.mark.parametrize("kind", QUOTED)
def test_factors_are_nccl_tests_own(kind):
    _, line = QUOTED[kind]
    for n in range(2, 65):
        assert busbw_factor(kind, n) == _quoted_factor(line, n)


def test_factors_by_hand():
    # 2(n-1)/n at 16 ranks: 30/16; (n-1)/n at 8: 7/8; broadcast and reduce: 1
    assert busbw_factor("allreduce", 16) == 1.875
    assert busbw_factor("allgather", 8) == busbw_factor("reduce_scatter", 8) == 0.875
    assert busbw_factor("alltoall", 4) == 0.75
    assert busbw_factor("broadcast", 8) == busbw_factor("reduce", 8) == 1
    assert busbw_factor("alltonext", 8) is None  # no nccl-tests binary measures it


@pytest.mark.parametrize(("log", "ranks"), [
    ("nccltests309_qoofyk_vmware_4node_32xH100_cx7ib400_allreduce.txt", 32),  # 4 hosts x 8
    ("nvidia_dgxc_1node_8xH100_nvlink_allreduce.txt", 8)])
def test_the_logs_own_busbw_is_algbw_times_the_factor(log, ranks):
    """Every row's printed busbw is its printed algbw × 2(n-1)/n, to the printed precision
    (each figure rounded to 0.01: |busbw − algbw·f| ≤ 0.005 + 0.005·f)."""
    table = read_log(needs_shared_data("nccl-tests", log)).table()
    factor = busbw_factor("allreduce", ranks)
    for row in table.rows:
        for m in (row.out_of_place, row.in_place):
            assert abs(m.busbw - m.algbw * factor) <= 0.005 * (1 + factor) + 1e-9, row.size


def test_bandwidths_beyond_the_float_range():
    from fractions import Fraction

    from schedc.measure.bandwidth import bandwidths
    # 1e400 MiB in 1e400 MiB / (1 B/s) seconds: the ratio, taken exactly, is 1 B/s = 1e-9 GB/s
    size = Fraction(10**400 * 2**20)
    assert bandwidths("broadcast", 2, size, size).algbw == 1e-9
    assert bandwidths("broadcast", 2, size, Fraction(1)) is None  # 1e406 B/s: no float
    assert bandwidths("broadcast", 2, 8, 0) is None


def test_format_gbps_is_nccl_tests_getfloatstr():
    # getFloatStr(value, 6): "%6.2f" if it fits in 6 characters, then "%6.1f", "%6.0f", "%6.0e"
    assert [format_gbps(v) for v in (0.001, 480.16, 1234.5, 123456.7, 1234567.0)] == \
        ["0.00", "480.16", "1234.5", "123457", "1e+06"]
    assert format_gbps(None) == "-"


# ---- time, compare, sweep -----------------------------------------------------------------


def test_time_shows_algbw_and_busbw(run):
    # ring: T = 30 α + 15 V/(8 B_N) = 24.9 µs + 7.5497472 ms = 7.5746472 ms for V = 192 MiB;
    # algbw = 201326592 / 7.5746472e-3 / 1e9 = 26.579 GB/s, busbw = × 1.875 = 49.836 GB/s
    code, out, _ = run("time", SEED, "-s", "ring")
    assert code == 0
    assert "  algbw / busbw     26.58 / 49.84 GB/s" in out
    code, out, _ = run("time", SEED, "-s", "ring", "--json")
    (ring,) = json.loads(out)["schedules"]
    t = 30 * 0.83e-6 + 15 * 201326592 / (8 * 50e9)
    assert ring["algbw_GBps"] == pytest.approx(201326592 / t / 1e9, rel=1e-12)
    assert ring["busbw_GBps"] == pytest.approx(1.875 * 201326592 / t / 1e9, rel=1e-12)
    assert ring["busbw_factor"] == 1.875


def test_sweep_by_powers_of_two(run):
    # x2: 8 B × 2^i while at most 8 GB = 8e9 B: 8 × 2^29 = 4 GiB is the last (8 × 2^30 is
    # 8 GiB = 8.59e9 B); with 8GiB as the end, 8 GiB itself is the 31st value.
    code, out, _ = run("sweep", SEED, "--vary", "V=8B:8GB:x2", "-s", "ring", "--json")
    document = json.loads(out)
    assert code == 0 and document["spacing"] == "x2"
    assert document["values"] == [8 * 2**i for i in range(30)]
    code, out, _ = run("sweep", SEED, "--vary", "V=8B:8GiB:x2", "-s", "ring", "--json")
    assert json.loads(out)["values"] == [8 * 2**i for i in range(31)]
    # busbw of the ring at each size: 1.875 V / (30 α + 15 V / (8 B_N))
    assert json.loads(out)["busbw_GBps"]["ring"] == [
        pytest.approx(1.875 * v / (30 * 0.83e-6 + 15 * v / (8 * 50e9)) / 1e9, rel=1e-12)
        for v in json.loads(out)["values"]]
    # x4 steps by four: 1 KiB, 4 KiB, 16 KiB, 64 KiB (256 KiB > 100 KB)
    code, out, _ = run("sweep", SEED, "--vary", "V=1KiB:100KB:x4", "--json")
    assert json.loads(out)["values"] == [1024, 4096, 16384, 65536]


def test_sweep_by_count_keeps_its_meaning(run):
    # 8 log-spaced points from 8 B to 8 GB: 8 × (1e9)^(k/7), the second 154.46 B
    code, out, _ = run("sweep", SEED, "--vary", "V=8B:8GB:8", "-s", "ring", "--json")
    values = json.loads(out)["values"]
    assert len(values) == 8 and values[1] == pytest.approx(8 * 1e9 ** (1 / 7), rel=1e-11)


def test_sweep_steps_a_structural_param(run):
    code, out, _ = run("sweep", SCHEDULES / "seed" / "nvlink_hosts.sched", "--vary",
                       "hosts=2:16:x2", "-s", "ring", "--json")
    document = json.loads(out)
    assert code == 0 and document["values"] == [2, 4, 8, 16]
    # ranks grow with the hosts, 8 a host: busbw factor 2(8h - 1)/(8h) per value, the size
    # stays V = 192 MiB
    factors = [2 * (8 * h - 1) / (8 * h) for h in document["values"]]
    assert document["busbw_factor"]["ring"] == factors
    assert document["busbw_GBps"]["ring"] == [
        pytest.approx(192 * 2**20 / t / 1e9 * f, rel=1e-12)
        for t, f in zip(document["schedules"]["ring"], factors)]


@pytest.mark.parametrize(("vary", "extra", "message"), [
    ("V=8B:8GB:x1", (), "a step factor is xK with K an integer in 2..1024"),
    ("V=8B:8GB:x2", ("--linear",), "--linear is another spacing"),
    ("V=0B:8GB:x2", (), "a stepped sweep starts above 0")])
def test_bad_steps_are_refused(run, vary, extra, message):
    code, out, err = run("sweep", SEED, "--vary", vary, *extra)
    assert (code, out) == (2, "") and message in err and "Traceback" not in err


# ---- outliers -----------------------------------------------------------------------------


def test_the_outlier_rule_on_a_small_log():
    rows = read_log(NOISY).table().rows
    # 4 KiB: 45.00 / 15.00 = 3; 16 KiB: 30.00 / 20.00 = 1.5, not above 1.5; 64 KiB: 39.04 /
    # 19.52 = 2 (the in-place time the larger); every other row's two times are equal
    assert [twin_ratio(r) for r in rows] == [1, 1, 3, 1, 1.5, 1, 2, 1, 1, 1, 1]
    assert [r.size for r in rows if is_outlier(r, 1.5)] == [4096, 65536]
    assert [r.size for r in rows if is_outlier(r, 2.5)] == [4096]
    assert not any(is_outlier(r, math.inf) for r in rows)


RING_8 = f"""import "{SCHEDULES / 'machines' / 'flat_8.sched'}"
import "{SCHEDULES / 'lib' / 'ring.sched'}"
param V = 1 MiB
allreduce V over ranks
schedule ring = ring_allreduce(ranks)
"""


def _ring_time(size: int) -> float:
    """flat_8's ring all-reduce by hand: 14 rounds of α + (V/8)/B, α = 1 µs, B = 25 GB/s."""
    return 14 * (1e-6 + size / 8 / 25e9)


def test_predict_flags_outliers_and_leaves_them_out(run, tmp_path):
    machine = write(tmp_path, "ring8.sched", RING_8)
    code, out, err = run("predict", machine, "--against", NOISY, "--json")
    assert code == 0, err
    document = json.loads(out)
    assert document["schema"] == "schedc.predict/2"
    rows = document["rows"]
    assert len(rows) == 11
    assert [(r["size"], r["line"]) for r in rows if r["outlier"]] == [(4096, 25), (65536, 29)]
    assert [r["twin_ratio"] for r in rows if r["outlier"]] == [3, 2]
    assert (document["outliers"], document["outlier_factor"]) == (2, 1.5)
    table = {r.size: r for r in read_log(NOISY).table().rows}
    for r in rows:
        assert r["predicted_s"] == pytest.approx(_ring_time(r["size"]), rel=1e-12)
        assert r["predicted_busbw_GBps"] == pytest.approx(
            r["size"] / _ring_time(r["size"]) / 1e9 * 1.75, rel=1e-12)
        assert r["measured_busbw_GBps"] == table[r["size"]].out_of_place.busbw  # as printed
        assert r["measured_s"] == table[r["size"]].out_of_place.time_us * 1e-6
    # the error figures are over the 9 other rows only
    kept = [abs(r["predicted_s"] / r["measured_s"] - 1) for r in rows if not r["outlier"]]
    assert document["geomean_error"] == pytest.approx(
        math.exp(sum(map(math.log, kept)) / len(kept)), rel=1e-12)
    code, out, _ = run("predict", machine, "--against", NOISY)
    assert "outlier (3.00x)" in out and "outlier (2.00x)" in out
    assert "geomean |error|" in out and "over 9 rows" in out
    code, out, _ = run("predict", machine, "--against", NOISY, "--outlier-factor", "inf",
                       "--json")
    assert json.loads(out)["outliers"] == 0 and not any(r["outlier"]
                                                        for r in json.loads(out)["rows"])


def test_predict_names_the_bound_and_judges_each_row(run, tmp_path):
    machine = write(tmp_path, "ring8.sched", RING_8)
    code, out, _ = run("predict", machine, "--against", NOISY, "--within", "5%", "--json")
    rows = json.loads(out)["rows"]
    # latency (14 µs) is over half of 14 µs + 14 V/(8 B) below V = 2e5 B; above, the ports
    # (flat_8's only link class) bound the ring
    assert [r["bound"] for r in rows] == ["latency"] * 8 + ["port"] * 3
    # the rows are 1.05 × the ring's time (-4.76 %), but for 16 KiB (30 µs against 15.15: -49.5 %)
    assert [r["verdict"] for r in rows] == [
        "expected", "expected", "outlier", "expected", "not expected", "expected", "outlier",
        "expected", "expected", "expected", "expected"]
    code, out, _ = run("predict", machine, "--against", NOISY, "--json")
    assert {r["verdict"] for r in json.loads(out)["rows"] if not r["outlier"]} == {"-"}


def test_calibrate_leaves_outliers_out_and_says_so(run, tmp_path):
    machine = write(tmp_path, "ring8.sched", RING_8)
    code, out, _ = run("calibrate", NOISY, "--machine", machine, "--json")
    document = json.loads(out)
    assert len(document["rows"]) == 9
    assert any("2 row(s) whose out-of-place and in-place times differ by more than 1.5x" in n
               and "lines 25 (3.00x), 29 (2.00x)" in n for n in document["notes"])
    assert document["outliers"] == [
        {"log": str(NOISY), "line": 25, "size": 4096, "outlier": True, "twin_ratio": 3.0},
        {"log": str(NOISY), "line": 29, "size": 65536, "outlier": True, "twin_ratio": 2.0}]
    code, out, _ = run("calibrate", NOISY, "--machine", machine)
    assert f"  outlier 4 KiB: 45 µs out of place, 15 µs in place (3.00x), {NOISY}:25; left out" \
        in out.splitlines()
    code, out, _ = run("calibrate", NOISY, "--machine", machine, "--json",
                       "--outlier-factor", "inf")
    assert len(json.loads(out)["rows"]) == 11
    code, out, err = run("calibrate", NOISY, "--machine", machine, "--outlier-factor", "1")
    assert code == 2 and "must be above 1" in err and out == ""


# ---- a fit's stated uncertainty -----------------------------------------------------------


def test_bands_are_the_90th_percentile_of_held_out_errors(tmp_path):
    # ten held-out rows of 1 KiB with errors 1 %, ..., 10 % and one fit row of 40 %: the
    # nearest-rank 90th percentile is the 9th smallest, 9 %; the fit row does not count
    points = tuple(Point(1024, 1.0, False, "log", k) for k in range(10)) + \
        (Point(1024, 1.0, True, "log", 10),)
    predicted = tuple(1 + (k + 1) / 100 for k in range(10)) + (1.4,)
    c = Comparison("s", ("log",), points, predicted, (None,) * 11, (None,) * 11)
    (band,) = held_out_bands(c)
    assert (band.range, band.rows) == ("<= 64 KiB", 10)
    assert band.error == pytest.approx(0.09, rel=1e-12)
    line = bands_line((band,))
    assert line == "# held-out |error|, 90th percentile by size: <= 64 KiB 9.00% (10 rows)"
    path = write(tmp_path, "fit.sched", f"# Fitted by: a test\n{line}\nparam a = 1 s\n")
    (read,) = fitted_bands(path)
    assert (read.range, read.rows) == ("<= 64 KiB", 10) and read.error == pytest.approx(0.09)


# ---- the predict table on a shared log ----------------------------------------------------


def test_predict_table_on_a_shared_log(run):
    log = needs_shared_data("nccl-tests", "nvidia_dgxc_1node_8xH100_nvlink_allreduce.txt")
    machine = SCHEDULES / "calibration" / "nvidia_dgxc_1node_8xH100_nvlink_allreduce.sched"
    code, out, err = run("predict", machine, "--against", log, "--within", "10%", "--json")
    assert code == 0, err
    rows = json.loads(out)["rows"]
    table = read_log(log).table().rows
    assert [r["size"] for r in rows] == [r.size for r in table]
    # the 32 B row: out of place 68.14 µs, in place 13.52 µs, 5.04x apart
    assert [(r["size"], round(r["twin_ratio"], 2)) for r in rows if r["outlier"]] == [(32, 5.04)]
    for r, row in zip(rows, table):
        assert (r["count"], r["type"], r["redop"]) == (row.count, row.type, row.redop)
        assert (r["measured_algbw_GBps"], r["measured_busbw_GBps"]) == \
            (row.out_of_place.algbw, row.out_of_place.busbw)
        assert r["predicted_busbw_GBps"] == pytest.approx(
            r["size"] / r["predicted_s"] / 1e9 * 2 * 7 / 8, rel=1e-12)
        if not r["outlier"]:
            assert r["verdict"] == ("expected" if abs(r["error"]) <= 0.10 else "not expected")
    # one host of NVLink: what bounds a row that latency does not is an NVLink-class link
    assert {r["bound"] for r in rows} - {"latency"} and all(
        re.fullmatch(r"latency|nvlink|nvls|[a-z+]*nvl[a-z+]*", r["bound"]) for r in rows)

"""`schedc sensitivity` (one-sided derivatives at kinks) and `schedc sweep` (lambdify + NumPy)."""

from __future__ import annotations

import csv
import json

import pytest
import sympy
from conftest import SCHEDULES, timings

import schedc
from schedc.analysis.solve.sensitivity import sensitivities
from schedc.deadline import TimeLimit

pytestmark = pytest.mark.usefixtures("reuse_shipped")  # the shipped files compile once

PCIE = SCHEDULES / "seed" / "pcie_2x4.sched"
NVLINK = SCHEDULES / "seed" / "nvlink_2x8.sched"


def by_param(path, schedule: str) -> dict:
    session = schedc.load(path)
    program, timing = session.program, schedc.time(session, schedule)
    return {s.param.name: s for s in sensitivities(program, timing, TimeLimit(10))}, program


# ---- sensitivity ------------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "schedule", "rounds"),
                         [(PCIE, "ring", 14), (PCIE, "hierarchical", 8), (NVLINK, "ring", 30),
                          (NVLINK, "hierarchical", 16)])
def test_dT_dalpha_is_the_number_of_rounds(path, schedule, rounds):
    s, _ = by_param(path, schedule)
    assert s["alpha"].up == s["alpha"].down == rounds


def test_the_pcie_ring_sits_on_a_kink():
    """Its GPU links and the NIC slot are both 32 GB/s: a faster link gains nothing, a slower
    one costs at once."""
    s, program = by_param(PCIE, "ring")
    V, B_L = (program.params[n].symbol for n in ("V", "B_L"))
    slope = sympy.diff(14 * V / (8 * B_L), B_L).xreplace(program.nominal)
    for name in ("B_L", "B_slot"):
        assert s[name].kink
        assert s[name].up == 0
        assert s[name].down == slope
    assert not s["B_port"].kink and s["B_port"].up == 0


def test_elasticities_obey_euler_away_from_kinks():
    """T is homogeneous: degree 1 in (alpha, V) together, degree 0 in (V, bandwidths)."""
    for path in (PCIE, NVLINK):
        s, program = by_param(path, "hierarchical")
        bandwidths = [p for p in program.params.values() if p.dim == (1, -1)]
        assert s["alpha"].elasticity_up + s["V"].elasticity_up == 1
        assert s["V"].elasticity_up + sum(s[p.name].elasticity_up for p in bandwidths) == 0


def test_sensitivity_cli(run):
    code, out, err = run("sensitivity", PCIE, "-s", "ring")
    assert code == 0, err
    assert out.splitlines()[0] == "ring: T = 11.022 ms"
    assert "B_L     32 GB/s  0 up, -344.06 µs per GB/s down  0 up, -0.9989 down" in out
    code, out, _ = run("sensitivity", NVLINK, "--json")
    document = json.loads(out)
    assert document["schema"] == "schedc.sensitivity/1"
    entry = document["schedules"][2]["sensitivities"][1]
    assert set(entry) == {"param", "value", "unit", "kink", "derivative_up", "derivative_down",
                          "elasticity_up", "elasticity_down"}
    assert entry["param"] == "B_L" and entry["elasticity_up"] == pytest.approx(-0.60248, rel=1e-4)


# ---- sweep ------------------------------------------------------------------------------------


def test_sweep_agrees_with_recompiling(run, tmp_path):
    out_csv = tmp_path / "sweep.csv"
    code, out, err = run("sweep", PCIE, "--vary", "B_L=4GB/s:128GB/s:6", "--csv", out_csv)
    assert code == 0, err
    rows = list(csv.reader(out_csv.open()))
    assert rows[0] == ["B_L (B/s)", "ring (s)", "hierarchical (s)"]
    values = [float(r[0]) for r in rows[1:]]
    assert values == [4e9, 8e9, 16e9, 32e9, 64e9, 128e9]  # log spacing, 12 digits
    for row in rows[1:]:
        _, t = timings(PCIE, f"B_L={float(row[0]) / 1e9}GB/s")
        assert float(row[1]) == pytest.approx(float(t["ring"].time), rel=1e-12)
        assert float(row[2]) == pytest.approx(float(t["hierarchical"].time), rel=1e-12)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.csv"]  # no temporary left


def test_sweep_text_and_json(run):
    code, out, _ = run("sweep", PCIE, "--vary", "B_L=32GB/s:96GB/s:3", "--linear")
    assert code == 0
    # busbw = V / T × 2(n-1)/n (nccl-tests' all-reduce, n = 8: 1.75), V = 192 MiB. The ring's
    # 14 rounds of V/8 over 32 GB/s: 1.75 V / (14 (α + V/(8 B))) = B / (1 + 8 α B / V)
    # = 32 / (1 + 8 × 0.83e-6 × 32e9 / 201326592) = 31.966 GB/s; hierarchical's 15.735 ms
    # gives 1.75 × 201326592 / 15.735e-3 / 1e9 = 22.39, its 11.017 ms 31.98, 9.4438 ms 37.31.
    assert out.splitlines() == [
        "    B_L       ring  ring busbw  hierarchical  hierarchical busbw  fastest",
        "-------  ---------  ----------  ------------  ------------------  ------------",
        "32 GB/s  11.022 ms       31.97     15.735 ms               22.39  ring",
        "64 GB/s  11.022 ms       31.97     11.017 ms               31.98  hierarchical",
        "96 GB/s  11.022 ms       31.97     9.4438 ms               37.31  hierarchical",
        "busbw in GB/s: algbw = size / time; busbw = algbw × 2(n-1)/n = 1.75 (nccl-tests' "
        "all_reduce factor, n = 8)"]
    code, out, _ = run("sweep", NVLINK, "--vary", "V=1MiB:512MiB:4", "-s", "ring", "--json")
    document = json.loads(out)
    assert document["schema"] == "schedc.sweep/1"
    assert (document["param"], document["unit"], document["spacing"]) == ("V", "B", "log")
    assert document["values"] == [2**20, 2**23, 2**26, 2**29]
    # The ring is linear in V: 30 α + 15 V / (8 B_N).
    assert document["schedules"]["ring"] == [
        pytest.approx(30 * 0.83e-6 + 15 * v / (8 * 50e9), rel=1e-12) for v in document["values"]]
    # nccl-tests' terms: busbw = V / T × 2 (16 - 1) / 16 in GB/s (algbw is busbw / 1.875)
    assert document["busbw_GBps"]["ring"] == [
        pytest.approx(1.875 * v / (30 * 0.83e-6 + 15 * v / (8 * 50e9)) / 1e9, rel=1e-12)
        for v in document["values"]]
    assert document["busbw_factor"] == {"ring": 1.875}


def test_sweep_csv_failure_leaves_no_file(run, tmp_path):
    target = tmp_path / "missing" / "out.csv"
    code, out, err = run("sweep", PCIE, "--vary", "B_L=4GB/s:8GB/s", "--csv", target)
    assert code == 2 and out == ""
    assert err.startswith(f"error: cannot write {target}: ")
    assert not target.parent.exists()


VARY_ERRORS = [
    ("B_Q=1GB/s:2GB/s", "error: --vary B_Q: no param named 'B_Q'; did you mean 'B_L'?"),
    ("zzz=1GB/s:2GB/s", "error: --vary zzz: no param named 'zzz' (params: alpha, B_L, B_port, "
     "B_slot, V)"),
    ("B_L=-1GB/s:2GB/s", "--vary B_L:1:1: error: B_L cannot be negative (its nominal value is "
     "32 GB/s)"),
    ("B_L=1GB:2GB/s", "--vary B_L:1:1: error: B_L is a bandwidth (bytes/s); this is a size (bytes)"),
    ("B_L=1GB/s:2GB/s:1", "--vary B_L:1:13: error: the number of points must be an integer in "
     "2..1,000,000"),
    ("B_L=2GB/s:1GB/s", "--vary B_L:1:1: error: the range must rise: 2GB/s is not below 1GB/s"),
    ("B_L=1GB/s", "--vary B_L:1:1: error: --vary expects NAME=LO:HI or NAME=LO:HI:N"),
    ("B_L=1GB/s:2GB/s +", "--vary B_L:1:14: error: unexpected end of input; expected an expression"),
    ("B_L", "error: --vary expects NAME=LO:HI[:N] (e.g. --vary B_L=10GB/s:500GB/s), got 'B_L'"),
]


@pytest.mark.parametrize(("vary", "message"), VARY_ERRORS)
def test_vary_errors(run, vary, message):
    code, out, err = run("sweep", PCIE, "--vary", vary)
    assert code == 2 and out == ""
    assert err.splitlines()[0] == message


def test_a_range_that_makes_a_time_infinite(run):
    code, out, err = run("sweep", PCIE, "--vary", "B_L=0GB/s:2GB/s:3", "--linear")
    assert (code, out) == (2, "")
    assert err.strip() == ("error: with B_L = 0 B/s the time of 'ring' is infinite (a bandwidth "
                           "of 0?); start the range above it")


def test_log_sweep_needs_a_positive_range(run):
    code, _, err = run("sweep", PCIE, "--vary", "alpha=0s:1us")
    assert code == 2
    assert err.strip() == ("error: a log sweep needs a positive range; alpha starts at 0 s "
                           "(use --linear)")
    code, out, _ = run("sweep", PCIE, "--vary", "alpha=0s:1us:2", "--linear", "-s", "ring")
    # busbw at α = 0: the ring's 14 V/(8 B_L) at 32 GB/s is exactly B_L = 32.00 GB/s
    assert code == 0 and out.splitlines()[2] == "  0 s   11.01 ms       32.00  ring"


def test_sweep_csv_prints_a_summary_of_where_the_fastest_changes(run, tmp_path):
    # PCIe seed: hierarchical below 8.0063 GB/s, the ring up to 63.933 GB/s, hierarchical
    # above (the full crossover of docs/tutorial.md); 4, 8, 16, 32, 64, 128 GB/s straddle both
    # solutions.
    out_csv = tmp_path / "sweep.csv"
    code, out, err = run("sweep", PCIE, "--vary", "B_L=4GB/s:128GB/s:6", "--csv", out_csv)
    assert code == 0, err
    assert out.splitlines() == [
        f"wrote 6 points of B_L (4 GB/s to 128 GB/s, log) for 2 schedules to {out_csv}",
        "fastest: hierarchical from 4 GB/s, ring from 16 GB/s, hierarchical from 64 GB/s"]


def test_long_json_arrays_are_one_line_and_exact(run):
    code, out, _ = run("sweep", NVLINK, "--vary", "V=1MiB:512MiB:40", "-s", "ring", "--json")
    assert code == 0
    document = json.loads(out)
    line = next(x for x in out.splitlines() if x.lstrip().startswith('"values"'))
    assert line.split("[")[1].split("]")[0].count(",") == 39  # all 40 values on one line
    assert document["values"][0] == 2**20 and document["values"][-1] == 2**29

"""`schedc check`: expect statements, tolerances, budgets, exit codes, diagnostics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT, SCHEDULES, golden, write

import schedc
from schedc.analysis.check import check_program

FIXTURES = Path(__file__).parent / "fixtures"
# Five lines: the PCIe machine and its contiguous ring (11.022 ms at the nominal point).
HEAD = (f'import "{SCHEDULES / "machines" / "pcie_2x4.sched"}"\n'
        f'import "{SCHEDULES / "lib" / "ring.sched"}"\n'
        "param V = 192 MiB\nallreduce V over ranks\nschedule ring = ring_allreduce(ranks)\n")


@pytest.fixture
def case(tmp_path, monkeypatch):
    """case(text) -> the path 'case.sched' of HEAD + text, in the current directory."""
    monkeypatch.chdir(tmp_path)

    def _case(text: str, name: str = "case.sched") -> Path:
        write(tmp_path, name, HEAD + text)
        return Path(name)

    return _case


def outcomes(path: Path):
    return [(o.passed, o.found) for o in check_program(schedc.load(path)).outcomes]


def test_the_whole_schedules_directory_checks(run, monkeypatch, reuse_shipped):
    monkeypatch.chdir(ROOT)
    code, out, err = run("check", "schedules/")
    assert code == 0, out + err
    assert err == ""
    golden(FIXTURES / "schedules.check.txt", out)


def test_tolerances(case):
    path = case("expect time(ring) = 11 ms within 1%\n"          # relative: passes (0.2 %)
                "expect time(ring) = 11 ms within 0.1%\n"        # fails
                "expect time(ring) = 11 ms within 0.03 ms\n"     # absolute: passes
                "expect time(ring) = 11.021668 ms\n"             # exact: passes
                "expect time(ring) = 11.02 ms\n"                 # exact: fails
                "expect time(ring) < 11 ms within 1%\n"          # 11.022 < 11.11: passes
                "expect time(ring) >= 11.1 ms within 1%\n")      # 11.022 >= 10.989: passes
    assert [p for p, _ in outcomes(path)] == [True, False, True, True, False, True, True]


def test_exact_arithmetic_in_expects(case):
    path = case("expect time(ring) = 14 * alpha + 7 * V / (4 * B_slot)\n"
                "expect time(ring, B_L = 16 GB/s) = 14 * alpha + 7 * V / (4 * 16 GB/s)\n"
                "expect time(ring) - time(ring, alpha = 0 s) = 14 * alpha\n")
    assert [p for p, _ in outcomes(path)] == [True, True, True]


def test_budget(case):
    path = case("budget 12 ms\nexpect time(ring) <= budget\nexpect time(ring) > budget / 2\n")
    assert [p for p, _ in outcomes(path)] == [True, True]


def test_solve_lists_and_none(case):
    path = case("expect solve(time(ring) = 11 ms, B_L) = none\n"              # slot-bound: none
                "expect solve(time(ring) = 22 ms, B_L) = 16 GB/s within 1%\n"
                "expect solve(time(ring) = 22 ms, B_L) = [16 GB/s] within 1%\n"
                "expect solve(time(ring) = 22 ms, B_L) = none\n"              # fails
                "expect solve(time(ring) = 22 ms, B_L) = [16 GB/s, 32 GB/s]\n")  # fails
    found = outcomes(path)
    assert [p for p, _ in found] == [True, True, True, False, False]
    assert found[1][1] == "16.023 GB/s"  # 14·V/(8·(22 ms - 14 α))


def test_report_statements_are_not_checks(case):
    path = case("report slot = V / B_slot\nexpect time(ring) > 0 s\n")
    assert [p for p, _ in outcomes(path)] == [True]


def test_a_failing_expect_exits_1_and_says_where(run, case):
    path = case("expect time(ring) = 7.6 ms within 1%\n")
    code, out, err = run("check", path)
    assert code == 1 and err == ""
    assert out.splitlines() == [
        "case.sched:6: FAIL  expect time(ring) = 7.6 ms within 1%  (found 11.022 ms, expected 7.6 ms)",
        "1 expect in 1 file: 0 passed, 1 failed; 1 of 1 schedule verified"]


def test_check_json(run, case):
    path = case("expect time(ring) = 11 ms within 1%\nexpect solve(time(ring) = 1 s, V) = none\n")
    code, out, _ = run("check", path, "--json")
    document = json.loads(out)
    assert code == 1
    assert document["schema"] == "schedc.check/1"
    assert (document["passed"], document["failed"], document["errors"]) == (1, 1, 0)
    first, second = document["files"][0]["expects"]
    assert first == {"line": 6, "col": 1, "text": "time(ring) = 11 ms within 1%", "passed": True,
                     "found": "11.022 ms", "expected": "11 ms", "note": ""}
    assert (second["found"], second["passed"]) == ("18.286 GB", False)  # (1 s - 14 α)·4·B_slot/7


def test_a_bad_file_does_not_stop_the_others(run, case):
    case("expect time(rign) = 1 s\n", "a.sched")
    case("expect time(ring) > 1 ms\n", "b.sched")
    code, out, err = run("check", ".")
    assert code == 2
    assert out.splitlines() == ["b.sched:6: pass  expect time(ring) > 1 ms  (found 11.022 ms)",
                                "1 expect in 2 files: 1 passed, 0 failed; 1 of 1 schedule verified, 1 file with errors"]
    assert err.splitlines()[0] == "a.sched:6:13: error: no schedule named 'rign'; did you mean 'ring'?"


ERRORS = [
    ("expect time(ring) = 1 GB/s\n", "6:8: error: cannot compare a duration (seconds) with a "
     "bandwidth (bytes/s)"),
    ("expect time(ring) = 11 ms within 1 GB/s\n", "6:34: error: the tolerance is a bandwidth "
     "(bytes/s); the sides are a duration (seconds)"),
    ("expect time(ring) <= budget\n", "6:22: error: unknown name 'budget'"),
    ("budget 3 ms\nbudget 4 ms\n", "7:1: error: the budget is already given at case.sched:6:1"),
    ("budget 3 GB\n", "6:8: error: a budget is a duration, not a size (bytes)"),
    ("expect solve(time(ring, B_port = 25 GB/s) = 1 s, B_port) = none\n",
     "6:50: error: 'B_port' does not appear in this equation"),
    ("expect solve(time(ring) = 1 s, B_X) = none\n",
     "6:32: error: no param named 'B_X'; did you mean 'B_L'?"),
    ("expect solve(time(ring) <= 1 s, B_L) = none\n",
     "6:14: error: solve(...) needs an equation ('='); to see where an inequality holds, use "
     "'schedc solve'"),
    ("expect none < time(ring)\n", "6:8: error: none can only be compared with '='"),
    ("expect time(ring, B_L = 1 GB/s, B_L = 2 GB/s) = 1 s\n", "6:33: error: B_L is pinned twice"),
    ("expect time(ring) = [1 s, 2 GB]\n", "6:27: error: a list mixes a duration (seconds) and a "
     "size (bytes)"),
    ("expect time(ring) =\n", "6:20: error: unexpected new line; expected an expression"),
]


@pytest.mark.parametrize(("text", "message"), ERRORS)
def test_check_errors(run, case, text, message):
    code, out, err = run("check", case(text))
    assert code == 2 and "Traceback" not in err
    assert err.splitlines()[0] == f"case.sched:{message}"


def test_no_such_path(run, tmp_path):
    code, _, err = run("check", tmp_path / "missing")
    assert code == 2
    assert err.strip() == f"error: no such file or directory: {tmp_path / 'missing'}"


def test_check_verifies_first_and_skips_the_expects_of_a_wrong_schedule(run, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    broken = (FIXTURES / "broken" / "dropped.sched").read_text()
    path = write(tmp_path, "dropped.sched", broken + "expect time(ring) > 0 ms\n")
    code, out, err = run("check", path)
    assert code == 1, out + err
    lines = out.splitlines()
    assert lines[0] == f"{path}:11: FAIL  verify ring: allreduce over 4 ranks: FAILS"
    assert "    missing      g[1], g[2]" in lines
    assert "expect" not in out.replace("expects", "")  # the expect about its time is not evaluated
    assert lines[-1] == "0 expects in 1 file: 0 passed, 0 failed; 0 of 1 schedule verified"


def test_expects_see_params_at_their_nominal_values_as_reports_do(case):
    path = case("report chunks = ceil(V / 1 MiB)\n"
                "expect ceil(V / 1 MiB) = 192\n"
                "expect chunks = 192\n"
                "expect time(ring, B_L = 2 * B_slot) = time(ring)\n")
    assert outcomes(path) == [(True, "192"), (True, "192"), (True, "11.022 ms")]

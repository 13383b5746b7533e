"""Golden fixtures: each pipeline stage of tests/fixtures/*.sched against a stored dump.

SCHEDC_UPDATE_GOLDEN=1 writes differing outputs as `*.new` candidates beside the expected
files, never over them: review the diff, then move them (docs/contributing.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import golden

FIXTURES = Path(__file__).parent / "fixtures"
STAGES = ("ast", "ir", "loads", "formula")


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("fixture", sorted(p.name for p in FIXTURES.glob("*.sched")))
def test_stage(run, monkeypatch, fixture, stage):
    monkeypatch.chdir(FIXTURES)  # spans print paths as given: keep them relative
    code, out, err = run("emit", stage, fixture)
    assert code == 0, err
    golden(FIXTURES / f"{Path(fixture).stem}.{stage}", out)


def test_json_time(run, monkeypatch):
    monkeypatch.chdir(FIXTURES)
    code, out, err = run("time", "two_hosts.sched", "--json")
    assert code == 0, err
    golden(FIXTURES / "two_hosts.time.json", out)


def test_the_update_flag_writes_a_candidate_never_the_expected_file(monkeypatch, tmp_path):
    expected = tmp_path / "case.out"
    expected.write_text("reviewed\n")
    candidate = tmp_path / "case.out.new"
    monkeypatch.setenv("SCHEDC_UPDATE_GOLDEN", "1")
    with pytest.raises(AssertionError, match="candidate written"):
        golden(expected, "changed\n")
    assert expected.read_text() == "reviewed\n" and candidate.read_text() == "changed\n"
    with pytest.raises(AssertionError, match="missing expected file"):
        golden(tmp_path / "new_case.out", "first\n")
    assert not (tmp_path / "new_case.out").exists()
    assert (tmp_path / "new_case.out.new").read_text() == "first\n"
    # Once a person has moved the candidate over the expected file, the test passes, and
    # the stale candidate goes.
    candidate.replace(expected)
    (tmp_path / "case.out.new").write_text("changed\n")
    golden(expected, "changed\n")
    assert not candidate.exists()
    monkeypatch.delenv("SCHEDC_UPDATE_GOLDEN")
    with pytest.raises(AssertionError, match="SCHEDC_UPDATE_GOLDEN=1 writes"):
        golden(expected, "other\n")
    assert not candidate.exists()

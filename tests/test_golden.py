"""Golden fixtures: each pipeline stage of tests/fixtures/*.sched against a stored dump.

Regenerate after an intended change with SCHEDC_UPDATE_GOLDEN=1 and review the diff.
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

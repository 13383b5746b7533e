"""Tests that read the third-party data in ../shared/data skip, when it is absent, through one
helper (conftest.needs_shared_data) that names the missing path; with the folder absent, all
of them give the same reason and the run ends by counting them."""

from __future__ import annotations

import re

import conftest
import pytest
from conftest import ROOT


def test_a_missing_folder_is_named(monkeypatch, tmp_path):
    monkeypatch.setattr(conftest, "SHARED_DATA", tmp_path / "data")
    with pytest.raises(pytest.skip.Exception) as skip:
        conftest.needs_shared_data("nccl-tests", "a.txt")
    assert str(skip.value) == (f"needs the third-party data in {tmp_path / 'data'}: "
                               f"{tmp_path / 'data'} is absent")


def test_a_missing_file_in_the_folder_is_named(monkeypatch, tmp_path):
    (tmp_path / "data" / "msccl").mkdir(parents=True)
    monkeypatch.setattr(conftest, "SHARED_DATA", tmp_path / "data")
    assert conftest.needs_shared_data("msccl") == tmp_path / "data" / "msccl"
    with pytest.raises(pytest.skip.Exception) as skip:
        conftest.needs_shared_data("msccl", "x.xml")
    assert str(skip.value) == (f"needs the third-party data in {tmp_path / 'data'}: "
                               f"{tmp_path / 'data' / 'msccl' / 'x.xml'} is absent")


def test_no_test_skips_on_the_shared_data_by_itself():
    # Every test file that uses SHARED_DATA skips through the helper: no skip of its own next
    # to an exists() check of a shared path (the reasons were "no shared data", "no logs" and
    # an empty parameter set, naming nothing).
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        if "SHARED_DATA" not in text:
            continue
        assert "needs_shared_data" in text, path.name
        for match in re.finditer(r"pytest\.skip\((.*)\)", text):
            assert "absent" not in match.group(1) and "shared" not in match.group(1), \
                (path.name, match.group(0))

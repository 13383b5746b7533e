"""The package type-checks: mypy with the settings of pyproject.toml ([tool.mypy]), as
`mypy` run from the repository root does. Skipped when mypy is not installed, and in `.ci/run`,
which runs `mypy` as its own step before the tests (and sets SCHEDC_MYPY_STEP=done after it
passed), so that the 35 s check does not hold a test worker."""

from __future__ import annotations

import os

import pytest
from conftest import ROOT

mypy = pytest.importorskip("mypy.api")


@pytest.mark.skipif(os.environ.get("SCHEDC_MYPY_STEP") == "done",
                    reason="mypy passed as its own step of .ci/run")
def test_mypy_finds_no_errors(monkeypatch):
    monkeypatch.chdir(ROOT)  # `files` in [tool.mypy] and the cache are relative to the root
    out, err, code = mypy.run(["--config-file", "pyproject.toml"])
    assert code == 0, out + err
    assert out.startswith("Success: no issues found")

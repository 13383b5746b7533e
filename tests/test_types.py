"""The package type-checks: mypy with the settings of pyproject.toml ([tool.mypy]), as
`mypy` run from the repository root does. Skipped when mypy is not installed."""

from __future__ import annotations

import pytest
from conftest import ROOT

mypy = pytest.importorskip("mypy.api")


def test_mypy_finds_no_errors(monkeypatch):
    monkeypatch.chdir(ROOT)  # `files` in [tool.mypy] and the cache are relative to the root
    out, err, code = mypy.run(["--config-file", "pyproject.toml"])
    assert code == 0, out + err
    assert out.startswith("Success: no issues found")

"""Shared fixtures: run the command line in-process, and compile schedules."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import sympy

import schedc
from schedc.cli import main

ROOT = Path(__file__).resolve().parent.parent
SCHEDULES = ROOT / "schedules"
SHARED_DATA = ROOT.parent / "shared" / "data"
MiB = 2**20


@pytest.fixture
def run(capsys):
    """run(*args) -> (exit code, stdout, stderr) of `schedc args...`."""

    def _run(*args):
        with pytest.raises(SystemExit) as exc:
            main([str(a) for a in args])
        captured = capsys.readouterr()
        return exc.value.code, captured.out, captured.err

    return _run


def timings(path, *sets: str, names=None):
    """{schedule name: Timing} for a file, with `--set` style overrides."""
    session = schedc.load(path, sets)
    chosen = names or session.selected(required=False)
    return session.program, {n: schedc.time(session, n) for n in chosen}


def expr(program, text: str) -> sympy.Expr:
    """Parse a formula with the program's param symbols (which carry assumptions)."""
    return sympy.sympify(text, locals={p.name: p.symbol for p in program.params.values()})


def golden(path: Path, actual: str) -> None:
    """Compare output with a stored golden file; SCHEDC_UPDATE_GOLDEN=1 rewrites it instead."""
    if os.environ.get("SCHEDC_UPDATE_GOLDEN"):
        path.write_text(actual)
    assert path.exists(), f"missing golden file {path}; run with SCHEDC_UPDATE_GOLDEN=1"
    assert actual == path.read_text()


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text)
    return path

"""One measured child process, shared by the benchmark scripts (targets.py, astra.py): its wall
time, its own peak resident memory (wait4's ru_maxrss, so every run is measured on its own, not
the running maximum over all children) and, when asked, its standard output.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Run:
    wall: float  # seconds
    peak: int  # bytes
    stdout: str  # "" unless captured


def schedc(*args: str) -> list[str]:
    """The command line of a fresh `schedc` process (this checkout's, run from ROOT)."""
    return [sys.executable, "-m", "schedc", *args]


def run_once(command: list[str], cwd: Path = ROOT, capture: bool = False) -> Run:
    """Run `command` to its end. Standard output goes to a file (a pipe could fill up and stall
    the child while we wait for it); a non-zero exit stops the benchmark with the child's stderr."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        process = subprocess.Popen(command, cwd=cwd, stdout=out if capture else subprocess.DEVNULL,
                                   stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(command)} failed: {err.read().decode(errors='replace')}")
        out.seek(0)
        text = out.read().decode(errors="replace") if capture else ""
    return Run(wall, usage.ru_maxrss * 1024, text)


def summary(runs: list[Run]) -> tuple[float, float, int]:
    """Min and median wall seconds, and the largest peak RSS (bytes), of several runs."""
    walls = [r.wall for r in runs]
    return min(walls), statistics.median(walls), max(r.peak for r in runs)

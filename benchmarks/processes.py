"""One measured child process, shared by the benchmark scripts (targets.py, astra.py): its wall
time, its own peak resident memory and, when asked, its standard output.

The peak is wait4's ru_maxrss, so every run is measured on its own (not the running maximum
over all children). Linux counts in it what a child held before it exec'd its program: a
child forked from this script would start at this script's size (about 90 MiB after a few
runs). So a small launcher (`python -S`, about 10 MiB) forks the program and reports the
program's wall time and ru_maxrss: peaks below the launcher's size read as its size.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def arguments(doc: str, what: str) -> argparse.ArgumentParser:
    """The options of a script that measures named cases (`what`): --repeat, the runs of
    each, and --only, the cases whose name starts so."""
    def runs(text: str) -> int:
        if not text.isdigit() or int(text) < 1:
            raise argparse.ArgumentTypeError("must be a whole number, at least 1")
        return int(text)

    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--repeat", type=runs, default=5, help=f"Runs of each {what[:-1]}.")
    parser.add_argument("--only", nargs="*", help=f"Run only the {what} whose name starts so.")
    return parser


def chosen(name: str, only: list[str] | None) -> bool:
    """Whether --only lets the case `name` run."""
    return not only or any(name.startswith(o) for o in only)


@dataclass(frozen=True)
class Run:
    wall: float  # seconds
    peak: int  # bytes
    stdout: str  # "" unless captured


def schedc(*args: str) -> list[str]:
    """The command line of a fresh `schedc` process (this checkout's, run from ROOT)."""
    return [sys.executable, "-m", "schedc", *args]


# What a schedc command that prints formulas cannot start faster than: importing the libraries
# it uses and SymPy's first addition (which imports sympy.tensor), with no schedc code at all.
LIBRARIES_CODE = "import lark, networkx, numpy, sympy; sympy.Symbol('x') + 1"
LIBRARIES_ALONE = [sys.executable, "-c", LIBRARIES_CODE]


# argv: the file to write "exit code, wall seconds, ru_maxrss KiB" to, then the command
LAUNCHER = """
import os, sys, time
start = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - start
with open(sys.argv[1], "w") as report:
    report.write(f"{os.waitstatus_to_exitcode(status)} {wall!r} {usage.ru_maxrss}")
"""


def run_once(command: list[str], cwd: Path = ROOT, capture: bool = False) -> Run:
    """Run `command` to its end. Standard output goes to a file (a pipe could fill up and stall
    the child while we wait for it); a non-zero exit stops the benchmark with the child's stderr."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report"
        subprocess.run([sys.executable, "-S", "-c", LAUNCHER, str(report), *command], cwd=cwd,
                       stdout=out if capture else subprocess.DEVNULL, stderr=err, check=False)
        code, wall, peak = report.read_text().split() if report.exists() else ("?", "0", "0")
        if code != "0":
            err.seek(0)
            raise SystemExit(f"{' '.join(command)} failed: {err.read().decode(errors='replace')}")
        out.seek(0)
        text = out.read().decode(errors="replace") if capture else ""
    return Run(float(wall), int(peak) * 1024, text)


def summary(runs: list[Run]) -> tuple[float, float, int]:
    """Min and median wall seconds, and the largest peak RSS (bytes), of several runs."""
    walls = [r.wall for r in runs]
    return min(walls), statistics.median(walls), max(r.peak for r in runs)

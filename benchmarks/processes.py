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
import contextlib
import io
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
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
    parser.add_argument("--results", type=Path, metavar="FILE",
                        help="Also append what is printed to FILE (benchmarks/RESULTS.md) as a "
                        "dated section with the machine's load and the commit measured.")
    return parser


class _Tee(io.TextIOBase):
    def __init__(self, *streams) -> None:
        self.streams = streams

    def write(self, text: str) -> int:
        for stream in self.streams:
            stream.write(text)
        return len(text)

    def flush(self) -> None:
        for stream in self.streams:
            stream.flush()


def _commit() -> str:
    """The commit measured, with "+ changes" when the working tree differs from it."""
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    return commit + (" + changes" if git("status", "--porcelain", "--", "schedc", "benchmarks")
                     else "")


@contextlib.contextmanager
def recorded(path: Path | None, script: str) -> Iterator[None]:
    """Print as usual; with `path`, append a dated section to it when done: the command, the
    commit, the load averages before and after (the machine is shared: ratios measured in one
    run are what count) and everything printed, as a block."""
    if path is None:
        yield
        return
    started, load = time.gmtime(), os.getloadavg()
    out = io.StringIO()
    with contextlib.redirect_stdout(_Tee(sys.stdout, out)):
        yield
    after = os.getloadavg()
    section = (f"\n## {time.strftime('%Y-%m-%d %H:%M', started)} UTC: `{script}`\n\n"
               f"`python benchmarks/{script} {shlex.join(sys.argv[1:])}` at commit {_commit()}; "
               f"load averages (1, 5, 15 min) {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f} "
               f"before, {after[0]:.2f}, {after[1]:.2f}, {after[2]:.2f} after; "
               f"{os.cpu_count()} cores.\n\n```\n{out.getvalue().rstrip()}\n```\n")
    if not path.exists():
        path.write_text("# Benchmark results\n\nDated runs of `benchmarks/targets.py` and "
                        "`benchmarks/astra.py`, appended by the scripts (`--results`). The "
                        "machine may be shared: compare ratios within one run.\n")
    with path.open("a") as results:
        results.write(section)


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
# it uses and SymPy's first addition (which imports sympy.tensor), with no schedc code at all,
# and leaving as schedc does, without the interpreter's teardown (about 0.1 s of freeing
# SymPy's objects, which a floor that waited for it would count and schedc never pays).
LIBRARIES_CODE = ("import lark, networkx, numpy, sympy, os; sympy.Symbol('x') + 1; "
                  "os._exit(0)")
LIBRARIES_ALONE = [sys.executable, "-c", LIBRARIES_CODE]
# ... and one that prints numbers only (`time --no-formula`): no SymPy, no networkx
NUMBERS_CODE = "import lark, numpy, click, os; os._exit(0)"
NUMBERS_ALONE = [sys.executable, "-c", NUMBERS_CODE]
# Issue 25's yardstick for `compare`: importing those libraries alone, as written there.
IMPORTS_CODE = "import lark, networkx, numpy, sympy"
IMPORTS_ALONE = [sys.executable, "-c", IMPORTS_CODE]


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


def run_once(command: list[str], cwd: Path = ROOT, capture: bool = False, exit_code: int = 0) -> Run:
    """Run `command` to its end. Standard output goes to a file (a pipe could fill up and stall
    the child while we wait for it); an exit other than `exit_code` stops the benchmark with the
    child's stderr."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report"
        subprocess.run([sys.executable, "-S", "-c", LAUNCHER, str(report), *command], cwd=cwd,
                       stdout=out if capture else subprocess.DEVNULL, stderr=err, check=False)
        code, wall, peak = report.read_text().split() if report.exists() else ("?", "0", "0")
        if code != str(exit_code):
            err.seek(0)
            raise SystemExit(f"{' '.join(command)} failed: {err.read().decode(errors='replace')}")
        out.seek(0)
        text = out.read().decode(errors="replace") if capture else ""
    return Run(float(wall), int(peak) * 1024, text)


def summary(runs: list[Run]) -> tuple[float, float, int]:
    """Min and median wall seconds, and the largest peak RSS (bytes), of several runs."""
    walls = [r.wall for r in runs]
    return min(walls), statistics.median(walls), max(r.peak for r in runs)

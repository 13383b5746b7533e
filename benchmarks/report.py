"""Benchmark of `schedc report`: wall and CPU time of the whole process, and the page's size.

Runs `schedc report FILE -o ...` in a fresh interpreter per run (imports included, as a user
would), a few times, and prints the best and median wall time, the median CPU time (user +
system of the child: on a shared machine it says more than the wall clock) and the size of
the HTML; then, in-process, where one report's time goes.

    python benchmarks/report.py [--repeat N] [FILE ...]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEFAULT = ["schedules/seed/nvlink_2x8.sched", "schedules/seed/pcie_2x4.sched"]


def run(path: str, target: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one `schedc report` in a fresh interpreter."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "schedc", "report", path, "-o", str(target)],
                   cwd=ROOT, capture_output=True, check=True,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def stages(path: str) -> list[tuple[str, float]]:
    """Seconds per stage of one report, in this process (imports already paid for the first)."""
    from schedc import compare
    from schedc.analysis.overview import overview
    from schedc.render.html import report_html
    from schedc.session import Session
    out = []
    start = time.perf_counter()
    session = Session.open(ROOT / path)
    timings = compare(session)  # verified, as the command does
    out.append(("compile and verify", time.perf_counter() - start))
    start = time.perf_counter()
    found = overview(session, timings, 10.0, 2000)
    out.append(("crossovers, busy maps, bound, checks", time.perf_counter() - start))
    start = time.perf_counter()
    report_html(session.program, found)
    out.append(("plots and HTML", time.perf_counter() - start))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("files", nargs="*", default=DEFAULT)
    args = parser.parse_args()
    print(f"schedc report FILE -o OUT.html, {args.repeat} runs each (fresh interpreter)")
    print(f"  {'file':<36} {'best':>8} {'median':>8} {'cpu':>8} {'html':>10}")
    with tempfile.TemporaryDirectory() as folder:
        for path in args.files:
            target = Path(folder) / "report.html"
            times = [run(path, target) for _ in range(args.repeat)]
            walls = [w for w, _ in times]
            cpu = statistics.median(c for _, c in times)
            size = target.stat().st_size
            print(f"  {path:<36} {min(walls):>7.2f}s {statistics.median(walls):>7.2f}s "
                  f"{cpu:>7.2f}s {size / 1024:>7,.0f} KiB")
    print()
    for path in args.files:
        stages(path)  # warm: imports and first-use caches
        print(f"in-process, {path} (warm)")
        for label, seconds in stages(path):
            print(f"  {label:<40} {seconds:>6.2f}s")


if __name__ == "__main__":
    main()

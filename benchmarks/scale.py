"""Closed forms over hosts: `schedc scale --in hosts` of the seed file (issue 20's target: at
most 3 s whole process; its two forms are proved), of the ring with finite rail-to-spine links
(two pieces, checked), of the textbook library in p (the ring collectives proved), of the ring
and of the hierarchical all-reduce over hosts × 8 GPUs, and a structural sweep of hosts over 2–256 (compiles, wall time). Each is a
whole process (`python -m schedc`), timed wall-clock and in CPU seconds (user + system of
the child; on a shared machine the wall time also counts waiting for a core).

    python benchmarks/scale.py [RUNS]
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILE = ROOT / "schedules" / "seed" / "nvlink_hosts.sched"


def _timed(args: list[str]) -> tuple[float, float, str]:
    """(wall s, CPU s, stdout) of one `python -m schedc ARGS` run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "schedc", *args], cwd=ROOT, check=True,
                          capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def _line(label: str, runs: list[tuple[float, float, str]]) -> str:
    wall, cpu = [r[0] for r in runs], [r[1] for r in runs]
    return (f"{label:<44} wall min {min(wall):5.2f} s  median {statistics.median(wall):5.2f} s"
            f"   CPU min {min(cpu):5.2f} s  median {statistics.median(cpu):5.2f} s")


def main(runs: int = 3) -> None:
    print(f"{runs} runs each, whole process")
    args = ["scale", str(FILE), "--in", "hosts"]  # issue 20's target: <= 3 s whole process
    print(_line("scale --in hosts (target <= 3 s)", [_timed(args) for _ in range(runs)]))
    spine = ROOT / "tests" / "scale" / "rail_spine_hosts.sched"
    args = ["scale", str(spine), "--in", "hosts", "--no-bound"]
    print(_line("scale rail_spine_hosts --no-bound (2 pieces)", [_timed(args) for _ in range(runs)]))
    flat = ROOT / "schedules" / "algorithms" / "flat_p.sched"  # 3 pieces proved, 8 labelled
    args = ["scale", str(flat), "--in", "p", "--no-bound"]
    print(_line("scale flat_p --in p --no-bound (11 schedules)", [_timed(args) for _ in range(runs)]))
    for name in ("ring", "hierarchical"):
        args = ["scale", str(FILE), "--in", "hosts", "-s", name]
        print(_line(f"scale --in hosts -s {name}", [_timed(args) for _ in range(runs)]))
    args = ["scale", str(FILE), "--in", "hosts", "-s", "ring", "--no-bound", "--at", "100000",
            "--extrapolate"]
    result = _timed(args)
    print(_line("scale -s ring --no-bound --at 100000 --extrapolate", [result]))
    print("  " + next(line.strip() for line in result[2].splitlines() if "100000" in line))
    result = _timed(["sweep", str(FILE), "--vary", "hosts=2:256", "--no-verify"])
    print(_line("sweep --vary hosts=2:256 --no-verify", [result]))
    print("  " + result[2].strip().splitlines()[-1])


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)

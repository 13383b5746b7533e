"""Closed forms over hosts: `schedc scale` of the ring and the hierarchical all-reduce over
hosts × 8 GPUs (whole process, min and median of runs), and a structural sweep of hosts
over 2–256 (compiles, wall time).

    python benchmarks/scale.py [RUNS]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILE = ROOT / "schedules" / "seed" / "nvlink_hosts.sched"


def _timed(args: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "schedc", *args], cwd=ROOT, check=True,
                          capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    return time.perf_counter() - start, done.stdout


def main(runs: int = 3) -> None:
    for name in ("ring", "hierarchical"):
        seconds = [_timed(["scale", str(FILE), "--in", "hosts", "-s", name])[0]
                   for _ in range(runs)]
        print(f"scale --in hosts -s {name:<13} min {min(seconds):.2f} s  "
              f"median {statistics.median(seconds):.2f} s  (whole process, {runs} runs)")
    seconds, out = _timed(["sweep", str(FILE), "--vary", "hosts=2:256", "--no-verify"])
    compiles = out.strip().splitlines()[-1]
    print(f"sweep --vary hosts=2:256: {seconds:.2f} s wall  ({compiles})")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)

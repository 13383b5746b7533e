"""`schedc verify --for-all PARAM` on every shipped file with a structural family param (the
files and params `scale_status.py` lists), one whole process each: its CPU seconds (user +
system, of the process and its children; figures taken on a shared machine are its load's),
and how many of the file's schedules are proved, refuted or unknown.

    python benchmarks/forall_times.py [REPO] [--timeout S]   # REPO: another checkout

A run past the timeout (default 300 s of wall time) is killed and shown as such. Run on two
checkouts it gives the times before and after a change.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from scale_status import HERE, LIST, _run


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _one(root: Path, path: str, param: str, timeout: float) -> tuple[float, float, str]:
    """(CPU s, wall s, counts) of one `verify --for-all` process."""
    before, start = _cpu(), time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-m", "schedc", "verify", path, "--for-all", param,
                               "--json"], cwd=root, capture_output=True, text=True,
                              timeout=timeout, env={**os.environ, "PYTHONPATH": str(root)})
    except subprocess.TimeoutExpired:
        return _cpu() - before, time.monotonic() - start, f"killed after {timeout:g} s"
    cpu, wall = _cpu() - before, time.monotonic() - start
    if done.returncode not in (0, 1):
        return cpu, wall, f"exit {done.returncode}: {done.stderr.strip()[:80]}"
    statuses = [s["for_all"]["status"] for f in json.loads(done.stdout)["files"]
                for s in f["schedules"]]
    return cpu, wall, " ".join(f"{statuses.count(s)} {s}" for s in ("proved", "refuted", "unknown")
                               if s in statuses)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", nargs="?", default=str(HERE))
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args()
    root = Path(args.repo).resolve()
    listed = _run(root, ["-c", LIST])
    if listed.returncode:
        raise SystemExit(listed.stderr)
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    print(f"{'file':<66} {'param':<6} {'CPU s':>7} {'wall s':>7}  answers")
    total = 0.0
    for line in listed.stdout.splitlines():
        path, param = line.rsplit(" ", 1)
        cpu, wall, answers = _one(root, path, param, args.timeout)
        total += cpu
        print(f"{path.removeprefix('schedules/'):<66} {param:<6} {cpu:7.2f} {wall:7.2f}  {answers}",
              flush=True)
    print(f"total CPU s: {total:.1f}; load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

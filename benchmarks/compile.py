"""Compile-time benchmark: wall time, transfers per second and peak memory.

Runs each command in a fresh interpreter (interpreter start and imports included), as a
user would, several times, and prints the best and median wall time and the peak resident
memory; then times the stages in-process for the largest file.

The package is byte-compiled first, as `pip install .` leaves it: a checkout run with
PYTHONDONTWRITEBYTECODE=1 would otherwise recompile every module on every start
(`--no-bytecode` measures that instead).

    python benchmarks/compile.py [--repeat N] [--no-bytecode]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = [
    ("seed nvlink_2x8 (compare)", ["compare", "schedules/seed/nvlink_2x8.sched"]),
    ("scale ring_1024 (time --json)", ["time", "schedules/scale/ring_1024.sched", "--json"]),
]


def run_once(args: list[str]) -> tuple[float, int, str]:
    """Wall seconds, peak RSS in bytes and stdout of one `schedc` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "schedc", *args], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # ru_maxrss of children is the largest so far (KiB on Linux): a later, smaller run
    # cannot be told apart, so the cases run largest-last and we report the running maximum.
    return wall, max(peak, before) * 1024, done.stdout


def stages(path: str) -> dict[str, float]:
    """Seconds per pipeline stage, in-process (imports excluded)."""
    from schedc.cost.formula import cost
    from schedc.cost.lower import lower
    from schedc.elaborate.loader import load_program

    marks = {}
    t0 = time.perf_counter()
    program = load_program(ROOT / path)
    marks["parse + elaborate declarations + topology"] = time.perf_counter() - t0
    schedules = []
    t0 = time.perf_counter()
    for result in program.results:
        schedules.append(program.schedule(result.name))
    marks["elaborate schedules"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    loads = [lower(s, program.topology) for s in schedules]
    marks["lower"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    for load in loads:
        cost(load, program.topology, program.alpha, program.nominal)
    marks["cost"] = time.perf_counter() - t0
    marks["transfers"] = sum(s.transfer_count for s in schedules)
    return marks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-bytecode", action="store_true",
                        help="Do not byte-compile the package first.")
    options = parser.parse_args()
    if not options.no_bytecode:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "schedc")], check=True)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import schedc.cli"], check=True)
    print(f"interpreter + imports alone: {time.perf_counter() - t0:.2f} s")
    for label, args in CASES:
        runs = [run_once(args) for _ in range(options.repeat)]
        walls = [w for w, _, _ in runs]
        peak = max(p for _, p, _ in runs)
        line = (f"{label}: best {min(walls):.2f} s, median {statistics.median(walls):.2f} s wall, "
                f"peak {peak / 2**20:.0f} MiB")
        if "--json" in args:
            transfers = sum(s["transfers"] for s in json.loads(runs[0][2])["schedules"])
            line += f", {transfers:,} transfers, {transfers / min(walls):,.0f} transfers/s end to end"
        print(line)
    marks = stages("schedules/scale/ring_1024.sched")
    transfers = marks.pop("transfers")
    compile_time = sum(marks.values())
    print(f"ring_1024 in-process: {compile_time:.2f} s for {transfers:,} transfers "
          f"({transfers / compile_time:,.0f} transfers/s)")
    for stage, seconds in marks.items():
        print(f"  {stage:<45} {seconds:.3f} s")


if __name__ == "__main__":
    main()

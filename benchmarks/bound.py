"""Benchmark of `schedc bound`: wall time per file, and the cut search in-process.

Runs `schedc bound` in a fresh interpreter per file (imports included, as a user would), a few
times, and prints the best and median wall time; then, for the 1,024-rank file, times the cut
search with and without the host-shift symmetry and prints how many max-flow problems each
solved.

    python benchmarks/bound.py [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from schedc.analysis import cuts  # noqa: E402
from schedc.analysis.bound.cuts import RankCuts  # noqa: E402
from schedc.elaborate.loader import load_program  # noqa: E402

CASES = [
    ("seed nvlink_2x8", "schedules/seed/nvlink_2x8.sched"),
    ("pcie_2x4 (tests/fixtures/bound)", "tests/fixtures/bound/pcie_2x4.sched"),
    ("machine nvlink_2x8 (no schedules)", "schedules/machines/nvlink_2x8.sched"),
    ("scale ring_1024", "schedules/scale/ring_1024.sched"),
]


def wall(path: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "schedc", "bound", path, "--json"], cwd=ROOT,
                   capture_output=True, check=True)
    return time.perf_counter() - start


def cut_search(path: str, symmetry: bool) -> tuple[float, int, int]:
    """Seconds, max-flow problems solved, and cuts found by the cut search alone."""
    program = load_program(ROOT / path)
    ranks = program.results[0].collective.ranks
    start = time.perf_counter()
    found_shift = cuts.host_shift
    if not symmetry:  # as on a machine whose hosts differ: the max-flow engine is chosen so too
        cuts.host_shift = lambda *args: None
    try:
        finder = RankCuts(program.topology, program.nominal, ranks)
    finally:
        cuts.host_shift = found_shift
    found = finder.cuts()
    return time.perf_counter() - start, finder.solved, len(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"schedc bound FILE --json, {args.repeat} runs each (fresh interpreter)")
    print(f"  {'file':<36} {'best':>8} {'median':>8}")
    for label, path in CASES:
        times = [wall(path) for _ in range(args.repeat)]
        print(f"  {label:<36} {min(times):>7.2f}s {statistics.median(times):>7.2f}s")
    print()
    print("cut search, scale ring_1024 (1,024 ranks on 128 hosts), in-process")
    for symmetry in (True, False):
        seconds, solved, found = cut_search("schedules/scale/ring_1024.sched", symmetry)
        label = "with the host shift" if symmetry else "every cut solved"
        print(f"  {label:<22} {seconds:>6.2f}s  {solved:>5} max-flow problems  {found} cuts")
    print("  (max-flow by scipy when edges × problems >= cuts.ARRAYS_FROM, else networkx)")


if __name__ == "__main__":
    main()

"""`schedc verify --for-all hosts` on the ring and the hierarchical all-reduce of the seed's
family (schedules/seed/nvlink_hosts.sched), whole fresh processes: min and median wall time and
peak memory of several runs, against issue 20's target of 5 s each on this 2-core machine.

    python benchmarks/forall.py [--repeat N] [--only NAME ...] [--results benchmarks/RESULTS.md]

Beside each, the same file's ordinary `verify -s NAME` (one size, hosts = 2) and the libraries'
import alone, so that what the proof itself costs can be read off on a shared machine.
"""

from __future__ import annotations

from processes import (
    LIBRARIES_ALONE,
    arguments,
    chosen,
    recorded,
    run_once,
    schedc,
    summary,
)

FILE = "schedules/seed/nvlink_hosts.sched"
TARGET_S = 5.0

CASES = [
    ("libraries alone", LIBRARIES_ALONE, None),
    *((f"verify -s {name}", schedc("verify", FILE, "-s", name), None)
      for name in ("ring", "hierarchical")),
    *((f"verify --for-all hosts -s {name}",
       schedc("verify", FILE, "--for-all", "hosts", "-s", name), TARGET_S)
      for name in ("ring", "hierarchical")),
]


def main() -> None:
    args = arguments(__doc__, "cases").parse_args()
    with recorded(args.results, "forall.py"):
        print(f"{'case':<40} {'min s':>7} {'median s':>9} {'peak MiB':>9}  target")
        for name, command, target in CASES:
            if not chosen(name, args.only):
                continue
            runs = [run_once(command, capture=True) for _ in range(args.repeat)]
            if target is not None and "proved" not in runs[0].stdout:
                raise SystemExit(f"{name}: not proved:\n{runs[0].stdout}")
            low, median, peak = summary(runs)
            verdict = "" if target is None else (
                f"<= {target:g} s: {'met' if median <= target else 'NOT met'} (median)")
            print(f"{name:<40} {low:7.2f} {median:9.2f} {peak / 2**20:9.0f}  {verdict}")


if __name__ == "__main__":
    main()

"""`schedc whatif --class nic`: wall time and peak memory of fresh processes, against the
issue's targets (≤ 3 s on the seed's 2×8 machine, 16 NICs; ≤ 20 s on a 32-host rail machine,
256 NICs).

    python benchmarks/whatif.py [--repeat N] [--only NAME ...] [--results FILE]

The 32-host machine is the seed's, with the host count as a structural param
(schedules/seed/nvlink_hosts.sched, `--set hosts=32`): 8 rails, one NIC link per GPU.
Prints min and median of --repeat runs of each case.
"""

from __future__ import annotations

import sys

from processes import arguments, chosen, recorded, run_once, schedc, summary

CASES = (
    ("seed_2x8", ["whatif", "schedules/seed/nvlink_2x8.sched", "--class", "nic"], 3.0),
    ("rail_32x8", ["whatif", "schedules/seed/nvlink_hosts.sched", "--set", "hosts=32",
                   "--class", "nic"], 20.0),
)


def main() -> None:
    options = arguments(__doc__, "cases").parse_args()
    with recorded(options.results, "whatif.py"):
        print(f"{'case':<10}  {'min s':>7}  {'median s':>8}  {'peak MiB':>8}  target")
        for name, args, target in CASES:
            if not chosen(name, options.only):
                continue
            runs = [run_once(schedc(*args)) for _ in range(options.repeat)]
            least, median, peak = summary(runs)
            verdict = "ok" if median <= target else "MISSED"
            print(f"{name:<10}  {least:7.2f}  {median:8.2f}  {peak / 2**20:8.0f}  "
                  f"<= {target:g} s {verdict}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()

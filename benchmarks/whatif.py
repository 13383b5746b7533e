"""`schedc whatif --class nic`: wall time and peak memory of fresh processes, against the
issue's targets (≤ 3 s on the seed's 2×8 machine, 16 NICs; ≤ 20 s on a 32-host rail machine,
256 NICs).

    python benchmarks/whatif.py [--repeat N] [--only NAME ...] [--results FILE]

The 32-host machine is the seed's, with the host count as a structural param
(schedules/seed/nvlink_hosts.sched, `--set hosts=32`): 8 rails, one NIC link per GPU.
Prints min and median of --repeat runs of each case, and `compare` on the seed's file as a
yardstick: on a loaded machine both slow down alike (whatif's own work on the seed is ~0.2 s
over compare's import and compile). Issue 36's rail machines (benchmarks/limits.py's `rail`,
written under /tmp): r06, 100 hosts × 8 NICs and one transfer; r19, the 8 uplinks of 7,000
hosts.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from limits import rail
from processes import arguments, chosen, recorded, run_once, schedc, summary

RAILS = Path(tempfile.mkdtemp(prefix="schedc-whatif-"))

CASES = (
    ("compare_2x8", ["compare", "schedules/seed/nvlink_2x8.sched"], None),
    ("seed_2x8", ["whatif", "schedules/seed/nvlink_2x8.sched", "--class", "nic"], 3.0),
    ("rail_32x8", ["whatif", "schedules/seed/nvlink_hosts.sched", "--set", "hosts=32",
                   "--class", "nic"], 20.0),
    ("r06_100x8", ["whatif", str(RAILS / "r100.sched"), "--class", "nic", "--no-verify"], 30.0),
    ("r19_7000", ["whatif", str(RAILS / "r7000.sched"), "--class", "uplink", "--no-verify"], 30.0),
)


def main() -> None:
    options = arguments(__doc__, "cases").parse_args()
    (RAILS / "r100.sched").write_text(rail(100), encoding="utf-8")
    (RAILS / "r7000.sched").write_text(rail(7000), encoding="utf-8")
    with recorded(options.results, "whatif.py"):
        print(f"{'case':<11}  {'min s':>7}  {'median s':>8}  {'peak MiB':>8}  target")
        for name, args, target in CASES:
            if not chosen(name, options.only):
                continue
            runs = [run_once(schedc(*args)) for _ in range(options.repeat)]
            least, median, peak = summary(runs)
            verdict = ("(yardstick)" if target is None else
                       f"<= {target:g} s {'ok' if median <= target else 'MISSED'}")
            print(f"{name:<11}  {least:7.2f}  {median:8.2f}  {peak / 2**20:8.0f}  {verdict}")
            sys.stdout.flush()
    shutil.rmtree(RAILS, ignore_errors=True)


if __name__ == "__main__":
    main()

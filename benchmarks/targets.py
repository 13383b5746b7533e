"""The performance targets of issues 14 and 25 (start-up, verified compiles at scale, many
small rounds and many small calls, bounds at scale, sweeps, an early refusal), each measured
as a user meets it: a fresh `schedc` process, several runs, min and median wall time and the
peak resident memory of the run. Targets that compare two commands run them alternately (one
run of each in turn), so that the machine's load moves both alike.

    python benchmarks/targets.py [--repeat N] [--only NAME ...] [--results benchmarks/RESULTS.md]

The big cases live in benchmarks/cases/ (not under schedules/, which `check schedules/`
compiles whole). Peak memory comes from wait4's ru_maxrss of each child, so every run is
measured on its own (benchmarks/processes.py).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile

from processes import (
    IMPORTS_ALONE,
    IMPORTS_CODE,
    LIBRARIES_ALONE,
    LIBRARIES_CODE,
    ROOT,
    arguments,
    chosen,
    recorded,
    run_once,
    schedc,
    summary,
)

CASES = "benchmarks/cases"
SEED = "schedules/seed/nvlink_2x8.sched"
BIG = ["--max-transfers", "40000000"]  # above the default limit of 20,000,000

# (name, schedc's arguments, transfers of the compiled schedules or None)
TARGETS = [
    ("start-up: --help", ["--help"], None),
    ("start-up: compare seed", ["compare", SEED], None),
    # 16,384 ranks × 16,384 pieces: 2^28 cells, 10 GiB at 40 B a cell, within the machine's
    # memory (issue 38; it was refused at a fixed 2^26 cells before)
    ("hierarchical 2048x8, verified", ["time", f"{CASES}/hierarchical_16384.sched", "--json",
                                       "--max-transfers", "80000000"], 67_305_472),
    # 20,000 calls of the library's 7-round ring all-gather on 8 GPUs, and the same rounds as one
    # round loop
    ("20,000 calls x 7 rounds, verified", ["time", f"{CASES}/many_calls.sched", "--json"],
     1_120_000),
    ("the same rounds as one loop, verified", ["time", f"{CASES}/many_calls_loop.sched", "--json"],
     1_120_000),
    ("ring 128x8, verified", ["time", "schedules/scale/ring_1024.sched", "--json"], 2_095_104),
    ("ring 128x8, --no-verify", ["time", "schedules/scale/ring_1024.sched", "--json",
                                 "--no-verify"], 2_095_104),
    ("ring 512x8, verified", ["time", f"{CASES}/ring_4096.sched", "--json", *BIG], 33_546_240),
    ("ring 512x8, --no-verify", ["time", f"{CASES}/ring_4096.sched", "--json", "--no-verify",
                                 *BIG], 33_546_240),
    # 2·7 rounds of 8 transfers in each of 1,024 hosts, 2·1023 of 1,024 on each of 8 rails
    ("hierarchical 1024x8, verified", ["time", f"{CASES}/hierarchical_8192.sched", "--json"],
     16_875_520),
    ("hierarchical 1024x8, --no-verify", ["time", f"{CASES}/hierarchical_8192.sched", "--json",
                                          "--no-verify"], 16_875_520),
    ("bound hierarchical 1024x8, --no-verify", ["bound", f"{CASES}/hierarchical_8192.sched",
                                                "--json", "--no-verify"], None),
    ("140,000 rounds x 8, verified", ["time", f"{CASES}/many_rounds.sched", "--json"], 1_120_000),
    ("140,000 rounds x 8, --no-verify", ["time", f"{CASES}/many_rounds.sched", "--json",
                                         "--no-verify"], 1_120_000),
    # the same sweeps at 2 points (the fewest) are their start-up: parse, compile, lambdify
    ("sweep 2 points, --csv", ["sweep", SEED, "--vary", "V=1KB:16GB:2", "--csv",
                               "{tmp}/sweep.csv"], None),
    ("sweep 10^6 points, --csv", ["sweep", SEED, "--vary", "V=1KB:16GB:1000000",
                                  "--csv", "{tmp}/sweep.csv"], None),
    ("sweep 2 points, --json", ["sweep", SEED, "--vary", "V=1KB:16GB:2", "--json"], None),
    ("sweep 10^6 points, --json", ["sweep", SEED, "--vary", "V=1KB:16GB:1000000", "--json"],
     None),
]
# target -> (its start-up target, points): printed as points/s after start-up
AFTER_START_UP = {"sweep 10^6 points, --csv": ("sweep 2 points, --csv", 10**6),
                  "sweep 10^6 points, --json": ("sweep 2 points, --json", 10**6)}
HELP, COMPARE = "start-up: --help", "start-up: compare seed"
FLOOR = "start-up floor: the libraries alone"  # measured with COMPARE, before it
IMPORTS = "importing the libraries alone"  # measured alternately with COMPARE
LARGEST = "hierarchical 2048x8, verified"
EXIT: dict[str, int] = {}  # the exit codes expected, where not 0
CALLS, LOOP = "20,000 calls x 7 rounds, verified", "the same rounds as one loop, verified"
BIG_CASES = (("ring 512x8", 33_546_240), ("hierarchical 1024x8", 16_875_520))
MANY = "140,000 rounds x 8, verified"
BOUND, BOUND_BASE = "bound hierarchical 1024x8, --no-verify", "hierarchical 1024x8, --no-verify"
# target -> the one it runs alternately with (listed just before it): every ratio is
# of two commands run one after the other, so a slow spell of the machine moves both
ALTERNATE = {COMPARE: IMPORTS, LOOP: CALLS, BOUND: BOUND_BASE,
             **{f"{case}, --no-verify": f"{case}, verified" for case, _ in BIG_CASES}}


def main() -> None:
    parser = arguments(__doc__, "targets")
    parser.add_argument("--markdown", action="store_true",
                        help="Also print the checks as the README's Markdown table.")
    options = parser.parse_args()
    with recorded(options.results, "targets.py"):
        _measure(options)


def _measure(options) -> None:
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "schedc")], check=True)
    median: dict[str, float] = {}
    least: dict[str, float] = {}  # the min of the runs: the same checks, less moved by noise
    peak: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'target':<42} {'min':>8} {'median':>8} {'peak':>9} {'transfers/s':>12}")
        commands = [(name, schedc(*(a.replace("{tmp}", tmp) for a in args)), transfers)
                    for name, args, transfers in TARGETS if chosen(name, options.only)]
        if any(name == COMPARE for name, _, _ in commands):
            at = next(k for k, (name, _, _) in enumerate(commands) if name == COMPARE)
            commands[at:at] = [(FLOOR, LIBRARIES_ALONE, None), (IMPORTS, IMPORTS_ALONE, None)]
        blocks: list[list[tuple[str, list[str], int | None]]] = []  # each run alternately
        for command in commands:
            partner = ALTERNATE.get(command[0])
            if partner and blocks and any(name == partner for name, _, _ in blocks[-1]):
                blocks[-1].append(command)
            else:
                blocks.append([command])
        for block in blocks:
            runs: dict[str, list] = {name: [] for name, _, _ in block}
            for _ in range(options.repeat):
                for name, command, _ in block:
                    runs[name].append(run_once(command, exit_code=EXIT.get(name, 0)))
            for name, _, transfers in block:
                least[name], median[name], peak[name] = summary(runs[name])
                rate = f"{transfers / least[name] / 1e6:.2f} M" if transfers else "-"
                print(f"{name:<42} {least[name]:>7.2f}s {median[name]:>7.2f}s "
                      f"{peak[name] / 2**20:>6.0f} MiB {rate:>12}", flush=True)
                start_up, points = AFTER_START_UP.get(name, (None, 0))
                if start_up in median:
                    extra = median[name] - median[start_up]
                    print(f"  {'after start-up (medians, less 2 points)':<40} {extra:>7.2f}s "
                          f"{points / max(extra, 1e-9) / 1e6:>8.2f} M points/s", flush=True)
    checks = _checks(median, peak)
    on_mins = _checks(least, peak)  # the same checks in the same order
    print(f"\n{'target':<52} {'medians':>10} {'mins':>10} {'goal':>10}  met (medians, mins)")
    for (what, measured, goal, met), (_, fastest, _, met_fastest) in zip(checks, on_mins):
        print(f"{what:<52} {measured:>10} {fastest:>10} {goal:>10}  "
              f"{'yes' if met else 'NO'}, {'yes' if met_fastest else 'NO'}")
    if FLOOR in median:
        print(f"\n`compare` cannot start faster than its libraries: `python -c \"{LIBRARIES_CODE}\"` "
              f"takes {median[FLOOR]:.2f} s (median), `python -c \"{IMPORTS_CODE}\"` "
              f"{median[IMPORTS]:.2f} s, `compare` {median[COMPARE]:.2f} s.")
    if options.markdown:
        print("\n| target | medians of the runs | mins | goal | met (medians, mins) |\n"
              "|---|---|---|---|---|")
        for (what, measured, goal, met), (_, fastest, _, met_fastest) in zip(checks, on_mins):
            print(f"| {what} | {measured} | {fastest} | {goal} | "
                  f"{'yes' if met else '**no**'}, {'yes' if met_fastest else '**no**'} |")


def _checks(median: dict[str, float], peak: dict[str, int]) -> list[tuple[str, str, str, bool]]:
    """Issues 14's and 25's targets, each on the walls given (the runs' medians, or their
    mins): (what, measured, goal, met)."""
    out = []

    def have(*names: str) -> bool:
        return all(n in median for n in names)

    for name, what, goal in ((HELP, "`schedc --help`", 0.15),
                             (COMPARE, "`schedc compare` on the seed file", 0.5),
                             (MANY, "140,000 rounds × 8 transfers, verified", 3.0),
                             (LARGEST, "hierarchical 2048x8, verified", 15.0),
                             (CALLS, "20,000 calls of a 7-round schedule, verified", 3.0)):
        if have(name):
            out.append((what, f"{median[name]:.2f} s", f"≤ {goal} s", median[name] <= goal))
    for name, base, what, goal in (
            (COMPARE, IMPORTS, "`compare` / importing its libraries (alternated)", 1.1),
            (CALLS, LOOP, "20,000 calls / the same rounds as one loop (alternated)", 1.5)):
        if have(name, base):
            ratio = median[name] / median[base]
            out.append((what, f"{ratio:.2f}×", f"≤ {goal}×", ratio <= goal))
    for case, transfers in BIG_CASES:
        verified, plain = f"{case}, verified", f"{case}, --no-verify"
        if have(verified, plain):
            ratio = median[verified] / median[plain]
            out.append((f"{case}: verified / `--no-verify`", f"{ratio:.2f}×", "≤ 1.3×",
                        ratio <= 1.3))
            per = max(peak[verified], peak[plain]) / transfers
            out.append((f"{case}: peak memory per transfer", f"{per:.0f} B", "≤ 80 B", per <= 80))
    if have(BOUND, BOUND_BASE):
        ratio = median[BOUND] / median[BOUND_BASE]
        out.append(("`bound` / `time --no-verify`, hierarchical 1024x8", f"{ratio:.2f}×", "≤ 2×",
                    ratio <= 2))
    rates = {}
    for name, (start_up, points) in AFTER_START_UP.items():
        if have(name, start_up):
            rates[name] = points / max(median[name] - median[start_up], 1e-9)
            out.append((f"{name}: points/s after start-up", f"{rates[name] / 1e6:.2f} M",
                        "≥ 1 M", rates[name] >= 1e6))
    if len(rates) == 2:
        csv, json = (rates[name] for name in AFTER_START_UP)
        out.append(("sweep: JSON's time after start-up / CSV's", f"{csv / json:.2f}×", "≤ 3×",
                    csv / json <= 3))
    return out


if __name__ == "__main__":
    main()

"""`schedc nccl` on the seed's 2×8 machine (schedules/seed/nvlink_2x8.sched), every
collective, as a whole process (issue 21 asks ≤ 1.5 s), against `python -c "import lark,
networkx, numpy, sympy"` (the floor any schedc command starts from). Min and median of
--repeat runs (default 5)."""

from __future__ import annotations

from processes import IMPORTS_ALONE, ROOT, arguments, run_once, schedc, summary

SEED = ROOT / "schedules" / "seed" / "nvlink_2x8.sched"
CASES = {
    "libraries alone": IMPORTS_ALONE,
    "schedc nccl seed (all collectives)": schedc("nccl", str(SEED)),
    "schedc nccl seed --json": schedc("nccl", str(SEED), "--json"),
    "schedc nccl seed --explain V=64MiB": schedc("nccl", str(SEED), "--explain", "V=64MiB"),
}


def main() -> None:
    args = arguments(__doc__, "cases").parse_args()
    for name, command in CASES.items():
        if args.only and not any(name.startswith(o) for o in args.only):
            continue
        low, mid, peak = summary([run_once(command) for _ in range(args.repeat)])
        print(f"{name:<40} min {low:.3f} s  median {mid:.3f} s  peak {peak / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()

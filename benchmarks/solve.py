"""Benchmark of the analysis commands: solve, check, sensitivity and sweep.

In-process (imports excluded), best of N runs:

- `solve` on the seed files' crossovers (compile + regimes + roots + symbolic forms);
- the solver alone on synthetic times with many round classes, each a Max of several terms
  with its own breakpoints, to show how regime cutting scales;
- `sensitivity` of every seed schedule, `check schedules/`, and `sweep` over 10^3..10^6 points.

    python benchmarks/solve.py [--repeat N]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import sys
import time
from pathlib import Path

import sympy

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from schedc.analysis.solve.roots import Side, solve  # noqa: E402
from schedc.cli import main  # noqa: E402
from schedc.deadline import TimeLimit  # noqa: E402
from schedc.errors import SourceFile, Span  # noqa: E402
from schedc.units import SECONDS  # noqa: E402

PCIE = "schedules/seed/pcie_2x4.sched"
NVLINK = "schedules/seed/nvlink_2x8.sched"


def run(*args: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        main(list(args))
    return out.getvalue()


def best(repeat: int, work) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def synthetic(classes: int, terms: int, seed: int) -> tuple[sympy.Expr, sympy.Expr, sympy.Symbol]:
    """Two times Σ n·(α + Max(load/x, load/B_k ...)) with random loads: one param x free."""
    rng = random.Random(seed)
    x = sympy.Symbol("x", positive=True)

    def side() -> sympy.Expr:
        total = sympy.Rational(rng.randint(1, 50), 10**6)
        for _ in range(classes):
            args = [sympy.Rational(rng.randint(1, 10**6), 10**12) * rng.randint(1, 8) / x]
            args += [sympy.Rational(rng.randint(1, 10**6), 10**12) for _ in range(terms - 1)]
            total += rng.randint(1, 16) * sympy.Max(*args, evaluate=False)
        return total

    return side(), side(), x


def main_benchmark() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat
    print(f"schedc analysis benchmark (best of {repeat}, in-process, imports excluded)\n")

    print("solve (compile + regimes + exact roots + symbolic forms)")
    for label, path, equation in [
        ("pcie seed threshold", PCIE, "time(hierarchical) = time(ring, B_L = 32 GB/s)"),
        ("pcie full crossover", PCIE, "time(hierarchical) = time(ring)"),
        ("nvlink seed threshold", NVLINK, "time(hierarchical) = time(ring, B_L = 450 GB/s)"),
        ("nvlink full crossover", NVLINK, "time(hierarchical) = time(ring)"),
    ]:
        seconds = best(repeat, lambda p=path, e=equation: run("solve", p, e, "--for", "B_L"))
        print(f"  {label:<24} {seconds * 1e3:8.1f} ms")

    print("\nsolver alone, synthetic times (classes × terms per Max, per side)")
    span = Span(SourceFile("bench", "x"), 1, 1, 1, 2)
    for classes, terms in [(4, 3), (16, 3), (32, 4), (64, 4)]:
        left, right, x = synthetic(classes, terms, seed=classes * 10 + terms)
        result = {}

        def work(left=left, right=right, x=x, result=result):
            result["s"] = solve(Side("L", left, SECONDS, span), Side("R", right, SECONDS, span),
                                "=", x, {x: 1}, TimeLimit(120), span, span)

        seconds = best(repeat, work)
        s = result["s"]
        print(f"  {classes:>3} × {terms}   {seconds * 1e3:9.1f} ms   "
              f"{len(s.roots)} solutions, {len(s.intervals)} intervals")

    print("\nsensitivity (every schedule, every param)")
    for path in (PCIE, NVLINK):
        seconds = best(repeat, lambda p=path: run("sensitivity", p))
        print(f"  {path:<34} {seconds * 1e3:8.1f} ms")

    print("\ncheck")
    seconds = best(repeat, lambda: run("check", "schedules/"))
    files = len(list((ROOT / "schedules").rglob("*.sched")))
    print(f"  schedules/ ({files} files, every schedule verified, incl. the 1,024-GPU ring) "
          f"{seconds:8.2f} s")

    print("\nsweep (lambdify once, NumPy on the grid)")
    for points in (10**3, 10**4, 10**5, 10**6):
        seconds = best(repeat, lambda n=points: run("sweep", PCIE, "--vary",
                                                    f"B_L=1GB/s:1000GB/s:{n}", "--json"))
        print(f"  {points:>9,} points  {seconds * 1e3:9.1f} ms  ({points / seconds:,.0f} points/s "
              "incl. compile and JSON)")


if __name__ == "__main__":
    import os

    os.chdir(ROOT)
    main_benchmark()

"""Verification benchmark: what always-on verification adds, and what a counterexample costs.

In-process (imports excluded), best of N runs each:
  - the 1,024-rank ring all-reduce of schedules/scale/ring_1024.sched (2.1 M transfers),
    verified by fingerprints (what `schedc time` now does first), next to its elaboration;
  - the same ring with one transfer dropped: finding the failure and replaying it exactly;
  - a 128-rank ring on the exact path (count vectors);
and end to end, `schedc time` on ring_1024 with and without `--no-verify`.

    python benchmarks/verify.py [--repeat N]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from schedc.analysis.verify.verdict import verify_schedule  # noqa: E402
from schedc.elaborate.loader import load_program  # noqa: E402

RING_1024 = ROOT / "schedules" / "scale" / "ring_1024.sched"


def best(repeat: int, work) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - t0)
    return min(times), result


def broken_ring(directory: Path, ranks: int, drop: tuple[int, int] | None) -> Path:
    """A flat ring all-reduce over `ranks` GPUs, with transfer (step, rank) `drop` left out."""
    keep = "" if drop is None else f"if s != {drop[0]} or j != {drop[1]}: "
    text = f"""import "{ROOT}/schedules/lib/ring.sched"
param V = 192 MiB
param alpha = 1 us
param B = 25 GB/s
topology {{
  gpu g[{ranks}]
  switch sw
  link g[i] <-> sw bw B for i in 0..{ranks - 1}
}}
let ranks = [g[i] for i in 0..{ranks - 1}]
allreduce V over ranks
schedule ring {{
  for s in 0..{ranks - 2} round {{
    for j in 0..{ranks - 1}: {keep}reduce part((j - s - 1) % {ranks} of {ranks}) from g[j] to g[(j + 1) % {ranks}]
  }}
  ring_allgather(ranks)
}}
"""
    path = directory / f"ring_{ranks}{'_broken' if drop else ''}.sched"
    path.write_text(text)
    return path


def wall(args: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "schedc", *args], cwd=ROOT, capture_output=True,
                       check=True)
        times.append(time.perf_counter() - t0)
    return min(times)


def verify(program, name: str):
    """The verification pass alone, on an IR elaborated before the clock starts."""
    schedule = program.schedule(name)
    devices = [d.name for d in program.topology.devices]
    return lambda: verify_schedule(schedule, devices)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat

    program = load_program(RING_1024)
    elaborate, schedule = best(1, lambda: program.schedule("ring"))
    seconds, verdict = best(repeat, verify(program, "ring"))
    assert verdict.ok
    print(f"ring_1024: {schedule.transfer_count:,} transfers in {len(schedule.rounds):,} rounds, "
          f"{verdict.segments:,} segments")
    print(f"  elaborate              {elaborate:.2f} s")
    print(f"  verify ({verdict.method})   {seconds:.2f} s  "
          f"({schedule.transfer_count / seconds:,.0f} transfers/s)")

    with tempfile.TemporaryDirectory() as directory:
        broken = load_program(broken_ring(Path(directory), 1024, (500, 7)))
        seconds, verdict = best(repeat, verify(broken, "ring"))
        assert not verdict.ok
        print(f"ring_1024 with one transfer dropped: failure found and replayed in {seconds:.2f} s "
              f"({len(verdict.failure.missing)} missing contributions at {verdict.failure.rank})")

        exact = load_program(broken_ring(Path(directory), 128, None))
        schedule = exact.schedule("ring")
        seconds, verdict = best(repeat, verify(exact, "ring"))
        assert verdict.ok and verdict.method == "exact"
        print(f"ring_128 (exact count vectors, {schedule.transfer_count:,} transfers): "
              f"{seconds:.3f} s")

    checked = wall(["time", str(RING_1024.relative_to(ROOT))], repeat)
    unchecked = wall(["time", str(RING_1024.relative_to(ROOT)), "--no-verify"], repeat)
    print(f"schedc time ring_1024 end to end: {checked:.2f} s verified, "
          f"{unchecked:.2f} s with --no-verify (+{checked - unchecked:.2f} s)")


if __name__ == "__main__":
    main()

"""Routing benchmark: a 1,024-rank schedule on a fat tree with 1 spine against 8 equal-cost
spines (and 8 spines under `routing first`, which takes one of them).

The machine: 128 hosts × 8 GPUs (NVLink to a host NVSwitch, one NIC per GPU), 16 leaf
switches of 8 hosts, every leaf linked to every spine (non-blocking). Two all-reduce
schedules: a ring whose every step crosses leaves (so each of its 1,024 pairs splits over
all the spines: 2 uplink hops × 8 shares instead of 2 × 1), and the hierarchical all-reduce.

Each case runs `schedc time --json` (verification included) in a fresh interpreter several
times (best and median wall time, and best CPU time: user + system of the process, which a
busy machine disturbs less), then times the stages in-process (best CPU time of the
repeats). The files are written to a temporary directory; nothing is kept.

    python benchmarks/routing.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIB = (ROOT / "schedules" / "lib").as_posix()

MACHINE = """
import "{lib}/ring.sched"
import "{lib}/hierarchical.sched"
param V = 192 MiB
param alpha = 0.83 us
param B_L = 450 GB/s
param B_N = 400 Gbit/s
let leaves = 16
let hosts_per_leaf = 8
let hosts = leaves * hosts_per_leaf
let spines = {spines}
topology {{
  {policy}
  host node[hosts] {{
    gpu g[8]
    switch nvswitch
    link g[i] <-> nvswitch bw B_L class nvlink for i in 0..7
  }}
  switch leaf[leaves]
  switch spine[spines]
  link node[h].g[i] <-> leaf[h // hosts_per_leaf] bw B_N class nic for h in 0..hosts-1 for i in 0..7
  link leaf[l] <-> spine[s] bw 8 * hosts_per_leaf * B_N / spines class uplink for l in 0..leaves-1 for s in 0..spines-1
}}
# Consecutive ranks sit on different leaves: host k-th in the order is on leaf k % 16.
let across = [node[(k % leaves) * hosts_per_leaf + k // leaves].g[i] for i in 0..7 for k in 0..hosts-1]
allreduce V over across
schedule ring = ring_allreduce(across)
schedule hierarchical = hierarchical_allreduce([node[h].g for h in 0..hosts-1])
"""

CASES = [("1 spine", 1, ""), ("8 spines", 8, ""), ("8 spines, routing first", 8, "routing first")]


def stages(path: Path) -> dict[str, float]:
    """Seconds per stage, in-process (imports excluded)."""
    from schedc.analysis.verify.verdict import host_hints, verify_schedule
    from schedc.cost.formula import cost
    from schedc.cost.lower import lower
    from schedc.elaborate.loader import load_program

    clock = time.process_time
    marks = {}
    t0 = clock()
    program = load_program(path)
    marks["parse + topology"] = clock() - t0
    t0 = clock()
    schedules = [program.schedule(r.name) for r in program.results]
    marks["elaborate schedules"] = clock() - t0
    t0 = clock()
    loads = [lower(s, program.topology) for s in schedules]  # routes every pair once
    marks["route + lower"] = clock() - t0
    t0 = clock()
    for load in loads:
        cost(load, program.topology, program.alpha, program.nominal)
    marks["cost"] = clock() - t0
    names = [d.name for d in program.topology.devices]
    t0 = clock()
    for s in schedules:  # as `schedc verify` does, with the machine's host shift as a hint
        verify_schedule(s, names, hints=host_hints(program.topology, s.collective.ranks))
    marks["verify"] = clock() - t0
    return marks


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "schedc")], check=True)
    walls: dict[str, list[float]] = {}
    cpu_best: dict[str, float] = {}
    inner: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as directory:
        for label, spines, policy in CASES:
            path = Path(directory) / f"fat_tree_{spines}_{len(policy)}.sched"
            path.write_text(MACHINE.format(lib=LIB, spines=spines, policy=policy))
            runs, cpus = [], []
            for _ in range(options.repeat):
                start, cpu = time.perf_counter(), children_cpu()
                done = subprocess.run([sys.executable, "-m", "schedc", "time", str(path), "--json"],
                                      cwd=ROOT, capture_output=True, text=True, check=True)
                runs.append(time.perf_counter() - start)
                cpus.append(children_cpu() - cpu)
            walls[label], cpu_best[label] = runs, min(cpus)
            document = json.loads(done.stdout)
            times = ", ".join(f"{s['name']} {s['time_s'] * 1e3:.4f} ms ({s['transfers']:,} transfers)"
                              for s in document["schedules"])
            print(f"{label}: `schedc time --json` wall best {min(runs):.2f} s, median "
                  f"{statistics.median(runs):.2f} s, CPU best {min(cpus):.2f} s; {times}")
            best: dict[str, float] = {}
            for _ in range(options.repeat):
                for stage, seconds in stages(path).items():
                    best[stage] = min(best.get(stage, seconds), seconds)
            inner[label] = best
            print("  in-process CPU, best of each stage: " +
                  ", ".join(f"{stage} {seconds:.3f} s" for stage, seconds in best.items()))
    base, ecmp = CASES[0][0], CASES[1][0]
    print(f"8 spines / 1 spine: whole process wall {min(walls[ecmp]) / min(walls[base]):.2f}× "
          f"(best), {statistics.median(walls[ecmp]) / statistics.median(walls[base]):.2f}× "
          f"(median), CPU {cpu_best[ecmp] / cpu_best[base]:.2f}×; in-process CPU: route + lower "
          f"{inner[ecmp]['route + lower'] / inner[base]['route + lower']:.2f}×, "
          f"all stages {sum(inner[ecmp].values()) / sum(inner[base].values()):.2f}×")


if __name__ == "__main__":
    main()

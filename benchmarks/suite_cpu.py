"""Where the test suite's time goes, in CPU seconds, which a loaded machine changes far less
than wall time. Two halves:

- a pytest plugin: `CI=true PYTHONPATH=$PWD:benchmarks python -m pytest -p suite_cpu -n 2`
  writes, per worker, each test's CPU seconds (setup, call and teardown; this process and
  the subprocesses it waited for, from getrusage) and wall seconds to
  `$SUITE_CPU_OUT.<worker>.tsv` (default /tmp/suite_cpu);
- a summary: `python benchmarks/suite_cpu.py [/tmp/suite_cpu]` prints the total, the floor
  of a two-worker run (total / 2), the slowest files and tests, and the two-worker wall time
  of xdist's schedules simulated on those CPU seconds (`worksteal`: halves, then an idle
  worker takes half of the other's queue; `loadfile`: whole files to the first idle worker).
"""

from __future__ import annotations

import collections
import glob
import os
import resource
import sys
import time

_ROWS: list[tuple[str, float, float, float]] = []


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


try:
    import pytest
except ImportError:  # the summary needs no pytest
    pytest = None

if pytest is not None:
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        own, children = _cpu()
        start = time.perf_counter()
        yield
        own_after, children_after = _cpu()
        _ROWS.append((item.nodeid, own_after - own, children_after - children,
                      time.perf_counter() - start))


def pytest_sessionfinish(session) -> None:
    out = os.environ.get("SUITE_CPU_OUT", "/tmp/suite_cpu")
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(f"{out}.{worker}.tsv", "w") as handle:
        for row in _ROWS:
            handle.write("%s\t%.3f\t%.3f\t%.3f\n" % row)


def _worksteal(costs: list[float]) -> float:
    half = len(costs) // 2
    queues = [collections.deque(costs[:half]), collections.deque(costs[half:])]
    clock = [0.0, 0.0]
    while queues[0] or queues[1]:
        worker = 0 if clock[0] <= clock[1] else 1
        if not queues[worker]:
            other = queues[1 - worker]
            if len(other) < 2:
                worker = 1 - worker
            else:
                stolen = [other.pop() for _ in range(len(other) // 2)]
                queues[worker].extend(reversed(stolen))
        clock[worker] += queues[worker].popleft()
    return max(clock)


def _first_idle(costs: list[float]) -> float:
    clock = [0.0, 0.0]
    for cost in costs:
        clock[clock.index(min(clock))] += cost
    return max(clock)


def summary(prefix: str) -> None:
    rows = []
    for path in sorted(glob.glob(prefix + ".*.tsv")):
        for line in open(path):
            nodeid, own, children, _ = line.rstrip("\n").split("\t")
            rows.append((nodeid, float(own) + float(children)))
    rows.sort(key=lambda row: row[0].split("::")[0])  # collection order: by file, stable
    files: dict[str, float] = {}
    for nodeid, cost in rows:
        files[nodeid.split("::")[0]] = files.get(nodeid.split("::")[0], 0.0) + cost
    total = sum(cost for _, cost in rows)
    print(f"{len(rows)} tests, {total:.0f} s CPU; two workers need at least {total / 2:.0f} s")
    costs = [cost for _, cost in rows]
    print(f"simulated on 2 workers: worksteal {_worksteal(costs):.0f} s, "
          f"loadfile {_first_idle(list(files.values())):.0f} s")
    for name, cost in sorted(files.items(), key=lambda item: -item[1])[:10]:
        print(f"{cost:7.1f} s  {name}")
    for nodeid, cost in sorted(rows, key=lambda row: -row[1])[:15]:
        print(f"{cost:7.1f} s  {nodeid}")


if __name__ == "__main__":
    summary(sys.argv[1] if len(sys.argv) > 1 else "/tmp/suite_cpu")

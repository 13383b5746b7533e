"""Latency and in-flight windows (seed §5): hand-checked times, regimes and diagnostics."""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy
from conftest import SCHEDULES, expr, timings, write

RING = (SCHEDULES / "lib" / "ring.sched").as_posix()

# Two GPUs on one switch. Each link: 50 GB/s, 10 µs, a 256 KiB window. The ring all-reduce
# of V = 64 MiB over 2 ranks is 2 rounds; in each, every rank sends V/2 across 2 links.
TWO_GPUS = SCHEDULES / "examples" / "window_2gpu.sched"


@pytest.fixture
def two_gpus():
    return TWO_GPUS


def test_window_limits_the_rate_by_littles_law(two_gpus):
    program, t = timings(two_gpus)
    ring = t["ring"]
    # W/L = 262,144 B / 10 µs = 26.2 GB/s < 50 GB/s. Per round: α + route latency 2L +
    # (V/2)/(W/L) = 1 + 20 + 1,280 µs = 1,301 µs; two rounds: 2.602 ms.
    assert float(ring.time) == pytest.approx(2.602e-3, rel=1e-12)
    assert sympy.simplify(ring.cost.formula - expr(program, "2*alpha + 4*L + V/Min(B, W/L)")) == 0
    assert sympy.simplify(ring.cost.regime_formula - expr(program, "2*alpha + 4*L + V*L/W")) == 0
    assert [str(c) for c in ring.cost.conditions] == ["B*L >= W"]
    (only,) = ring.cost.classes
    assert only.window_limited


def test_a_wide_window_leaves_the_bandwidth_in_charge(two_gpus):
    program, t = timings(two_gpus, "L=2us")
    ring = t["ring"]
    # W/L = 131 GB/s > B: 2α + 4L + V/B = 2 + 8 + 1,342.18 µs.
    assert float(ring.time) == pytest.approx(2e-6 + 8e-6 + 64 * 2**20 / 50e9, rel=1e-12)
    assert sympy.simplify(ring.cost.regime_formula - expr(program, "2*alpha + 4*L + V/B")) == 0
    assert [str(c) for c in ring.cost.conditions] == ["W >= B*L"]
    assert not ring.cost.classes[0].window_limited


def test_latency_alone_adds_the_largest_route_latency_per_round(tmp_path):
    # g0 -> g1 crosses two 1 µs links; g1 -> g2 crosses a 1 µs and a 3 µs link. A round of
    # the 3-rank ring holds all three hops, so it waits for the slowest route: 4 µs.
    path = write(tmp_path, "lat.sched", f"""import "{RING}"
param V = 3 MiB
param B = 10 GB/s
topology {{
  gpu g[3]
  switch sw
  link g[i] <-> sw bw B latency 1 us for i in 0..1
  link g[2] <-> sw bw B latency 3 us
}}
allreduce V over g
schedule ring = ring_allreduce(g)
""")
    program, t = timings(path)
    ring = t["ring"]
    assert ring.cost.rounds == 4
    assert float(ring.time) == pytest.approx(4 * (4e-6 + 2**20 / 10e9), rel=1e-12)
    assert sympy.simplify(ring.cost.formula - expr(program, "4*V/(3*B) + 16/1000000")) == 0
    assert not any(c.window_limited for c in ring.cost.classes)


def test_the_time_report_names_window_limited_rounds(run, two_gpus):
    code, out, err = run("time", two_gpus)
    assert code == 0, err
    assert "bottleneck: link (g[0]->sw, sw->g[0], … 2 more), window-limited: window/latency < bw" in out
    code, out, _ = run("time", two_gpus, "--set", "L=2us")
    assert "window-limited" not in out


@pytest.mark.parametrize("attributes, message, col", [
    ("bw B window W", "a window needs a latency: a window of bytes in flight, each for the "
                      "latency, allows window/latency", 34),
    ("bw B latency 0 us window W", "'latency' must be positive; this one is 0 s", 35),
    ("bw B latency -1 us", "'latency' must be zero or more; this one is -1 µs", 35),
    ("bw B latency 1 MiB", "'latency' must be a duration (seconds), not a size (bytes)", 35),
    ("bw B latency 1 us window 1 us", "'window' must be a size (bytes), not a duration (seconds)", 47),
])
def test_diagnostics(run, tmp_path, attributes, message, col):
    path = write(tmp_path, "bad.sched", f"""param B = 1 GB/s
param W = 1 MiB
topology {{
  gpu g[2]
  link g[0] <-> g[1] {attributes}
}}
""")
    code, out, err = run("time", path)
    assert code == 2
    assert out == ""
    assert err.splitlines()[0] == f"{path}:5:{col}: error: {message}"


def test_latency_params_at_zero(tmp_path):
    # Routes g0 <-> g1 take 2·L1, routes to or from g2 take L1 + L2; every round has both.
    path = write(tmp_path, "zero.sched", f"""import "{RING}"
param V = 3 MiB
param B = 10 GB/s
param L1 = 0 us
param L2 = 0 us
topology {{
  gpu g[3]
  switch sw
  link g[i] <-> sw bw B latency L1 for i in 0..1
  link g[2] <-> sw bw B latency L2
}}
allreduce V over g
schedule ring = ring_allreduce(g)
""")
    program, t = timings(path)
    assert t["ring"].time == Fraction(4 * 2**20, 10**10)  # 4 rounds of V/3 at B, no latency
    assert sympy.simplify(t["ring"].cost.formula - expr(program, "4*Max(2*L1, L1 + L2) + 4*V/(3*B)")) == 0
    program, t = timings(path, "L2=1us")
    assert t["ring"].time == Fraction(4 * 2**20, 10**10) + Fraction(4, 10**6)
    assert sympy.simplify(t["ring"].cost.regime_formula - expr(program, "4*L1 + 4*L2 + 4*V/(3*B)")) == 0

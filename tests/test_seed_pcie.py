"""The seed's PCIe counter-example, compiled from schedules/seed/pcie_2x4.sched, and the
thresholds of both seed files, found by the solver."""

from __future__ import annotations

import pytest
import sympy
from conftest import SCHEDULES, MiB, compiled, expr, timings

import schedc
from schedc.cost.regimes import key

pytestmark = pytest.mark.usefixtures("reuse_shipped")  # the shipped files compile once

PCIE = SCHEDULES / "seed" / "pcie_2x4.sched"
NVLINK = SCHEDULES / "seed" / "nvlink_2x8.sched"
GBps = 10**9


@pytest.fixture(scope="module")
def seed():
    return timings(PCIE)


def solve(path, equation: str, param: str = "B_L"):
    session = compiled(path)
    return session.program, schedc.solve(session, equation, param)


def values(solution) -> list[float]:
    return [float(key(r.value)) for r in solution.roots]


def test_ring(seed):
    program, t = seed
    ring = t["ring"]
    assert (ring.cost.rounds, ring.cost.cross_rounds) == (14, 14)
    assert ring.bytes_value(ring.cost.bytes_logical) / MiB == 14 * 192
    # 14 rounds × 24 MiB at 32 GB/s (+ 14 α) = 11.0 ms.
    assert float(ring.time) * 1e3 == pytest.approx(11.0217, abs=5e-5)
    assert ring.cost.regime_formula == expr(program, "14*alpha + 7*V/(4*B_slot)")
    # Every hop of the ring is as slow as the slot: the GPU links tie with it at 32 GB/s.
    assert sorted(str(c) for c in ring.cost.conditions) == ["2*B_port >= B_slot", "B_L >= B_slot"]


def test_hierarchical_is_slower(seed):
    program, t = seed
    h = t["hierarchical"]
    assert (h.cost.rounds, h.cost.cross_rounds) == (8, 2)
    assert float(h.time) * 1e3 == pytest.approx(15.735, abs=5e-4)
    # The four GPUs' cross-host halves share one slot: V/2 per cross round at 32 GB/s.
    assert h.cost.regime_formula == expr(program, "8*alpha + V/B_slot + 3*V/(2*B_L)")
    assert h.time > t["ring"].time


def test_hierarchical_with_300_GBps_bridges():
    _, t = timings(PCIE, "B_L=300GB/s", names=["hierarchical"])
    assert float(t["hierarchical"].time) * 1e3 == pytest.approx(7.3047, abs=5e-5)


def test_pcie_seed_threshold():
    """time(hierarchical) = time(ring, B_L = 32 GB/s): B_L ≈ 64 GB/s, a formula in the params."""
    program, s = solve(PCIE, "time(hierarchical) = time(ring, B_L = 32 GB/s)")
    assert values(s) == [pytest.approx(63.9325e9, rel=1e-6)]
    (root,) = s.roots
    assert sympy.simplify(root.expr - expr(program, "2*B_slot*V/(8*B_slot*alpha + V)")) == 0
    assert [(i.lo, i.hi, s.name(i.smaller)) for i in s.intervals] == [
        (0, root.value, "time(ring, B_L = 32 GB/s)"), (root.value, sympy.oo, "hierarchical")]


def test_pcie_full_crossover_has_two_solutions():
    """With the ring's own GPU links at B_L too, the sides cross twice (docs/tutorial.md, the
    full crossover)."""
    program, s = solve(PCIE, "time(hierarchical) = time(ring)")
    assert values(s) == [pytest.approx(8.00634e9, rel=1e-5), pytest.approx(63.9325e9, rel=1e-6)]
    low, high = s.roots
    # Below 32 GB/s the ring waits for the GPU links; above 8 GB/s hierarchical's cross-host
    # rounds wait for the slot.
    assert (low.regime.lo, low.regime.hi) == (8 * GBps, 32 * GBps)
    assert low.regime.right == expr(program, "14*alpha + 7*V/(4*B_L)")
    assert low.regime.left == expr(program, "8*alpha + V/B_slot + 3*V/(2*B_L)")
    assert sympy.simplify(low.expr - expr(program, "B_slot*V/(4*V - 24*alpha*B_slot)")) == 0
    assert (high.regime.lo, high.regime.hi) == (32 * GBps, sympy.oo)
    assert [s.name(i.smaller) for i in s.intervals] == ["hierarchical", "ring", "hierarchical"]
    # Below 8 GB/s both wait for the GPU links all the way: hierarchical is 6 α ahead.
    for b in (1, 4, 7.9):
        _, t = timings(PCIE, f"B_L={b}GB/s")
        gap = t["ring"].time - t["hierarchical"].time
        assert float(gap) == pytest.approx(6 * 0.83e-6, rel=1e-9)


def test_nvlink_seed_threshold():
    """336 MiB / B_L + 0.5 ms = 7.6 ms → B_L ≈ 49.9 GB/s."""
    program, s = solve(NVLINK, "time(hierarchical) = time(ring, B_L = 450 GB/s)")
    assert values(s) == [pytest.approx(49.918e9, rel=1e-4)]
    assert sympy.simplify(s.roots[0].expr - expr(program, "B_N*V/(8*B_N*alpha + V)")) == 0


def test_nvlink_full_crossover_has_none():
    """49.9 GB/s lies below B_N, where the ring itself waits for NVLink: not a solution."""
    _, s = solve(NVLINK, "time(hierarchical) = time(ring)")
    assert s.roots == ()
    assert [s.name(i.smaller) for i in s.intervals] == ["hierarchical"]
    # Closest at B_L = B_N, where the ring's regime changes; hierarchical is 14 α ahead there.
    assert (s.closest.lo, s.closest.hi) == (50 * GBps, 50 * GBps)
    assert s.closest.gap == sympy.Rational(14 * 83, 10**8)


def test_budget_and_seed_checks_pass(run):
    outputs = {}
    for path in (PCIE, NVLINK):
        code, out, err = run("check", path)
        assert code == 0, out + err
        assert "FAIL" not in out
        outputs[path] = out
    assert "expect time(ring) > budget  (found 7.5746 ms vs 3 ms)" in outputs[NVLINK]

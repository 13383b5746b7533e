"""The seed's §3 NVLink case, compiled from schedules/seed/nvlink_2x8.sched."""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy
from conftest import SCHEDULES, MiB, expr, timings

pytestmark = pytest.mark.usefixtures("reuse_shipped")  # the shipped files compile once

SEED = SCHEDULES / "seed" / "nvlink_2x8.sched"


@pytest.fixture(scope="module")
def seed():
    return timings(SEED)


def _mib(t, form) -> Fraction:
    return t.bytes_value(form) / MiB


def test_contiguous_ring(seed):
    program, t = seed
    ring = t["ring"]
    assert ring.cost.rounds == 30
    assert ring.cost.cross_rounds == 30
    assert _mib(ring, ring.cost.bytes_cross) == 720
    assert _mib(ring, ring.cost.bytes_logical) == 5760
    assert float(ring.time) * 1e3 == pytest.approx(7.575, abs=5e-4)
    reference = expr(program, "30*alpha + 30*Max(V/(16*B_L), V/(16*B_N))")
    assert sympy.simplify(ring.cost.formula - reference) == 0
    # The regime form at the nominal point: the NIC dominates while B_L >= B_N.
    assert sympy.simplify(ring.cost.regime_formula - expr(program, "30*alpha + 15*V/(8*B_N)")) == 0
    assert [str(c) for c in ring.cost.conditions] == ["B_L >= B_N"]


def test_interleaved_ring(seed):
    _, t = seed
    ring = t["interleaved"]
    assert ring.cost.rounds == 30
    assert ring.cost.cross_rounds == 30
    assert _mib(ring, ring.cost.bytes_cross) == 5760
    assert float(ring.time) * 1e3 == pytest.approx(7.575, abs=5e-4)


def test_hierarchical(seed):
    program, t = seed
    h = t["hierarchical"]
    assert h.cost.rounds == 16
    assert h.cost.cross_rounds == 2
    assert _mib(h, h.cost.bytes_cross) == 384
    assert _mib(h, h.cost.bytes_logical) == 5760
    assert float(h.time) * 1e3 == pytest.approx(1.2995, abs=5e-5)
    reference = expr(program, "16*alpha + 7*V/(4*B_L) + V/(8*B_N)")
    assert sympy.simplify(h.cost.formula - reference) == 0
    # Term by term (seed §3.1): 14 local rounds on NVLink, 2 cross-host rounds on the NICs.
    counts = sorted((c.count, program.topology.resources[c.terms[c.dominant].resources[0]].cls)
                    for c in h.cost.classes)
    assert counts == [(2, "nic"), (14, "nvlink")]


def test_hierarchical_with_slower_local_links():
    _, t = timings(SEED, "B_L=300GB/s", names=["hierarchical"])
    assert float(t["hierarchical"].time) * 1e3 == pytest.approx(1.691, abs=5e-4)


def test_all_three_send_the_same_logical_bytes(seed):
    _, t = seed
    assert {_mib(x, x.cost.bytes_logical) for x in t.values()} == {5760}

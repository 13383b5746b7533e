"""The 1,024-rank scale example compiles, with the right structure (its speed: benchmarks/)."""

from __future__ import annotations

from fractions import Fraction

import sympy
from conftest import SCHEDULES, expr, timings


def test_ring_1024():
    program, t = timings(SCHEDULES / "scale" / "ring_1024.sched")
    ring = t["ring"]
    assert len(program.topology.devices) == 128 * 8 + 128 + 8 + 1
    assert ring.cost.rounds == 2046
    assert ring.schedule.transfer_count == 2046 * 1024 == 2_095_104
    assert ring.cost.cross_rounds == 2046
    reference = expr(program, "2046*alpha + 2046*Max(V/(1024*B_L), V/(1024*B_N))")
    assert sympy.simplify(ring.cost.formula - reference) == 0
    # Every round, 128 of the 1,024 hops cross a host boundary, each V/1024: 2,046 · V/8.
    assert ring.cost.bytes_cross == ((program.params["V"].symbol, Fraction(2046 * 128, 1024)),)
    assert ring.cost.bytes_logical == ((program.params["V"].symbol, Fraction(2046)),)

"""The library's formulas on the textbook machine equal the closed forms of Thakur,
Rabenseifner & Gropp (2005): alpha per message, beta = 1/B per byte, n = V, no gamma."""

from __future__ import annotations

import pytest
import sympy
from conftest import SCHEDULES, compiled, timings, write

import schedc


def _textbook(p: int, alpha, V, B) -> dict[str, sympy.Expr]:
    lg = p.bit_length() - 1
    beta = 1 / B
    n = V
    share = sympy.Rational(p - 1, p)
    return {
        "ring_allreduce": 2 * (p - 1) * alpha + 2 * share * n * beta,
        "rd_allreduce": lg * alpha + lg * n * beta,
        "rabenseifner_allreduce": 2 * lg * alpha + 2 * share * n * beta,
        "ring_allgather": (p - 1) * alpha + share * n * beta,
        "rd_allgather": lg * alpha + share * n * beta,
        "ring_reduce_scatter": (p - 1) * alpha + share * n * beta,
        "rh_reduce_scatter": lg * alpha + share * n * beta,
        "binomial_broadcast": lg * (alpha + n * beta),
        # Binomial scatter (lg p alpha + (p-1)/p n beta), then recursive-doubling all-gather.
        "scatter_allgather_broadcast": 2 * lg * alpha + 2 * share * n * beta,
        "binomial_reduce": lg * (alpha + n * beta),
        # (p-1) alpha + n' beta, n' the data a rank sends to the others: (p-1)/p of its buffer.
        "pairwise_alltoall": (p - 1) * alpha + share * n * beta,
        # One round in which a rank sends its n to one neighbour (msccl-tools' alltonext).
        "shift_to_next": alpha + n * beta,
        "shift_to_previous": alpha + n * beta,
    }


@pytest.mark.parametrize(("file", "p"), [("flat_16.sched", 16), ("flat_8.sched", 8)])
def test_formulas_equal_the_textbook(file, p):
    program, times = timings(SCHEDULES / "algorithms" / file)
    symbols = {name: param.symbol for name, param in program.params.items()}
    reference = _textbook(p, symbols["alpha"], symbols["V"], symbols["B"])
    assert sorted(times) == sorted(reference)  # every schedule of the file is checked
    for name, timing in times.items():
        assert len(timing.schedule.collective.ranks) == p
        assert sympy.simplify(timing.cost.formula - reference[name]) == 0, name


@pytest.mark.parametrize("file", ["flat_16.sched", "flat_8.sched"])
def test_the_textbook_schedules_verify(file):
    verdicts = schedc.verify(compiled(SCHEDULES / "algorithms" / file))
    assert [v.name for v in verdicts if not v.ok] == []


@pytest.mark.parametrize(("p", "c"), [(8, 1), (8, 4), (16, 8)])
def test_pipelined_chain_is_the_classic_pipeline(tmp_path, p, c):
    text = f"""import "{SCHEDULES}/machines/flat_{p}.sched"
import "{SCHEDULES}/lib/tree.sched"
param V = 64 MiB
broadcast V over ranks root ranks[0]
schedule chain = pipelined_chain_broadcast(ranks, {c})
"""
    program, times = timings(write(tmp_path, "chain.sched", text))
    alpha, V, B = (program.params[n].symbol for n in ("alpha", "V", "B"))
    classic = (c + p - 2) * (alpha + V / (c * B))
    assert sympy.simplify(times["chain"].cost.formula - classic) == 0

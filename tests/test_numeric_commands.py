"""The commands that take their numbers from the numeric path (`cost.numeric`, no formula)
give the formula path's numbers: `predict` (each row's time at its size, its protocol and
latency share) and `synthesize`'s choice of a chunk count (the times of its candidates)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import sympy
from conftest import ROOT, compiled

from schedc.analysis.calibrate.model import Model, schedules, size_symbol
from schedc.analysis.calibrate.numeric_model import NumericModel
from schedc.model.scalars import exact_value

# The sizes of an nccl-tests sweep, 8 B to 16 GiB by factors of 4, and two that are not
# powers of two (a log's sizes are whole bytes; the numeric path takes any).
SIZES = np.array([8 * 4**k for k in range(16)] + [3 * 10**6, 123_456_789], dtype=float)

# Protocols and several schedules (the fastest of them per size); a pipeline's step rule
# (C = max(1, size/Q) chunks); one host; no protocols at all.
PREDICTED = ["schedules/calibration/ib_hosts_8xH100_ib400_allreduce.sched",
             "schedules/calibration/ib_hosts_8xH100_ib400_pipelined_allreduce.sched",
             "schedules/calibration/nvidia_dgxc_1node_8xH100_nvlink_allreduce.sched",
             "schedules/seed/nvlink_2x8.sched"]


def _formula_value(session, names: list[str], size: int) -> Fraction:
    """The formula path: the least of the schedules' formulas (each the minimum over its
    protocols) with every param at its nominal value and the size at `size`, in SymPy's
    exact arithmetic."""
    point = {**session.program.nominal, size_symbol(session, ",".join(names)): sympy.Integer(size)}
    return min(exact_value(session.timing(n).cost.formula, point) for n in names)


@pytest.mark.parametrize("path", PREDICTED)
def test_predicts_numbers_are_the_formulas_exactly(path, monkeypatch):
    monkeypatch.chdir(ROOT)
    session = compiled(path)
    every = ",".join(session.selected())  # as `predict` without -s: the fastest of them
    for schedule in [*session.selected(), every]:
        names = schedules(schedule)
        got = NumericModel(session, schedule).exact(SIZES)
        assert got == [_formula_value(session, names, int(s)) for s in SIZES], schedule


def test_predicts_protocols_and_latency_shares_are_the_lambdified_formulas(monkeypatch):
    """Against `Model` (the closed form lambdified, as `predict` used before): the same
    winning protocol at every size, the same time and latency share to float rounding (the
    numeric path rounds the exact value once; the lambdified formula rounds at each step)."""
    monkeypatch.chdir(ROOT)
    session = compiled(PREDICTED[0])
    schedule = ",".join(session.selected())
    numeric, formula, none = NumericModel(session, schedule), Model(session, schedule, ()), \
        np.array([])
    assert numeric.protocols == [label for label, _ in formula.protocols]
    assert len(set(numeric.winners(SIZES, none))) >= 2  # (the check sees a switch)
    assert numeric.winners(SIZES, none) == formula.winners(SIZES, none)
    assert np.allclose(numeric(SIZES, none), formula(SIZES, none), rtol=1e-12, atol=0)
    shares = zip(numeric.latency_shares(SIZES, none), formula.latency_shares(SIZES, none))
    assert all((a is None) == (b is None) and (a is None or abs(a - b) <= 1e-12)
               for a, b in shares)


def test_predict_builds_no_formula_under_protocols():
    """`predict`'s rows come from the loads: no minimum over protocols is built (3.9 s of the
    8.4 s profiled on the H100 IB machine); the bound column reads the round classes only."""
    import subprocess
    import sys
    log = ROOT / "tests" / "fixtures" / "nccl-tests" / "noisy_allreduce_8.txt"
    probe = ("import sys\nimport schedc.cost.protocols as p\ncalls = []\n"
             "original = p.with_protocols\n"
             "p.with_protocols = lambda *a, **k: calls.append(1) or original(*a, **k)\n"
             "from schedc.cli import main\n"
             "try:\n    main(sys.argv[1:])\nexcept SystemExit as exc:\n    code = exc.code\n"
             "print(code, len(calls), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe, "predict", PREDICTED[2], "--against",
                           str(log)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    code, calls = done.stderr.split()[-2:]
    assert (code, calls) == ("0", "0"), done.stderr



def test_synthesizes_candidates_are_timed_as_the_formula_times_them(monkeypatch):
    """`synthesize` times each other chunk count it compiles (plan.fastest_chunks) from the
    loads: at the nominal point and at twice the size, each candidate's numeric time is its
    formula's value exactly, and the count chosen is the one the formula path chose. The
    H100 IB machine has protocols and latencies, so candidates are compiled (36 chunks
    written, 5 fastest at its α: docs/synthesis.md's figures come from the same file)."""
    from schedc import synthesize
    from schedc.api import synthesizing

    monkeypatch.chdir(ROOT)
    checked, made = [], synthesizing._candidate

    def both(text, name, sets, scratch, limits):
        session = synthesizing._compile(scratch, None, [text], sets, limits)
        formula = session.timing(name).cost.formula
        program = session.program
        size = size_symbol(session, name)
        for values in ({}, {size: 2 * program.nominal[size]}):
            exact = exact_value(formula, {**program.nominal, **values})
            assert session.numeric_timing_at(name, values).time == exact
        checked.append(text)
        return made(text, name, sets, scratch, limits)

    monkeypatch.setattr(synthesizing, "_candidate", both)
    numeric = synthesize(PREDICTED[0], "allgather")
    assert len(checked) >= 2  # the neighbours of the written count, at least

    def formula_only(text, name, sets, scratch, limits):  # the path before: formulas
        timing = synthesizing._compiled(text, name, sets, scratch, limits)[1]
        return lambda values: float(exact_value(timing.cost.formula,
                                                {**timing.nominal, **values}))

    monkeypatch.setattr(synthesizing, "_candidate", formula_only)
    formulas = synthesize(PREDICTED[0], "allgather")
    assert (numeric.chunks, numeric.alpha_chunks, numeric.text) == \
        (formulas.chunks, formulas.alpha_chunks, formulas.text)
    assert numeric.alpha_chunks != numeric.chunks  # (the candidates decided something)

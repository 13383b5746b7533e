"""`step cost sum|max` (issue 34): a round costs α + V/B (the default) or max(α, V/B). Times,
regimes and roots derived by hand on two GPUs, two rounds of V/2 each way over one link."""

from __future__ import annotations

import pytest
from conftest import write

import schedc
from schedc.analysis.calibrate.step_rules import StepRuleFit, preferred
from schedc.errors import UsageError

TWO = """param V = 1 MiB
param alpha = 10 us
param B = 100 GB/s
{rule}
topology {{
  gpu g[2]
  link g[0] <-> g[1] bw B class nvlink
}}
allreduce V over [g[0], g[1]]
schedule x {{
  round {{ reduce part(0 of 2) from g[0] to g[1]; reduce part(1 of 2) from g[1] to g[0] }}
  round {{ copy part(0 of 2) from g[1] to g[0]; copy part(1 of 2) from g[0] to g[1] }}
}}
{protocols}
"""


def _load(tmp_path, rule: str, protocols: str = "", sets=()):
    path = write(tmp_path, "m.sched", TWO.format(rule=rule, protocols=protocols))
    return schedc.load(path, sets)


def test_sum_and_max_by_hand(tmp_path):
    # A round moves V/2 = 524,288 B each way: 5.24288 µs at 100 GB/s; α = 10 µs.
    # sum: 2 × (10 + 5.24288) = 30.48576 µs; max: 2 × max(10, 5.24288) = 20 µs.
    assert float(schedc.time(_load(tmp_path, ""), "x").time) == pytest.approx(30.48576e-6)
    assert float(schedc.time(_load(tmp_path, "step cost sum"), "x").time) == \
        pytest.approx(30.48576e-6)
    overlapped = schedc.time(_load(tmp_path, "step cost max"), "x")
    assert float(overlapped.time) == pytest.approx(20e-6)
    assert str(overlapped.cost.formula) == "2*Max(alpha, V/(2*B))"
    # At the nominal point α wins; the regime says so and when it holds: 2·B·α ≥ V.
    assert str(overlapped.cost.regime_formula) == "2*alpha"
    assert [str(c) for c in overlapped.cost.conditions] == ["2*B*alpha >= V"]
    # With V = 4 MiB the transfer wins: 2 × 2,097,152 / 1e11 = 41.94304 µs.
    big = schedc.time(_load(tmp_path, "step cost max", sets=("V=4MiB",)), "x")
    assert float(big.time) == pytest.approx(41.94304e-6)
    assert str(big.cost.regime_formula) == "V/B"


def test_solve_crosses_the_regimes_of_max(tmp_path):
    # time = 30 µs: below V = 2·B·α = 2 MB the time is 2α = 20 µs, so the root is in the
    # transfer's regime, V/B = 30 µs: V = 3 MB exactly.
    solution = schedc.solve(_load(tmp_path, "step cost max"), "time(x) = 30 us", "V")
    assert [str(r.value) for r in solution.roots] == ["3000000"]


def test_protocols_take_the_rule_too(tmp_path):
    # Simple with its own start-up 4 µs and share 0.5: a round moves 524,288 B at 50 GB/s,
    # 10.48576 µs. max: 2 × max(4, 10.48576) = 20.97152 µs; sum: 2 × 14.48576 = 28.97152 µs.
    simple = "protocol Simple alpha 4 us eff 0.5"
    assert float(schedc.time(_load(tmp_path, "step cost max", simple), "x").time) == \
        pytest.approx(20.97152e-6)
    assert float(schedc.time(_load(tmp_path, "", simple), "x").time) == \
        pytest.approx(28.97152e-6)


def test_a_rule_is_one_of_two_and_given_once(run, tmp_path):
    path = write(tmp_path, "m.sched", TWO.format(rule="step cost maxx", protocols=""))
    code, out, err = run("time", path)
    assert code == 2 and out == ""
    assert "m.sched:4:11: error: unknown step cost 'maxx'; did you mean 'max'?" in err
    assert "step cost maxx\n            ^~~~" in err
    path = write(tmp_path, "m.sched", TWO.format(rule="step cost max\nstep cost sum", protocols=""))
    code, _, err = run("time", path)
    assert code == 2 and "the step cost is already given at" in err


def test_scale_refuses_max_rather_than_give_sum_forms(tmp_path):
    with pytest.raises(UsageError, match="step cost max"):
        schedc.scale(_load(tmp_path, "step cost max"), "V")


def test_the_rows_prefer_the_smaller_held_out_error():
    fits = (StepRuleFit("sum", 0.11, 0.10, True), StepRuleFit("max", 0.07, 0.12, False))
    assert preferred(fits) == "max"
    assert preferred((StepRuleFit("sum", 0.1, 0.1, True), StepRuleFit("max", 0.1, 0.1, False))) \
        == "sum"  # a tie: the declared rule
    assert preferred((StepRuleFit("sum", None, 0.2, True), StepRuleFit("max", None, 0.1, False))) \
        == "max"  # nothing held out: the fit rows decide

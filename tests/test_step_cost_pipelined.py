"""`step cost pipelined chunk Q` (issue 34, mid sizes): a call of S bytes runs as
C = max(1, S/Q) chunks through the schedule's rounds as pipeline stages,

    T = Σ_r s_r + (C − 1)·P,   s_r = α + max_e V[r,e]/(C·B_e),
    P = max(max_r s_r, max_e Σ_r V[r,e]/(C·B_e)).

Every figure below is derived by hand in its comment; both cost paths (the formula and the
numeric one) are compared with it."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from conftest import write
from test_calibration_identify import _log
from test_step_cost import TWO

import schedc
from schedc.analysis.calibrate.step_rules import preferred
from schedc.cost.numeric import numeric_time
from schedc.errors import UsageError

US = Fraction(1, 10**6)
# TWO (test_step_cost.py): two GPUs, one link, an all-reduce in two rounds of V/2 each way
# (V = 1 MiB, α = 10 µs, B = 100 GB/s): both rounds load both directions of the one link, so
# the stages share it.

# A chain g0 -> g1 -> g2: a broadcast in two rounds on two different links, so a pipeline
# overlaps them (chunk x crosses g1 -> g2 while chunk x + 1 crosses g0 -> g1).
CHAIN = """param V = 1 MiB
param alpha = 1 us
param B = 100 GB/s
step cost pipelined chunk 256 KiB
topology {
  gpu g[3]
  link g[0] <-> g[1] bw B
  link g[1] <-> g[2] bw B
}
broadcast V over [g[0], g[1], g[2]] root g[0]
schedule chain {
  round { copy all from g[0] to g[1] }
  round { copy all from g[1] to g[2] }
}
"""


def _both(session, name: str) -> tuple[Fraction, Fraction]:
    """The time by the formula path and by the numeric path, exactly."""
    program = session.program
    timing = session.timing(name)
    chunk = Fraction(int(program.step_chunk.xreplace(program.nominal)))
    size = Fraction(int(program.result(name).collective.size[0][0].xreplace(program.nominal)))
    chunks = max(Fraction(1), size / chunk)
    numeric = numeric_time(session.loads(name), program.topology, program.alpha,
                           program.nominal, program.protocols, False, chunks)
    return timing.time, numeric


def _two(tmp_path, rule: str, sets=()):
    return schedc.load(write(tmp_path, "m.sched", TWO.format(rule=rule, protocols="")), sets)


def test_start_up_bound_pipeline_by_hand(tmp_path):
    # V = 1 MiB, Q = 256 KiB: C = 4. Per chunk a round moves V/(2C) = 131,072 B each way,
    # 1.31072 µs at 100 GB/s: a stage is 10 + 1.31072 = 11.31072 µs. The link carries
    # 2 × 131,072 B per chunk in each direction (both rounds), 2.62144 µs < 11.31072, so the
    # period is the stage. T = 2 × 11.31072 + 3 × 11.31072 = 56.5536 µs (the sum rule:
    # 2 × (10 + 5.24288) = 30.48576 µs; chunking a start-up-bound call costs C − 1 more α).
    session = _two(tmp_path, "step cost pipelined chunk 256 KiB")
    assert _both(session, "x") == (Fraction("56.5536") * US,) * 2
    assert session.timing("x").time > _two(tmp_path, "").timing("x").time


def test_one_chunk_is_the_sum_rule(tmp_path):
    # V = 128 KiB ≤ Q: C = 1, the sum rule: 2 × (10 + 65,536 B / 100 GB/s) = 2 × 10.65536 µs.
    session = _two(tmp_path, "step cost pipelined chunk 256 KiB", ("V=128KiB",))
    plain = _two(tmp_path, "step cost sum", ("V=128KiB",))
    assert _both(session, "x") == (Fraction("21.31072") * US,) * 2
    assert session.timing("x").time == plain.timing("x").time


def test_stages_on_one_link_gain_nothing_when_transfer_bound(tmp_path):
    # α = 0.1 µs: a stage is 0.1 + 1.31072 = 1.41072 µs, the link's load per chunk 2.62144 µs:
    # the period is the link. T = 2 × 1.41072 + 3 × 2.62144 = 10.68576 µs = the sum rule's
    # 2 × (0.1 + 5.24288): the rounds share the link, so pipelining overlaps nothing.
    session = _two(tmp_path, "step cost pipelined chunk 256 KiB", ("alpha=0.1us",))
    assert _both(session, "x") == (Fraction("10.68576") * US,) * 2
    assert session.timing("x").time == \
        _two(tmp_path, "", ("alpha=0.1us",)).timing("x").time


def test_stages_on_two_links_overlap(tmp_path):
    # The chain: C = 4 chunks of 262,144 B, 2.62144 µs a hop at 100 GB/s; a stage is
    # 1 + 2.62144 = 3.62144 µs; each link carries one chunk per period. T = (2 + 3) × 3.62144
    # = 18.1072 µs, against the sum rule's 2 × (1 + 10.48576) = 22.97152 µs.
    session = schedc.load(write(tmp_path, "c.sched", CHAIN))
    assert _both(session, "chain") == (Fraction("18.1072") * US,) * 2
    assert float(session.with_step_rule("sum").timing("chain").time) == \
        pytest.approx(22.97152e-6)


def test_time_says_how_many_chunks(run):
    # 1 MiB in chunks of 256 KiB: 4 (the fixture docs/calibration.md shows).
    code, out, err = run("time", "tests/fixtures/step_cost/chain.sched")
    assert code == 0, err
    assert "  pipeline          4 chunk(s) of 256 KiB: the rounds are its stages" in out
    assert "  time              18.107 µs" in out
    code, out, err = run("time", "tests/fixtures/step_cost/chain.sched", "--json")
    assert code == 0, err
    pipeline = json.loads(out)["schedules"][0]["pipeline"]
    assert pipeline == {"chunk_bytes": 262144, "chunks": 4.0, "chunks_formula": "Max(1, V/262144)"}


def test_protocols_and_the_formula(tmp_path):
    # Simple, start-up 4 µs, share 0.5: a chunk's round is 131,072 B at 50 GB/s = 2.62144 µs,
    # a stage 6.62144 µs; the link per chunk 5.24288 µs < 6.62144. T = 5 × 6.62144 =
    # 33.1072 µs, and the formula holds C = max(1, V/Q) as such.
    session = _two(tmp_path, "step cost pipelined chunk 256 KiB\n"
                             "protocol Simple alpha 4 us eff 0.5")
    assert _both(session, "x") == (Fraction("33.1072") * US,) * 2
    assert "Max(1, V/262144)" in str(session.timing("x").cost.formula)


@pytest.mark.parametrize("rule, where, message, caret", [
    ("step cost pipelined", "4:1", "`step cost pipelined` needs its chunk size: `step cost "
     "pipelined chunk 8 MiB`", "  step cost pipelined\n  ^~~~~~~~~~~~~~~~~~~\n"),
    ("step cost sum chunk 1 MiB", "4:21", "`step cost sum` takes no chunk (only `step cost "
     "pipelined chunk Q` does)", "  step cost sum chunk 1 MiB\n                      ^~~~~\n"),
    ("step cost pipelined chunk 3 us", "4:27", "a pipeline's chunk must be a size (bytes), not "
     "a duration (seconds)", "chunk 3 us\n                            ^~~~\n"),
    ("step cost pipelined chunk 0 B", "4:27", "a pipeline's chunk must be positive; this one "
     "is 0 B", "chunk 0 B\n                            ^~~\n"),
])
def test_a_bad_chunk_is_refused_at_its_line(run, tmp_path, rule, where, message, caret):
    path = write(tmp_path, "m.sched", TWO.format(rule=rule, protocols=""))
    code, out, err = run("time", path)
    assert code == 2 and out == "", err
    assert f"m.sched:{where}: error: {message}" in err and caret in err, err
    assert "Traceback" not in err


def test_scale_refuses_the_pipelined_rule(tmp_path):
    with pytest.raises(UsageError, match="step cost pipelined"):
        schedc.scale(_two(tmp_path, "step cost pipelined chunk 256 KiB"), "V")


def test_calibrate_says_the_rows_prefer_the_rule_they_were_made_by(tmp_path):
    # Rows written by hand from the pipelined rule on TWO (α = 10 µs, B = 100 GB/s, Q =
    # 256 KiB): up to Q, 2 · (α + V/(2B)); above, C = V/Q and a stage, α + Q/(2B) = 11.31072
    # µs, outlasts the link's Q/B = 2.62144 µs a chunk, so T = (C + 1)(α + Q/(2B)). The sum
    # rule (2α + V/B) cannot follow the α that every chunk adds; the max rule neither.
    alpha, rate, chunk = 10e-6, 100e9, 262144
    times = []
    for size in (2**k for k in range(14, 25)):
        c = size / chunk
        times.append((size, 2 * (alpha + size / (2 * rate)) if c <= 1
                      else (c + 1) * (alpha + chunk / (2 * rate))))
    log = _log(tmp_path, times, digits=3)
    machine = write(tmp_path, "m.sched",
                    TWO.format(rule="step cost pipelined chunk 256 KiB", protocols=""))
    fitted = schedc.calibrate_files([log], [machine], step_rules=True, sets=["alpha=5us"])
    by_rule = {f.rule: f for f in fitted.step_rules}
    assert list(by_rule) == ["pipelined", "max", "sum"] and by_rule["pipelined"].file_rule
    assert by_rule["pipelined"].heldout < 1e-4  # the rows' own model (rounded to 1 ns)
    assert by_rule["sum"].heldout > 0.05 and by_rule["max"].heldout > 0.05
    assert preferred(fitted.step_rules) == "pipelined", by_rule
    # and the fit under the declared rule finds the α the rows were written with (from 5 µs)
    assert [(p.name, round(p.value * 1e6, 3)) for p in fitted.params] == [("alpha", 10.0)]

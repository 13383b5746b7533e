"""Semantics of the language: composition, regions, loops, conditions, calls, units."""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy
from conftest import SCHEDULES, examples, write
from hypothesis import given, settings
from hypothesis import strategies as st

import schedc.elaborate.schedule as elaborate_schedule
from schedc.elaborate.loader import load_program
from schedc.errors import SchedcError
from schedc.model.ir import linear_expr
from schedc.model.values import NeedScalar
from schedc.session import Session

MACHINE = """
param V = 64 MiB
param alpha = 1 us
param B = 100 GB/s
topology {
  switch sw
  gpu g[8]
  link g[i] <-> sw bw B class nic for i in 0..7
}
let ranks = [g[i] for i in 0..7]
allreduce V over ranks
"""


def compile_text(tmp_path, body: str, name: str = "x"):
    path = write(tmp_path, "case.sched", MACHINE + body)
    program = load_program(path)
    return program, program.schedule(name)


def rounds_of(program, schedule):
    """Each round as a sorted list of (op, src name, dst name, region)."""
    names = [d.name for d in program.topology.devices]
    return [sorted((t.op, names[t.src], names[t.dst], t.region) for t in r.transfers())
            for r in schedule.rounds]


def test_sequence_makes_one_round_per_transfer(tmp_path):
    program, s = compile_text(tmp_path, "schedule x {\n copy all from g[0] to g[1]\n copy all from g[1] to g[2]\n}\n")
    assert len(s.rounds) == 2


def test_round_block_gathers_loops_and_conditions(tmp_path):
    program, s = compile_text(tmp_path, """
schedule x {
  round {
    for j in 0..7: if j % 2 == 0: copy part(j of 8) from g[j] to g[j + 1]
    if 1 < 2: copy all from g[7] to g[0]
  }
}
""")
    assert len(s.rounds) == 1
    assert rounds_of(program, s)[0] == sorted(
        [("copy", f"g[{j}]", f"g[{j + 1}]", (Fraction(j, 8), Fraction(j + 1, 8))) for j in (0, 2, 4, 6)]
        + [("copy", "g[7]", "g[0]", (Fraction(0), Fraction(1)))])


def test_if_inside_a_round_masks_lanes(tmp_path):
    program, s = compile_text(tmp_path, """
schedule x {
  round {
    for j in 0..7 {
      if j < 4 { copy all from g[j] to g[j + 4] } else { reduce all from g[j] to g[j - 4] }
    }
  }
}
""")
    ops = rounds_of(program, s)[0]
    assert [o for o, *_ in ops].count("copy") == 4 and [o for o, *_ in ops].count("reduce") == 4


def test_parallel_zips_rounds_and_keeps_the_longer_tail(tmp_path):
    program, s = compile_text(tmp_path, """
schedule a { copy all from g[0] to g[1]; copy all from g[1] to g[2]; copy all from g[2] to g[3] }
schedule b { copy all from g[4] to g[5] }
schedule x { parallel { a(); b() } }
""".replace("schedule a {", "schedule a() {").replace("schedule b {", "schedule b() {"))
    assert [len(r) for r in s.rounds] == [2, 1, 1]


def test_parallel_for_zips_each_iteration(tmp_path):
    program, s = compile_text(tmp_path, """
schedule pair(a, b) { copy all from a to b; copy all from b to a }
schedule x { parallel for i in 0..3: pair(g[2 * i], g[2 * i + 1]) }
""")
    assert [len(r) for r in s.rounds] == [4, 4]


def test_nested_parts_are_exact(tmp_path):
    program, s = compile_text(tmp_path, "schedule x { copy part(1 of 2) of part(2 of 3) from g[0] to g[1] }\n")
    (t,) = s.rounds[0].transfers()
    assert t.region == (Fraction(5, 6), Fraction(1))
    assert linear_expr(t.bytes) == sympy.Symbol("V", positive=True) / 6


def test_into_places_the_region_elsewhere(tmp_path):
    program, s = compile_text(tmp_path, "schedule x { copy part(0 of 8) from g[0] to g[1] into part(3 of 8) }\n")
    (t,) = s.rounds[0].transfers()
    assert t.region == (0, Fraction(1, 8)) and t.into == (Fraction(3, 8), Fraction(1, 2))


def test_into_must_match_the_size(tmp_path):
    with pytest.raises(SchedcError, match="differs in size"):
        compile_text(tmp_path, "schedule x { copy part(0 of 8) from g[0] to g[1] into part(1 of 4) }\n")


def test_send_moves_explicit_bytes(tmp_path):
    program, s = compile_text(tmp_path, "schedule x { send 2 * V + 1 MiB from g[0] to g[1] }\n")
    t = Session(program).timing("x")
    V, B, alpha = (p.symbol for p in (program.params["V"], program.params["B"], program.params["alpha"]))
    assert sympy.simplify(t.cost.formula - (alpha + (2 * V + 2**20) / B)) == 0


def test_empty_rounds_are_dropped(tmp_path):
    program, s = compile_text(tmp_path, "schedule x { for s in 0..5 round { if s == 3: copy all from g[0] to g[1] } }\n")
    assert len(s.rounds) == 1


def test_keyword_arguments_and_defaults_see_earlier_parameters(tmp_path):
    program, s = compile_text(tmp_path, """
schedule fan(g, k = len(g) - 1, r = all) { round { for j in 1..k: copy r from g[0] to g[j] } }
schedule x = fan(ranks, r = part(1 of 2))
""")
    assert len(s.rounds[0]) == 7
    assert {t.region for t in s.rounds[0].transfers()} == {(Fraction(1, 2), Fraction(1))}


def test_loops_over_groups(tmp_path):
    program, s = compile_text(tmp_path, """
schedule x { for d in [g[1], g[2]] round { copy all from g[0] to d } }
""")
    assert len(s.rounds) == 2


@pytest.mark.parametrize("expression, value", [
    ("log2(8)", 3), ("ceil(7 / 2)", 4), ("floor(-1 / 2)", -1), ("min(3, 1, 2)", 1),
    ("max(1, 5)", 5), ("abs(-2)", 2), ("2 ** 3", 8), ("2 ** -1", Fraction(1, 2)), ("5 ^ 3", 6),
    ("1 << 4", 16), ("17 >> 2", 4), ("6 & 3", 2), ("6 | 3", 7), ("7 // 2", 3), ("-7 % 3", 2),
    ("7 / 2", Fraction(7, 2)), ("len(ranks)", 8), ("len(2..5)", 4), ("len(5..2)", 0),
    ("1 + 2 * 3 ** 2", 19), ("-2 ** 2", -4),
])
def test_arithmetic(tmp_path, expression, value):
    program, _ = compile_text(tmp_path, f"let a = {expression}\nschedule x {{}}\n")
    assert program.names.values["a"] == value


def test_log2_needs_a_power_of_two(tmp_path):
    with pytest.raises(SchedcError, match=r"log2\(12\) is not an integer"):
        compile_text(tmp_path, "let a = log2(12)\nschedule x {}\n")


def test_startup_statement_sets_alpha(tmp_path):
    program, _ = compile_text(tmp_path, "startup 2 * alpha + 3 us\nschedule x { copy all from g[0] to g[1] }\n")
    alpha = program.params["alpha"].symbol
    assert program.alpha == 2 * alpha + sympy.Rational(3, 10**6)


def test_units_are_exact(tmp_path):
    program, _ = compile_text(tmp_path, """
let a = 1 MiB
let b = 1 GB/s
let c = 1 Gbit/s
let d = 400 Gbps
let e = 0.83 us
schedule x {}
""")
    values = {k: program.names.values[k].expr for k in "abcde"}
    assert values == {"a": 2**20, "b": 10**9, "c": sympy.Rational(10**9, 8),
                      "d": 5 * 10**10, "e": sympy.Rational(83, 10**8)}


def test_devices_outside_hosts_count_as_hosts_of_their_own(tmp_path):
    program, _ = compile_text(tmp_path, "schedule x { copy all from g[0] to g[1] }\n")
    t = Session(program).timing("x")
    assert t.cost.cross_rounds == 1


# ---- the vectorised elaborator agrees with running every lane on its own ---------------------


def _scalar_only(monkeypatch):
    def refuse(*args, **kwargs):
        raise NeedScalar

    monkeypatch.setattr(elaborate_schedule, "expand_lanes", refuse)


def _seed_like(tmp_path, hosts: int, gpus: int, order: list[int]) -> str:
    ranks = ", ".join(f"node[{k // gpus}].g[{k % gpus}]" for k in order)
    return f"""
import "{SCHEDULES / 'lib' / 'ring.sched'}"
param V = 96 MiB
param alpha = 1 us
param B_L = 300 GB/s
param B_N = 50 GB/s
topology {{
  host node[{hosts}] {{
    gpu g[{gpus}]
    switch sw
    link g[i] <-> sw bw B_L class local for i in 0..{gpus - 1}
  }}
  switch rail[{gpus}]
  switch spine
  link node[h].g[i] <-> rail[i] bw B_N class nic for h in 0..{hosts - 1} for i in 0..{gpus - 1}
  link rail[i] <-> spine for i in 0..{gpus - 1}
}}
allreduce V over [{ranks}]
schedule ring = ring_allreduce([{ranks}])
schedule hierarchical {{
  parallel for h in 0..{hosts - 1}: ring_reduce_scatter(node[h].g)
  parallel for i in 0..{gpus - 1}: ring_allreduce([node[h].g[i] for h in 0..{hosts - 1}], part(i of {gpus}))
  parallel for h in 0..{hosts - 1}: ring_allgather(node[h].g)
}}
"""


@settings(max_examples=examples(25), deadline=None)
@given(st.integers(1, 3), st.integers(1, 4), st.randoms(use_true_random=False))
def test_lanes_agree_with_scalar_elaboration(tmp_path_factory, hosts, gpus, rng):
    if hosts * gpus < 2:
        return
    order = list(range(hosts * gpus))
    rng.shuffle(order)
    path = write(tmp_path_factory.mktemp("lanes"), "case.sched", _seed_like(None, hosts, gpus, order))
    fast = load_program(path)
    expected = {n: rounds_of(fast, fast.schedule(n)) for n in ("ring", "hierarchical")}
    with pytest.MonkeyPatch.context() as mp:
        _scalar_only(mp)
        slow = load_program(path)
        for name, rounds in expected.items():
            assert rounds_of(slow, slow.schedule(name)) == rounds


def test_lane_arithmetic_does_not_wrap_around(tmp_path):
    # (j * 2**62) % 3 + 1 is 2, then 3: int64 lanes would wrap; the round falls back to exact ints.
    program, s = compile_text(tmp_path, "schedule x { round { for j in 1..2: "
                                        "copy all from g[(j * 2**62) % 3 + 1] to g[0] } }\n")
    assert [src for _, src, _, _ in rounds_of(program, s)[0]] == ["g[2]", "g[3]"]


# ---- a condition used as a number: refused (true is not 1), with the `if … else` that says it.
# Before, `(3<4)*5` said only "expected a number, not a condition".

_IF_ELSE = "  note: a condition is not a number; choose a number by it with `if … else`: "


@pytest.mark.parametrize("line, expected", [
    ("report x = (3<4)*5", "1:13: error: expected a number, not a condition\n"
     "  report x = (3<4)*5\n              ^~~\n" + _IF_ELSE + "(5 if 3<4 else 0)\n"),
    ("report x = 5 * (3<4)", "1:17: error: expected a number, not a condition\n"
     "  report x = 5 * (3<4)\n                  ^~~\n" + _IF_ELSE + "(5 if 3<4 else 0)\n"),
    ("param V = 1 MiB\nreport y = 2 us * (V > 1 KiB)",  # the zero of the other's unit
     "2:20: error: expected a number or a quantity, not a condition\n"
     "  report y = 2 us * (V > 1 KiB)\n                     ^~~~~~~~~\n"
     + _IF_ELSE + "(2 us if V > 1 KiB else 0 s)\n"),
    ("report w = 5 + (1 == 1)", "1:17: error: expected a number, not a condition\n"
     "  report w = 5 + (1 == 1)\n                  ^~~~~~\n" + _IF_ELSE + "(1 if 1 == 1 else 0)\n"),
    ("report z = -(3 < 4)", "1:14: error: expected a number, not a condition\n"
     "  report z = -(3 < 4)\n               ^~~~~\n" + _IF_ELSE + "(1 if 3 < 4 else 0)\n"),
    ("report v = max(1 < 2, 3)", "1:16: error: expected a number, not a condition\n"
     "  report v = max(1 < 2, 3)\n                 ^~~~~\n" + _IF_ELSE + "(1 if 1 < 2 else 0)\n"),
    ("report u = (3<4) < 5", "1:13: error: expected a number, not a condition\n"  # at the operand
     "  report u = (3<4) < 5\n              ^~~\n" + _IF_ELSE + "(1 if 3<4 else 0)\n"),
])
def test_a_condition_used_as_a_number_suggests_if_else(tmp_path, run, line, expected):
    path = write(tmp_path, "cond.sched", line + "\n")
    assert run("eval", path) == (2, "", f"{path}:{expected}")


def test_the_suggested_if_else_is_accepted(tmp_path, run):
    path = write(tmp_path, "fixed.sched", "param V = 1 MiB\nreport x = (5 if 3<4 else 0)\n"
                 "report y = (2 us if V > 1 KiB else 0 s) + 1 us\nreport w = 5 + (1 if 1 == 1 else 0)\n")
    assert run("eval", path) == (0, "x  5\ny  3 µs\nw  6\n", "")

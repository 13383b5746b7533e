"""Language additions the library needed: `error`, `ceil_log2`, nested comprehensions, shifts,
results named after library functions, empty rounds as delays."""

from __future__ import annotations

import pytest
from conftest import MACHINES, write

from schedc.elaborate.loader import load_program
from schedc.errors import ElaborationError

MACHINE = f'import "{MACHINES / "flat_8.sched"}"\n'  # one line: the body starts on line 2


def _program(tmp_path, body: str, name: str = "case.sched"):
    return load_program(write(tmp_path, name, MACHINE + body))


def _error(tmp_path, body: str) -> ElaborationError:
    program = _program(tmp_path, body)
    with pytest.raises(ElaborationError) as exc:
        for r in program.results:
            program.schedule(r.name)
    return exc.value


def _pairs(program, name):
    """(round, src, dst, region) of every transfer, with device names."""
    names = [d.name for d in program.topology.devices]
    return [(k, names[t.src], names[t.dst], t.region)
            for k, rnd in enumerate(program.schedule(name).rounds) for t in rnd.transfers()]


def test_error_statement_reports_at_the_outermost_call(tmp_path):
    body = """allreduce V over ranks
schedule inner(g) {
  let k = len(g)
  if k & (k - 1) != 0: error "needs a power-of-two group, not", k, "ranks of", g
}
schedule outer(g) { inner(g) }
schedule x = outer([g[i] for i in 0..2])
"""
    error = _error(tmp_path, body)
    assert error.message == "needs a power-of-two group, not 3 ranks of [g[0], g[1], g[2]]"
    assert (error.span.line, error.span.col) == (8, 14)  # `outer(...)` in the result schedule
    assert error.notes == (
        f"raised by the 'error' at {tmp_path / 'case.sched'}:5:24 in 'inner'",
        f"called as outer ({tmp_path / 'case.sched'}:8:14) -> inner ({tmp_path / 'case.sched'}:7:21)")


def test_error_statement_inside_a_round_names_the_iteration(tmp_path):
    body = """allreduce V over ranks
schedule x {
  for s in 0..3 round {
    for j in 0..7: if s == 2 and j == 5: error "no transfer for", j, "in step", s
  }
}
"""
    error = _error(tmp_path, body)
    assert error.message == "no transfer for 5 in step 2"
    assert (error.span.line, error.span.col) == (5, 42)  # no call: the statement itself


def test_error_statement_not_taken_costs_nothing(tmp_path):
    program = _program(tmp_path, """allreduce V over ranks
schedule f(g) {
  if len(g) > 8: error "too many"
  copy all from g[0] to g[1]
}
schedule x = f(ranks)
""")
    assert program.schedule("x").transfer_count == 1


@pytest.mark.parametrize(("n", "expected"), [(1, 0), (2, 1), (3, 2), (4, 2), (5, 3), (8, 3), (9, 4),
                                             (1024, 10), (1025, 11)])
def test_ceil_log2(tmp_path, n, expected):
    program = _program(tmp_path, f"let e = ceil_log2({n})\n")
    assert program.names.values["e"] == expected


def test_ceil_log2_in_lanes_agrees_with_scalars(tmp_path):
    # In a round loop `s` is a lane array: the rounds of a binomial tree over 7 ranks.
    program = _program(tmp_path, """allreduce V over ranks
schedule x {
  for n in 1..7 round {
    for j in 0..ceil_log2(n) - 1: copy all from g[0] to g[j + 1]
  }
}
""")
    sizes = [len(r) for r in program.schedule("x").rounds]
    assert sizes == [max(0, (n - 1).bit_length()) for n in range(1, 8) if n > 1]


def test_ceil_log2_refuses_non_positive(tmp_path):
    with pytest.raises(ElaborationError, match=r"ceil_log2\(\) needs a positive integer, not 0"):
        _program(tmp_path, "let e = ceil_log2(0)\n")


def test_shifts_lex_as_shifts(tmp_path):
    program = _program(tmp_path, "let a = 256 >> 3\nlet b = 1 << 5\nlet c = 2 ** 3\n")
    assert [program.names.values[n] for n in "abc"] == [32, 32, 8]


def test_nested_comprehension_transposes_a_grid(tmp_path):
    program = _program(tmp_path, """let grid = [[g[4 * a + b] for b in 0..3] for a in 0..1]
let columns = [[grid[a][b] for a in 0..1] for b in 0..3]
""")
    columns = program.names.values["columns"]
    assert columns.ids.tolist() == [[0, 4], [1, 5], [2, 6], [3, 7]]


def test_nested_comprehension_of_unequal_groups_is_an_error(tmp_path):
    with pytest.raises(ElaborationError, match="the groups of a nested list must all have one length"):
        _program(tmp_path, "let t = [[g[b] for b in 0..a] for a in 0..2]\n")


def test_result_may_be_named_after_the_function_it_calls(tmp_path):
    program = _program(tmp_path, """allreduce V over ranks
schedule ring(g) {
  for s in 0..len(g) - 2 round {
    for j in 0..len(g) - 1: copy part(j of len(g)) from g[j] to g[(j + 1) % len(g)]
  }
}
schedule ring = ring(ranks)
""")
    assert [r.name for r in program.results] == ["ring"]
    assert len(program.schedule("ring").rounds) == 7


def test_two_results_of_one_name_are_still_an_error(tmp_path):
    with pytest.raises(ElaborationError, match="schedule 'x' is already defined at"):
        _program(tmp_path, """allreduce V over ranks
schedule x { copy all from g[0] to g[1] }
schedule x { copy all from g[1] to g[0] }
""")


def test_two_functions_of_one_name_are_still_an_error(tmp_path):
    with pytest.raises(ElaborationError, match="schedule 'f' is already defined at"):
        _program(tmp_path, "schedule f(g) { copy all from g[0] to g[1] }\n"
                           "schedule f(g) { copy all from g[1] to g[0] }\n")


def test_empty_rounds_delay_a_parallel_branch(tmp_path):
    program = _program(tmp_path, """allreduce V over ranks
schedule x {
  parallel for b in 0..2 {
    for t in 1..b round {}
    copy part(b of 3) from g[0] to g[b + 1]
    copy part(b of 3) from g[b + 1] to g[b + 4]
  }
}
""")
    rounds = {}
    for k, src, dst, _ in _pairs(program, "x"):
        rounds.setdefault(k, []).append((src, dst))
    assert rounds == {0: [("g[0]", "g[1]")], 1: [("g[1]", "g[4]"), ("g[0]", "g[2]")],
                      2: [("g[2]", "g[5]"), ("g[0]", "g[3]")], 3: [("g[3]", "g[6]")]}

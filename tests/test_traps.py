"""The language traps of issue 8, fixed: lists of numbers, `a if c else b`, re-valued params,
exact expects, machines without hosts, JSON errors, `check --set`, errors in library calls."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import SCHEDULES, write

import schedc

ERRORS = Path(__file__).parent / "errors"
MACHINE = (ERRORS / "machine.sched").read_text()  # 4 GPUs g[0..3] on one switch, link bw B
HEAD = 'import "machine.sched"\nallreduce V over ranks\n'


@pytest.fixture
def case(tmp_path):
    """case(text) -> path of 'case.sched' (HEAD + text) beside a copy of the test machine."""
    write(tmp_path, "machine.sched", MACHINE)
    return lambda text, name="case.sched": write(tmp_path, name, HEAD + text)


def pairs(session, name):
    """[(src, dst), ...] per round of a schedule, by device index."""
    return [sorted((int(s), int(d)) for b in r.batches for s, d in zip(b.src, b.dst))
            for r in session.schedule(name).rounds]


# ---- lists of numbers and conditional expressions ---------------------------------------------


def test_a_sequential_loop_over_a_list_of_numbers_keeps_its_order(case):
    session = schedc.load(case("schedule x { for h in [0, 2, 1, 3]: copy all from g[h] to g[(h + 1) % 4] }\n"))
    # g[i] is device i + 1 (the switch is declared first): one round per entry, in list order.
    assert pairs(session, "x") == [[(1, 2)], [(3, 4)], [(2, 3)], [(4, 1)]]


def test_loops_over_lists_inside_a_round_and_in_parallel(case):
    session = schedc.load(case(
        "schedule x { round { for j in [3, 1]: copy all from g[j] to g[0] } }\n"
        "schedule y { parallel for j in [1, 2]: copy all from g[0] to g[j] }\n"
        "schedule z { for s in [0, 1] round { for j in [2 * s, 2 * s + 1]: send 1 MiB from g[j] to g[3 - j] } }\n"))
    assert pairs(session, "x") == [[(2, 1), (4, 1)]]
    assert pairs(session, "y") == [[(1, 2), (1, 3)]]
    assert pairs(session, "z") == [[(1, 4), (2, 3)], [(3, 2), (4, 1)]]


def test_lists_of_numbers_index_len_and_comprehensions(run, case):
    path = case("let order = [0, 2, 1, 3]\nlet doubled = [2 * i for i in order if i > 0]\n"
                "report n = len(order)\nreport third = order[2]\nreport last = doubled[len(doubled) - 1]\n"
                "report m = len(doubled)\n")
    assert run("eval", path) == (0, "n      4\nthird  1\nlast   6\nm      3\n", "")


def test_a_conditional_expression_picks_one_branch(run, case):
    # The branch not taken is not evaluated: order[9] would be out of range.
    path = case("let order = [0, 2]\nreport a = 1 if len(order) == 2 else order[9]\n"
                "report b = (5 if V > 1 GiB else 7) * 2\nreport c = 1 MiB if 0 > 1 else 2 KiB\n")
    assert run("eval", path) == (0, "a  1\nb  14\nc  2 KiB\n", "")


def test_a_ring_written_with_a_conditional_is_the_ring(case):
    # `g[j + 1 if j < 3 else 0]` is the successor on the ring, lane by lane inside a round:
    # the same rounds as `g[(j + 1) % 4]`, so the same verified ring and the same time.
    body = ("{{\n  for s in 0..2 round {{ for j in 0..3: reduce part((j - s - 1) % 4 of 4) from g[j] to {next} }}\n"
            "  for s in 0..2 round {{ for j in 0..3: copy part((j - s) % 4 of 4) from g[j] to {next} }}\n}}\n")
    session = schedc.load(case("schedule modulo " + body.format(next="g[(j + 1) % 4]")
                               + "schedule conditional " + body.format(next="g[j + 1 if j < 3 else 0]")))
    assert pairs(session, "conditional") == pairs(session, "modulo")
    assert all(v.ok for v in schedc.verify(session))
    assert schedc.time(session, "conditional").cost.formula == schedc.time(session, "modulo").cost.formula


@pytest.mark.parametrize("text, expected", [
    ("let a = [1, 0.5]\n", "3:13: error: a list of numbers holds integers, not 1/2"),
    ("let a = [1, g[0]]\n", "3:13: error: a list of numbers holds integers, not a device"),
    ("let a = [3, 4][5]\n", "3:16: error: index 5 out of range for a list of 2 numbers (valid: 0..1)"),
    ("let a = 1 if V else 2\n", "3:14: error: expected a condition, not a size (bytes)"),
    ("let a = [2 ** 70, 1]\n", "3:9: error: a list of numbers holds integers below 2^62, not "
     "1180591620717411303424"),
])
def test_list_and_conditional_errors(run, case, text, expected):
    path = case(text)
    code, out, err = run("eval", path)
    assert (code, out) == (2, "")
    assert err.splitlines()[0] == f"{path}:{expected}"


def test_integers_stay_int64_in_lanes(case):
    session = schedc.load(case("schedule x { round { for j in [1, 2, 3]: copy all from g[0] to g[j] } }\n"))
    batch = session.schedule("x").rounds[0].batches[0]
    assert batch.dst.dtype == np.int64 and list(batch.dst) == [2, 3, 4]


def test_the_library_still_compiles_with_modulo_and_percent(run):
    # ring.sched uses `(j - s - 1) % k`, the seed files `within 1%`: both keep their meaning.
    code, out, err = run("check", SCHEDULES / "seed" / "nvlink_2x8.sched")
    assert code == 0, out + err

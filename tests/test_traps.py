"""The language traps of issue 8, fixed: lists of numbers, `a if c else b`, re-valued params,
exact expects, machines without hosts, JSON errors, `check --set`, errors in library calls."""

from __future__ import annotations

import json
from fractions import Fraction
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


# ---- a study file re-values a machine's param -----------------------------------------------

STUDY = (f'import "{SCHEDULES / "machines" / "nvlink_2x8.sched"}"\n'
         f'import "{SCHEDULES / "lib" / "ring.sched"}"\n'
         "set B_N = 200 Gbit/s    # half the seed's NICs\n"
         "param V = 192 MiB\nallreduce V over ranks\nschedule ring = ring_allreduce(ranks)\n")


def test_a_study_file_reuses_a_machine_with_a_new_value(tmp_path):
    session = schedc.load(write(tmp_path, "study.sched", STUDY))
    assert session.program.params["B_N"].nominal == 25 * 10**9  # 200 Gbit/s = 25 GB/s
    # NIC-bound ring (B_L = 450 GB/s > B_N): 30 α + 15 V / (8 B_N), by hand.
    alpha, V, B_N = Fraction(83, 10**8), 192 * 2**20, 25 * 10**9
    assert schedc.time(session, "ring").time == 30 * alpha + Fraction(15 * V, 8 * B_N)


def test_set_on_the_command_line_still_wins(run, tmp_path):
    path = write(tmp_path, "study.sched", STUDY)
    assert schedc.load(path, ["B_N=50GB/s"]).program.params["B_N"].nominal == 50 * 10**9
    code, out, err = run("time", path, "--set", "B_N=400Gbit/s")
    assert code == 0, err
    assert out.splitlines()[1] == "  time              7.5746 ms"  # the seed's figure again


def test_the_outermost_files_set_wins(tmp_path):
    write(tmp_path, "study.sched", STUDY)
    outer = write(tmp_path, "outer.sched", 'import "study.sched"\nset B_N = 100 Gbit/s\n'
                                           "allreduce V over ranks\nschedule r = ring_allreduce(ranks)\n")
    assert schedc.load(outer).program.params["B_N"].nominal == Fraction(100 * 10**9, 8)


@pytest.mark.parametrize("text, expected", [
    ('import "machine.sched"\nset Q = 1 GB/s\n',
     "2:1: error: set Q: no param named 'Q' is declared by the files imported before this line "
     "(params: V, alpha, B)"),
    ('set B = 1 GB/s\nimport "machine.sched"\n',
     "1:1: error: set B: no param named 'B' is declared by the files imported before this line"),
    ('import "machine.sched"\nset B = 3 us\n',
     "2:9: error: B is a bandwidth (bytes/s) (declared at {dir}/machine.sched:4:1); the value set "
     "is a duration (seconds)"),
    ('import "machine.sched"\nset B = 1 GB/s\nset B = 2 GB/s\n',
     "3:1: error: 'B' is set twice (first at {case}:2:1)"),
    ('param A = 1 GB/s\nset A = 2 GB/s\n',
     "2:1: error: 'A' is declared in this file, at {case}:1:1; give it its value there (set "
     "re-values an imported param)"),
    ('import "machine.sched"\nparam B = 3 GB/s\n',
     "2:1: error: 'B' is already defined at {dir}/machine.sched:4:1"),
    ('import "machine.sched"\nset B = 2 * V / 1 s\n',
     "2:9: error: set B must be a number with a unit, not an expression of params; use 'let' for "
     "derived values"),
])
def test_set_errors(run, tmp_path, text, expected):
    write(tmp_path, "machine.sched", MACHINE)
    path = write(tmp_path, "case.sched", text)
    code, out, err = run("eval", path)
    assert (code, out) == (2, "")
    assert err.splitlines()[0] == f"{path}:" + expected.format(dir=tmp_path, case=path)


def test_redefining_an_imported_param_says_how_to_re_value_it(run, case):
    code, _, err = run("eval", case("param B = 3 GB/s\n"))
    assert code == 2
    assert err.splitlines()[-1] == "  note: to give an imported param a new value, write 'set B = 3 GB/s'"


# ---- --json with bad input: a schedc.error/1 object on stdout, the diagnostic on stderr -------

BAD = "param V = 64 Mib\n"  # 1:14 unknown unit
EXTRA = {"solve": ["time(x) = 1 ms", "--for", "V"], "sweep": ["--vary", "V=1MiB:2MiB:2"]}


def _json_commands():
    from schedc.cli import cli
    return sorted(name for name, command in cli.commands.items()
                  if any(p.name == "as_json" for p in command.params))


def test_every_command_with_json_is_covered():
    assert set(_json_commands()) >= {"time", "compare", "verify", "solve", "sensitivity", "sweep",
                                     "bound", "eval", "check"}


@pytest.mark.parametrize("command", ["time", "compare", "verify", "solve", "sensitivity", "sweep",
                                     "bound", "eval"])
def test_json_with_bad_input_prints_an_error_object(run, tmp_path, command):
    path = write(tmp_path, "bad.sched", BAD)
    code, out, err = run(command, path, *EXTRA.get(command, []), "--json")
    assert code == 2
    assert json.loads(out) == {"schema": "schedc.error/1", "errors": [
        {"file": str(path), "line": 1, "col": 14, "message": "unknown unit 'Mib'; did you mean MiB?",
         "notes": []}]}
    assert err.splitlines() == [f"{path}:1:14: error: unknown unit 'Mib'; did you mean MiB?",
                                "  param V = 64 Mib", "               ^~~"]


@pytest.mark.parametrize("command", _json_commands())
def test_json_errors_for_every_command_that_has_json(run, tmp_path, command):
    # Whatever the command needs besides FILE, bad input or bad usage gives the error object.
    code, out, err = run(command, write(tmp_path, "bad.sched", BAD), "--json")
    assert code == 2 and err
    document = json.loads(out)
    assert document["schema"] == "schedc.error/1" or command == "check"
    if command == "check":  # check reports each file's error in its own document
        assert document["schema"] == "schedc.check/1" and document["errors"] == 1


def test_json_error_keeps_notes_and_a_position_free_error(run, tmp_path, case):
    path = case("schedule x { for j in 1..3: reduce all from g[j] to g[0]\n"
                "  for j in 1..3: copy all from g[0] to g[j] }\n")
    write(tmp_path, "bad.sched", BAD)
    code, out, _ = run("time", path, "--set", "Q=3", "--json")
    assert (code, json.loads(out)["errors"]) == (2, [
        {"file": None, "line": None, "col": None, "notes": [],
         "message": "--set Q: no param named 'Q' (params: V, alpha, B)"}])
    code, out, _ = run("verify", tmp_path, "--json")  # a directory: good files and bad ones
    document = json.loads(out)
    assert code == 2 and document["schema"] == "schedc.verify/1"
    assert [f["file"] for f in document["files"]] == [str(path)]
    assert [e["file"] for e in document["errors"]] == [str(tmp_path / "bad.sched")]


def test_without_json_stdout_stays_empty_on_bad_input(run, tmp_path):
    code, out, err = run("time", write(tmp_path, "bad.sched", BAD))
    assert (code, out) == (2, "") and "unknown unit" in err


# ---- check --set, and --set on every compiling command --------------------------------------

RING4 = ("schedule x { for j in 1..3: reduce all from g[j] to g[0]\n"
         "  for j in 1..3: copy all from g[0] to g[j] }\n")


def test_check_set_applies_to_every_file(run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "machine.sched", MACHINE)
    for name in ("a.sched", "b.sched"):
        write(tmp_path, name, HEAD + RING4 + "report bw = B\nexpect B = 200 GB/s\n")
    code, out, err = run("check", ".", "--set", "B=200GB/s")
    assert (code, err) == (0, ""), out
    assert out.splitlines() == [
        "a.sched:5: report bw = 200 GB/s", "a.sched:6: pass  expect B = 200 GB/s  (found 200 GB/s)",
        "b.sched:5: report bw = 200 GB/s", "b.sched:6: pass  expect B = 200 GB/s  (found 200 GB/s)",
        "2 expects in 3 files: 2 passed, 0 failed; 2 of 2 schedules verified"]
    code, out, _ = run("check", ".")  # the machine's own 100 GB/s: both expects fail
    assert code == 1 and out.splitlines()[-1].startswith("2 expects in 3 files: 0 passed, 2 failed")


def test_check_set_on_a_file_without_the_param_is_an_error(run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "machine.sched", MACHINE)
    write(tmp_path, "a.sched", HEAD + RING4 + "expect B = 200 GB/s\n")
    write(tmp_path, "other.sched", "param W = 1 GB\nreport w = W\n")
    code, out, err = run("check", ".", "--set", "B=200GB/s")
    assert code == 2
    assert err.splitlines() == ["error: --set B: no param named 'B' (params: W)"]
    assert out.splitlines()[-1] == ("1 expect in 3 files: 1 passed, 0 failed; 1 of 1 schedule "
                                    "verified, 1 file with errors")
    code, out, _ = run("check", ".", "--set", "B=200GB/s", "--json")
    files = {f["file"]: f["error"] for f in json.loads(out)["files"]}
    assert files["other.sched"] == "error: --set B: no param named 'B' (params: W)"
    assert files["a.sched"] is None


def test_every_compiling_command_takes_set_and_the_limits():
    # docs/commands.md: "Every command that compiles a file takes --set NAME=VALUE ... and
    # --max-transfers / --max-rounds". Every schedc command compiles files.
    import click

    from schedc.cli import cli

    def leaves(group: click.Group, prefix: str = ""):
        for name, command in group.commands.items():
            if isinstance(command, click.Group):  # `export msccl`: its subcommands compile
                yield from leaves(command, f"{prefix}{name} ")
            else:
                yield prefix + name, command

    # `machine import` is the one command that compiles nothing: it reads an NCCL topology file
    # (or nvidia-smi output) and writes a .sched machine (issue 23).
    for name, command in leaves(cli):
        params = {p.name for p in command.params}
        assert name == "machine import" or {"sets", "max_transfers", "max_rounds"} <= params, name


# ---- a machine without hosts ------------------------------------------------------------------

def test_a_flat_machine_reports_no_cross_host_figures(run, case):
    # Without `host` blocks every device would count as its own host, and every round of a
    # switch-only machine as cross-host; the output says there are no hosts instead.
    path = case(RING4)
    code, out, _ = run("compare", path)
    assert code == 0
    lines = out.splitlines()
    # 6 rounds of one 64 MiB transfer (logical bytes 6 × 64 MiB), each 1 µs + 64 MiB / 100 GB/s
    # = 672.09 µs: 4.0325 ms; algbw 64 MiB / 4.0325 ms = 16.64 GB/s, busbw × 2(4-1)/4 = 24.96.
    assert lines[2].split() == ["x", "6", "-", "-", "384", "MiB", "4.0325", "ms", "16.64", "24.96",
                                "nic"]
    assert lines[3] == "hosts: none declared, so no cross-host figures (declare 'host' blocks)"
    code, out, _ = run("time", path)
    assert "  rounds            6\n" in out
    assert "  hosts             none declared, so nothing is counted as crossing hosts\n" in out
    assert "cross-host" not in out
    document = json.loads(run("time", path, "--json")[1])
    assert document["hosts"] == [] and document["schedules"][0]["rounds_cross_host"] == 6


def test_a_machine_with_hosts_keeps_its_cross_host_columns(run):
    code, out, _ = run("compare", SCHEDULES / "seed" / "nvlink_2x8.sched")
    assert code == 0 and "hosts: none declared" not in out
    assert out.splitlines()[2].split()[:4] == ["ring", "30", "30", "720"]


# ---- expect A = B without `within`: the same function of the params, not one value ----------

PCIE = (f'import "{SCHEDULES / "machines" / "pcie_2x4.sched"}"\n'
        f'import "{SCHEDULES / "lib" / "ring.sched"}"\n'
        "param V = 192 MiB\nallreduce V over ranks\nschedule ring = ring_allreduce(ranks)\n")
# On the PCIe machine the ring is 14*alpha + 14*Max(V/(8*B_L), V/(16*B_port), V/(8*B_slot)),
# with B_L = B_slot = 32 GB/s at the nominal point: a kink, where two regimes meet.


@pytest.mark.parametrize("formula, holds", [
    ("14 * alpha + 7 * V / (4 * B_slot)", True),      # the regime B_L >= B_slot
    ("14 * alpha + 7 * V / (4 * B_L)", True),         # the regime B_L <= B_slot, also at the kink
    ("14 * alpha + 14 * max(V / (8 * B_slot), V / (8 * B_L))", True),
    # Equal at the nominal point only: each wrong as a function of the params.
    ("14 * alpha + 7 * V / (2 * (B_L + B_slot))", False),        # the mean of the two links
    ("28 * alpha * V / (384 MiB) + 7 * V / (4 * B_slot)", False),  # 14 α only at V = 192 MiB
    # Min picks B_slot's term where Max picks B_L's and back: they agree on no open region.
    ("14 * alpha + 14 * min(V / (8 * B_slot), V / (8 * B_L))", False),
    ("11.021668 ms", True),   # a number: a value at the nominal point, exactly
    ("14 * 830 ns + 7 * V / (4 * 32 GB/s)", True),  # a function of V, the other params fixed
])
def test_an_exact_expect_compares_functions(tmp_path, formula, holds):
    from schedc.analysis.check import check_program
    path = write(tmp_path, "case.sched", PCIE + f"expect time(ring) = {formula}\n")
    (outcome,) = check_program(schedc.load(path)).outcomes
    assert outcome.found == "11.022 ms"  # every formula here agrees at the nominal point
    assert outcome.passed is holds, outcome.note
    assert outcome.note.startswith("equal at the nominal point, but not the same function") \
        is not holds


def test_a_wrong_formula_that_agrees_at_the_nominal_point_fails_the_check(run, tmp_path):
    # The seed's ring, NIC-bound: 30 α + 15 V/(8 B_N). Scaling by B_L/450 GB/s changes nothing at
    # the nominal point (B_L = 450 GB/s) and everything elsewhere.
    seed = (SCHEDULES / "seed" / "nvlink_2x8.sched").read_text().replace(
        '"../', f'"{SCHEDULES}/')
    path = write(tmp_path, "seed.sched", seed + "expect time(ring) = 30 * alpha + 15 * V / (8 * B_N)"
                 " * (B_L / (450 GB/s))\nexpect time(ring) = 30 * alpha + 15 * V / (8 * B_N)\n")
    code, out, _ = run("check", path)
    assert code == 1
    lines = out.splitlines()
    assert lines[-3].startswith(f"{path}:41: FAIL  expect time(ring) = 30 * alpha + 15 * V / "
                                "(8 * B_N) * (B_L / (450 GB/s))  (found 7.5746 ms vs 7.5746 ms; "
                                "equal at the nominal point, but not the same function")
    assert lines[-2].startswith(f"{path}:42: pass  expect time(ring) = 30 * alpha + 15 * V / (8 * B_N)")


def test_difference_near_decides_ties_by_a_point_inside_a_regime():
    import sympy

    from schedc.analysis.solve.identity import difference_near
    x, y, z = sympy.symbols("x y z", positive=True)
    at = {x: 1, y: 1, z: 1}  # every Max below ties here
    assert difference_near(sympy.Max(x, y), x, at) is None          # on the regime x >= y
    assert difference_near(sympy.Max(x, y, z), y, at) is None       # y >= x and y >= z: open
    assert difference_near(sympy.Max(x, y) + sympy.Min(x, y), x + y, at) is None
    # Max picking x needs x >= y, Min picking x needs x <= y: no open region, so no agreement.
    assert difference_near(sympy.Max(x, y), sympy.Min(x, y), at) != 0
    assert difference_near(sympy.Max(x, 2 * y), x, {x: 3, y: 1}) is None   # no tie: x wins
    assert difference_near(sympy.Max(x, 2 * y), 2 * y, {x: 3, y: 1}) == x - 2 * y
    assert difference_near(abs(x - y), x - y, {x: 2, y: 1}) is None


def test_json_when_a_schedule_fails_verification(run):
    # Not bad input but a refusal (exit 1): stdout still holds one JSON object, the error.
    path = Path(__file__).parent / "fixtures" / "broken" / "dropped.sched"
    code, out, err = run("time", path, "--json")
    (error,) = json.loads(out)["errors"]
    assert code == 1 and error["file"] is None and error["message"] == err.rstrip("\n")
    assert error["message"].startswith("schedc: not reporting on 'ring': it does not compute")

"""Data-flow verification: broken schedules are caught with precise counterexamples, on both
the exact and the fingerprint path; correct ones pass; time/compare refuse failures."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from conftest import MACHINES, ROOT, SCHEDULES, flat_machine, write

import schedc
from schedc.analysis.verify import dataflow, segments
from schedc.analysis.verify.counterexample import WrongResult
from schedc.analysis.verify.verdict import verify_schedule as verify_ir
from schedc.elaborate.loader import load_program

BROKEN = Path(__file__).parent / "fixtures" / "broken"
FIXTURES = sorted(p.stem for p in BROKEN.glob("*.sched"))

FLAT4 = f'import "{MACHINES / "flat_4.sched"}"\n'


def test_the_fixture_machines_are_the_flat_machine():
    for n in (4, 8):
        assert (MACHINES / f"flat_{n}.sched").read_text() == flat_machine(n)


def verify_schedule(program, name: str, **options):
    """Verify one result schedule of a program (the stage itself, not a session)."""
    return verify_ir(program.schedule(name), [d.name for d in program.topology.devices], **options)


def _verdicts(tmp_path, text: str, **options):
    program = load_program(write(tmp_path, "case.sched", text))
    return {r.name: verify_schedule(program, r.name, **options) for r in program.results}


def test_broken_fixtures_exist():
    assert FIXTURES == ["conflict", "copy_for_reduce", "dropped", "misplaced", "reduced_twice",
                        "wrong_destination", "wrong_part"]


@pytest.mark.parametrize("name", FIXTURES)
def test_broken_fixture_counterexample(run, monkeypatch, name):
    monkeypatch.chdir(ROOT)
    code, out, err = run("verify", f"tests/fixtures/broken/{name}.sched")
    assert (code, err) == (1, "")
    assert out == (BROKEN / f"{name}.out").read_text()


@pytest.mark.parametrize("name", FIXTURES)
def test_exact_and_fingerprint_paths_agree(name):
    program = load_program(BROKEN / f"{name}.sched")
    (result,) = program.results
    exact = verify_schedule(program, result.name, method="exact")
    for seed in (1, 2, None):
        fingerprint = verify_schedule(program, result.name, method="fingerprint", seed=seed)
        assert fingerprint.method == "fingerprint"
        assert fingerprint.failure == exact.failure
    assert exact.failure is not None


def test_dropped_transfer_names_the_missing_contributions():
    failure = verify_schedule(load_program(BROKEN / "dropped.sched"), "ring").failure
    assert isinstance(failure, WrongResult)
    assert (failure.rank, failure.region) == ("g[0]", (0, pytest.approx(0.25)))
    assert failure.missing == (("g[1]", 1), ("g[2]", 1))
    assert failure.duplicated == failure.unexpected == ()
    assert [(w.round, w.op, w.src, w.dst, w.span.line) for w in failure.writes] == [
        (3, "reduce", "g[3]", "g[0]", 13)]


def test_region_reduced_twice_is_a_duplicate():
    failure = verify_schedule(load_program(BROKEN / "reduced_twice.sched"), "ring").failure
    assert failure.duplicated == (("g[1]", 1),)
    assert dict(failure.holds)["g[1]"] == 2


def test_the_fingerprint_path_on_a_large_group(tmp_path):
    n = 256  # 256 ranks x 256 segments x 512 counts would be 33.6 M numbers: fingerprints
    text = flat_machine(n) + """allreduce V over ranks
schedule ring {
  for s in 0..254 round {
    for j in 0..255: if s != 100 or j != 7: reduce part((j - s - 1) % 256 of 256) from g[j] to g[(j + 1) % 256]
  }
  for s in 0..254 round {
    for j in 0..255: copy part((j - s) % 256 of 256) from g[j] to g[(j + 1) % 256]
  }
}
schedule good {
  for s in 0..254 round {
    for j in 0..255: reduce part((j - s - 1) % 256 of 256) from g[j] to g[(j + 1) % 256]
  }
  for s in 0..254 round {
    for j in 0..255: copy part((j - s) % 256 of 256) from g[j] to g[(j + 1) % 256]
  }
}
"""
    verdicts = _verdicts(tmp_path, text)
    assert verdicts["good"].ok and verdicts["good"].method == "fingerprint"
    assert verdicts["good"].false_pass_bits == 2 * (64 - 8)
    bad = verdicts["ring"]
    assert bad.method == "fingerprint"
    # Round 101 drops g[7]'s reduce of part (7 - 101) % 256 = 162 into g[8]: the 101
    # contributions that part had gathered (g[163..255], g[0..7]) never reach its owner
    # g[162], whose wrong part the all-gather then hands to everyone: g[0] is the first.
    failure = bad.failure
    assert failure.rank == "g[0]"
    assert failure.region == (Fraction(162, 256), Fraction(163, 256))
    missing = [name for name, _ in failure.missing]
    assert missing == [f"g[{i}]" for i in range(0, 8)] + [f"g[{i}]" for i in range(163, 256)]
    assert failure.duplicated == failure.unexpected == ()
    assert [(w.round, w.op, w.src) for w in failure.writes] == [(349, "copy", "g[255]"),
                                                                (93, "reduce", "g[255]")]


def test_sends_have_no_data_flow_meaning(tmp_path):
    verdicts = _verdicts(tmp_path, FLAT4 + """allreduce V over g
schedule sends {
  for s in 0..5 round { for j in 0..3: send V / 4 from g[j] to g[(j + 1) % 4] }
}
""")
    failure = verdicts["sends"].failure
    assert failure.rank == "g[0]" and failure.region == (0, 1)
    assert failure.holds == (("g[0]", 1),) and not failure.writes


def test_a_round_reads_before_it_writes(tmp_path):
    # Both ranks send what they held when the round began: a swap, and an exchange-reduce.
    verdicts = _verdicts(tmp_path, FLAT4 + """alltoall V over [g[0], g[1]]
schedule swap { round {
  copy part(1 of 2) from g[0] to g[1] into part(0 of 2)
  copy part(0 of 2) from g[1] to g[0] into part(1 of 2)
} }
allreduce V over [g[0], g[1]]
schedule exchange { round { reduce all from g[0] to g[1]; reduce all from g[1] to g[0] } }
""")
    assert verdicts["swap"].ok and verdicts["exchange"].ok


def test_many_reductions_into_one_place_in_one_round(tmp_path):
    verdicts = _verdicts(tmp_path, FLAT4 + """reduce V over g root g[0]
schedule direct { round { for j in 1..3: reduce all from g[j] to g[0] } }
schedule twice { round { for j in 1..3: reduce all from g[j] to g[0]; reduce all from g[1] to g[0] } }
""")
    assert verdicts["direct"].ok
    assert verdicts["twice"].failure.duplicated == (("g[1]", 1),)
    assert len(verdicts["twice"].failure.writes) == 3  # the last three of the four writes


def test_reducing_data_from_another_position_is_caught(tmp_path):
    verdicts = _verdicts(tmp_path, FLAT4 + """allreduce V over [g[0], g[1]]
schedule shifted {
  round {
    reduce part(0 of 2) from g[0] to g[1] into part(1 of 2)
    reduce part(1 of 2) from g[1] to g[0] into part(0 of 2)
  }
  round {
    copy part(1 of 2) from g[1] to g[0]
    copy part(0 of 2) from g[0] to g[1]
  }
}
""")
    failure = verdicts["shifted"].failure
    assert (failure.rank, failure.region) == ("g[0]", (0, Fraction(1, 2)))
    assert failure.holds == (("g[0]'s [0, 1/2) (part 0 of 2)", 1),
                             ("g[1]'s [1/2, 1) (part 1 of 2)", 1))
    assert failure.missing == (("g[1]'s [0, 1/2) (part 0 of 2)", 1),)
    assert failure.unexpected == (("g[1]'s [1/2, 1) (part 1 of 2)", 1),)


def test_copy_and_reduce_into_one_place_conflict(tmp_path):
    verdicts = _verdicts(tmp_path, FLAT4 + """allreduce V over g
schedule mixed { round { copy part(0 of 2) from g[0] to g[1]; reduce all from g[2] to g[1] } }
""")
    conflict = verdicts["mixed"].failure
    assert (conflict.round, conflict.rank, conflict.region) == (1, "g[1]", (0, 0.5))
    assert [(w.op, w.src) for w in conflict.writes] == [("copy", "g[0]"), ("reduce", "g[2]")]


def test_reduce_scatter_follows_the_collectives_rank_order(tmp_path):
    text = FLAT4 + """schedule rs(g) {
  for s in 0..2 round { for j in 0..3: reduce part((j - s - 1) % 4 of 4) from g[j] to g[(j + 1) % 4] }
}
reduce_scatter V over g
schedule same = rs(g)
schedule reversed = rs([g[3], g[2], g[1], g[0]])
"""
    verdicts = _verdicts(tmp_path, text)
    assert verdicts["same"].ok
    failure = verdicts["reversed"].failure
    assert (failure.rank, failure.region) == ("g[0]", (0, 0.25))  # g[0] ends with part 3


def test_verify_program_is_the_api_for_check():
    session = schedc.load(SCHEDULES / "seed" / "nvlink_2x8.sched")
    verdicts = schedc.verify(session)
    assert [(v.name, v.ok, v.method) for v in verdicts] == [
        ("ring", True, "exact"), ("interleaved", True, "exact"), ("hierarchical", True, "exact")]
    assert [v.name for v in schedc.verify(session, ("hierarchical",))] == ["hierarchical"]


def test_every_shipped_file_verifies(run, monkeypatch, reuse_shipped):
    monkeypatch.chdir(ROOT)
    code, out, err = run("verify", "schedules")
    assert (code, err) == (0, "")
    assert "FAILS" not in out
    assert "schedules/algorithms/flat_16.sched:\n" in out
    assert "  ring: allreduce over 1024 ranks: verified (2,046 rounds, 2,095,104 transfers; " \
           "fingerprints; a wrong result passes with probability < 2^-108)" in out


def test_verify_json(run, monkeypatch):
    monkeypatch.chdir(ROOT)
    code, out, _ = run("verify", "--json", "tests/fixtures/broken/dropped.sched")
    assert code == 1
    document = json.loads(out)
    assert document["schema"] == "schedc.verify/1"
    (entry,) = document["files"]
    (schedule,) = entry["schedules"]
    assert set(schedule) == {"name", "collective", "ranks", "ok", "method", "false_pass_log2",
                             "rounds", "transfers", "segments", "counterexample"}
    example = schedule["counterexample"]
    assert example["kind"] == "wrong_result"
    assert (example["rank"], example["region"]) == ("g[0]", ["0", "1/4"])
    assert example["missing"] == [{"contribution": "g[1]", "count": 1},
                                  {"contribution": "g[2]", "count": 1}]
    assert example["last_writes"][0]["at"] == "tests/fixtures/broken/dropped.sched:13:41"


def test_time_and_compare_refuse_a_failing_schedule(run, monkeypatch):
    monkeypatch.chdir(ROOT)
    path = "tests/fixtures/broken/dropped.sched"
    for command in (["time", path], ["compare", path]):
        code, out, err = run(*command)
        assert (code, out) == (1, "")
        assert err.startswith("schedc: not reporting on 'ring': it does not compute its collective "
                              "(--no-verify reports on it anyway)\nring: allreduce over 4 ranks: FAILS\n")
        assert "missing      g[1], g[2]" in err
        code, out, err = run(*command, "--no-verify")
        assert code == 0 and "ring" in out


def test_verify_a_directory_goes_on_after_bad_input(run, tmp_path):
    write(tmp_path, "bad.sched", "param V = 1 MiB\nlet x = V + 1 us\n")
    write(tmp_path, "good.sched", FLAT4 + "allreduce V over g\n"
          "schedule exchange { round { for j in 0..3: copy all from g[j] to g[(j + 1) % 4] } }\n")
    code, out, err = run("verify", tmp_path)
    assert code == 2
    assert "bad.sched:2:9: error: cannot add a size (bytes) and a duration (seconds)" in err
    assert "good.sched:\n  exchange: allreduce over 4 ranks: FAILS" in out


def test_directory_takes_no_schedule_option(run, tmp_path):
    code, _, err = run("verify", tmp_path, "-s", "x")
    assert code == 2 and "--schedule and --set need one FILE, not a directory" in err


def test_verification_refuses_unbounded_state(run, monkeypatch):
    monkeypatch.setattr(segments, "MAX_CELLS", 8)
    monkeypatch.chdir(ROOT)
    code, out, err = run("verify", "tests/fixtures/broken/dropped.sched")
    assert (code, out) == (2, "")
    assert err.startswith("tests/fixtures/broken/dropped.sched:11:1: error: verifying this needs "
                          "4 ranks × 4 pieces of the buffer; the limit is 8 in all")


def test_cuts_follow_data_moved_by_into(tmp_path):
    # The swap moves [1/2, 1) onto [0, 1/2), where 1/3 is a cut: so 5/6 must be one too.
    program = load_program(write(tmp_path, "case.sched", FLAT4 + """alltoall V over [g[0], g[1]]
schedule swap_then_clobber {
  round {
    copy part(1 of 2) from g[0] to g[1] into part(0 of 2)
    copy part(0 of 2) from g[1] to g[0] into part(1 of 2)
  }
  copy part(0 of 3) from g[1] to g[0]
}
"""))
    schedule = program.schedule("swap_then_clobber")
    geo = segments.geometry(schedule, len(program.topology.devices))
    assert [Fraction(int(b), geo.scale) for b in geo.bounds] == [
        0, Fraction(1, 3), Fraction(1, 2), Fraction(5, 6), 1]
    failure = verify_schedule(program, "swap_then_clobber").failure
    assert (failure.rank, failure.region) == ("g[0]", (0, Fraction(1, 3)))
    # g[1]'s [0, 1/3) holds what the swap brought: g[0]'s [1/2, 5/6).
    assert failure.holds == (("g[0]'s [1/2, 5/6)", 1),)
    assert failure.expected == (("g[0]'s [0, 1/3) (part 0 of 3)", 1),)


@pytest.mark.parametrize("method", ["exact", "fingerprint"])
def test_uninitialised_data_of_different_ranks_is_told_apart(tmp_path, method):
    program = load_program(write(tmp_path, "case.sched", FLAT4 + """allgather V over g
schedule junk { round {
  copy part(1 of 4) from g[2] to g[0]
  copy part(2 of 4) from g[3] to g[0]
} }
"""))
    failure = verify_schedule(program, "junk", method=method).failure
    assert (failure.rank, failure.region) == ("g[0]", (Fraction(1, 4), Fraction(1, 2)))
    assert failure.holds == (("uninitialised data of g[2]", 1),)
    assert failure.missing == (("g[1]", 1),)


# ---- a transfer the machine cannot carry is the verdict's cause. Before, verify ran the data
# flow alone: it passed a schedule with no route, or (here) blamed the data that never arrived:
# "lonely ends with the wrong [0, 1) (all) of the buffer ... missing g[0], g[1]".

NO_ROUTE = """\
param V = 1 MiB
topology {
  gpu g[2]
  gpu lonely
  switch s
  link g[i] <-> s bw 10 GB/s for i in 0..1
}
allreduce V over [g[0], g[1], lonely]
schedule x {
  round { reduce all from g[1] to g[0]; reduce all from lonely to g[0] }
  round { copy all from g[0] to g[1]%s }
}
"""


@pytest.mark.parametrize("last", ["", "; copy all from g[0] to lonely"])  # data flow wrong, right
def test_a_transfer_with_no_route_is_the_cause(tmp_path, run, last):
    path = write(tmp_path, "route.sched", NO_ROUTE % last)
    code, out, err = run("verify", path)
    assert (code, err) == (1, "")
    # the first such transfer in round order: round 1's second, at line 10, column 41
    assert out == ("x: allreduce over 3 ranks: FAILS\n"
                   "  no route from lonely to g[0]: the machine cannot carry this transfer\n"
                   f"    round 1: reduce [0, 1) (all) from lonely to g[0]   at {path}:10:41\n"
                   "    note: lonely is linked to: nothing\n")
    code, out, _ = run("verify", path, "--json")
    example = json.loads(out)["files"][0]["schedules"][0]["counterexample"]
    assert code == 1 and example == {
        "kind": "no_route", "round": 1, "op": "reduce", "src": "lonely", "dst": "g[0]",
        "region": ["0", "1"], "at": f"{path}:10:41", "reason": "no route from lonely to g[0]",
        "notes": ["lonely is linked to: nothing"]}
    # time, which routes while lowering, still refuses it as bad input (exit 2), as before
    code, out, err = run("time", path)
    assert (code, out) == (2, "") and err.startswith(f"{path}:1") and ": error: no route from " in err


def test_the_first_unrouted_transfer_of_a_loop_of_rounds_is_found(tmp_path, run):
    # g[2] is linked to nothing: the ring's first transfer into it is in round 1 (r = 0), that of
    # i = 1, g[1] -> g[2], part (1 - 0) % 4 = 1 of 4; `copy` starts at column 41 of line 9.
    path = write(tmp_path, "ring.sched", """\
param V = 1 MiB
topology {
  gpu g[4]
  switch s
  link g[i] <-> s bw 10 GB/s for i in [0, 1, 3]
}
allreduce V over g
schedule x {
  for r in 0..5: round { for i in 0..3: copy part((i - r) % 4 of 4) from g[i] to g[(i + 1) % 4] }
}
""")
    code, out, _ = run("verify", path)
    assert code == 1 and out.splitlines()[1:3] == [
        "  no route from g[1] to g[2]: the machine cannot carry this transfer",
        f"    round 1: copy [1/4, 1/2) (part 1 of 4) from g[1] to g[2]   at {path}:9:41"]

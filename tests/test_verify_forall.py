"""`schedc verify FILE --for-all PARAM`: proved for the shipped ring and hierarchical families,
refuted (a formula, and the smallest instance confirmed by the ordinary verifier) for broken
ones, unknown outside the affine class (with instances verified), and its errors."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from conftest import SCHEDULES

import schedc
from schedc.errors import SchedcError, UsageError

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "forall"
HOSTS = SCHEDULES / "seed" / "nvlink_hosts.sched"


def _ordinary(path, param: str, n: int, name: str) -> schedc.Verdict:
    session = schedc.load(path, [f"{param}={n}"])
    return next(v for v in schedc.verify(session, [name]))


def test_ring_and_hierarchical_proved_for_every_number_of_hosts():
    results = schedc.verify_for_all(HOSTS, "hosts")
    assert [(r.schedule, r.status, r.start) for r in results] == [
        ("ring", "proved", 1), ("hierarchical", "proved", 1)]
    for r in results:
        assert "isl" in r.argument and "hosts >= 1" in r.argument
        assert r.counterexample is None and r.instances == ()
        assert r.nominal is not None and r.nominal.ok
    # Independently of the proof: the ordinary verifier agrees where it can run.
    for n in (1, 3, 5):
        assert all(v.ok for v in schedc.verify(schedc.load(HOSTS, [f"hosts={n}"])))


def test_broken_ring_refuted_with_a_formula_and_the_smallest_instance():
    (r,) = schedc.verify_for_all(FIXTURES / "broken_ring.sched", "hosts")
    assert r.status == "refuted"
    c = r.counterexample
    assert c is not None and c.kind == "missing" and c.smallest == 1
    # The reduce-scatter never sends from the last rank to the first, so part 0 (which the
    # first rank would end with) never leaves node[0].g[0]: it misses node[0].g[1]'s data,
    # at every size.
    assert c.formula == ("for every hosts >= 1, node[0].g[0] misses the contribution of "
                         "node[0].g[1] to part(0 of 8*hosts) after the last round")
    assert not c.instance.ok and len(c.instance.schedule.collective.ranks) == 8
    # The formula at a size that was not compiled for the refutation: the ordinary verifier's
    # counterexample at hosts = 3 is that rank and part, with that contribution missing.
    failure = _ordinary(FIXTURES / "broken_ring.sched", "hosts", 3, "ring").failure
    assert failure.rank == "node[0].g[0]" and failure.region == (0, Fraction(1, 24))
    assert "node[0].g[1]" in dict(failure.missing)


def test_refutation_from_a_later_start():
    (r,) = schedc.verify_for_all(FIXTURES / "broken_ring.sched", "hosts", start=3)
    assert r.status == "refuted" and r.start == 3 and r.counterexample.smallest == 3
    assert r.counterexample.formula.startswith("for every hosts >= 3, ")
    assert len(r.counterexample.instance.schedule.collective.ranks) == 24


def test_conflicts_and_duplicates_refuted():
    ring, doubled, twice = schedc.verify_for_all(FIXTURES / "twice.sched", "hosts")
    assert ring.status == "refuted" and ring.counterexample.kind == "conflict"
    assert "two statements make the same copy" in ring.counterexample.formula
    assert type(ring.counterexample.instance.failure).__name__ == "Conflict"
    assert doubled.status == "refuted" and doubled.counterexample.kind == "duplicate"
    assert "more than once" in doubled.counterexample.formula
    assert dict(doubled.counterexample.instance.failure.duplicated)
    assert twice.status == "refuted" and twice.counterexample.kind == "duplicate"
    assert dict(twice.counterexample.instance.failure.duplicated)


def test_xor_family_unknown_with_instances_listed(run):
    (r,) = schedc.verify_for_all(FIXTURES / "recursive_doubling.sched", "hosts")
    assert r.status == "unknown" and r.counterexample is None
    assert "outside the affine class" in r.reason and "'if'" in r.reason
    assert r.reason_span.source.path.endswith("recursive.sched") and r.reason_span.line == 19
    assert [i.n for i in r.instances] == [1, 2, 3, 4]
    assert [i.verdict.ok if i.verdict else None for i in r.instances] == [True, True, None, True]
    assert "power-of-two" in r.instances[2].error.message  # 24 ranks
    code, out, _ = run("verify", FIXTURES / "recursive_doubling.sched", "--for-all", "hosts")
    assert code == 0 and "unknown" in out and "hosts = 3: not a valid size" in out
    code, _, _ = run("verify", FIXTURES / "recursive_doubling.sched", "--for-all", "hosts",
                     "--require-proof")
    assert code == 1


MACHINE = """param alpha = 1 us
param B = 25 GB/s
param V = 1 MiB
param p = 4
topology {
  gpu g[p]
  switch sw
  link g[i] <-> sw bw B for i in 0..p-1
}
let ranks = [g[i] for i in 0..p-1]
allreduce V over ranks
"""


def _family(tmp_path, body: str) -> Path:
    path = tmp_path / "family.sched"
    path.write_text(MACHINE + "schedule s {\n" + body + "\n}\n")
    return path


@pytest.mark.parametrize("body, line, words", [
    ("  if p > 2 {\n    round { reduce all from g[0] to g[1] }\n  }", 13, "'if'"),
    ("  for s in 0..min(p, 3)-2 round { reduce all from g[0] to g[1] }", 13, "call"),
    ("  for s in 0..p-2 round {\n    for j in 0..p-1: reduce part((j * s) % p of p) from g[j] "
     "to g[(j + 1) % p]\n  }", 14, "product"),
    ("  round { copy part(0 of 2) from g[0] to g[1] into part(1 of 2) }", 13, "'into'"),
])
def test_outside_the_affine_class_names_the_line(tmp_path, body, line, words):
    (r,) = schedc.verify_for_all(_family(tmp_path, body), "p", start=2)
    # Outside the class: the instances are verified instead; refuted exactly when one fails.
    failed = any(i.verdict is not None and not i.verdict.ok for i in r.instances)
    assert r.status == ("refuted" if failed else "unknown")
    assert r.reason_span.line == line and words in r.reason
    assert [i.n for i in r.instances] == [2, 3, 4, 5]


RING = """  for s in 0..p-{last} round {{
    for j in 0..p-1: {op} part((j - s - {shift}) % p of p) from g[j] to g[(j + {step}) % p]
  }}
  for s in 0..p-2 round {{
    for j in 0..p-1: copy part((j - s) % p of p) from g[j] to g[(j + 1) % p]
  }}"""


@pytest.mark.parametrize("last, op, shift, step", [
    (2, "reduce", 1, 1),  # the ring all-reduce
    (2, "reduce", 0, 1), (2, "reduce", 2, 1), (2, "copy", 1, 1), (3, "reduce", 1, 1),
    (1, "reduce", 1, 1), (2, "reduce", 1, 2),
])
def test_answers_agree_with_the_ordinary_verifier(tmp_path, last, op, shift, step):
    """Mutants of the ring: proved only if every instance verifies; refuted only if the
    smallest instance named fails (and the verifier then finds it too)."""
    path = _family(tmp_path, RING.format(last=last, op=op, shift=shift, step=step))
    (r,) = schedc.verify_for_all(path, "p", start=2)
    verdicts = {}
    for n in range(2, 7):
        try:
            verdicts[n] = _ordinary(path, "p", n, "s").ok
        except SchedcError:  # the elaborator refuses it at this size
            verdicts[n] = None
    if r.status == "proved":
        assert all(verdicts.values())
    elif r.status == "refuted":
        assert verdicts[r.counterexample.smallest] is False
        assert all(verdicts[n] is not False for n in range(2, r.counterexample.smallest))
    else:
        assert r.status == "unknown"
    if step == 2:  # at p = 2, a transfer from a rank to itself: the elaborator refuses it
        assert "to itself" in r.reason and verdicts[2] is None
    # The ring, and the ring with one round too many (it reduces each complete part into its
    # successor's once more, which the all-gather's copies then overwrite), are right.
    assert (r.status == "proved") == ((last, op, shift, step) in ((2, "reduce", 1, 1),
                                                                 (1, "reduce", 1, 1)))


def test_json_is_verify_2_with_for_all(run):
    code, out, _ = run("verify", HOSTS, "--for-all", "hosts", "-s", "ring", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["schema"] == "schedc.verify/2" and doc["errors"] == []
    (entry,) = doc["files"][0]["schedules"]
    assert entry["name"] == "ring" and entry["ok"] is True and entry["ranks"] == 16
    assert set(entry["for_all"]) == {"param", "from", "status", "argument"}
    assert entry["for_all"]["status"] == "proved" and entry["for_all"]["from"] == 1
    code, out, _ = run("verify", FIXTURES / "broken_ring.sched", "--for-all", "hosts", "--json")
    counter = json.loads(out)["files"][0]["schedules"][0]["for_all"]["counterexample"]
    assert code == 1 and counter["smallest"] == 1 and counter["kind"] == "missing"
    assert counter["instance"]["ok"] is False and counter["instance"]["ranks"] == 8
    code, out, _ = run("verify", FIXTURES / "recursive_doubling.sched", "--for-all", "hosts",
                       "--json")
    unknown = json.loads(out)["files"][0]["schedules"][0]["for_all"]
    assert code == 0 and unknown["status"] == "unknown" and unknown["at"]["line"] == 19
    assert [i["n"] for i in unknown["instances"]] == [1, 2, 3, 4]
    assert unknown["instances"][2]["verdict"] is None and unknown["instances"][2]["error"]


@pytest.mark.parametrize("args, where, message", [
    (("--for-all", "host"), "--for-all:1:1", "no param named 'host'; did you mean 'hosts'?"),
    (("--for-all", "V"), "nvlink_hosts.sched:11:1", "'V' is not a structural param"),
    (("--for-all", "hosts", "--from", "0"), "--from:1:1",
     "--from 0 is below the family's smallest valid size, hosts = 1"),
])
def test_errors_are_positioned_exit_2(run, args, where, message):
    code, out, err = run("verify", HOSTS, *args)
    assert code == 2 and out == "" and where in err and message in err and "^" in err


def test_from_without_for_all_is_refused(run):
    code, _, err = run("verify", HOSTS, "--from", "2")
    assert code == 2 and "--for-all" in err
    with pytest.raises(UsageError, match="directory"):
        schedc.verify_for_all(SCHEDULES / "seed", "hosts")


PARTS = """  for s in 0..p-2 round {{
    for j in 0..p-1: {op} part((j - s{shift}) % p of p) from g[j] to g[(j + 1) % p]
  }}"""


@pytest.mark.parametrize("kind, op, shift, right", [
    ("allgather", "copy", "", True),  # the ring all-gather
    ("allgather", "copy", " - 1", False), ("allgather", "reduce", "", False),
    ("reduce_scatter", "reduce", " - 1", True),  # the ring reduce-scatter
    ("reduce_scatter", "reduce", "", False), ("reduce_scatter", "copy", " - 1", False),
])
def test_allgather_and_reduce_scatter_agree_with_the_ordinary_verifier(tmp_path, kind, op,
                                                                       shift, right):
    path = _family(tmp_path, PARTS.format(op=op, shift=shift))
    path.write_text(path.read_text().replace("allreduce V over ranks", f"{kind} V over ranks"))
    (r,) = schedc.verify_for_all(path, "p", start=2)
    verdicts = {n: _ordinary(path, "p", n, "s").ok for n in range(2, 7)}
    assert r.status == ("proved" if right else "refuted")
    if right:
        assert all(verdicts.values())
    else:
        assert r.counterexample.kind != "instance" and verdicts[r.counterexample.smallest] is False

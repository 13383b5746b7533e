"""Round loops kept as series (`model.ir.Series`): the same rounds, loads, verdicts and
counterexamples as the rounds written out one by one, which `for v in R { round {...} }`
makes."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import write
from test_language import MACHINE, rounds_of

from schedc.analysis.verify.verdict import verify_schedule
from schedc.cost.lower import lower
from schedc.elaborate.loader import load_program
from schedc.model.ir import Rounds, Series
from schedc.render.verdict import failure_lines, verdict_text

# Each case: the loops over rounds of a schedule, as (header, body); compiled as written
# (`for t in R round {...}`: a series) and with each round written out (`for t in R { round
# {...} }`: rounds one by one).
CASES = {
    # every round alike in shape: one shape, found by array work
    "ring": [("s in 0..6", "for j in 0..7: reduce part((j - s - 1) % 8 of 8) from g[j] to g[(j + 1) % 8]"),
             ("s in 0..6", "for j in 0..7: copy part((j - s) % 8 of 8) from g[j] to g[(j + 1) % 8]")],
    # a ring's pairs in every round, but parts that no renaming of the ranks carries along
    "skewed": [("s in 0..6", "for j in 0..7: reduce part((j*j + s) % 8 of 8) from g[j] to g[(j + 1) % 8]")],
    # rounds of as many transfers but different pairs: several shapes, in order
    "pairs": [("t in 0..5", "copy all from g[t % 3] to g[7 - t % 2]\n"
                            "copy part(t % 4 of 4) from g[6] to g[t % 5]")],
    # rounds of different sizes, some empty, two statements: no array shortcut
    "uneven": [("t in 0..7", "for j in 0..t - 1: if j % 3 != 2: copy part(j of 8) from g[j] to g[(j + t) % 8]\n"
                             "if t == 5: reduce all from g[1] to g[2]")],
}


def _compiled(tmp_path, case: str, series: bool):
    loops = [f"for {header} round {{\n{body}\n}}\n" if series else
             f"for {header} {{\nround {{\n{body}\n}}\n}}\n" for header, body in CASES[case]]
    directory = tmp_path / ("series" if series else "rounds")
    directory.mkdir(exist_ok=True)
    path = write(directory, "case.sched", MACHINE + "schedule x {\n" + "".join(loops) + "}\n")
    program = load_program(path)
    return program, program.schedule("x")


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_series_is_the_rounds_written_out(tmp_path, case):
    program, series = _compiled(tmp_path, case, series=True)
    _, explicit = _compiled(tmp_path, case, series=False)
    assert any(isinstance(p, Series) for p in series.rounds.parts)
    assert not any(isinstance(p, Series) for p in explicit.rounds.parts)
    assert rounds_of(program, series) == rounds_of(program, explicit)
    assert len(series.rounds) == len(explicit.rounds)
    assert series.transfer_count == explicit.transfer_count
    a, b = lower(series, program.topology), lower(explicit, program.topology)
    for field in ("shape_of", "shape", "resource", "amount", "shape_cross"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    # By hand: the ring's rounds all move 1/8 from g[j] to g[j+1]; the pairs' 6 rounds all
    # differ (sources t % 3 and 6, destinations 7 - t % 2 and t % 5).
    assert len(set(a.shape_of.tolist())) == {"ring": 1, "skewed": 1, "pairs": 6}.get(case, len(a.shape_of))
    names = [d.name for d in program.topology.devices]
    assert _words(verify_schedule(series, names)) == _words(verify_schedule(explicit, names))


def _words(verdict) -> list[str]:
    """A verdict's text, but where it points in the file (the two files' lines differ)."""
    lines = [verdict_text(verdict), *(failure_lines(verdict.failure) if verdict.failure else [])]
    return [re.sub(r"at \S+case\.sched:\d+:\d+", "at <file>", line) for line in lines]


def test_rows_that_hash_alike_are_told_apart(tmp_path, monkeypatch):
    """With a hash that makes every row collide, the pairs' 6 distinct rounds are still 6."""
    import schedc.cost.lower as lowering
    monkeypatch.setattr(lowering, "row_weights", lambda width: np.zeros(width, np.uint64))
    program, series = _compiled(tmp_path, "pairs", series=True)
    assert len(set(lower(series, program.topology).shape_of.tolist())) == 6


def test_the_uneven_case_counts_what_it_should(tmp_path):
    # By hand: round t has transfers for j < t with j % 3 != 2, plus one in round 5; round 0
    # (and no other) is empty and dropped.
    program, series = _compiled(tmp_path, "uneven", series=True)
    per_round = [sum(1 for j in range(t) if j % 3 != 2) + (t == 5) for t in range(8)]
    assert [len(r) for r in series.rounds] == [n for n in per_round if n]
    assert lower(series, program.topology).rounds == 7


def test_a_broken_series_fails_with_the_same_counterexample(tmp_path):
    """The ring's last all-gather round dropped: the series and the rounds written out report
    the same wrong cell, in the same words."""
    program, series = _compiled(tmp_path, "ring", series=True)
    _, explicit = _compiled(tmp_path, "ring", series=False)
    names = [d.name for d in program.topology.devices]
    texts = []
    for schedule in (series, explicit):
        cut = Rounds([tuple(schedule.rounds[:-1])])
        broken = type(schedule)(schedule.name, schedule.collective, cut, schedule.span)
        verdict = verify_schedule(broken, names)
        assert not verdict.ok
        texts.append(_words(verdict))
    assert texts[0] == texts[1]


def test_empty_rounds_of_a_series_keep_their_place_in_parallel(tmp_path):
    """Branch a's first two rounds are empty, so b's rounds 0 and 1 run alone and its round 2
    runs with a's third (by hand: rounds of 1, 1, 2, 1 transfers)."""
    body = ("schedule x {\n parallel {\n  for t in 0..3 round {\n   if t >= 2: copy all from g[0] to g[t]\n"
            "  }\n  for t in 0..2 {\n   round {\n    copy all from g[4] to g[5 + t]\n   }\n  }\n }\n}\n")
    program = load_program(write(tmp_path, "case.sched", MACHINE + body))
    schedule = program.schedule("x")
    shown = rounds_of(program, schedule)
    assert [len(r) for r in shown] == [1, 1, 2, 1]
    assert ("copy", "g[0]", "g[2]") in [t[:3] for t in shown[2]]
    assert ("copy", "g[4]", "g[7]") in [t[:3] for t in shown[2]]


def test_rounds_read_as_a_sequence(tmp_path):
    program, series = _compiled(tmp_path, "ring", series=True)
    rounds = series.rounds
    assert len(rounds) == 14
    assert rounds_of(program, type(series)(series.name, series.collective, (rounds[-1],),
                                          series.span)) == rounds_of(program, type(series)(
        series.name, series.collective, (rounds[13],), series.span))
    assert isinstance(rounds[2:5], tuple) and len(rounds[2:5]) == 3
    assert len(rounds[:3] + rounds) == 17 and len(rounds + rounds[:1]) == 15
    assert len((rounds[0],) + rounds) == 15
    with pytest.raises(IndexError):
        rounds[14]
    assert len(list(series.rounds.batches())) == 2  # the two series' batches, whole


def test_parallel_series_of_one_length_stay_one_series(tmp_path):
    """Two branches of 3 rounds each, zipped: one series of both branches' batches, the same
    rounds as the rounds written out (by hand: 3 rounds of 4 + 4 transfers)."""
    def text(series: bool) -> str:
        loop = ("for s in 0..2 round {\n for j in 0..3: copy part(s of 4) from g[4*h + j] "
                "to g[4*h + (j + 1) % 4]\n }")
        if not series:
            loop = loop.replace(" round {\n", " {\n round {\n") + "\n }"
        return MACHINE + f"schedule x {{\n parallel for h in 0..1 {{\n {loop}\n }}\n}}\n"

    compiled = []
    for series in (True, False):
        directory = tmp_path / str(series)
        directory.mkdir()
        program = load_program(write(directory, "case.sched", text(series)))
        compiled.append((program, program.schedule("x")))
    (program, a), (_, b) = compiled
    (part,) = a.rounds.parts
    assert isinstance(part, Series) and len(part.batches) == 2
    assert [len(r) for r in a.rounds] == [8, 8, 8]
    assert rounds_of(program, a) == rounds_of(program, b)


def _loop(header: str, body: str, series: bool) -> str:
    return (f"for {header} round {{\n{body}\n}}" if series else
            f"for {header} {{\nround {{\n{body}\n}}\n}}")


# Compositions around round loops, each with its loops as series or written out round by
# round: iterations left empty by an `if` inside `parallel` next to explicit rounds and loops
# of other lengths, sends and `into` in loop bodies, a round written out next to a series of
# the same shape, and `parallel for`s of loops of unequal lengths (rounds one by one) and of
# equal lengths (one series).
COMPOSITIONS = {
    "gaps": lambda s: "parallel {\n" + _loop("t in 0..5", "if t % 2 == 0: copy part(0 of 8) from g[0] to g[t + 1]", s)
    + "\nfor u in 0..1 { round { copy part(2 of 8) from g[2] to g[(u + 3) % 8] } }\n"
    + _loop("t in 0..2", "copy part(5 of 8) from g[5] to g[(t + 6) % 8]", s)
    + "\nround { send 1 MiB from g[7] to g[0] }\n}\n"
    + _loop("t in 0..4", "if t > 9: copy part(1 of 8) from g[1] to g[2]", s) + "\n"
    + _loop("t in 0..3", "if t == 1 or t == 3: copy part(1 of 8) from g[1] to g[t + 4]", s) + "\n",
    "sends_into": lambda s: _loop("t in 0..6", "send 1 MiB from g[t] to g[(t + 3) % 8]\n"
                                  "for j in 0..7: copy part((j - t) % 8 of 8) from g[j] to g[(j + 1) % 8]"
                                  " into part((j - t) % 8 of 8)", s) + "\n",
    "shared_shapes": lambda s: "round { copy part(0 of 8) from g[0] to g[1] }\n"
    + _loop("t in 0..5", "copy part(t % 2 of 8) from g[t % 2] to g[t % 2 + 1]", s)
    + "\nround { copy part(1 of 8) from g[1] to g[2] }\n",
    "unequal": lambda s: "parallel for h in 0..3: "
    + _loop("t in 0..h", "copy part(h of 8) from g[h] to g[(h + t + 1) % 8]", s)
    + "\nparallel for h in 4..7: "
    + _loop("t in 0..2", "copy part(h of 8) from g[h] to g[(h + t + 1) % 8]", s) + "\n",
    # branches of two loops each, of the same lengths (two series of both branches' batches),
    # with a send beside the copies in every round
    "sequences": lambda s: "parallel for h in 0..1 {\n"
    + _loop("t in 0..2", "send 1 MiB from g[4*h] to g[4*h + 3]\n"
            "for j in 0..3: copy part(4*h + (j - t) % 4 of 8) from g[4*h + j] to g[4*h + (j + 1) % 4]", s)
    + "\n" + _loop("t in 0..1", "copy part(4*h + t of 8) from g[4*h + t] to g[4*h + t + 2]", s) + "\n}\n",
}


@pytest.mark.parametrize("case", sorted(COMPOSITIONS))
def test_compositions_keep_every_transfer_in_order(tmp_path, case):
    """Not only the same transfers per round: the same ones in the same order (which
    listings, MSCCL XML and counterexamples show), the same shapes and the same verdict."""
    compiled = []
    for series in (True, False):
        directory = tmp_path / str(series)
        directory.mkdir()
        text = MACHINE.replace("allreduce", "allgather") + "schedule x {\n" + COMPOSITIONS[case](series) + "}\n"
        program = load_program(write(directory, "case.sched", text))
        compiled.append((program, program.schedule("x")))
    (program, a), (_, b) = compiled
    assert any(isinstance(p, Series) for p in a.rounds.parts)
    assert not any(isinstance(p, Series) for p in b.rounds.parts)

    def listed(schedule) -> list[list[tuple]]:
        return [[(t.op, t.src, t.dst, t.region, t.into, t.bytes) for t in r.transfers()]
                for r in schedule.rounds]
    assert listed(a) == listed(b)
    la, lb = lower(a, program.topology), lower(b, program.topology)
    for field in ("shape_of", "shape", "resource", "amount", "shape_cross"):
        assert np.array_equal(getattr(la, field), getattr(lb, field)), field
    names = [d.name for d in program.topology.devices]
    assert _words(verify_schedule(a, names)) == _words(verify_schedule(b, names))


def test_blocks_of_a_series_are_its_rounds_blocks(tmp_path):
    """Verification reads a series whose batches give every round as many transfers straight
    from the batches' arrays: round by round the same rows (endpoints, segments, copies, each
    transfer's batch and place in it) as the rounds written out give."""
    from schedc.analysis.verify.segments import geometry
    from schedc.analysis.verify.renaming import blocks

    compiled = []
    for series in (True, False):
        directory = tmp_path / str(series)
        directory.mkdir()
        text = (MACHINE.replace("allreduce", "allgather") + "schedule x {\n"
                + COMPOSITIONS["sequences"](series) + "}\n")
        program = load_program(write(directory, "case.sched", text))
        compiled.append(program.schedule("x"))
    a, b = compiled
    assert [len(p.batches) for p in a.rounds.parts] == [4, 2]  # (send, copies) × 2; copies × 2
    devices = len(program.topology.devices)
    geo = geometry(a, devices)

    def rows(schedule) -> list[tuple]:
        out = []
        for bl in blocks(schedule.rounds, geo):
            for r in range(bl.rounds):
                out.append((bl.start + r, *(tuple(x[r].tolist()) for x in (bl.src, bl.dst, bl.first, bl.end)),
                            tuple(bl.copy.tolist()), tuple(bl.batch.tolist()), tuple(bl.transfer.tolist())))
        return out
    assert rows(a) == rows(b)
    # By hand: rounds 0-2 hold 2·4 copies each, in the batches after each branch's send (places
    # 1 and 3 of the round); rounds 3-4 one copy per branch.
    assert [r[0] for r in rows(a)] == [0, 1, 2, 3, 4]
    assert rows(a)[0][6] == (1,) * 4 + (3,) * 4 and rows(a)[3][6] == (0, 1)


@pytest.mark.parametrize("case", ["ring", "skewed"])
def test_a_renaming_holds_on_a_series_as_on_its_rounds(tmp_path, case):
    """A series whose rounds all join the same pairs has its endpoints checked once, on the
    first round: every renaming of the ranks (a rotation by g) holds, or not, as on the
    rounds written out, which are checked in full. By hand: the ring's rounds rotate with
    the ranks; the skewed one's do not: renamed by g = 1, round 0 needs part 1 to become
    part 4 (rank 1 sends 1, rank 2 sends 4) and part 0 (rank 3 sends 9 % 8 = 1, rank 4 sends
    16 % 8 = 0). Only g = 4 holds for it: (j + 4)² = j² + 8j + 16, the same part mod 8."""
    from schedc.analysis.verify.segments import geometry
    from schedc.analysis.verify.renaming import Symmetry, blocks, rotation_of

    program, series = _compiled(tmp_path, case, series=True)
    _, explicit = _compiled(tmp_path, case, series=False)
    devices = len(program.topology.devices)
    geo = geometry(series, devices)
    ranks = np.asarray(series.collective.ranks)
    assert all(bl.uniform for bl in blocks(series.rounds, geo))
    assert not any(bl.uniform for bl in blocks(explicit.rounds, geo))
    verdicts = []
    for schedule in (series, explicit):
        verdicts.append([all(Symmetry(geo, rotation_of(devices, ranks, g)).holds(bl)
                             for bl in blocks(schedule.rounds, geo)) for g in range(1, 8)])
    assert verdicts[0] == verdicts[1]
    assert verdicts[0] == [case == "ring" or g == 4 for g in range(1, 8)]


def test_same_pairs_by_hand(tmp_path):
    """A ring's and the skewed ring's rounds join g[j] -> g[j + 1] in every round; the pairs'
    rounds join other devices from round to round; the uneven rounds differ in size."""
    found = {}
    for case in ("ring", "skewed", "pairs", "uneven"):
        directory = tmp_path / case
        directory.mkdir()
        _, series = _compiled(directory, case, series=True)
        found[case] = [p.same_pairs for p in series.rounds.parts if isinstance(p, Series)]
    assert found == {"ring": [True, True], "skewed": [True], "pairs": [False], "uneven": [False]}

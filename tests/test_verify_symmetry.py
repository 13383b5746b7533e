"""Verification up to symmetry (`analysis.columns`): a symmetric schedule is verified on one
column per orbit, and that gives the verdict of verifying every column — on the shipped
files, on rings shuffled and split, on symmetric schedules drawn at random (most of them
wrong) and on every broken fixture."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import SCHEDULES, compiled, flat_machine, write
from hypothesis import given, settings
from hypothesis import strategies as st

from schedc.analysis.verify.columns import reduce_columns
from schedc.analysis.verify.dataflow import steps
from schedc.analysis.verify.segments import geometry
from schedc.analysis.verify.verdict import host_hints, verdict, verify_schedule
from schedc.elaborate.loader import load_program
from schedc.model.collectives import KINDS, Cells
from schedc.model.ir import Batch, Round
from schedc.session import Session

BROKEN = Path(__file__).parent / "fixtures" / "broken"
LIB = SCHEDULES / "lib"


def _devices(program) -> list[str]:
    return [d.name for d in program.topology.devices]


def _both(schedule, names):
    """The verdicts with and without the symmetry, which must say the same."""
    fast = verify_schedule(schedule, names, seed=7)
    whole = verify_schedule(schedule, names, seed=7, symmetry=False)
    assert (fast.ok, fast.method, fast.segments) == (whole.ok, whole.method, whole.segments)
    assert repr(fast.failure) == repr(whole.failure)
    return fast


def _columns(schedule, names):
    reduction = reduce_columns(schedule, geometry(schedule, len(names)),
                               [rnd for _, rnd in steps(schedule)])
    return None if reduction is None else reduction.columns.tolist()


@pytest.mark.parametrize("path", sorted(p.relative_to(SCHEDULES).as_posix()
                                        for p in SCHEDULES.rglob("*.sched")))
def test_shipped_schedules_verify_alike_with_and_without_symmetry(path):
    session = compiled(SCHEDULES / path)
    for name in session.selected(required=False):
        _both(session.schedule(name), _devices(session.program))


@pytest.mark.parametrize("name", sorted(p.stem for p in BROKEN.glob("*.sched")))
def test_broken_fixtures_fail_alike_with_and_without_symmetry(name):
    program = load_program(BROKEN / f"{name}.sched")
    for result in program.results:
        assert not _both(program.schedule(result.name), _devices(program)).ok


def _program(tmp_path, n: int, collective: str, body: str):
    """A program on the flat machine of n GPUs: `collective` is its kind, or the whole
    declaration."""
    declaration = collective if " " in collective else f"{collective} V over ranks"
    text = (flat_machine(n) + f'import "{LIB / "ring.sched"}"\n'
            + f'import "{LIB / "hierarchical.sched"}"\n{declaration}\n{body}')
    return load_program(write(tmp_path, "case.sched", text))


def test_the_columns_found(tmp_path):
    """The ring over p ranks runs one column of p; the hierarchical all-reduce over h hosts
    of 4 runs one column per host's share, 4 of 4h; reduce-scatter and all-gather rings
    rotate their parts with the ranks."""
    program = _program(tmp_path, 8, "allreduce", """
schedule ring = ring_allreduce(ranks)
schedule hier = hierarchical_allreduce([[g[4 * h + i] for i in 0..3] for h in 0..1])
""")
    names = _devices(program)
    assert _columns(program.schedule("ring"), names) == [0]
    assert _columns(program.schedule("hier"), names) == [0, 2, 4, 6]
    for collective, call in (("reduce_scatter", "ring_reduce_scatter"),
                             ("allgather", "ring_allgather")):
        program = _program(tmp_path, 6, collective, f"schedule s = {call}(ranks)\n")
        assert _columns(program.schedule("s"), _devices(program)) == [0]
        assert _both(program.schedule("s"), _devices(program)).ok


def test_no_symmetry_is_claimed_where_there_is_none(tmp_path):
    program = _program(tmp_path, 6, "allgather", """
schedule skewed {
  for s in 0..4 round {
    for j in 0..5: copy part((2 * j - s) % 6 of 6) from g[j] to g[(j + 1) % 6]
  }
}
""")
    # Rotating the ranks by one moves the parts by two: the postcondition does not follow.
    assert _columns(program.schedule("skewed"), _devices(program)) is None
    assert not _both(program.schedule("skewed"), _devices(program)).ok
    program = _program(tmp_path, 6, "broadcast V over ranks root ranks[0]",
                       "schedule b {\n  round {\n    for j in 1..5: copy all from g[0] to g[j]\n"
                       "  }\n}\n")
    assert program.schedule("b").collective.root is not None
    assert _columns(program.schedule("b"), _devices(program)) is None


def _ring(tmp_path, n: int):
    program = _program(tmp_path, n, "allreduce", "schedule ring = ring_allreduce(ranks)\n")
    return program, program.schedule("ring")


def _rebatched(schedule, rng: np.random.Generator, parts: int):
    """Each round's entries shuffled and cut into `parts` batches: the same schedule."""
    rounds = []
    for rnd in schedule.rounds:
        (b,) = rnd.batches
        order = rng.permutation(len(b))
        cuts = np.array_split(order, parts)
        rounds.append(Round(tuple(_subset(b, c) for c in cuts if len(c))))
    return replace(schedule, rounds=tuple(rounds))


def _subset(b: Batch, pick: np.ndarray) -> Batch:
    return replace(b, src=b.src[pick], dst=b.dst[pick], off=b.off[pick],
                   length=b.length[pick])


@pytest.mark.parametrize("parts", [1, 2, 3])
def test_shuffled_and_split_rings_are_still_found_symmetric(tmp_path, parts):
    program, ring = _ring(tmp_path, 8)
    names = _devices(program)
    rebatched = _rebatched(ring, np.random.default_rng(parts), parts)
    assert _columns(rebatched, names) == [0]
    assert _both(rebatched, names).ok


def test_a_ring_with_a_round_or_a_transfer_missing_fails_alike(tmp_path):
    program, ring = _ring(tmp_path, 8)
    names = _devices(program)
    # A whole round dropped keeps the symmetry: the columns run, fail, and the failure is
    # then found on every column, as without the symmetry.
    no_round = replace(ring, rounds=ring.rounds[:3] + ring.rounds[4:])
    assert _columns(no_round, names) == [0]
    assert not _both(no_round, names).ok
    # One transfer dropped breaks it.
    (b,) = ring.rounds[5].batches
    one_less = replace(ring, rounds=ring.rounds[:5] + (Round((_subset(b, np.arange(1, 8)),)),)
                       + ring.rounds[6:])
    assert _columns(one_less, names) is None
    assert not _both(one_less, names).ok


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_random_symmetric_schedules_verify_alike(tmp_path_factory, data):
    """Rounds made of whole orbits of random transfers under a rotation of the ranks by g
    and of the segments by c, sometimes with one transfer changed."""
    p = 6
    program, ring = _ring(tmp_path_factory.mktemp("sym"), p)
    names = _devices(program)
    ranks = np.asarray(ring.collective.ranks)
    g = data.draw(st.sampled_from([1, 2, 3]))
    c = data.draw(st.integers(0, p - 1))
    orbit = p // g
    rounds = []
    for _ in range(data.draw(st.integers(1, 8))):
        a = data.draw(st.integers(0, p - 1))
        b = (a + data.draw(st.integers(1, p - 1))) % p
        j = data.draw(st.integers(0, p - 1))
        op = data.draw(st.sampled_from(["reduce", "copy"]))
        k = np.arange(orbit)
        rounds.append(Round((replace(ring.rounds[0].batches[0], op=op,
                                     src=ranks[(a + k * g) % p], dst=ranks[(b + k * g) % p],
                                     off=(j + k * c) % p, length=np.ones(orbit, np.int64)),)))
    schedule = replace(ring, rounds=tuple(rounds))
    if data.draw(st.booleans()):
        r = data.draw(st.integers(0, len(rounds) - 1))
        (b,) = rounds[r].batches
        rounds[r] = Round((replace(b, dst=np.roll(b.dst, 1)),))
        schedule = replace(ring, rounds=tuple(rounds))
    _both(schedule, names)
    # The real ring, whose rounds are symmetric too, with these rounds after it.
    _both(replace(ring, rounds=ring.rounds + schedule.rounds), names)


@pytest.mark.parametrize("kind", [k for k in KINDS.values() if k.rotates])
@pytest.mark.parametrize("seed", range(4))
def test_what_renaming_the_ranks_does_to_each_collective(kind, seed):
    """The `rotates` entry of the table, checked on the rule itself: renaming rank q as π(q)
    (and, for "parts", part j as π(j)) maps the start state and the postcondition onto
    themselves, for rotations and for other permutations."""
    p = 6
    pi = np.roll(np.arange(p), -2) if seed == 0 else np.random.default_rng(seed).permutation(p)
    part = np.tile(np.repeat(np.arange(p), 2), (p, 1))  # 12 segments, 2 per part
    spec = kind.flow(Cells(p, part, 2, None))
    moved = pi[part] if kind.rotates == "parts" else np.roll(part, 3, axis=1)
    image = kind.flow(Cells(p, moved, 2, None))

    def renamed(whose: np.ndarray) -> np.ndarray:  # contribution q (or q + p) as π(q)
        return pi[whose % p] + whose // p * p

    # Cell (q, s) is renamed (π(q), s') where part s' is π(part s): image row π(q).
    np.testing.assert_array_equal(image.start[pi], renamed(spec.start))
    np.testing.assert_array_equal(image.required[pi], spec.required)
    if not kind.reduces:
        np.testing.assert_array_equal(image.owner[pi], renamed(spec.owner))
    np.testing.assert_array_equal(image.shift[pi], spec.shift)


def test_the_machines_host_shift_finds_what_no_rotation_does(tmp_path):
    """Ranks listed GPU by GPU (rank 4i + k is host k's GPU i): reducing into each host's
    first GPU, a ring over those and copying back is symmetric under moving every host to
    the next, which is no rotation of that order; the machine's shift, as a hint, finds it."""
    text = f'''import "{SCHEDULES / "machines" / "nvlink_hosts.sched"}"
import "{LIB / "ring.sched"}"
param V = 1 MiB
let across = [node[k].g[i] for i in 0..7 for k in 0..hosts-1]
allreduce V over across
schedule star {{
  round {{
    for h in 0..hosts-1: for i in 1..7: reduce all from node[h].g[i] to node[h].g[0]
  }}
  ring_allreduce([node[h].g[0] for h in 0..hosts-1])
  round {{
    for h in 0..hosts-1: for i in 1..7: copy all from node[h].g[0] to node[h].g[i]
  }}
}}
'''
    session = Session.open(write(tmp_path, "across.sched", text), ["hosts=4"])
    schedule, names = session.schedule("star"), _devices(session.program)
    assert _columns(schedule, names) is None
    hints = host_hints(session.program.topology, schedule.collective.ranks)
    reduction = reduce_columns(schedule, geometry(schedule, len(names)),
                               [rnd for _, rnd in steps(schedule)], hints)
    assert reduction is not None and reduction.columns.tolist() == [0]  # 4 pieces, 4 hosts
    assert verdict(session, "star").ok
    assert _both(schedule, names).ok


def test_batches_matched_one_to_one(tmp_path):
    """A round of batches A, A and B where renaming maps A onto B and B onto A is not
    symmetric (it would become B, B, A): batch by batch, both copies of A find their image
    in B, and the match is refused for not being one to one."""
    program, ring = _ring(tmp_path, 4)
    names = _devices(program)
    ranks = np.asarray(ring.collective.ranks)
    template = ring.rounds[0].batches[0]

    def batch(src: int, dst: int, part: int) -> Batch:
        return replace(template, op="reduce", src=ranks[[src]], dst=ranks[[dst]],
                       off=np.array([part]), length=np.array([1]), den=4)

    # The rotation by 2 maps one onto the other, and part j onto part j + 2 as in the ring.
    a, b = batch(0, 1, 0), batch(2, 3, 2)
    schedule = replace(ring, rounds=(Round((a, a, b)),) + ring.rounds)
    assert _columns(schedule, names) is None
    assert not _both(schedule, names).ok


def test_empty_batches_are_no_part_of_a_round(tmp_path):
    """A round may carry an empty batch (hand-built IR; the language drops them): with the
    entries shuffled, so that they are matched batch by batch, it is still found symmetric."""
    program, ring = _ring(tmp_path, 4)
    names = _devices(program)
    rng = np.random.default_rng(0)
    rounds = []
    for rnd in ring.rounds:
        (b,) = rnd.batches
        rounds.append(Round((_subset(b, rng.permutation(len(b))), _subset(b, np.arange(0)))))
    schedule = replace(ring, rounds=tuple(rounds))
    assert _columns(schedule, names) == [0]
    assert _both(schedule, names).ok

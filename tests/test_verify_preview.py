"""Verification's early refusal from a first look (`elaborate/preview.py`): each round loop
cut to its first iteration in each branch is shown to `early.PiecesSeen` before the schedule
is elaborated whole, so the hierarchical all-reduce is refused with all its pieces counted and
without a full round loop made; other errors are still reported by the full elaboration."""

from __future__ import annotations

import pytest
from conftest import ROOT, write

import schedc.analysis.verify.early as early
from schedc.analysis.verify.segments import geometry
from schedc.elaborate import schedule as elaborate_schedule
from schedc.session import Session

LIBRARY = ROOT / "schedules" / "lib" / "hierarchical.sched"


def _hierarchical(tmp_path, hosts: int, gpus: int, body: str | None = None) -> str:
    """The benchmark's hierarchical_16384.sched at `hosts` × `gpus`."""
    schedule = body or f"schedule hierarchical = hierarchical_allreduce([node[h].g for h in 0..{hosts - 1}])"
    text = (f'import "{LIBRARY}"\nparam V = 64 MiB\nparam alpha = 1 us\nparam B = 100 GB/s\n'
            f"topology {{\n  host node[{hosts}] {{\n    gpu g[{gpus}]\n    switch sw\n"
            f"    link g[i] <-> sw bw B for i in 0..{gpus - 1}\n  }}\n  switch rail[{gpus}]\n"
            f"  link node[h].g[i] <-> rail[i] bw B for h in 0..{hosts - 1} for i in 0..{gpus - 1}\n}}\n"
            f"let ranks = [node[h].g[i] for h in 0..{hosts - 1} for i in 0..{gpus - 1}]\n"
            f"allreduce V over ranks\n{schedule}\n")
    return str(write(tmp_path, "case.sched", text))


def _contexts(monkeypatch) -> list[bool]:
    """Whether each schedule context made from now on is a preview's."""
    made: list[bool] = []
    original = elaborate_schedule.ScheduleContext.__post_init__

    def noted(self):
        made.append(self.preview)
        original(self)

    monkeypatch.setattr(elaborate_schedule.ScheduleContext, "__post_init__", noted)
    return made


def test_hierarchical_is_refused_in_the_preview_with_every_piece(tmp_path, monkeypatch, run):
    """4 hosts × 4 GPUs: the reduce-scatter inside the hosts cuts 4 parts, and each rail's ring
    over the 4 hosts cuts its part in 4: 16 pieces (by hand), geometry's exact count. With room
    for 15 (16 ranks × 15 cells), the preview alone refuses it, naming all 16; shown the loops
    as the full elaboration makes them, the watch would have seen only the first rails."""
    path = _hierarchical(tmp_path, 4, 4)
    session = Session.open(path)
    exact = len(geometry(session.schedule("hierarchical"),
                         len(session.program.topology.devices)).bounds) - 1
    assert exact == 16
    monkeypatch.setattr(early, "MAX_CELLS", 16 * 15)
    made = _contexts(monkeypatch)
    code, out, err = run("time", path)
    assert (code, out) == (2, "")
    assert "verifying this needs 16 ranks × at least 16 pieces of the buffer (counted in the " \
           "part elaborated so far); the limit is 240 in all" in err
    # The rest of the schedule was never elaborated, so errors there go unreported: it says so.
    assert "note: refused from a first look at the schedule (each round loop's first " \
           "iteration); the rest was not elaborated" in err
    assert made == [True]  # the full elaboration never started
    made.clear()
    assert run("time", path, "--no-verify")[0] == 0 and made == [False]  # no watch, no preview


def test_within_the_limit_the_preview_changes_nothing(tmp_path, monkeypatch, run):
    """Room for all 16 pieces: the preview, then the full elaboration, and the same report as
    without a watch's preview (verification's verdict aside)."""
    path = _hierarchical(tmp_path, 4, 4)
    monkeypatch.setattr(early, "MAX_CELLS", 16 * 16)
    made = _contexts(monkeypatch)
    code, verified, err = run("time", path)
    assert (code, err, made) == (0, "", [True, False])
    code, plain, err = run("time", path, "--no-verify")
    assert code == 0
    assert verified.splitlines()[:3] == plain.splitlines()[:3]  # the schedule and its formula


@pytest.mark.parametrize("bad", [0, 2])
def test_an_error_in_a_round_loop_is_reported_by_the_full_elaboration(tmp_path, run, bad):
    """An index out of range in the first iteration (met by the preview, which drops it) or
    in the third (past the preview): `time` reports it exactly as `time --no-verify` does,
    where the full elaboration meets it."""
    body = ("schedule broken {\n  for s in 0..3 round {\n"
            f"    copy all from ranks[0] to ranks[99 if s == {bad} else 1]\n  }}\n}}")
    path = _hierarchical(tmp_path, 2, 2, body)
    verified, plain = run("time", path), run("time", path, "--no-verify")
    assert verified[0] == 2 and "out of range" in verified[2], verified
    assert verified == plain


def test_a_loop_of_calls_is_previewed_as_lanes(tmp_path, monkeypatch, run):
    """1,000 sequential calls of the ring all-gather: the preview runs them as lanes, as the full
    elaboration does (a group of one call, then the rest at once), not one call at a time —
    which a check meant for the first group only, met by every group of a preview (whose
    round loops keep no rounds), once made it do, at 20x the cost of the whole compile."""
    ring = ROOT / "schedules" / "lib" / "ring.sched"
    text = (f'import "{ring}"\nparam V = 1 MiB\nparam B = 100 GB/s\n'
            "topology {\n  gpu g[8]\n  switch sw\n  link g[i] <-> sw bw B for i in 0..7\n}\n"
            "allgather V over g\nschedule calls {\n  for t in 0..999 {\n    ring_allgather(g)\n  }\n}\n")
    path = write(tmp_path, "calls.sched", text)
    calls: list[bool] = []
    original = elaborate_schedule._call

    def counted(call, env, ctx):
        calls.append(ctx.preview)
        return original(call, env, ctx)

    monkeypatch.setattr(elaborate_schedule, "_call", counted)
    code, out, err = run("time", str(path))
    assert code == 0, err
    assert calls.count(True) == calls.count(False) == 2  # a group of one lane, then 999

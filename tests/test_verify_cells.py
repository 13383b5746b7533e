"""Verification's cell limit checked from the collective's declaration before any schedule is
compiled (`analysis.verify.segments.check_declared`, called by `verdict.check_verifiable`):
the refusal `geometry` gives after the compile, with the same message at the same place,
without the compile."""

from __future__ import annotations

import pytest
from conftest import ROOT, flat_machine, write

import schedc.analysis.verify.segments as segments
from schedc.analysis.verify.verdict import check_verifiable, verify_schedule
from schedc.elaborate.program import Program
from schedc.errors import LimitError
from schedc.session import Session

LIBRARY = ROOT / "schedules" / "lib" / "ring.sched"


def _file(tmp_path, n: int, kind: str) -> str:
    text = (f'import "{LIBRARY}"\n' + flat_machine(n) + f"{kind} V over ranks\n"
            f"schedule ring = ring_{kind}(ranks)\n")
    return str(write(tmp_path, "case.sched", text))


def _refusal(run, path: str) -> tuple[int, str]:
    code, out, err = run("time", path)
    return code, err


@pytest.mark.parametrize("kind", ["allgather", "reduce_scatter"])
def test_a_collective_by_parts_is_refused_before_its_schedules_compile(tmp_path, monkeypatch,
                                                                        run, kind):
    """8 ranks × 8 parts = 64 cells over a limit of 63: `time` refuses it with geometry's
    message, at the schedule, and never elaborates it."""
    path = _file(tmp_path, 8, kind)
    late = Session.open(path)
    schedule = late.schedule("ring")  # compiled under the usual limit
    monkeypatch.setattr(segments, "MAX_CELLS", 63)
    with pytest.raises(LimitError) as after:
        verify_schedule(schedule, [d.name for d in late.program.topology.devices])

    def never(self, name, span=None, watch=None):
        raise AssertionError("compiled")

    monkeypatch.setattr(Program, "schedule", never)
    code, err = _refusal(run, path)
    assert code == 2
    assert err == after.value.render() + "\n"
    assert "verifying this needs 8 ranks × 8 pieces of the buffer; the limit is 63 in all" in err
    code, out, err = run("time", path, "--no-verify")  # compiles: only verification refuses
    assert code == 70 and "AssertionError: compiled" in err


def test_an_allreduce_declares_one_piece_so_its_schedule_decides(tmp_path, monkeypatch, run):
    """An all-reduce's declaration cuts nothing: 8 cells at least, within a limit of 63. Its
    ring cuts 8 pieces: refused after the compile, as before, with the pieces it cut."""
    path = _file(tmp_path, 8, "allreduce")
    monkeypatch.setattr(segments, "MAX_CELLS", 63)
    check_verifiable(Session.open(path))  # nothing refused from the declaration
    code, err = _refusal(run, path)
    assert code == 2 and "verifying this needs 8 ranks × 8 pieces" in err
    monkeypatch.setattr(segments, "MAX_CELLS", 8)
    check_verifiable(Session.open(path))
    monkeypatch.setattr(segments, "MAX_CELLS", 7)
    with pytest.raises(LimitError, match="8 ranks × 1 pieces"):
        check_verifiable(Session.open(path))


def test_a_large_allgather_is_refused_without_elaborating(tmp_path, monkeypatch, run):
    """8,200 ranks × 8,200 parts (67,240,000 cells) over the real limit (2^26): refused before
    the 67 M transfers of its ring are made."""
    path = _file(tmp_path, 8200, "allgather")

    def never(self, name, span=None, watch=None):
        raise AssertionError("compiled")

    monkeypatch.setattr(Program, "schedule", never)
    code, out, err = run("time", path, "--max-transfers", "80000000")
    assert code == 2, err
    assert "verifying this needs 8,200 ranks × 8,200 pieces of the buffer; the limit is " \
           "67,108,864 in all" in err
    assert err.startswith(f"{path}:")


# ---- while elaborating: `early.PiecesSeen` -----------------------------------------------------

import schedc.analysis.verify.early as early  # noqa: E402
from schedc.analysis.verify.segments import geometry  # noqa: E402


@pytest.mark.parametrize("path", ["schedules/seed/nvlink_2x8.sched", "schedules/seed/pcie_2x4.sched",
                                  "schedules/seed/nvlink_hosts.sched"])
def test_the_pieces_seen_while_elaborating_are_at_most_those_verification_cuts(path, monkeypatch):
    """The watch counts a lower bound (so it refuses only what `geometry` refuses): on the
    shipped schedules its count never exceeds geometry's exact count, and equals it where the
    first transfers of each loop touch every boundary (a ring's first rounds)."""
    monkeypatch.chdir(ROOT)
    session = Session.open(path)
    for name in session.selected(required=False):
        result = session.program.result(name)
        seen = early.PiecesSeen(result.collective, None)
        schedule = session.schedule(name, watch=seen)
        exact = len(geometry(schedule, len(session.program.topology.devices)).bounds) - 1
        assert 1 <= len(seen.points) - 1 <= exact, (path, name)


def test_a_ring_is_refused_at_its_first_loop(tmp_path, monkeypatch, run):
    """8 ranks and a limit of 56 cells: 7 pieces at most. The ring all-reduce's reduce-scatter
    loop cuts 8 (one part per rank, all in its first round): refused there, with the pieces
    seen, before its all-gather loop is made (the watch sees one loop)."""
    path = _file(tmp_path, 8, "allreduce")
    monkeypatch.setattr(early, "MAX_CELLS", 56)
    shown = []
    original = early.PiecesSeen.__call__

    def counted(self, batches):
        shown.append(len(batches))
        original(self, batches)

    monkeypatch.setattr(early.PiecesSeen, "__call__", counted)
    code, out, err = run("time", path)
    assert (code, out, len(shown)) == (2, "", 1)
    assert err.splitlines()[0] == (f"{path}:14:1: error: verifying this needs 8 ranks × at least 8 "
                                   "pieces of the buffer (counted in the part elaborated so far); "
                                   "the limit is 56 in all (--no-verify reports on the schedule "
                                   "without verifying it)")
    assert run("time", path, "--no-verify")[0] == 0  # only verification refuses

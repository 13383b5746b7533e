"""The fabric's loads read orbit by orbit, and only on the pairs a statement sends between
(`schedc/analysis/scale/orbits.py`, docs/scale.md#finite-fabrics): on a small GB200-like
machine (4 GPUs per rack instead of 72, so that the full reading fits), every call of
`fabric_loads` made by `scale --in hosts` gives the same (bandwidth, load) -> rounds with
the shortcuts as with every (link, pair) read; and GB200 NVL72 itself, whose full reading
needs 122,688 checks, is proved."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT

import schedc
from schedc.analysis.scale import fabric

SYSTEMS = ROOT / "schedules" / "systems"
MACHINE = ROOT / "schedules" / "machines" / "systems" / "gb200_nvl72.sched"

# A schedule the shift of local positions does not keep: GPU 0 of each rack sends to GPU 1
# of the next, GPU 1 to GPU 3 (pairs (0, 1) and (1, 3) only, no orbit covers it); and one
# it keeps, which crosses the uplinks: every GPU i to GPU i+1 of the next rack.
SKEWED = """
schedule skewed {
  for h in 0..hosts-1: copy part(0 of 2) from node[h].g[0] to node[(h + 1) % hosts].g[1]
  for h in 0..hosts-1: copy part(1 of 2) from node[h].g[1] to node[(h + 1) % hosts].g[3]
}
schedule twice {
  for h in 0..hosts-1 round {
    for i in 0..3: for k in 0..1: copy part(k of 2) from node[h].g[i] to node[(h + 1) % hosts].g[(i + 1) % 4]
  }
}
schedule diagonal {
  for h in 0..hosts-1 round {
    for i in 0..3: copy all from node[h].g[i] to node[(h + 1) % hosts].g[(i + 1) % 4]
  }
}
"""


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """The GB200 study with 4 GPUs per rack (machine and study side by side in a copy)."""
    base = tmp_path_factory.mktemp("orbits")
    text = MACHINE.read_text()
    for old, new in (("g[72]", "g[4]"), ("0..71", "0..3"), ("let gpus = 72", "let gpus = 4")):
        assert old in text
        text = text.replace(old, new)
    (base / "machine.sched").write_text(text)
    study = (SYSTEMS / "gb200_nvl72.sched").read_text().replace(
        '"../machines/systems/gb200_nvl72.sched"', '"machine.sched"').replace(
        '"../lib/', f'"{ROOT}/schedules/lib/')
    (base / "study.sched").write_text(study + SKEWED)
    return base / "study.sched"


def test_the_shortcuts_read_what_the_full_reading_reads(small, monkeypatch):
    calls: list[tuple] = []
    original = fabric.fabric_loads

    def recorded(cross, links, dims, start, stop, n, local=None):
        out = original(cross, links, dims, start, stop, n, local)
        calls.append((cross, links, dims, start, stop, n, local, out))
        return out
    monkeypatch.setattr(fabric, "fabric_loads", recorded)
    results = schedc.scale(schedc.load(small), "hosts", bounds=False, verify=False)
    statuses = {r.name: [p.status for p in r.pieces] for r in results}
    assert statuses["hierarchical"] == ["proved"] and statuses["ring"] == ["proved"], statuses
    monkeypatch.setattr(fabric, "used_pairs", lambda *args: None)  # every pair of every link
    reduced = read_whole = 0
    for cross, links, dims, start, stop, n, local, found in calls:
        assert local is not None  # one local position, 0..3
        whole = original(cross, links, dims, start, stop, n, None)
        assert found.keys() == whole.keys()
        assert all(found[key].is_equal(whole[key]) for key in whole)
        used = [fabric.used_pairs(f, case, start, stop) for f, case, _ in cross]
        if fabric.invariant(cross, *local, start, stop) and any(
                link.pairs & (link.pairs if pairs is None else pairs)
                for pairs in used for link in links):
            # read on fewer links, pairs sent between on them: the diagonal schedule
            reduced += len(fabric.representatives(links, *local)) < len(links)
        else:
            read_whole += 1
    # The diagonal schedule is its own shift and crosses the uplinks: read on one link per
    # orbit (up and down: 2 of the 4·2·2 uplinks); the rings and the skewed schedule are
    # not, and are read whole (on the pairs they send between).
    assert reduced >= 1 and read_whole >= 2, (reduced, read_whole, statuses)


def test_the_skewed_schedule_is_not_its_own_shift(small):
    from schedc.analysis.forall.affine import const, ge
    from schedc.analysis.scale.proof import _elaborated

    session = schedc.load(small)
    sym, _ = _elaborated(session, "hosts", "skewed")
    cross = [(f, (ge(f.dst[0] - f.src[0], const(1)),), 1) for f in sym.families] + [
        (f, (ge(f.src[0] - f.dst[0], const(1)),), 1) for f in sym.families]
    assert not fabric.invariant(cross, 0, 4, 2, None)
    # One statement making each (round, source, destination) twice (k = 0, 1): its bytes
    # per point are not read from the point set, so no orbit is claimed.
    sym, _ = _elaborated(session, "hosts", "twice")
    cross = [(f, (ge(f.dst[0] - f.src[0], const(1)),), 1) for f in sym.families]
    assert not fabric.invariant(cross, 0, 4, 2, None)
    sym, _ = _elaborated(session, "hosts", "hierarchical")
    rails = [(f, (ge(f.dst[0] - f.src[0], const(1)),), 1) for f in sym.families
             if f.src[1] == f.dst[1]]  # the rail rings: across racks, GPU i to GPU i
    assert rails and fabric.invariant(rails, 0, 4, 2, None)


def test_gb200_is_proved_in_hosts(run):
    """Before: 122,688 (link, pair) checks per schedule, past MAX_FABRIC_CHECKS, all three
    pieces checked (2026-12-07). Now only the pairs sent between are read: the contiguous
    rings cross racks from GPU 71 to GPU 0 only, the hierarchical schedule's rail rings
    between equal positions, which no uplink carries."""
    code, out, err = run("scale", SYSTEMS / "gb200_nvl72.sched", "--in", "hosts", "--no-bound",
                         "--json")
    assert code == 0, err
    pieces = {p["name"]: p for p in json.loads(out)["schedules"]}
    assert set(pieces) == {"ring", "hierarchical", "nccl_ring"}
    for piece in pieces.values():
        assert (piece["status"], piece["valid_from"], piece["valid_to"]) == ("proved", 2, None)

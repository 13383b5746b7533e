"""The systems library in hosts (schedules/systems/): on each real system of
schedules/machines/systems/, the seed's ring and hierarchical all-reduce and NCCL's ring with
`hosts` structural, proved for every number of hosts (issue 37): `verify --for-all` and
`scale --in hosts`. The fabric block is read as the elaborator reads it (docs/scale.md,
hypothesis 2): `ports[h][p]` inlined, `if fabric == 1` decided, `switch leaf[hosts]`
unlinked; the rail uplinks' bandwidth hosts·B_port/(spines·oversub) is n times one free of
n, and each rail-to-rail transfer shares its bytes over the spines equally."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT

STUDIES = sorted((ROOT / "schedules" / "systems").glob("*.sched"))
MACHINES = ROOT / "schedules" / "machines" / "systems"


def test_every_system_has_its_study():
    assert [p.stem for p in STUDIES] == sorted(p.stem for p in MACHINES.glob("*.sched"))


@pytest.mark.parametrize("path", STUDIES, ids=[p.stem for p in STUDIES])
def test_verify_for_all_hosts(run, path):
    code, out, err = run("verify", path, "--for-all", "hosts", "--json")
    assert code == 0, err
    (found,) = json.loads(out)["files"]
    verdicts = {s["name"]: s for s in found["schedules"]}
    assert all(s["ok"] for s in verdicts.values())  # verified at the instances, at least
    # The ring, the hierarchical all-reduce and NCCL's ring (its `loops` loops, one after
    # another, unrolled: their count is a constant): proved for every number of hosts.
    for name in ("ring", "hierarchical", "nccl_ring"):
        assert verdicts[name]["for_all"]["status"] == "proved", verdicts[name]["for_all"]


@pytest.mark.parametrize("stem", ["dgx_h100", "aws_p4d", "aws_p5"])
def test_scale_in_hosts_is_proved(run, stem):
    """Three systems (the fabric block is the same in every file: test_systems.py): GPUs
    that are their NICs' ports (DGX H100), four EFA NICs each shared by two GPUs (p4d), and
    four EFA NICs per GPU, a bundle that every route splits its bytes over equally (p5).
    `python benchmarks/scale_status.py` runs all eleven."""
    path = ROOT / "schedules" / "systems" / f"{stem}.sched"
    code, out, err = run("scale", path, "--in", "hosts", "--json")
    assert code == 0, err
    pieces = {p["name"]: p for p in json.loads(out)["schedules"]}
    assert set(pieces) == {"ring", "hierarchical", "nccl_ring"}  # one piece each
    for piece in pieces.values():
        assert (piece["status"], piece["valid_from"], piece["valid_to"]) == ("proved", 2, None)
        # The bounds' argument (compressed network) does not take a fabric link whose
        # bandwidth grows with the hosts yet: they stay fitted, and say why.
        assert piece["bounds_status"] == "checked"
        assert any("bounds not proved" in note and "a fabric link whose bandwidth is written "
                   "in hosts" in note for note in piece["notes"]), piece["notes"]
    # The contiguous rings cross hosts through the rail uplinks (rail 7 to rail 0), which
    # are proved fabric links: the uplinks' term is in the formula.
    for name in ("ring", "nccl_ring"):
        assert "oversub" in pieces[name]["formula"], pieces[name]["formula"]
    if stem == "aws_p5":  # by hand: V/(8·hosts) per ring hop, a quarter on each EFA device
        assert "V/(32*B_E*hosts)" in pieces["ring"]["formula"], pieces["ring"]["formula"]


def test_a_fabric_past_the_proofs_work_limit_stays_checked_and_says_so():
    """Past MAX_FABRIC_CHECKS the proof is not tried, and the piece is fitted and checked,
    with the count in its note. DGX H100's contiguous ring crosses hosts from GPU 7 to
    GPU 0 only: pair (7, 0), on 4 uplinks (rail 7 up to each of the 2 spines, each spine
    down to rail 0), each read once per case of a statement across hosts; with the limit
    one below that count the same note, at the count itself the piece is proved.
    (Before the pairs a statement sends between were read: 1,344 checks; GB200's 122,688
    are now read orbit by orbit, tests/test_scale_orbits.py.)"""
    import re

    import schedc
    from schedc.analysis.scale import fabric

    session = schedc.load(ROOT / "schedules" / "systems" / "dgx_h100.sched")
    limit = fabric.MAX_FABRIC_CHECKS
    try:
        fabric.MAX_FABRIC_CHECKS = 0
        (ring,) = schedc.scale(session, "hosts", schedules=("ring",), bounds=False)
        (piece,) = ring.pieces
        found = [re.search(r"need ([\d,]+) checks of a \(link, pair\) of ranks, more than "
                           r"the 0 ", note) for note in piece.notes]
        (count,) = [int(m[1].replace(",", "")) for m in found if m]
        assert piece.status == "checked" and count % 4 == 0 and 0 < count < 1_344
        fabric.MAX_FABRIC_CHECKS = count
        (ring,) = schedc.scale(schedc.load(session.program.path), "hosts", schedules=("ring",),
                               bounds=False)
        assert [p.status for p in ring.pieces] == ["proved"]
    finally:
        fabric.MAX_FABRIC_CHECKS = limit

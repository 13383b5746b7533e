"""The systems library in hosts (schedules/systems/): on each real system of
schedules/machines/systems/, the seed's ring and hierarchical all-reduce and NCCL's ring with
`hosts` structural. What is proved today, and, for each answer that stays `checked` or
`unknown`, the hypothesis it names (issue 37). When the proof covers more, these
expectations move from the notes to `proved`."""

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
    # The ring and hierarchical all-reduce: proved for every number of hosts.
    for name in ("ring", "hierarchical"):
        assert verdicts[name]["for_all"]["status"] == "proved", verdicts[name]["for_all"]
    # NCCL's ring: lib/nccl.sched splits each channel's part into `loops` loops run one after
    # another, whose rounds grow with hosts: outside the affine class today.
    nccl = verdicts["nccl_ring"]["for_all"]
    assert nccl["status"] == "unknown"
    assert "a sequential loop whose iterations' lengths vary with the param" in nccl["reason"]
    assert nccl["at"]["file"].endswith("lib/nccl.sched")


def test_scale_in_hosts_names_what_fails(run):
    """One system (the fabric block that fails is the same in every file: test_systems.py)."""
    path = ROOT / "schedules" / "systems" / "dgx_h100.sched"
    code, out, err = run("scale", path, "--in", "hosts", "--json")
    assert code == 0, err
    pieces = {p["name"]: p for p in json.loads(out)["schedules"]}
    assert {p["status"] for p in pieces.values()} == {"checked"}
    # The fabric block declares `switch leaf[hosts]` for its leaf-spine choice even when the
    # rail fabric is chosen: a second family sized by hosts, so the machine is not read as
    # copies of one block (hypothesis 2), for the hierarchical schedule and every bound.
    leaf = "machines/systems/dgx_h100.sched:62: a family sized by hosts other than one family"
    assert any(leaf in note for note in pieces["hierarchical"]["notes"])
    for piece in pieces.values():
        assert piece["bounds_status"] == "checked"
        assert any("bounds not proved" in note and leaf in note for note in piece["notes"])
    # The contiguous rings cross hosts through the rail uplinks, whose bandwidth grows with
    # hosts (hosts·B_port/spines): a term 1/hosts² is outside the fit's basis, so there is no
    # full formula to prove.
    for name in ("ring", "nccl_ring"):  # (with the machine's hypothesis that fails too)
        assert any(note.startswith("not proved: no full formula to prove; and ") and leaf in note
                   for note in pieces[name]["notes"]), pieces[name]["notes"]

"""`schedc nccl` and what `tune` now writes (issue 21, items 2, 3 and 5)."""

from __future__ import annotations

import json
import re

import pytest
from conftest import SCHEDULES, write

from schedc.export.tuner import refused_pair
from schedc.nccl import constants as K
from schedc.nccl.comm import given
from schedc.nccl.tuning import considered, pair_allowed

SEED = SCHEDULES / "seed" / "nvlink_2x8.sched"


def test_the_seed_machine_as_nccl_sees_it(run):
    code, text, err = run("nccl", SEED, "--json")
    assert (code, err) == (0, "")
    doc = json.loads(text)
    assert doc["schema"] == "schedc.nccl/1" and doc["nccl"]["tag"] == "v2.30.7-1"
    inputs = {i["name"]: i for i in doc["inputs"]}
    # 2 hosts × 8 GPUs; NVLink inside each host, 8 rail NICs of 50 GB/s per host.
    assert (inputs["nNodes"]["value"], inputs["nRanks"]["value"], inputs["localRanks"]["value"]) \
        == (2, 16, 8)
    assert inputs["ring.typeIntra"]["value"] == "NVL"
    assert all(i["derived_from"] for i in doc["inputs"])
    # Ring all-reduce Simple latency by hand (tuning.cc:384-412): base 8.4 + (2·15 - 2) steps
    # inside at max(hw NVLink 3.4, 3 × netOverhead 1.0) + 2 steps across at hw NET 14.0.
    (ring,) = [r for r in doc["table"] if (r["collective"], r["algo"], r["proto"]) ==
               ("allreduce", "ring", "simple")]
    assert ring["latency_us"] == pytest.approx(8.4 + 28 * 3.4 + 2 * 14.0, abs=1e-4)
    assert ring["bandwidth_GBps"] == pytest.approx(10 * 40 * 16 / 30, rel=1e-6)
    entry = {(r["algo"], r["proto"]): r for r in doc["table"] if r["collective"] == "allreduce"}
    # Tree Simple (tuning.cc:330-331, :380): min(400 × 0.92, 10 × 41.4) × 0.5; latency
    # 8.4 + 2 × (7 × 4.0 + log2(2) × 14.0) (:416).
    assert entry["tree", "simple"]["bandwidth_GBps"] == pytest.approx(184.0, rel=1e-6)
    assert entry["tree", "simple"]["latency_us"] == pytest.approx(92.4, abs=1e-4)
    # NVLS-tree (:307-324): 16 × min(24 × 0.85 × 15/16 × 2, 24 × 2, 57.7) × 16/30.
    assert entry["nvls_tree", "simple"]["bandwidth_GBps"] == pytest.approx(
        16 * min(24 * 0.85 * 15 / 16 * 2, 48, 57.7) * 16 / 30, rel=1e-6)
    assert not entry["nvls", "simple"]["enabled"]  # NVLS across nodes needs CollNet (:505)
    # The bands of each collective tile 1 .. max_bytes with no gap.
    for c in K.FUNCTIONS:
        bands = [b for b in doc["choices"] if b["collective"] == c]
        assert bands[0]["min_bytes"] == 1 and bands[-1]["max_bytes"] == doc["max_bytes"]
        assert all(a["max_bytes"] + 1 == b["min_bytes"] for a, b in zip(bands, bands[1:]))


def test_every_band_is_the_fastest_at_its_ends(run):
    """The bands against NCCL's time of every candidate at each band's two ends, computed
    one size at a time (choice.terms), not by the band search."""
    import schedc
    from schedc.nccl.choice import terms
    model = schedc.nccl_model(schedc.load(str(SEED)))
    for c in model.collectives:
        f = K.FUNCTIONS.index(c)
        for band in model.bands[c]:
            for n in {band.min_bytes, band.max_bytes}:
                found = terms(model.comm, model.table, f, n)
                best = min(found, key=lambda t: t.time)
                assert best.candidate == band.choice, (c, n)


def test_explain_shows_the_terms_and_schedcs_time(run, tmp_path):
    path = write(tmp_path, "t.sched", f'import "{SCHEDULES}/machines/nvlink_2x8.sched"\n'
                 f'import "{SCHEDULES}/lib/ring.sched"\n'
                 "param V = 64 MiB\nallreduce V over ranks\n"
                 "schedule ring as ring/simple = ring_allreduce(ranks)\n")
    code, text, err = run("nccl", path, "--collective", "allreduce", "--explain", "V=64MiB")
    assert code == 0, err
    assert "why, for allreduce of 67,108,864 bytes" in text
    assert "nvls_tree/simple <- NCCL" in text
    # schedc's own time of the ring, beside NCCL's model of ring/simple
    assert re.search(r"\n  ring +ring/simple +[0-9.]+ ms +[0-9.]+ µs\n", text)
    assert "no schedule of the file stands for: tree, nvls_tree" in text


@pytest.mark.parametrize(("args", "message"), [
    (("--sm", "91"), "not a compute capability NCCL runs on"),
    (("--channels", "65"), "MAXCHANNELS = 64"),
    (("--collective", "alltoall"), "no collective 'alltoall'"),
    (("--input", "ring.bwIntr=3"), "did you mean"),
    (("--explain", "V=lots"), "--explain expects a size"),
    (("--max-bytes", str(2**64)),
     f"--max-bytes {2**64}: must be from 1 to 9,223,372,036,854,775,807"),
    (("--input", "ring.typeIntra=NVLINK"), "a path type is one of"),
])
def test_bad_requests_are_refused(run, args, message):
    code, text, err = run("nccl", SEED, *args)
    assert code == 2 and message in err and text == ""


def test_mixed_gpus_per_host_is_refused(run, tmp_path):
    path = write(tmp_path, "m.sched", "param B = 10 GB/s\nparam alpha = 1 us\ntopology {\n"
                 "  host a { gpu g[2]\n  switch s\n  link g[i] <-> s bw B for i in 0..1 }\n"
                 "  host b { gpu g[1] }\n  link a.s <-> b.g[0] bw B\n}\n")
    code, _, err = run("nccl", path)
    assert code == 2 and "same number of GPUs on every host" in err


def _tune_file(tmp_path, label: str):
    return write(tmp_path, "t.sched", f'import "{SCHEDULES}/machines/nvlink_2x8.sched"\n'
                 f'import "{SCHEDULES}/lib/ring.sched"\n'
                 "param V = 64 MiB\nallreduce V over ranks\n"
                 f"schedule ring{label} = ring_allreduce(ranks)\n")


@pytest.mark.parametrize("pair", ["nvls/ll", "pat/simple", "tree/ll128x"])
def test_tune_refuses_pairs_nccl_ignores_at_the_label(run, tmp_path, pair):
    path = _tune_file(tmp_path, f" as {pair}")
    code, text, err = run("tune", path, "--collective", "allreduce", "--sizes", "1KB:1GB")
    assert code == 2 and text == ""
    assert f"{path}:5:" in err and "^" in err  # positioned at the label, with a caret


def test_tune_without_a_labelled_schedule_explains_the_label(run, tmp_path):
    out = tmp_path / "nccl_tuner.conf"
    code, text, err = run("tune", _tune_file(tmp_path, ""), "--collective", "allreduce",
                          "--sizes", "1KB:1GB", "-o", out)
    assert code == 2 and "no allreduce schedule stands for an NCCL algorithm" in err
    assert "`schedule ring as ring/simple = ring_allreduce(ranks)`" in err
    assert not out.exists()


@pytest.mark.parametrize("kind", K.FUNCTIONS)
def test_the_accepted_pairs_are_the_models(kind):
    """refused_pair (what tune writes) against tuning.cc's own loops (schedc.nccl.tuning), on
    a communicator with one GPU per node, where PAT is enabled."""
    comm = given({"minCompCap": 90, "nNodes": 2, "nRanks": 2, "netDeviceType": "HOST"}, "test")
    f = K.FUNCTIONS.index(kind)
    for a, algorithm in enumerate(K.ALGORITHMS):
        for p, protocol in enumerate(K.PROTOCOLS):
            collnet_simple_only = a in (K.COLLNET_DIRECT, K.COLLNET_CHAIN) and p != K.SIMPLE
            model = considered(comm, f, a) and pair_allowed(comm, f, a, p) and \
                not collnet_simple_only  # tuning.cc:338-339 zeroes them
            assert (refused_pair(kind, algorithm, protocol, True) is None) == model, \
                (algorithm, protocol)


def test_against_nccl_on_the_seeds_machine(run, tmp_path):
    """Rows only where schedc's ring beats the schedule standing for NCCL's pick (its tree)
    by more than 5%: checked at each row's ends by timing both schedules there, one compile
    per size (not the bisection tune uses)."""
    import schedc
    path = SCHEDULES / "examples" / "tuner_nvlink_2x8.sched"
    out = tmp_path / "nccl_tuner.conf"
    code, text, err = run("tune", path, "--collective", "allreduce", "--sizes", "1KB:1GB",
                          "--against-nccl", "-o", out)
    assert code == 0, err
    rows = [line.split(",") for line in out.read_text().splitlines() if not line.startswith("#")]
    assert rows and all(r[3:5] == ["ring", "simple"] and r[5] == "0" for r in rows)
    assert "no schedule stands for nvls_tree, so schedc cannot compare" in text
    lo, hi = int(rows[0][1]), int(rows[0][2])
    for n in (lo, hi):
        session = schedc.load(str(path), sets=[f"V={n}B"])
        ring, tree = (float(schedc.time(session, s).time) for s in ("ring", "tree"))
        assert tree / ring - 1 > 0.05
    session = schedc.load(str(path), sets=[f"V={lo - 1}B"])
    ring, tree = (float(schedc.time(session, s).time) for s in ("ring", "tree"))
    assert tree / ring - 1 <= 0.05


SHARED_NIC = """\
param alpha = 1 us
param V = 64 MiB
topology {
  host node[2] {
    gpu g[4]
    switch pci
    nic n
    link g[i] <-> pci bw 24 GB/s class pci for i in 0..3
    link n <-> pci bw 24 GB/s class pci
  }
  switch tor
  link node[h].n <-> tor bw 56 Gbit/s class nic for h in 0..1
}
allreduce V over [node[h].g[i] for h in 0..1 for i in 0..3]
schedule s { for k in 0..0 round { copy all from node[0].g[0] to node[1].g[0] } }
"""


def test_a_ring_channel_crosses_one_shared_nic_at_its_full_rate(tmp_path):
    # Four GPUs of a host behind one 56 Gbit/s NIC (7 GB/s). NCCL's search starts at maxBw, the
    # best single GPU-to-network path (getMaxBw, search.cc:20-28, :50): 7 GB/s, not the
    # 1.75 GB/s a GPU gets when all four send at once. SM80's inter speeds (search.cc:1051-1066)
    # from 7.0: one channel fits at 7 (the NIC's whole rate), and at 6, 5 and 4; 1 × 7 stays
    # the best, below the GPU's 24 GB/s PCIe total (so no stop at :1198), and 3.0 is under .49
    # of 7 (:1245): 1 channel of 7 GB/s, not 29 channels of 0.24 GB/s.
    import schedc
    model = schedc.nccl_model(schedc.load(str(write(tmp_path, "m.sched", SHARED_NIC))),
                              collective="allreduce", sm=80, verify=False)
    assert (model.comm["ring.nChannels"], model.comm["ring.bwInter"]) == (1, 7.0)

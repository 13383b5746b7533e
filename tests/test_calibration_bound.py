"""Each predicted row's latency share and the error split by what bounds the time
(schedc/analysis/calibrate/model.py `latency_shares`, calibration.py `by_bound`): on a new
machine the latency-bound rows are the ones a transfer does not carry (docs/calibration.md,
"What transfers")."""

from __future__ import annotations

import json
import math

import pytest
from conftest import write
from test_calibration_identify import MACHINE, _log

# The two-GPU machine's time at the file's values, by hand: b + 2a + V / (e · B), two rounds
# each moving V/2 over the link each way; b = 8.4 µs, a = 3.4 µs, e = 0.8, B = 100 GB/s.
LATENCY = 8.4e-6 + 2 * 3.4e-6
RATE = 0.8 * 100e9
SIZES = [2**k for k in range(3, 31, 2)]


def _files(tmp_path):
    machine = write(tmp_path, "m.sched", MACHINE.format(bw="100 GB/s"))
    return machine, _rows(tmp_path)


def _rows(folder):
    return _log(folder, [(s, 20e-6 + s / (0.6 * 100e9)) for s in SIZES])


def test_each_row_says_how_much_of_its_time_is_latency(run, tmp_path):
    machine, log = _files(tmp_path)
    code, out, _ = run("predict", machine, "--against", log, "--json")
    document = json.loads(out)
    assert code == 0
    for row in document["rows"]:
        assert row["latency_share"] == pytest.approx(LATENCY / (LATENCY + row["size"] / RATE))
    # Latency-bound below V = LATENCY · RATE = 1.216 MB: 8 B .. 512 KiB, 9 of the 14 sizes.
    bound = {b["bound"]: b for b in document["by_bound"]}
    assert (bound["latency"]["rows"], bound["bandwidth"]["rows"]) == (9, 5)
    errors = {r["size"]: abs(r["error"]) for r in document["rows"]}
    small = [errors[s] for s in SIZES if s < LATENCY * RATE]
    assert bound["latency"]["geomean_error"] == pytest.approx(
        math.exp(sum(map(math.log, small)) / len(small)))


def test_the_text_gives_the_split_with_its_size_ranges(run, tmp_path):
    machine, log = _files(tmp_path)
    _, out, _ = run("predict", machine, "--against", log)
    line = next(x for x in out.splitlines() if x.startswith("by what bounds the time: "))
    assert "latency-bound" in line and "(9 rows, 8 B-512 KiB)" in line
    assert "bandwidth-bound" in line and "(5 rows, 2 MiB-512 MiB)" in line
    _, out, _ = run("calibrate", log, "--machine", machine)
    assert any(x.startswith("held out by what bounds the time: latency-bound ")
               for x in out.splitlines())


def test_leave_one_out_carries_every_fold_s_shares(run, tmp_path):
    machine, first = _files(tmp_path)
    (tmp_path / "b").mkdir()
    second = _rows(tmp_path / "b")
    _, out, _ = run("calibrate", first, second, "--machine", machine, "--split",
                    "leave-one-out", "--json")
    document = json.loads(out)
    assert all(r["latency_share"] is not None for r in document["rows"])
    assert sum(b["rows"] for b in document["heldout_by_bound"]) == 2 * len(SIZES)


def test_a_schedule_without_protocols_has_its_file_alpha_as_latency(run, tmp_path):
    """No protocol: the time is 2·alpha + V/B (two rounds of V/2 each way), alpha = 5 µs."""
    plain = MACHINE.format(bw="100 GB/s").replace("protocol Simple alpha a eff e launch b\n", "")
    machine = write(tmp_path, "plain.sched", plain.replace("param V = 1 MiB",
                                                           "param V = 1 MiB\nparam alpha = 5 us"))
    _, out, _ = run("predict", machine, "--against", _rows(tmp_path), "--json")
    for row in json.loads(out)["rows"]:
        assert row["latency_share"] == pytest.approx(10e-6 / (10e-6 + row["size"] / 100e9))


def test_nccl_s_model_gives_its_pick_s_latency_over_its_time(run):
    """`predict --nccl`: the share is NCCL's latency of its pick over the pick's time, lat +
    n / (1000 · bw) µs (tuning.cc:630-655); at 8 B the bandwidth term is nothing."""
    from conftest import SCHEDULES, needs_shared_data
    name = "oci_2node_16xA100-SXM4-40GB_rdma_allreduce"
    log = needs_shared_data("nccl-tests", f"{name}.txt")
    machine = SCHEDULES / "calibration" / f"{name}.sched"
    _, out, _ = run("predict", machine, "--against", log, "--nccl", "--json")
    rows = json.loads(out)["rows"]
    assert rows[0]["size"] == 8 and rows[0]["latency_share"] == pytest.approx(1, abs=1e-4)
    assert rows[-1]["latency_share"] < 0.01  # 8 GiB: bandwidth
    shares = [r["latency_share"] for r in rows]
    assert all(0 < x <= 1 for x in shares)

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

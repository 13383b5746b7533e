"""`calibrate --fit latencies` and `--fit shares` (schedc/analysis/calibrate/roles.py GROUPS):
the params of those roles, so that a new machine's latencies can be fitted with the shares
of a link learned elsewhere (docs/calibration.md, "What transfers"), and the bandwidth
ceiling that then keeps the shares not fitted at their values."""

from __future__ import annotations

import json

from conftest import write
from test_calibration_identify import MACHINE, _log


def _synthetic(tmp_path, share: str = "0.8"):
    """Rows of 20 µs + V / (0.6 · 100 GB/s) on the two-GPU machine, whose time is
    b + 2a + V / (e · B): b a latency per call, a a start-up per round, e a share."""
    machine = write(tmp_path, "m.sched", MACHINE.format(bw="100 GB/s").replace(
        "param e = 0.8", f"param e = {share}"))
    sizes = [2**k for k in range(3, 31, 2)]
    return machine, _log(tmp_path, [(s, 20e-6 + s / (0.6 * 100e9)) for s in sizes])


def _fitted(run, *args) -> tuple[int, dict]:
    code, out, _ = run("calibrate", *args, "--json")
    return code, json.loads(out)


def test_latencies_and_shares_name_the_params_of_their_roles(run, tmp_path):
    machine, log = _synthetic(tmp_path)
    _, latencies = _fitted(run, log, "--machine", machine, "--fit", "latencies")
    assert list(latencies["params"]) == ["b", "a"]
    _, shares = _fitted(run, log, "--machine", machine, "--fit", "shares")
    assert list(shares["params"]) == ["e"]
    # The share is what the large rows need beyond the file's latencies: the rows' 0.6.
    assert abs(shares["params"]["e"]["value"] - 0.6) < 0.03
    # A param named beside its group is one unknown, not two.
    _, both = _fitted(run, log, "--machine", machine, "--fit", "latencies,b")
    assert sorted(both["params"]) == ["a", "b"]


def test_a_file_with_a_param_so_named_means_the_param(run, tmp_path):
    machine, log = _synthetic(tmp_path)
    renamed = write(tmp_path, "r.sched", machine.read_text().replace("param e ", "param shares ")
                    .replace("eff e ", "eff shares "))
    _, document = _fitted(run, log, "--machine", renamed, "--fit", "shares")
    assert list(document["params"]) == ["shares"]


def test_a_group_the_time_does_not_depend_on_is_an_error(run, tmp_path):
    machine, log = _synthetic(tmp_path)
    fixed = write(tmp_path, "f.sched", machine.read_text().replace(
        "protocol Simple alpha a eff e launch b", "protocol Simple alpha 3.4 us eff e launch 8 us"))
    code, out, err = run("calibrate", log, "--machine", fixed, "--fit", "latencies")
    assert code == 2 and out == ""
    assert ("--fit latencies: the time of 'ring' depends on no latency per call, start-up per "
            "round or latency per hop") in err


def test_the_ceiling_keeps_a_share_not_fitted_and_says_so(run, tmp_path):
    """The rows run at 60 GB/s; with the share held at 0.5 the links give 50 GB/s at most:
    the machine as given cannot run them, and the output says that the share was not fitted
    (the ceiling used to claim 'every protocol at its full share')."""
    machine, log = _synthetic(tmp_path, share="0.5")
    code, document = _fitted(run, log, "--machine", machine, "--fit", "latencies")
    said = [c for c in document["checks"] if c.startswith("INADEQUATE")]
    assert code == 1 and len(said) == 1
    assert "(but the shares not fitted: e = 0.5)" in said[0]
    assert "or the shares not fitted too small" in said[0]
    # Fitted, the same share is free to reach its bound: no such clause.
    _, free = _fitted(run, log, "--machine", machine)
    assert not any("not fitted" in c for c in free["checks"])

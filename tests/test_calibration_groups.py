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
    """A latency named `shares`: `--fit shares` is that param, not the group (which is e)."""
    machine, log = _synthetic(tmp_path)
    renamed = write(tmp_path, "r.sched", machine.read_text().replace("param b ", "param shares ")
                    .replace("launch b", "launch shares"))
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
    # With several logs, a group no file has is an error too, not dropped beside other names.
    (tmp_path / "b").mkdir()
    _, second = _synthetic(tmp_path / "b")
    code, out, err = run("calibrate", log, second, "--machine", fixed, "--fit", "latencies,e")
    assert code == 2 and out == "" and ("--fit latencies: no machine file's time depends on a "
                                        "latency per call") in err


def test_a_group_named_twice_is_an_error_as_a_param_is(run, tmp_path):
    machine, log = _synthetic(tmp_path)
    code, _, err = run("calibrate", log, "--machine", machine, "--fit", "latencies,latencies")
    assert code == 2 and "--fit names latencies twice" in err


def test_several_logs_fit_their_latencies_with_the_shares_given(run, tmp_path):
    machine, log = _synthetic(tmp_path)
    (tmp_path / "b").mkdir()
    _, second = _synthetic(tmp_path / "b")
    code, document = _fitted(run, log, second, "--machine", machine, "--fit", "latencies")
    # Declared in the machine file itself, each is each log's own: b and a per log.
    assert code in (0, 1) and sorted(document["params"]) == sorted(
        f"{n}@{path}" for n in "ab" for path in (log, second))


def test_the_ceiling_puts_the_shares_not_fitted_at_their_bound(run, tmp_path):
    """The rows run at 60 GB/s on 100 GB/s links. With the share held at 0.5 by the file and
    only the latencies fitted, the links can still carry the rows (a share up to 1): no
    INADEQUATE (it said so, taking the 0.5 for the machine's limit), but the large sizes
    misfit by 0.6/0.5 - 1 = +20 %. On 50 GB/s links the machine cannot: INADEQUATE."""
    machine, log = _synthetic(tmp_path, share="0.5")
    _, document = _fitted(run, log, "--machine", machine, "--fit", "latencies")
    assert not any(c.startswith("INADEQUATE") for c in document["checks"])
    misfit = [c for c in document["checks"] if c.startswith("systematic misfit")]
    assert misfit and misfit[-1].endswith("consecutive sizes") and "+20 %" in misfit[-1]
    slow = write(tmp_path, "slow.sched", machine.read_text().replace("param B = 100 GB/s",
                                                                     "param B = 50 GB/s"))
    code, document = _fitted(run, log, "--machine", slow, "--fit", "latencies")
    said = [c for c in document["checks"] if c.startswith("INADEQUATE")]
    assert code == 1 and len(said) == 1 and "a busbw ceiling of 50 GB/s" in said[0]

"""`predict --fitted FIT`: the machine at a fit's params is the API's decision
(`schedc.load_fitted`, `schedc.predict_file`), not the command line's (issue 35, item 2):
the command and the API give the same table and the same error when `--set` and the fit
both set a param, or when the fit has a param the machine lacks; and `predict_against`
refuses to label a session "at the params of FIT" that was not loaded at them."""

from __future__ import annotations

import json

import pytest
from conftest import SCHEDULES, needs_shared_data, write

import schedc
from schedc.errors import UsageError
from schedc.render.predicted_log import predicted_json

DGX = "nvidia_dgxc_1node_8xH100_nvlink_allreduce"
MACHINE = SCHEDULES / "calibration" / f"{DGX}.sched"
# A fit of the one shared param b_call (the machine's own, through nccl_constants.sched, is
# 13.794 us): 20 us, far enough from it that every small row's prediction moves.
FIT = "# a fit by hand: NCCL's per-call latency only\nparam b_call = 20 us\n"


def _log():
    return needs_shared_data("nccl-tests", f"{DGX}.txt")


def test_the_command_is_the_api_at_the_fit(run, tmp_path):
    log, fit = _log(), write(tmp_path, "fit.sched", FIT)
    code, out, err = run("predict", MACHINE, "--against", log, "--fitted", fit, "--json")
    table, compared = schedc.predict_file(MACHINE, [log], fitted=fit)
    assert (code, err) == (0, "") and out == predicted_json(table, compared, str(fit))
    # independently: the machine loaded with the fit's value typed as a --set, predicted
    # without any fit, gives the same times, and they are not the machine's own
    by_hand = schedc.predict(schedc.load(MACHINE, ["b_call=20us"]), [log])
    own = schedc.predict(schedc.load(MACHINE), [log])
    assert compared.predicted == by_hand.predicted and compared.points == by_hand.points
    # (b_call is per call, so every row is slower by the 6.206 us more than the machine's)
    assert all(a > b for a, b in zip(compared.predicted, own.predicted))
    assert json.loads(out)["fitted"] == str(fit)


@pytest.mark.parametrize(("extra", "fit_text", "expected"), [
    # the fit sets b_call and so does --set: refused, not decided
    (("--set", "b_call=10us"), FIT,
     "--set b_call: --fitted {fit} sets b_call already; predict at the fit or at your value, "
     "not both"),
    # the fit has a param the machine has not: a fit of another machine
    ((), FIT + "param B_spine = 50 GB/s\n",
     "--fitted {fit}: {machine} has no param 'B_spine' for its value; is it a fit of this "
     "machine?"),
])
def test_the_command_and_the_api_refuse_alike(run, tmp_path, extra, fit_text, expected):
    log, fit = _log(), write(tmp_path, "fit.sched", fit_text)
    code, out, err = run("predict", MACHINE, "--against", log, "--fitted", fit, *extra)
    sets = [extra[1]] if extra else []
    with pytest.raises(UsageError) as refused:
        schedc.predict_file(MACHINE, [log], fitted=fit, sets=sets)
    message = expected.format(fit=fit, machine=MACHINE)
    assert refused.value.message == message
    assert (code, out) == (2, "") and err == refused.value.render() + "\n"


def test_a_session_not_at_the_fit_is_not_labelled_so(tmp_path):
    log, fit = _log(), write(tmp_path, "fit.sched", FIT)
    with pytest.raises(UsageError, match="the session is not at its params \\(b_call"):
        schedc.predict_against(schedc.load(MACHINE), [log], fitted=fit)
    at_fit = schedc.load_fitted(MACHINE, fit)
    table, _ = schedc.predict_against(at_fit, [log], fitted=fit)
    assert table.rows

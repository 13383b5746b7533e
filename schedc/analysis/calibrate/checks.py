"""Does the machine file describe the log's machine at all? Beyond the rank and host counts
(calibration.check_table), two checks of the model itself:

- the bandwidth ceiling: with every protocol at its full physical share of every link
  (each `eff` at its upper bound, fitted or not, every start-up and latency at its lower
  one), can the machine run the log's largest size as fast as it was measured? If not, its
  links are too slow (or too few) for that log: inadequate; so is a fit that needs a share
  at its upper bound to get close;
- systematic misfit: a run of four or more consecutive sizes whose errors all have one sign
  and are all beyond 10 % is a shape the model does not follow (an algorithm or channel
  count NCCL changes there), reported with its size range and its errors.
"""

from __future__ import annotations

import numpy as np

from ...units import format_bytes
from .records import COLLECTIVE_BINARIES, Calibration, Run
from .model import Model, group_of, schedules
from .roles import roles

MISFIT_ROWS = 4
MISFIT_ERROR = 0.10
INADEQUATE = "INADEQUATE"


def adequacy(runs: list[Run], cal: Calibration, models, per_run, theta: np.ndarray) -> list[str]:
    from ...measure.nccl_tests import BUSBW_FACTORS
    out = []
    params = cal.params
    for run, model, idx in zip(runs, models, per_run):
        best_of, ceiling = _ceiling(run, model, [params[j] for j in idx], theta[idx])
        mine = [p for p in cal.comparison.points if p.log == run.log]
        largest = max(mine, key=lambda p: p.size)
        best = float(best_of(np.array([float(largest.size)]), ceiling)[0])
        collective = run.session.program.result(schedules(run.schedule)[0]).collective
        factor = BUSBW_FACTORS[COLLECTIVE_BINARIES[collective.kind]](len(collective.ranks))
        if best > largest.measured * 1.02:
            out.append(f"{INADEQUATE}: {run.log}: even with every protocol at its full share of "
                       f"a link, the machine needs {best * 1e3:.4g} ms for "
                       f"{format_bytes(largest.size)}, measured {largest.measured * 1e3:.4g} ms:"
                       f" a busbw ceiling of {factor * largest.size / best / 1e9:.4g} GB/s "
                       f"below the log's {factor * largest.size / largest.measured / 1e9:.4g} "
                       "GB/s (its links are too slow or too few for this log)")
    for p in params:
        if p.what.endswith("share of a link's bandwidth") and "at its upper bound" in p.flags:
            out.append(f"{INADEQUATE}: {p.name} ({p.what}) needs its upper bound "
                       f"{p.upper:.4g}: the machine's links are too slow for the log")
    out += misfit_runs(cal)
    return out


def _ceiling(run: Run, model: Model, fitted: list, theta: np.ndarray):
    """The model and params of the bandwidth ceiling: every share of a link at its upper
    bound, fitted or not (with `--fit latencies` the shares are not fitted, and a ceiling at
    their values would call a share too small for the log an inadequate machine), every
    fitted latency at its lower bound, the rest at the fit's values."""
    program = run.session.program
    names = [p.name for p in model.params]
    shares = [n for n in group_of(run.session, run.schedule, "shares") if n not in names]
    if shares:
        model = Model(run.session, run.schedule, (*names, *shares))
        extra = [r.upper for r in roles(run.session, [program.params[n] for n in shares])]
        theta = np.concatenate([theta, extra])
    ceiling = theta.copy()
    for k, p in enumerate(fitted):
        if p.what.endswith("share of a link's bandwidth"):
            ceiling[k] = p.upper
        elif p.what.endswith(("start-up per round", "per hop", "per call")):
            ceiling[k] = p.lower  # the ceiling is of bandwidth alone
    return model, ceiling


def misfit_runs(cal: Calibration) -> list[str]:
    c = cal.comparison
    out = []
    for log in c.logs:
        rows = sorted(((p.size, e) for p, e in zip(c.points, c.errors) if p.log == log))
        k = 0
        while k < len(rows):
            sign = np.sign(rows[k][1])
            end = k
            while (end < len(rows) and np.sign(rows[end][1]) == sign
                   and abs(rows[end][1]) > MISFIT_ERROR):
                end += 1
            if end - k >= MISFIT_ROWS:
                errors = [e for _, e in rows[k:end]]
                lo, hi = sorted(errors, key=abs)[0], sorted(errors, key=abs)[-1]
                where = f" ({log})" if len(c.logs) > 1 else ""
                out.append(f"systematic misfit at {format_bytes(rows[k][0])}-"
                           f"{format_bytes(rows[end - 1][0])}{where}: {_pct(lo)} to "
                           f"{_pct(hi)} over {end - k} consecutive sizes")
            k = max(end, k + 1)
    return out


def _pct(e: float) -> str:
    return f"{'−' if e < 0 else '+'}{abs(e) * 100:.0f} %"

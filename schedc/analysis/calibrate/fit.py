"""The fit: one least-squares problem over several logs, each with its own machine file.

The unknowns are the params of the machine files: a param declared in an imported library
(e.g. NCCL's protocol constants) is one unknown *shared* by every log whose machine imports
it; a param declared in the machine file itself (e.g. its fabric's latency) is that log's
own. Each is searched in log space within its physical bounds, pulled softly towards its
prior (roles.py), and the protocols' params are kept in order (LL <= LL128 <= Simple) so
their labels cannot swap. The optimiser (scipy least_squares, trf) starts from several
points: the file's values, the priors, and six spread around the priors (a fixed seed);
the best is kept, and starts that reach as low a cost at other values are reported.

Each fitted value gets a standard error from the Jacobian (s² (JᵀJ)⁻¹, in log space, so a
relative one) and flags: at a bound, at an ordering bound, not determined by the rows (its
Jacobian column vanishes or it moves only together with others), or uncertain beyond ±100 %.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ...errors import UsageError
from .calibration import (
    Calibration,
    CalibrationError,
    Comparison,
    FittedParam,
    Point,
    Run,
    Split,
    check_table,
    points,
)
from .model import Model, check_names, default_unknowns
from .roles import Role, orderings, roles

# The fit rows' noise in log time: nccl-tests' run-to-run spread is a few per cent (the
# in-place and out-of-place columns of the shipped logs differ by a median of about 1 %, up
# to 20 % on single rows); the priors weigh against the rows at this scale.
DATA_SIGMA = 0.05
ORDER_WEIGHT = 300.0
INTERLEAVED = Split()  # residual per unit of log-violation of an order: a steep wall
AT_BOUND = 1e-4  # log distance from a bound that counts as at it
NEAR_BOUND = math.log(1.01)  # within 1 %: an undetermined param there was pushed, not held
STARTS = 8
AGREE = 0.05  # starts that reach the best cost agree when every value is within 5 %


@dataclass(frozen=True)
class Unknown:
    name: str
    log: str | None  # None: shared
    role: Role
    nominal: float
    dim: tuple


def _shared(run: Run, name: str) -> bool:
    """Declared in a file the machine file imports, not in the machine file itself."""
    param = run.session.program.params[name]
    return Path(param.span.source.path).resolve() != Path(run.session.program.path).resolve()


def _unknowns(runs: list[Run], names: tuple[str, ...]) -> tuple[list[Unknown], list[list[int]],
                                                                list[tuple[str, ...]]]:
    unknowns: list[Unknown] = []
    index: dict[tuple[str, str | None], int] = {}
    per_run, run_names = [], []
    for run in runs:
        mine = (check_names(run.session, run.schedule, names, anywhere=len(runs) > 1) if names
                else default_unknowns(run.session, run.schedule))
        params = [run.session.program.params[n] for n in mine]
        idx = []
        for param, role in zip(params, roles(run.session, params)):
            key = (param.name, None if len(runs) == 1 or _shared(run, param.name) else run.log)
            if key not in index:
                index[key] = len(unknowns)
                unknowns.append(Unknown(param.name, key[1], role, float(param.nominal),
                                        param.dim))
            idx.append(index[key])
        per_run.append(idx)
        run_names.append(mine)
    missing = [n for n in names if not any(n in m for m in run_names)]
    if missing:
        raise UsageError(f"--fit {missing[0]}: no machine file has a param named '{missing[0]}'")
    if not unknowns:
        raise UsageError("the times depend on no param but the size and the link rates; "
                         "nothing to fit (name a rate with --fit to fit it)")
    return unknowns, per_run, run_names


def calibrate_runs(runs: list[Run], names: tuple[str, ...] = (), split: Split = INTERLEAVED,
                   place: str = "out", drop_wrong: bool = False, max_evaluations: int = 2000,
                   fit_all: bool = False) -> Calibration:
    if split.kind == "leave-one-out" and not fit_all:
        from .splits import leave_one_out
        return leave_one_out(runs, names, place, drop_wrong, max_evaluations, split.own_below)
    unknowns, per_run, run_names = _unknowns(runs, names)  # usage errors first
    notes: list[str] = []
    for run in runs:
        notes += check_table(run.session, run.schedule, run.table, run.log)
    models: list[Model] = []
    data: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    all_points: list[Point] = []
    for run, mine in zip(runs, run_names):
        pts, said = points(run, split, place, drop_wrong, fit_all)
        notes += said
        models.append(Model(run.session, run.schedule, mine))
        data.append((np.array([float(p.size) for p in pts]), np.array([p.measured for p in pts]),
                     np.array([p.fit for p in pts])))
        all_points += pts
    fit_rows = int(sum(on.sum() for _, _, on in data))
    if fit_rows <= len(unknowns):
        raise CalibrationError(f"{fit_rows} fit rows cannot check {len(unknowns)} params: a fit "
                               "needs more rows than params (with as many, every fit row is met "
                               "exactly and its 0 % error says nothing); fit on more rows")
    pairs = []
    for run, idx, mine in zip(runs, per_run, run_names):
        where = dict(zip(mine, idx))
        pairs += [(where[a], where[b]) for a, b in orderings(run.session, list(mine))]
    pairs = sorted(set(pairs))
    lower = np.array([math.log(u.role.lower) if u.role.lower > 0 else -np.inf for u in unknowns])
    upper = np.array([math.log(u.role.upper) if u.role.upper < np.inf else np.inf
                      for u in unknowns])
    priors = [(j, math.log(u.role.prior), u.role.sigma) for j, u in enumerate(unknowns)
              if u.role.prior is not None]

    def data_residuals(x: np.ndarray) -> np.ndarray:
        theta = np.exp(x)
        parts = []
        for model, idx, (sizes, measured, on) in zip(models, per_run, data):
            with np.errstate(all="ignore"):
                r = np.log(model(sizes[on], theta[idx]) / measured[on])
            parts.append(np.where(np.isfinite(r), r, 1e3) / DATA_SIGMA)
        return np.concatenate(parts)

    def residuals(x: np.ndarray) -> np.ndarray:
        extra = [(x[j] - mu) / sigma for j, mu, sigma in priors]
        extra += [ORDER_WEIGHT * max(0.0, x[a] - x[b]) for a, b in pairs]
        return np.concatenate([data_residuals(x), np.array(extra)])

    from scipy.optimize import least_squares  # type: ignore[import-untyped]  # no types
    results = []
    with warnings.catch_warnings():  # no library warning reaches the user's terminal
        warnings.simplefilter("ignore")
        for x0 in _starts(unknowns, lower, upper):
            results.append(least_squares(residuals, x0, bounds=(lower, upper), method="trf",
                                         max_nfev=max_evaluations))
    best = min(results, key=lambda r: r.cost)
    theta = np.exp(best.x)
    starts = _disagreement(results, best, unknowns)
    fitted = _params(unknowns, best, data_residuals, pairs, lower, upper, fit_rows)
    predicted: list[float] = []
    winners: list[str | None] = []
    for model, idx, (sizes, _, _) in zip(models, per_run, data):
        predicted += [float(v) for v in model(sizes, theta[idx])]
        winners += model.winners(sizes, theta[idx])
    comparison = Comparison(runs[0].schedule if len({r.schedule for r in runs}) == 1 else
                            ", ".join(dict.fromkeys(r.schedule for r in runs)),
                            tuple(dict.fromkeys(r.log for r in runs)), tuple(all_points),
                            tuple(predicted), tuple(winners))
    from .checks import adequacy
    cal = Calibration(comparison, fitted, bool(all(r.success for r in [best])), str(best.message),
                      int(sum(r.nfev for r in results)), split.every, split, starts,
                      tuple(notes))
    return replace(cal, checks=tuple(adequacy(runs, cal, models, per_run, theta)))


def _starts(unknowns: list[Unknown], lower: np.ndarray, upper: np.ndarray) -> list[np.ndarray]:
    def inside(x: np.ndarray) -> np.ndarray:
        span = np.where(np.isfinite(upper - lower), (upper - lower) * 1e-6, 1e-9)
        return np.clip(x, lower + span, upper - span)

    nominal = np.log(np.array([u.nominal for u in unknowns]))
    centre = np.array([math.log(u.role.prior) if u.role.prior is not None else
                       math.log(u.nominal) for u in unknowns])
    rng = np.random.default_rng(0)
    out = [inside(nominal), inside(centre)]
    out += [inside(centre + rng.uniform(-math.log(10), math.log(10), len(unknowns)))
            for _ in range(STARTS - 2)]
    return out


def _disagreement(results, best, unknowns: list[Unknown]) -> tuple[str, ...]:
    """Starts that reach the best cost (to 0.1 %) with a value more than 5 % away."""
    out = []
    for k, r in enumerate(results):
        if r.cost <= best.cost * (1 + 1e-3) + 1e-12:
            far = [u.name for u, a, b in zip(unknowns, r.x, best.x) if abs(a - b) > AGREE]
            if far:
                out.append(f"start {k + 1} reaches the same cost with {', '.join(far)} "
                           f"{'differing' if len(far) > 1 else 'differing'} by more than 5 %")
    return tuple(out)


def _params(unknowns: list[Unknown], best, data_residuals, pairs, lower, upper,
            fit_rows: int) -> tuple[FittedParam, ...]:
    jac = best.jac
    data_jac = jac[:fit_rows]
    determined = _determined(data_jac)
    r = data_residuals(best.x)
    dof = max(fit_rows - len(unknowns), 1)
    s2 = float(r @ r) / dof
    try:
        cov = np.linalg.pinv(jac.T @ jac) * s2
        sigma = np.sqrt(np.maximum(np.diag(cov), 0.0))
    except np.linalg.LinAlgError:
        sigma = np.full(len(unknowns), np.inf)
    out = []
    for j, u in enumerate(unknowns):
        flags = []
        if best.x[j] <= lower[j] + AT_BOUND:
            flags.append("at its lower bound")
        if best.x[j] >= upper[j] - AT_BOUND:
            flags.append("at its upper bound")
        for a, b in pairs:
            if j in (a, b) and best.x[a] >= best.x[b] - AT_BOUND:
                other = unknowns[b if j == a else a].name
                flags.append(f"at its ordering bound (equal to {other})")
        if not determined[j]:
            # Not "held by its prior" when the other params pushed it against a bound.
            near = "lower" if best.x[j] <= lower[j] + NEAR_BOUND else \
                "upper" if best.x[j] >= upper[j] - NEAR_BOUND else None
            flags.append(f"undetermined by the fit rows (pushed near its {near} bound)" if near
                         else "undetermined by the fit rows (held by its prior)"
                         if u.role.prior is not None else "undetermined by the fit rows")
        elif sigma[j] > 1.0:
            flags.append(f"uncertain (±{sigma[j] * 100:.0f} %)")
        out.append(FittedParam(u.name, float(math.exp(best.x[j])), u.nominal, u.dim,
                               bool(determined[j]), u.log, u.role.what, u.role.lower,
                               u.role.upper, u.role.prior, float(sigma[j]), tuple(flags)))
    return tuple(out)


def _determined(jac: np.ndarray) -> np.ndarray:
    """Per param: do the data determine it? Not if its Jacobian column vanishes, or if it
    lies in the Jacobian's null space (it moves only together with others)."""
    norms = np.linalg.norm(jac, axis=0)
    determined = norms > 1e-8 * max(float(norms.max(initial=0)), 1e-300)
    if determined.any():
        _, singular, vt = np.linalg.svd(jac[:, determined] / norms[determined], full_matrices=False)
        null = vt[singular < 1e-6 * singular.max()]
        if len(null):
            involved = (np.abs(null) > 1e-3).any(axis=0)
            idx = np.flatnonzero(determined)
            determined[idx[involved]] = False
    return determined


def prediction(run: Run, names: tuple[str, ...], values: dict[tuple[str, str | None], float],
               place: str, drop_wrong: bool) -> tuple[tuple[Point, ...], list[float],
                                                       list[str | None], list[str]]:
    """A log's rows predicted with `values` (by (name, log)) for its shared unknowns; all rows
    held out."""
    notes = check_table(run.session, run.schedule, run.table, run.log)
    mine = (check_names(run.session, run.schedule, names, anywhere=True) if names
            else default_unknowns(run.session, run.schedule))
    pts, said = points(run, Split("leave-one-out"), place, drop_wrong)
    model = Model(run.session, run.schedule, mine)
    params = [run.session.program.params[n] for n in mine]
    # A shared param no other log has is at its prior (NCCL's value), not at the library's
    # value, which may have been fitted on this very log; the log's own are its file's.
    theta = np.array([values.get((p.name, None), role.prior if role.prior is not None
                                 else float(p.nominal))
                      if _shared(run, p.name) else float(p.nominal)
                      for p, role in zip(params, roles(run.session, params))])
    sizes = np.array([float(p.size) for p in pts])
    return pts, [float(v) for v in model(sizes, theta)], model.winners(sizes, theta), notes + said

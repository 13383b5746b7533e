"""The fit: one least-squares problem over several logs, each with its own machine file.

The unknowns are the params of the machine files: a param declared in an imported library
(e.g. NCCL's protocol constants) is one unknown *shared* by every log whose machine imports
it; a param declared in the machine file itself (e.g. its fabric's latency) is that log's
own. Each is searched in log space within its physical bounds, pulled softly towards its
prior (roles.py), and the protocols' params are kept in order (LL <= LL128 <= Simple) so
their labels cannot swap. The optimiser (scipy least_squares, trf) starts from several
points: the priors and seven spread ×/÷ 10 around them (a fixed seed; not the file's values,
which for a shipped library are an earlier fit's output), and eight more at a time, up to
MAX_STARTS, until a second start reaches the best cost: a best that one start alone found
may not be the lowest, and another set of starts would give another answer. The best is
kept; a best still reached from one start only, and starts that reach as low a cost at
values further apart than their standard error (and 5 %), are reported.

Params the rows do not determine are held at NCCL's value and the rest refitted
(identify.py; a hold is refused when the rows object to that value). Each fitted value gets
a standard error from the Jacobian (s² (JᵀJ)⁻¹, in log space, so a relative one), replaced by
its profile's where the Jacobian says beyond ±100 % (the Jacobian is local; the protocols'
minimum has kinks), and flags: at a bound, at an ordering bound, not determined by the rows
though not held, or uncertain beyond ±100 %.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ...errors import UsageError
from .records import (
    Calibration,
    CalibrationError,
    Comparison,
    FittedParam,
    Point,
    Run,
    Split,
    WorkBudget,
)
from .rows import check_table, points
from .identify import AT_BOUND, NEAR_BOUND, to_hold, unbound_shares
from .identify import anchors_of as _anchors
from .identify import fitted_params as _params
from .model import Model, check_names, default_unknowns, group_of
from .roles import GROUPS, Role, orderings, roles

# The fit rows' noise in log time: nccl-tests' run-to-run spread is a few per cent (the
# in-place and out-of-place columns of the shipped logs differ by a median of about 1 %, up
# to 20 % on single rows); the priors weigh against the rows at this scale.
DATA_SIGMA = 0.05
ORDER_WEIGHT = 300.0
INTERLEAVED = Split()  # residual per unit of log-violation of an order: a steep wall
STARTS = 8  # a batch of starts
MAX_STARTS = 32  # four batches; the shipped logs' searches confirm within two (docs/calibration.md)
CONFIRMED = 2  # starts that must reach the best cost for it to count as found
SAME_COST = 0.025  # in cost units (half a χ²): 0.05 of χ², far below one unit
AGREE = 0.05  # starts that reach the best cost agree when every value is within 5 %


@dataclass(frozen=True)
class Unknown:
    name: str
    log: str | None  # None: shared
    role: Role
    nominal: float
    dim: tuple
    shared: bool = True  # declared in a library the machine imports (else the machine's own)


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
            shared = _shared(run, param.name)
            key = (param.name, None if len(runs) == 1 or shared else run.log)
            if key not in index:
                index[key] = len(unknowns)
                unknowns.append(Unknown(param.name, key[1], role, float(param.nominal),
                                        param.dim, shared))
            idx.append(index[key])
        per_run.append(idx)
        run_names.append(mine)
    for name in (n for n in names if n in GROUPS):
        files = [r for r in runs if name not in r.session.program.params]
        if files and not any(group_of(r.session, r.schedule, name) for r in files):
            raise UsageError(f"--fit {name}: no machine file's time depends on a "
                             f"{GROUPS[name][1]}")
    missing = [n for n in names if n not in GROUPS and not any(n in m for m in run_names)]
    if missing:
        raise UsageError(f"--fit {missing[0]}: no machine file has a param named '{missing[0]}'")
    if not unknowns:
        raise UsageError("the times depend on no param but the size and the link rates; "
                         "nothing to fit (name a rate with --fit to fit it)")
    return unknowns, per_run, run_names


def calibrate_runs(runs: list[Run], names: tuple[str, ...] = (), split: Split = INTERLEAVED,
                   place: str = "out", drop_wrong: bool = False, max_evaluations: int = 2000,
                   fit_all: bool = False, max_work: int | None = None) -> Calibration:
    if split.kind == "leave-one-out" and not fit_all:
        from .splits import leave_one_out
        return leave_one_out(runs, names, place, drop_wrong, max_evaluations, split.own_below,
                             max_work)
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
    pairs = []
    for run, idx, mine in zip(runs, per_run, run_names):
        where = dict(zip(mine, idx))
        pairs += [(where[a], where[b]) for a, b in orderings(run.session, list(mine))]
    pairs = sorted(set(pairs))
    lower = np.array([math.log(u.role.lower) if u.role.lower > 0 else -np.inf for u in unknowns])
    upper = np.array([math.log(u.role.upper) if u.role.upper < np.inf else np.inf
                      for u in unknowns])
    anchors = _anchors(unknowns)
    priors = [(j, math.log(u.role.prior), u.role.sigma) for j, u in enumerate(unknowns)
              if u.role.prior is not None]

    budget = WorkBudget(max_work, fit_rows, len(unknowns)).checked()  # (--max-fit-work)
    def data_residuals(x: np.ndarray) -> np.ndarray:
        budget.spend()
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

    n = len(unknowns)
    at_prior = np.array([math.log(u.role.prior) if u.role.prior is not None else
                         math.log(u.nominal) for u in unknowns])
    starts_x = _starts(unknowns, lower, upper)
    # Held at their priors: a link class's share that no fit row is bound by, and (below)
    # what the rows do not determine (identify.py).
    unbound = unbound_shares([u.role for u in unknowns], data_residuals, at_prior, DATA_SIGMA)
    if fit_rows <= len(unknowns) - len(unbound):  # (a share held before the fit is not one)
        raise CalibrationError(f"{fit_rows} fit rows cannot check {len(unknowns) - len(unbound)} "
                               "params: a fit needs more rows than params (with as many, every "
                               "fit row is met exactly and its 0 % error says nothing); fit on "
                               "more rows")
    held: list[int] = list(unbound)
    best, results = _search(residuals, starts_x, at_prior, held, lower, upper,
                            max_evaluations, anchors)
    # Every search the result rests on (the first, and each refit whose hold was kept): one
    # whose best a single start reached is said, even when a later refit confirms its own.
    rests_on = [("the first fit", best, results)]
    # The rows' own scatter (per fit row, in units of DATA_SIGMA), from the fit of everything:
    # a hold may cost the rows at most one such unit of χ² (identify.py).
    scale = max(2 * _data_cost(data_residuals, best) / max(fit_rows - n, 1), 1.0)
    refused: set[int] = set()
    while True:
        more = [j for j in _undetermined(best, held, unknowns, pairs, lower, upper, fit_rows,
                                         scale) if j not in refused]
        if not more:
            break
        j = more[0]  # the least determined first (identify.to_hold's order)
        # From the fit so far too (a warm start): the refit is then never worse than where
        # the search already was, whatever the file's values are.
        trial, trials = _search(residuals, starts_x, at_prior, sorted(held + [j]), lower,
                                upper, max_evaluations, anchors, warm=best.x)
        if 2 * (_data_cost(data_residuals, trial) - _data_cost(data_residuals, best)) \
                <= scale and not _new_contacts(best, trial, held + [j], pairs, lower, upper):
            held, best, results = sorted(held + [j]), trial, trials
            rests_on.append((f"the refit holding {unknowns[j].name}", best, results))
        else:
            refused.add(j)  # the rows object to NCCL's value: it stays fitted
    theta = np.exp(best.x)
    fitted = _params(unknowns, best, data_residuals, pairs, lower, upper, fit_rows, held,
                     anchors, unbound)
    # The Jacobian's error is local; where it says beyond ±100 %, the profile decides.
    fitted = tuple(_profiled(p, j, best, held, residuals, data_residuals, starts_x, at_prior,
                             lower, upper, max_evaluations, anchors, scale)
                   if not p.held and (p.sigma is not None and p.sigma > 1.0 or any(
                       f.startswith("undetermined") for f in p.flags)) else p
                   for j, p in enumerate(fitted))
    starts = _disagreement(results, best, unknowns, [p.sigma for p in fitted])
    starts = (*(f"the best cost of {which} was reached from one of {len(tried)} starts only: "
                "another start may find a lower one, with other values"
                for which, found, tried in rests_on if _reached(tried, found) < CONFIRMED),
              *starts)
    predicted: list[float] = []
    winners: list[str | None] = []
    latency: list[float | None] = []
    for model, idx, (sizes, _, _) in zip(models, per_run, data):
        predicted += [float(v) for v in model(sizes, theta[idx])]
        winners += model.winners(sizes, theta[idx])
        latency += model.latency_shares(sizes, theta[idx])
    comparison = Comparison(runs[0].schedule if len({r.schedule for r in runs}) == 1 else
                            ", ".join(dict.fromkeys(r.schedule for r in runs)),
                            tuple(dict.fromkeys(r.log for r in runs)), tuple(all_points),
                            tuple(predicted), tuple(winners), tuple(latency))
    from .checks import adequacy
    cal = Calibration(comparison, fitted, bool(all(r.success for r in [best])), str(best.message),
                      int(sum(r.nfev for r in results)), split.every, split, starts,
                      tuple(notes), optimum=(_reached(results, best), len(results)))
    return replace(cal, checks=tuple(adequacy(runs, cal, models, per_run, theta)))


def _starts(unknowns: list[Unknown], lower: np.ndarray, upper: np.ndarray) -> list[np.ndarray]:
    def inside(x: np.ndarray) -> np.ndarray:
        span = np.where(np.isfinite(upper - lower), (upper - lower) * 1e-6, 1e-9)
        return np.clip(x, lower + span, upper - span)

    # Not from the file's values: those of a shipped library are an earlier fit's output, and
    # a fit started there would depend on it (a loop through the file). The priors, and
    # points spread ×/÷ 10 around them (a fixed seed); a param without a prior: its file's.
    centre = np.array([math.log(u.role.prior) if u.role.prior is not None else
                       math.log(u.nominal) for u in unknowns])
    rng = np.random.default_rng(0)
    out = [inside(centre)]
    out += [inside(centre + rng.uniform(-math.log(10), math.log(10), len(unknowns)))
            for _ in range(MAX_STARTS - 1)]
    return out


def _same_cost(r: _Solution, best: _Solution) -> bool:
    """Within SAME_COST of the best cost (a twentieth of a unit of χ²: the cost is half the
    sum of squared residuals in units of the assumed noise), or within 0.1 % of it: that is
    0.001 of the fit's χ², so per fit row a thousandth of the rows' own scatter (the fit's
    `scale`, one unit or more per row)."""
    return r.cost <= best.cost * (1 + 1e-3) or r.cost - best.cost <= SAME_COST


def _reached(results: list[_Solution], best: _Solution) -> int:
    """How many of the results reach the best cost."""
    return sum(_same_cost(r, best) for r in results)


def _search(residuals, starts: list[np.ndarray], at_prior: np.ndarray, held: list[int],
            lower: np.ndarray, upper: np.ndarray, max_evaluations: int,
            anchors: dict[int, tuple[int, float]], warm: np.ndarray | None = None):
    """_optimise from a batch of STARTS (and `warm`, the fit so far: a refit is then never
    worse than where the search already was), then a batch more at a time until CONFIRMED
    results reach the best cost or the starts run out; (best, all)."""
    best, results = _optimise(residuals, [*starts[:STARTS], *([] if warm is None else [warm])],
                              at_prior, held, lower, upper, max_evaluations, anchors)
    used = STARTS
    while _reached(results, best) < CONFIRMED and used < len(starts):
        more, extra = _optimise(residuals, starts[used:used + STARTS], at_prior, held, lower,
                                upper, max_evaluations, anchors)
        results += extra
        best = min(best, more, key=lambda r: r.cost)
        used += STARTS
    return best, results


def _profiled(p: FittedParam, j: int, best: _Solution, held: list[int], residuals,
              data_residuals, starts_x, at_prior: np.ndarray, lower, upper,
              max_evaluations: int, anchors, scale: float) -> FittedParam:
    """A param whose local (Jacobian) error is beyond ±100 %: refit with it fixed a factor e
    (±100 % in log space) either way, or at its bound if that is nearer. Where the rows' χ²
    rises by Δ (in units of their scatter), a quadratic profile has standard error
    shift / √Δ; at a bound nearer than that, the bound. The larger side is its error, and
    it is flagged uncertain (or undetermined, where the Jacobian's column vanished) only if
    that is still beyond ±100 %."""
    sides = []
    base = _data_cost(data_residuals, best)
    for sign in (1.0, -1.0):
        edge = upper[j] if sign > 0 else lower[j]
        shift = min(1.0, abs(edge - best.x[j]))
        fixed = at_prior.copy()
        fixed[j] = best.x[j] + sign * shift
        trial, _ = _optimise(residuals, [*starts_x[:2], best.x], fixed, sorted(held + [j]),
                             lower, upper, max_evaluations, anchors)
        delta = max(2 * (_data_cost(data_residuals, trial) - base) / scale, 0.0)
        error = shift / math.sqrt(delta) if delta > 0 else math.inf
        sides.append(min(error, shift) if shift < 1.0 else error)
    sigma = max(sides)
    if sigma > 1.0:  # the profile confirms it: flagged as the Jacobian said
        return replace(p, flags=tuple(f if not f.startswith("uncertain") else
                                      f"uncertain (±{sigma * 100:.0f} % by its profile)"
                                      for f in p.flags))
    # Determined after all (the rows' χ² rises both ways within ±100 %): only a bound or an
    # ordering it sits at stays flagged.
    return replace(p, sigma=sigma, determined=True, flags=tuple(
        f for f in p.flags if not f.startswith(("uncertain", "undetermined"))))


def _disagreement(results, best, unknowns: list[Unknown],
                  sigmas: list[float | None]) -> tuple[str, ...]:
    """Starts that reach the best cost (_same_cost) with a value more than 5 % away, and
    further than the value's own standard error (within it, they are the same answer)."""
    out = []
    for k, r in enumerate(results):
        if _same_cost(r, best):
            far = [u.name for u, a, b, s in zip(unknowns, r.x, best.x, sigmas)
                   if abs(a - b) > max(AGREE, s or 0.0)]
            if far:
                out.append(f"start {k + 1} reaches the same cost with {', '.join(far)} "
                           f"{'differing' if len(far) > 1 else 'differing'} by more than 5 %")
    return tuple(out)


@dataclass(frozen=True)
class _Solution:
    """One start's result over every unknown: held ones at their priors (zero columns)."""

    x: np.ndarray
    jac: np.ndarray
    cost: float
    success: bool
    message: str
    nfev: int


def _optimise(residuals, starts: list[np.ndarray], at_prior: np.ndarray, held: list[int],
              lower: np.ndarray, upper: np.ndarray, max_evaluations: int,
              anchors: dict[int, tuple[int, float]]):
    """least_squares over the unknowns not held, from every start; (best, all). A held share
    NCCL sets relative to Simple's follows the Simple share at NCCL's ratio."""
    from scipy.optimize import least_squares  # type: ignore[import-untyped]  # no types
    free = np.array([j for j in range(len(at_prior)) if j not in held], dtype=int)

    def full(xf: np.ndarray) -> np.ndarray:
        x = at_prior.copy()
        x[free] = xf
        for j in held:
            if j in anchors:
                k, ratio = anchors[j]
                x[j] = min(max(x[k] + ratio, lower[j]), upper[j])
        return x

    results = []
    with warnings.catch_warnings():  # no library warning reaches the user's terminal
        warnings.simplefilter("ignore")
        for x0 in starts:
            r = least_squares(lambda xf: residuals(full(xf)), x0[free],
                              bounds=(lower[free], upper[free]), method="trf",
                              max_nfev=max_evaluations)
            jac = np.zeros((r.jac.shape[0], len(at_prior)))
            jac[:, free] = r.jac
            results.append(_Solution(full(r.x), jac, float(r.cost), bool(r.success),
                                     str(r.message), int(r.nfev)))
    return min(results, key=lambda r: r.cost), results


def _data_cost(data_residuals, solution: _Solution) -> float:
    r = data_residuals(solution.x)
    return 0.5 * float(r @ r)


def _contacts(x: np.ndarray, skip: list[int], pairs, lower, upper) -> set:
    """The bounds and orderings the free params of `x` sit at."""
    out: set = set()
    for j in range(len(x)):
        if j not in skip and (x[j] <= lower[j] + AT_BOUND or x[j] >= upper[j] - AT_BOUND):
            out.add(j)
    out |= {(a, b) for a, b in pairs if x[a] >= x[b] - AT_BOUND}
    return out


def _new_contacts(before: _Solution, after: _Solution, held: list[int], pairs, lower,
                  upper) -> bool:
    """Does holding push a fitted param to a bound or an ordering it was not at? Then NCCL's
    value contradicts what the rows fix for the others (e.g. LL128 held at NCCL's share
    above the Simple share the rows give): the rows do bound it, and it is not held."""
    return bool(_contacts(after.x, held, pairs, lower, upper)
                - _contacts(before.x, held, pairs, lower, upper))


def _undetermined(best: _Solution, held: list[int], unknowns: list[Unknown], pairs,
                  lower: np.ndarray, upper: np.ndarray, fit_rows: int,
                  scale: float) -> list[int]:
    """The free unknowns the fit rows do not determine and that may be held (identify.py):
    with a prior, not at or near a bound, not at an ordering bound; of a group the rows see
    only together, a shared constant before a log's own."""
    free = [j for j in range(len(unknowns)) if j not in held]
    x = best.x

    def holdable(j: int) -> bool:
        if unknowns[j].role.prior is None:
            return False
        if x[j] <= lower[j] + NEAR_BOUND or x[j] >= upper[j] - NEAR_BOUND:
            return False
        return not any(j in (a, b) and x[a] >= x[b] - AT_BOUND for a, b in pairs)

    jac = best.jac[:fit_rows][:, free] / math.sqrt(scale)  # in units of the rows' scatter
    # Held when the rows leave it less sure than its prior, or than ±100 % (log space).
    widths = np.array([min(unknowns[j].role.sigma, 1.0) for j in free])
    shared = np.array([unknowns[j].shared for j in free])
    return [free[k] for k in to_hold(jac, widths, np.array([holdable(j) for j in free]), shared)]


def prediction(run: Run, names: tuple[str, ...], values: dict[tuple[str, str | None], float],
               place: str, drop_wrong: bool) -> tuple[Comparison, list[str]]:
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
    # (Not NCCL's ratio to the other logs' Simple share, as a held share is: measured, that
    # predicts the single host worse, 44.26 % against 43.28 % over all rows.)
    theta = np.array([values.get((p.name, None), role.prior if role.prior is not None
                                 else float(p.nominal))
                      if _shared(run, p.name) else float(p.nominal)
                      for p, role in zip(params, roles(run.session, params))])
    sizes = np.array([float(p.size) for p in pts])
    return Comparison(run.schedule, (run.log,), tuple(pts),
                      tuple(float(v) for v in model(sizes, theta)),
                      tuple(model.winners(sizes, theta)),
                      tuple(model.latency_shares(sizes, theta))), notes + said

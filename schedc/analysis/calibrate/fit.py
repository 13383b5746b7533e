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

import functools
import math
from dataclasses import dataclass, replace

import numpy as np

from ...errors import UsageError
from .records import (
    Calibration,
    Comparison,
    FittedParam,
    Point,
    Run,
    Split,
    WorkBudget,
)
from .identify import anchors_of as _anchors
from .identify import fitted_params as _params
from .identify import enough_rows, new_contacts, unbound_shares, undetermined
from .model import Model, check_names, declared_in_library, default_unknowns, group_of
from .roles import GROUPS, orderings, roles
from .rows import check_table, points
from .search import (
    Solution,
    Unknown,
    data_cost,
    disagreement,
    profiled,
    reached,
    search,
    starts_of,
    unconfirmed,
)

# The fit rows' noise in log time: nccl-tests' run-to-run spread is a few per cent (the
# in-place and out-of-place columns of the shipped logs differ by a median of about 1 %, up
# to 20 % on single rows); the priors weigh against the rows at this scale.
DATA_SIGMA = 0.05
ORDER_WEIGHT = 300.0
INTERLEAVED = Split()  # residual per unit of log-violation of an order: a steep wall


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
            shared = declared_in_library(run.session, param.name)
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
    """The fit, in its phases: the problem (`_problem`: unknowns, rows, bounds, priors),
    the first search, the holds of what the rows do not determine (`_holds`), each value's
    error (`_errors`), and the result (`_result`)."""
    if split.kind == "leave-one-out" and not fit_all:
        from .splits import leave_one_out
        return leave_one_out(runs, names, place, drop_wrong, max_evaluations, split.own_below,
                             max_work, calibrate_runs=calibrate_runs)
    problem = _problem(runs, names, split, place, drop_wrong, fit_all, max_work)
    searching = functools.partial(search, problem.residuals, problem.starts, problem.at_prior,
                               lower=problem.lower, upper=problem.upper,
                               max_evaluations=max_evaluations, anchors=problem.anchors)
    best, results = searching(list(problem.unbound))
    # The rows' own scatter (per fit row, in units of DATA_SIGMA), from the fit of everything:
    # a hold may cost the rows at most one such unit of χ² (identify.py).
    scale = max(2 * data_cost(problem.data_residuals, best)
                / max(problem.fit_rows - len(problem.unknowns), 1), 1.0)
    held, best, results, rests_on = _holds(problem, searching, best, results, scale)
    fitted = _errors(problem, best, held, scale, max_evaluations)
    return _result(problem, runs, split, best, results, fitted, rests_on)


@dataclass(frozen=True)
class _Problem:
    """One least-squares problem: the unknowns (indices `per_run` into them for each run),
    each run's model and rows (sizes, measured times, fit or held out), the orderings
    `pairs`, the bounds, priors and starts in log space, and the shares held before the fit
    (`unbound`)."""

    unknowns: list[Unknown]
    per_run: list[list[int]]
    models: list[Model]
    data: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
    points: tuple[Point, ...]
    notes: tuple[str, ...]
    fit_rows: int
    pairs: list[tuple[int, int]]
    lower: np.ndarray
    upper: np.ndarray
    anchors: dict[int, tuple[int, float]]
    priors: list[tuple[int, float, float]]
    at_prior: np.ndarray
    starts: list[np.ndarray]
    budget: WorkBudget
    unbound: tuple[int, ...] = ()

    def data_residuals(self, x: np.ndarray) -> np.ndarray:
        self.budget.spend()
        theta = np.exp(x)
        parts = []
        for model, idx, (sizes, measured, on) in zip(self.models, self.per_run, self.data):
            with np.errstate(all="ignore"):
                r = np.log(model(sizes[on], theta[idx]) / measured[on])
            parts.append(np.where(np.isfinite(r), r, 1e3) / DATA_SIGMA)
        return np.concatenate(parts)

    def residuals(self, x: np.ndarray) -> np.ndarray:
        extra = [(x[j] - mu) / sigma for j, mu, sigma in self.priors]
        extra += [ORDER_WEIGHT * max(0.0, x[a] - x[b]) for a, b in self.pairs]
        return np.concatenate([self.data_residuals(x), np.array(extra)])


def _problem(runs: list[Run], names: tuple[str, ...], split: Split, place: str,
             drop_wrong: bool, fit_all: bool, max_work: int | None) -> _Problem:
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
    # T(V; θ) depends on the size alone: rows repeating a size give one equation, not more.
    fit_sizes = sum(len(set(sizes[on].tolist())) for sizes, _, on in data)
    pairs = []
    for run, idx, mine in zip(runs, per_run, run_names):
        where = dict(zip(mine, idx))
        pairs += [(where[a], where[b]) for a, b in orderings(run.session, list(mine))]
    lower = np.array([math.log(u.role.lower) if u.role.lower > 0 else -np.inf for u in unknowns])
    upper = np.array([math.log(u.role.upper) if u.role.upper < np.inf else np.inf
                      for u in unknowns])
    problem = _Problem(
        unknowns, per_run, models, data, tuple(all_points), tuple(notes), fit_rows,
        sorted(set(pairs)), lower, upper, _anchors(unknowns),
        [(j, math.log(u.role.prior), u.role.sigma) for j, u in enumerate(unknowns)
         if u.role.prior is not None],
        np.array([math.log(u.role.prior) if u.role.prior is not None else math.log(u.nominal)
                  for u in unknowns]),
        starts_of(unknowns, lower, upper),
        WorkBudget(max_work, fit_rows, len(unknowns)).checked())  # (--max-fit-work)
    # Held at their priors: a link class's share that no fit row is bound by, and (later,
    # `_holds`) what the rows do not determine (identify.py).
    unbound = unbound_shares([u.role for u in unknowns], problem.data_residuals,
                             problem.at_prior, DATA_SIGMA)
    enough_rows(fit_rows, fit_sizes, len(unknowns) - len(unbound))  # (a share held: not one)
    return replace(problem, unbound=tuple(unbound))


def _holds(problem: _Problem, searching, best: Solution, results: list[Solution], scale: float):
    """Hold, one at a time, each unknown the rows do not determine (the least determined
    first, identify.to_hold's order), refitting each time; a hold is kept unless the rows
    object to NCCL's value. (held, best, results, the searches the result rests on: the
    first, and each refit whose hold was kept; one whose best a single start reached is
    said, even when a later refit confirms its own.)"""
    held = list(problem.unbound)
    rests_on = [("the first fit", best, results)]
    refused: set[int] = set()
    while True:
        more = [j for j in undetermined(best, held, problem.unknowns, problem.pairs,
                                        problem.lower, problem.upper, problem.fit_rows, scale)
                if j not in refused]
        if not more:
            return held, best, results, rests_on
        j = more[0]
        # From the fit so far too (a warm start): the refit is then never worse than where
        # the search already was, whatever the file's values are.
        trial, trials = searching(sorted(held + [j]), warm=best.x)
        cost = 2 * (data_cost(problem.data_residuals, trial)
                    - data_cost(problem.data_residuals, best))
        if cost <= scale and not new_contacts(best, trial, held + [j], problem.pairs,
                                              problem.lower, problem.upper):
            held, best, results = sorted(held + [j]), trial, trials
            rests_on.append((f"the refit holding {problem.unknowns[j].name}", best, results))
        else:
            refused.add(j)  # the rows object to NCCL's value: it stays fitted


def _errors(problem: _Problem, best: Solution, held: list[int], scale: float,
            max_evaluations: int) -> tuple[FittedParam, ...]:
    """Each param's value, standard error and flags. The Jacobian's error is local; where it
    says beyond ±100 %, the profile decides."""
    p = problem
    fitted = _params(p.unknowns, best, p.data_residuals, p.pairs, p.lower, p.upper, p.fit_rows,
                     held, p.anchors, list(p.unbound))
    return tuple(profiled(f, j, best, held, p.residuals, p.data_residuals, p.starts,
                           p.at_prior, p.lower, p.upper, max_evaluations, p.anchors, scale)
                 if not f.held and (f.sigma is not None and f.sigma > 1.0 or any(
                     g.startswith("undetermined") for g in f.flags)) else f
                 for j, f in enumerate(fitted))


def _result(problem: _Problem, runs: list[Run], split: Split, best: Solution,
            results: list[Solution], fitted: tuple[FittedParam, ...], rests_on) -> Calibration:
    """Every row predicted at the fit, what the starts said, and the model's checks."""
    starts = disagreement(results, best, problem.unknowns, [f.sigma for f in fitted])
    starts = (*unconfirmed(rests_on), *starts)
    theta = np.exp(best.x)
    predicted: list[float] = []
    winners: list[str | None] = []
    latency: list[float | None] = []
    for model, idx, (sizes, _, _) in zip(problem.models, problem.per_run, problem.data):
        predicted += [float(v) for v in model(sizes, theta[idx])]
        winners += model.winners(sizes, theta[idx])
        latency += model.latency_shares(sizes, theta[idx])
    comparison = Comparison(runs[0].schedule if len({r.schedule for r in runs}) == 1 else
                            ", ".join(dict.fromkeys(r.schedule for r in runs)),
                            tuple(dict.fromkeys(r.log for r in runs)), problem.points,
                            tuple(predicted), tuple(winners), tuple(latency))
    from .checks import adequacy
    cal = Calibration(comparison, fitted, bool(best.success), str(best.message),
                      int(sum(r.nfev for r in results)), split.every, split, starts,
                      problem.notes, optimum=(reached(results, best), len(results)))
    return replace(cal, checks=tuple(adequacy(runs, cal, problem.models, problem.per_run,
                                              theta)))

"""The multistart search of a fit (fit.py): least squares from the priors and points spread
×/÷ 10 around them, a batch of starts at a time until a second start reaches the best cost
(`search`), each param's profile where the Jacobian's error is beyond ±100 % (`profiled`),
and what the starts say (`disagreement`, `unconfirmed`). See fit.py's docstring for why.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace

import numpy as np

from .records import FittedParam
from .roles import Role

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


def starts_of(unknowns: list[Unknown], lower: np.ndarray, upper: np.ndarray) -> list[np.ndarray]:
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


def same_cost(r: Solution, best: Solution) -> bool:
    """Within SAME_COST of the best cost (a twentieth of a unit of χ²: the cost is half the
    sum of squared residuals in units of the assumed noise), or within 0.1 % of it: that is
    0.001 of the fit's χ², so per fit row a thousandth of the rows' own scatter (the fit's
    `scale`, one unit or more per row)."""
    return r.cost <= best.cost * (1 + 1e-3) or r.cost - best.cost <= SAME_COST


def reached(results: list[Solution], best: Solution) -> int:
    """How many of the results reach the best cost."""
    return sum(same_cost(r, best) for r in results)


def search(residuals, starts: list[np.ndarray], at_prior: np.ndarray, held: list[int],
            lower: np.ndarray, upper: np.ndarray, max_evaluations: int,
            anchors: dict[int, tuple[int, float]], warm: np.ndarray | None = None):
    """optimise from a batch of STARTS (and `warm`, the fit so far: a refit is then never
    worse than where the search already was), then a batch more at a time until CONFIRMED
    results reach the best cost or the starts run out; (best, all)."""
    best, results = optimise(residuals, [*starts[:STARTS], *([] if warm is None else [warm])],
                              at_prior, held, lower, upper, max_evaluations, anchors)
    used = STARTS
    while reached(results, best) < CONFIRMED and used < len(starts):
        more, extra = optimise(residuals, starts[used:used + STARTS], at_prior, held, lower,
                                upper, max_evaluations, anchors)
        results += extra
        best = min(best, more, key=lambda r: r.cost)
        used += STARTS
    return best, results


def profiled(p: FittedParam, j: int, best: Solution, held: list[int], residuals,
              data_residuals, starts_x, at_prior: np.ndarray, lower, upper,
              max_evaluations: int, anchors, scale: float) -> FittedParam:
    """A param whose local (Jacobian) error is beyond ±100 %: refit with it fixed a factor e
    (±100 % in log space) either way, or at its bound if that is nearer. Where the rows' χ²
    rises by Δ (in units of their scatter), a quadratic profile has standard error
    shift / √Δ; at a bound nearer than that, the bound. The larger side is its error, and
    it is flagged uncertain (or undetermined, where the Jacobian's column vanished) only if
    that is still beyond ±100 %."""
    sides = []
    base = data_cost(data_residuals, best)
    for sign in (1.0, -1.0):
        edge = upper[j] if sign > 0 else lower[j]
        shift = min(1.0, abs(edge - best.x[j]))
        fixed = at_prior.copy()
        fixed[j] = best.x[j] + sign * shift
        trial, _ = optimise(residuals, [*starts_x[:2], best.x], fixed, sorted(held + [j]),
                             lower, upper, max_evaluations, anchors)
        delta = max(2 * (data_cost(data_residuals, trial) - base) / scale, 0.0)
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


def disagreement(results, best, unknowns: list[Unknown],
                  sigmas: list[float | None]) -> tuple[str, ...]:
    """Starts that reach the best cost (same_cost) with a value more than 5 % away, and
    further than the value's own standard error (within it, they are the same answer)."""
    out = []
    for k, r in enumerate(results):
        if same_cost(r, best):
            far = [u.name for u, a, b, s in zip(unknowns, r.x, best.x, sigmas)
                   if abs(a - b) > max(AGREE, s or 0.0)]
            if far:
                out.append(f"start {k + 1} reaches the same cost with {', '.join(far)} "
                           f"{'differing' if len(far) > 1 else 'differing'} by more than 5 %")
    return tuple(out)


@dataclass(frozen=True)
class Solution:
    """One start's result over every unknown: held ones at their priors (zero columns)."""

    x: np.ndarray
    jac: np.ndarray
    cost: float
    success: bool
    message: str
    nfev: int


def optimise(residuals, starts: list[np.ndarray], at_prior: np.ndarray, held: list[int],
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
            results.append(Solution(full(r.x), jac, float(r.cost), bool(r.success),
                                     str(r.message), int(r.nfev)))
    return min(results, key=lambda r: r.cost), results


def data_cost(data_residuals, solution: Solution) -> float:
    r = data_residuals(solution.x)
    return 0.5 * float(r @ r)


def unconfirmed(rests_on) -> list[str]:
    """What to say of each search a result rests on ((which, best, all results)) whose best
    fewer than CONFIRMED starts reached."""
    return [f"the best cost of {which} was reached from one of {len(tried)} starts only: "
            "another start may find a lower one, with other values"
            for which, found, tried in rests_on if reached(tried, found) < CONFIRMED]

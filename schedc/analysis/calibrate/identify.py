"""Which params do the fit rows determine? Those they do not are held at their prior (NCCL's
value) and the others refitted, instead of reporting a value the rows never chose.

One log cannot separate constants that add to every row alike: a per-call latency, a
start-up per round and a fabric's latency per hop all add a constant to each size's time, so
their Jacobian columns are (nearly) proportional. The test is the information the rows give
about each param beyond what the others already explain, against what its prior gives:

- the data Jacobian J: d log T / d log θ per fit row, over the rows' own scatter (the fit's
  residual variance, at least the assumed noise DATA_SIGMA);
- the information about one param with all the others free is the part of its column the
  others cannot mimic, |J_j − J_¬j β|² (least squares β: the Schur complement of JᵀJ, which
  exists even when JᵀJ is singular); 1 / its root is the rows' standard error of that param;
- a param whose rows' standard error is above its prior's width (or ±100 %) is not
  determined by them: the least determined is held first (of equals, a shared constant,
  which NCCL's source states, before a log's own, which no data sheet gives; then the one
  whose column is smallest: the rows see it least), the rest refitted, and the test
  repeated, so of a group of params whose sum alone the rows know, the log's own and then
  the one they see best stay fitted.

A param at a bound is never held (holding it would hide that the rows push it there): it
stays fitted and flagged. The test is repeated after each refit (the Jacobian moves with the
values) until nothing more is held.
"""

from __future__ import annotations

import math

import numpy as np

from .records import CalibrationError, FittedParam

AT_BOUND = 1e-4  # log distance from a bound that counts as at it
NEAR_BOUND = math.log(1.01)  # within 1 %: an undetermined param there was pushed, not held
SHARE_STEP = 1e-4  # log step of a class's share when asking which rows it binds
BOUND_SHARE = 0.5  # a row is bound by a class when at least this part of its time is there
HELD = "held at NCCL's value: these rows do not determine it"
HELD_NO_PRIOR = "held at the file's value: these rows do not determine it"


def to_hold(jac: np.ndarray, widths: np.ndarray, holdable: np.ndarray,
            shared: np.ndarray | None = None) -> list[int]:
    """Column indices of `jac` (fit rows × free params, in units of the rows' scatter) whose
    params the rows do not determine: the information about param j with every other free
    param free too (the Schur complement of JᵀJ: |J_j − J_¬j β|², the part of its column the
    others cannot mimic) times its width² is below 1. Least determined first; of equals, a
    `shared` param (NCCL's protocol constants, which NCCL's source states) before a log's
    own (its fabric's latency, which no data sheet gives: what the log is there to tell),
    then the one whose column is smallest; then column order."""  # (the rounding: equal
    # informations compare equal, not by noise)
    n = jac.shape[1]
    out = []
    for j in range(n):
        if not holdable[j]:
            continue
        column = jac[:, j]
        others = np.delete(jac, j, axis=1)
        if others.shape[1]:
            coef, *_ = np.linalg.lstsq(others, column, rcond=None)
            column = column - others @ coef
        information = float(column @ column) * float(widths[j]) ** 2
        if information < 1.0:
            own = shared is not None and not shared[j]
            out.append((round(information, 9), own, float(np.linalg.norm(jac[:, j])), j))
    return [j for *_, j in sorted(out)]


def unbound_shares(roles, data_residuals, at_prior: np.ndarray, sigma: float) -> list[int]:
    """The shares of a link class (`class C eff`) that no fit row is bound by at NCCL's
    values (the priors). T is a sum of terms V/(e·B), so -d log T / d log e_C is the part of
    a row's time spent in terms bound by class C links: a row is bound by C when that is at
    least half (BOUND_SHARE). With no such row, the rows do not measure C's share, however
    many partly depend on it; it is held at NCCL's value for that class. (`data_residuals`
    are log errors over `sigma`.)"""
    out: list[int] = []
    if not any(role.cls is not None for role in roles):
        return out
    base = data_residuals(at_prior)
    for j, role in enumerate(roles):
        if role.cls is not None and role.prior is not None:
            step = at_prior.copy()
            step[j] -= SHARE_STEP
            part = np.abs(data_residuals(step) - base) * sigma / SHARE_STEP
            if not np.any(part >= BOUND_SHARE):
                out.append(j)
    return out


def fitted_params(unknowns, best, data_residuals, pairs, lower, upper, fit_rows: int,
                  held=(), anchors=None, unbound=()) -> tuple[FittedParam, ...]:
    """Each unknown's value, relative standard error (s² (JᵀJ)⁻¹ over the free ones, in log
    space) and flags; a held one is at its prior, with no error and the status HELD."""
    free = [j for j in range(len(unknowns)) if j not in held]
    jac = np.asarray(best.jac)[:, free]
    determined = np.zeros(len(unknowns), dtype=bool)
    determined[free] = _determined(jac[:fit_rows])
    r = data_residuals(best.x)
    dof = max(fit_rows - len(free), 1)
    s2 = float(r @ r) / dof
    sigma = np.full(len(unknowns), np.inf)
    try:
        cov = np.linalg.pinv(jac.T @ jac) * s2
        sigma[free] = np.sqrt(np.maximum(np.diag(cov), 0.0))
    except np.linalg.LinAlgError:
        pass
    out = []
    for j, u in enumerate(unknowns):
        if j in held:
            out.append(FittedParam(u.name, float(math.exp(best.x[j])), u.nominal, u.dim, False,
                                   u.log, u.role.what, u.role.lower, u.role.upper, u.role.prior,
                                   None, (), held=_held_text(u, j, unknowns, anchors or {},
                                                             j in unbound)))
            continue
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
            # A param the rows cannot see locally that is not held: the other params pushed
            # it against a bound, or holding it at NCCL's value was refused (the rows do not
            # fit that value: they bound it without determining it), or it has no prior.
            near = "lower" if best.x[j] <= lower[j] + NEAR_BOUND else \
                "upper" if best.x[j] >= upper[j] - NEAR_BOUND else None
            flags.append(f"undetermined by the fit rows (pushed near its {near} bound)" if near
                         else "undetermined by the fit rows (they do not fit NCCL's value "
                         "either: not held)" if u.role.prior is not None
                         else "undetermined by the fit rows")
        elif sigma[j] > 1.0:
            flags.append(f"uncertain (±{sigma[j] * 100:.0f} %)")
        out.append(FittedParam(u.name, float(math.exp(best.x[j])), u.nominal, u.dim,
                               bool(determined[j]), u.log, u.role.what, u.role.lower,
                               u.role.upper, u.role.prior, float(sigma[j]), tuple(flags)))
    return tuple(out)


def _held_text(u, j: int, unknowns, anchors: dict, unbound: bool = False) -> str:
    if unbound:
        ratio = (f", {u.role.ratio:g} of {unknowns[anchors[j][0]].name}" if j in anchors
                 else "")
        return (f"held at NCCL's value for {u.role.cls} links{ratio}: no fit row is bound by "
                f"a {u.role.cls} link")
    if j in anchors:
        simple = unknowns[anchors[j][0]].name
        return (f"held at NCCL's value, {u.role.ratio:g} of {simple}: these rows do not "
                "determine it")
    return HELD if u.role.prior is not None else HELD_NO_PRIOR


def _determined(jac: np.ndarray) -> np.ndarray:
    """Per param: do the data determine it at all? Not if its Jacobian column vanishes, or if
    it lies in the Jacobian's null space (it moves only together with others)."""
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


def anchors_of(unknowns: list) -> dict[int, tuple[int, float]]:
    """Shares NCCL sets relative to Simple's (roles.SHARE_OF_SIMPLE), whose Simple share is
    an unknown of this fit: index -> (its Simple share's index, log ratio)."""
    index = {(u.name, u.log): k for k, u in enumerate(unknowns)}
    out = {}
    for j, u in enumerate(unknowns):
        if u.role.anchor is not None:
            k = index.get((u.role.anchor, u.log), index.get((u.role.anchor, None)))
            if k is not None:
                out[j] = (k, math.log(u.role.ratio))
    return out


def enough_rows(fit_rows: int, fit_sizes: int, params: int) -> None:
    """Refused before the search when the fit rows' distinct sizes are not more than the
    params: with as many, every size is met exactly and its 0 % error says nothing; with
    fewer, some params are free and every start runs to its evaluation limit (fuzz_c11:
    1,000 rows of 4 sizes, 7 params, 8.5 s of CPU before --max-fit-work stopped it)."""
    if fit_sizes > params:
        return
    if fit_sizes == fit_rows:
        raise CalibrationError(f"{fit_rows} fit rows cannot check {params} params: a fit needs "
                               "more rows than params (with as many, every fit row is met "
                               "exactly and its 0 % error says nothing); fit on more rows")
    raise CalibrationError(f"{fit_rows:,} fit rows of {fit_sizes} distinct sizes cannot check "
                           f"{params} params: rows that repeat a size give the model one "
                           "equation (its time depends on the size alone), and a fit needs "
                           "more sizes than params; fit on more sizes")


def contacts(x: np.ndarray, skip: list[int], pairs, lower, upper) -> set:
    """The bounds and orderings the free params of `x` sit at."""
    out: set = set()
    for j in range(len(x)):
        if j not in skip and (x[j] <= lower[j] + AT_BOUND or x[j] >= upper[j] - AT_BOUND):
            out.add(j)
    out |= {(a, b) for a, b in pairs if x[a] >= x[b] - AT_BOUND}
    return out


def new_contacts(before, after, held: list[int], pairs, lower, upper) -> bool:
    """Does holding push a fitted param to a bound or an ordering it was not at? Then NCCL's
    value contradicts what the rows fix for the others (e.g. LL128 held at NCCL's share
    above the Simple share the rows give): the rows do bound it, and it is not held."""
    return bool(contacts(after.x, held, pairs, lower, upper)
                - contacts(before.x, held, pairs, lower, upper))


def undetermined(best, held: list[int], unknowns: list, pairs,
                 lower: np.ndarray, upper: np.ndarray, fit_rows: int,
                 scale: float) -> list[int]:
    """The free unknowns the fit rows do not determine and that may be held (`to_hold`):
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

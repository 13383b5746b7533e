"""The rounds of a schedule body: one `round {...}` (its loops as lanes, rerun one iteration
at a time when an operation has no lane-wise form), a round loop kept as a `Series`, and the
bounded sequential loops `schedule` runs (a loop refused as soon as its first iteration shows
the whole is past a budget)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import ElaborationError, LimitError, Span
from ..language import statements as st
from ..language import syntax as ast
from ..model.ir import Series
from ..model.values import Devices, Integers, IntRange, NeedScalar, kind_of
from .evaluate import evaluate
from .failures import fail
from .lanes import Env, expand_lanes, filter_lanes
from .transfers import RoundBuffer, RoundList, merge_batches, transfer_batch

if TYPE_CHECKING:
    from .schedule import ScheduleContext


def loop_values(iter_expr: ast.Expr, env: Env, value: object = None) -> list | range:
    """What a sequential loop iterates over: a range of ints, the members of a group, or the
    numbers of a list."""
    value = evaluate(iter_expr, env) if value is None else value
    if isinstance(value, IntRange) and not isinstance(value.lo, np.ndarray) \
            and not isinstance(value.hi, np.ndarray):
        return range(value.lo, value.hi + 1)
    if isinstance(value, Devices) and value.rank >= 1 and not value.lanes:
        return [Devices(value.ids[k]) for k in range(len(value))]
    if isinstance(value, Integers):
        return value.values.tolist()
    raise ElaborationError(f"cannot loop over {kind_of(value)}; expected a range (lo..hi), "
                           "a group or a list", iter_expr.span)


def bounded(values, ctx: ScheduleContext, span: Span, run) -> list:
    """Run `run` on each value; refuse the loop as soon as its first iteration shows it is too big."""
    ctx.check_steps(len(values), span)
    results = []
    steps, transfers = ctx.steps, ctx.transfers
    for k, value in enumerate(values):
        ctx.spend(1, 0, span)
        results.append(run(value))
        if k == 0 and len(values) > 1:
            more = len(values) - 1
            if ctx.steps + (ctx.steps - steps) * more > ctx.limits.steps:
                raise LimitError(f"this loop of {len(values):,} iterations would make about "
                                 f"{ctx.limits.steps_message((ctx.steps - steps) * len(values))}",
                                 span)
            if ctx.transfers + (ctx.transfers - transfers) * more > ctx.limits.held:
                raise LimitError(f"this loop of {len(values):,} iterations would make about "
                                 f"{ctx.limits.transfers_message((ctx.transfers - transfers) * len(values))}",
                                 span)
    return results


def scalar_condition(value: object, span: Span) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise ElaborationError(f"expected a condition, not {kind_of(value)}", span)


# ---- one round --------------------------------------------------------------------------------

_ITERATION = "<iteration>"  # a hidden lane variable: which iteration of a round loop a lane is in


def elaborate_round(stmts: tuple[st.Stmt, ...], env: Env, ctx: ScheduleContext, span: Span) -> RoundBuffer:
    out: list = []
    try:
        _round_body(stmts, ctx.lanes(env, lanes=1), ctx, out)
    except NeedScalar:
        out = []
        _round_body(stmts, ctx.lanes(env, lanes=None), ctx, out)
    batches = merge_batches([batch for batch, _ in out])
    ctx.spend(1, sum(len(b) for b in batches), span)
    return batches


def round_loop(stmt: st.RoundFor, env: Env, ctx: ScheduleContext, rounds: RoundList) -> None:
    """`for v in R round {...}`: all iterations at once, one lane per (iteration, inner index),
    kept as a series: each batch ordered by iteration, and where each iteration starts in it.
    Falls back to one round at a time. In a `parallel for` run as lanes, every lane of it (a
    branch) runs the loop: the series holds each branch's batches, branch after branch."""
    branches = env.lanes or 1
    values = evaluate(stmt.iter, env)
    per = _per_branch(stmt.iter, env, values)
    ctx.check_steps(per * branches, stmt.iter.span)
    try:
        lanes = expand_lanes(ctx.lanes(env, lanes=branches), stmt.var, values,
                             stmt.iter.span)
        count = lanes.lanes or 0  # expand_lanes counts them: per in each branch
        lanes = lanes.bind(_ITERATION, np.arange(count))
        if ctx.preview:  # each branch's first iteration (its lanes are branch after branch)
            lanes = filter_lanes(lanes, np.arange(count) % max(per, 1) == 0, stmt.iter.span)
        out: list = []
        _round_body(stmt.body, lanes, ctx, out)
    except NeedScalar:
        if env.lanes is not None:
            raise
        values = loop_values(stmt.iter, env)
        for buffer in bounded(values[:1] if ctx.preview else values, ctx, stmt.span,
                               lambda v: elaborate_round(stmt.body, env.bind(stmt.var, v), ctx, stmt.span)):
            rounds.append(buffer)
        return
    if ctx.preview:
        ctx.spend(1, sum(len(b) for b, _ in out), stmt.span)
        if ctx.watch is not None:
            ctx.watch([batch for batch, _ in out])
        return
    ordered = []
    for batch, iteration in out:
        if not bool(np.all(iteration[:-1] <= iteration[1:])):
            order = np.argsort(iteration, kind="stable")
            batch, iteration = batch.take(order), iteration[order]
        ordered.append((batch, np.searchsorted(iteration, np.arange(count + 1))))
    batches, starts = [], []
    # Branches side by side, each its own batches; iterations of a sequential loop one after
    # another, as one branch of all their rounds.
    sides, width = (1, count) if env.sequential else (branches, per)
    for b in range(sides):
        for batch, at in ordered:
            lo, hi = int(at[b * width]), int(at[(b + 1) * width])
            if sides == 1 or hi > lo:  # (a branch of no transfers here has no batch)
                batches.append(batch if sides == 1 else batch.take(slice(lo, hi)))
                starts.append(at[b * width:(b + 1) * width + 1] - lo)
    ctx.spend(count, sum(len(b) for b, _ in ordered), stmt.span)
    if ctx.watch is not None:
        ctx.watch(batches)
    rounds.add_series(Series(tuple(batches),
                             np.array(starts, dtype=np.int64).reshape(len(starts), width + 1)))


def _per_branch(expr: ast.Expr, env: Env, values: object) -> int:
    """A round loop's iterations; in a `parallel for` run as lanes, in each of its branches,
    which must all make as many (else NeedScalar)."""
    if env.lanes is None:
        return len(loop_values(expr, env, values))
    if isinstance(values, IntRange) and all(isinstance(end, (int, np.integer, np.ndarray))
                                            for end in (values.lo, values.hi)):
        counts = np.maximum(np.asarray(values.hi) - np.asarray(values.lo) + 1, 0)
        if np.all(counts == counts.flat[0]):
            return int(counts.flat[0])
    elif isinstance(values, Integers) or (isinstance(values, Devices) and values.rank >= 1):
        return len(values)
    raise NeedScalar


def _round_body(stmts, env: Env, ctx: ScheduleContext, out: list) -> None:
    """Run the statements of a round, appending (batch, iteration of each transfer) to `out`."""
    for stmt in stmts:
        if env.lanes == 0:
            return
        if isinstance(stmt, ast.Let):
            env = env.bind(stmt.name, evaluate(stmt.value, env))
        elif isinstance(stmt, st.For):
            iterable = evaluate(stmt.iter, env)
            if env.lanes is not None:
                _round_body(stmt.body, expand_lanes(env, stmt.var, iterable, stmt.iter.span), ctx, out)
            else:
                values = loop_values(stmt.iter, env, iterable)
                ctx.spend(len(values), 0, stmt.iter.span)
                for value in values:
                    _round_body(stmt.body, env.bind(stmt.var, value), ctx, out)
        elif isinstance(stmt, st.If):
            cond = evaluate(stmt.cond, env)
            if isinstance(cond, np.ndarray):
                _round_body(stmt.then, filter_lanes(env, cond, stmt.cond.span), ctx, out)
                _round_body(stmt.orelse, filter_lanes(env, ~cond, stmt.cond.span), ctx, out)
            else:
                taken = scalar_condition(cond, stmt.cond.span)
                _round_body(stmt.then if taken else stmt.orelse, env, ctx, out)
        elif isinstance(stmt, (st.Transfer, st.Send)):
            out.append((transfer_batch(stmt, env, ctx), env.local.get(_ITERATION)))
        elif isinstance(stmt, st.Fail):
            if env.lanes is not None and env.lanes > 1:
                raise NeedScalar  # report it for one iteration, with that iteration's values
            fail(stmt, env, ctx)
        else:
            what = {st.CallStmt: "a call", st.RoundFor: "a round loop", st.RoundBlock: "a round",
                    st.ParallelFor: "parallel", st.ParallelBlock: "parallel"}[type(stmt)]
            raise ElaborationError(f"{what} cannot appear inside a round; a round holds transfers, "
                                   "loops, conditions and lets", stmt.span)

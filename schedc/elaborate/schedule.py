"""Schedule bodies → IR rounds.

Sequential statements concatenate rounds; `round {...}` makes one round of everything inside;
`parallel` zips branches round by round; calls elaborate the callee with its arguments.

Inside a round, loops run as lanes (see `evaluate`): `for j in 0..k-1: reduce ... g[j] ...`
is a handful of array operations however large k is. If some operation has no lane-wise
form, the round is rerun one iteration at a time.

Work is bounded by two budgets: transfers (cheap, made in arrays) and *steps* — rounds, loop
iterations and calls, each of which costs Python work. A loop whose first iteration shows
that all of it would exceed a budget is refused before it runs on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import ElaborationError, LimitError, Span, did_you_mean
from ..language import statements as st
from ..language import syntax as ast
from ..limits import Limits
from ..model.ir import Batch, Collective, Schedule, Series, in_sequence, interleaved
from ..model.values import NeedScalar
from .evaluate import evaluate
from .failures import at_the_call, fail
from .lanes import Env, expand_lanes, filter_lanes
from .rounds import bounded, elaborate_round, loop_values, round_loop, scalar_condition
from .transfers import RoundList, zipped

MAX_CALL_DEPTH = 100  # schedule calls in a chain; each costs a few frames of Python's stack

Watch = Callable[[Sequence[Batch]], None]


@dataclass
class ScheduleContext:
    """What elaborating one result schedule needs, and the work it has done so far."""

    functions: dict[str, ast.ScheduleDef]
    collective: Collective
    device_names: list[str]
    limits: Limits
    nominal: dict  # param symbol → nominal value, to check message sizes
    in_network: tuple[int, ...] = ()  # switches that reduce: endpoints besides the ranks
    transfers: int = 0
    steps: int = 0
    stack: list[ast.ScheduleDef] = field(default_factory=list)  # the schedules being elaborated
    calls: list[ast.Call] = field(default_factory=list)  # the calls that led there
    # Shown each round loop's batches as they are made (verification's early refusal).
    watch: Watch | None = None
    preview: bool = False  # round loops run their first iteration only (`preview.py`)

    def __post_init__(self) -> None:
        self.is_rank = np.zeros(len(self.device_names), dtype=bool)
        self.is_rank[list(self.collective.ranks)] = True
        self.is_rank[list(self.in_network)] = True  # an endpoint, though not a rank

    @property
    def room(self) -> int:
        """Transfers still allowed."""
        return max(self.limits.held - self.transfers, 0)

    def lanes(self, env: Env, **changes) -> Env:
        """`env` for a statement run in lanes: what is left of the transfer limit bounds them,
        and the limit itself is what a refusal quotes."""
        return replace(env, max_lanes=self.room, lane_limit=self.limits.held, **changes)

    def check_steps(self, count: int, span: Span) -> None:
        if self.steps + count > self.limits.steps:
            raise LimitError(f"this makes {self.limits.steps_message(self.steps + count)}", span)

    def spend(self, steps: int, transfers: int, span: Span) -> None:
        self.check_steps(steps, span)
        self.steps += steps
        self.transfers += transfers
        if self.transfers > self.limits.held:
            raise LimitError(f"this makes more than {self.limits.transfers_message(self.transfers)}",
                             span)


def elaborate_schedule(name: str, definition: ast.ScheduleDef, env: Env,
                       ctx: ScheduleContext) -> Schedule:
    ctx.stack.append(definition)
    rounds = _sequence(definition.body, env, ctx)
    ctx.stack.pop()
    return Schedule(name, ctx.collective, rounds.rounds(), definition.span)


# ---- sequential composition -------------------------------------------------------------------


def _sequence(stmts: tuple[st.Stmt, ...], env: Env, ctx: ScheduleContext) -> RoundList:
    rounds = RoundList()
    for stmt in stmts:
        if env.lanes is not None and not isinstance(stmt, _IN_LANES):
            raise NeedScalar  # (a `parallel for` run as lanes: see _parallel_for)
        if isinstance(stmt, ast.Let):
            env = env.bind(stmt.name, evaluate(stmt.value, env))
        elif isinstance(stmt, st.For):
            at_once = _loop_as_lanes(stmt, env, ctx) if env.lanes is None else None
            for iteration in [at_once] if at_once is not None else _iterations(stmt, env, ctx):
                rounds.extend(iteration)
        elif isinstance(stmt, st.RoundFor):
            round_loop(stmt, env, ctx, rounds)
        elif isinstance(stmt, st.RoundBlock):
            rounds.append(elaborate_round(stmt.body, env, ctx, stmt.span))
        elif isinstance(stmt, st.ParallelFor):
            rounds.extend(_parallel_for(stmt, env, ctx))
        elif isinstance(stmt, st.ParallelBlock):
            for branch in stmt.branches:
                if isinstance(branch, ast.Let):
                    raise ElaborationError("a 'let' cannot be a branch of 'parallel'", branch.span)
            rounds.extend(zipped([_sequence((b,), env, ctx) for b in stmt.branches]))
        elif isinstance(stmt, st.If):
            cond = evaluate(stmt.cond, env)
            if isinstance(cond, np.ndarray) and env.lanes is not None:
                if not cond.size or not bool((cond == cond.flat[0]).all()):
                    raise NeedScalar  # it differs between the lanes' iterations
                cond = cond.flat[0]  # every lane takes it the same way
            taken = scalar_condition(cond, stmt.cond.span)
            rounds.extend(_sequence(stmt.then if taken else stmt.orelse, env, ctx))
        elif isinstance(stmt, (st.Transfer, st.Send)):
            rounds.append(elaborate_round((stmt,), env, ctx, stmt.span))
        elif isinstance(stmt, st.CallStmt):
            rounds.extend(_call(stmt.call, env, ctx))
        elif isinstance(stmt, st.Fail):
            fail(stmt, env, ctx)
        else:  # pragma: no cover - the parser produces no other statements
            raise ElaborationError(f"unexpected statement {type(stmt).__name__}", stmt.span)
    return rounds


def _iterations(stmt: st.For | st.ParallelFor, env: Env, ctx: ScheduleContext) -> list:
    """The rounds of each iteration of a sequential or parallel loop."""
    return bounded(loop_values(stmt.iter, env), ctx, stmt.span,
                    lambda value: _sequence(stmt.body, env.bind(stmt.var, value), ctx))


# What a `parallel for` run as lanes may hold (in its body and the schedules it calls).
_IN_LANES = (ast.Let, st.CallStmt, st.RoundFor, st.If)
# Transfers that the branches of a `parallel for` run as lanes together make at once, about:
# enough to share out the Python work of many small branches, while big branches still run
# one by one (in memory, one branch's lanes at a time).
BRANCH_TRANSFERS = 1 << 20


def _parallel_for(stmt: st.ParallelFor, env: Env, ctx: ScheduleContext) -> RoundList:
    """`parallel for v in R: body`, zipped. When the body is lets, calls, ifs on values all
    iterations share and round loops as long in every iteration, the iterations run at once,
    one lane each, and every round loop is one series of all of them: the same rounds and
    transfers in the same order as one iteration at a time, which anything else takes (and
    which reports an error at the iteration that makes it)."""
    if env.lanes is not None:
        raise NeedScalar  # a parallel loop inside one run as lanes
    values = evaluate(stmt.iter, env)
    count = len(loop_values(stmt.iter, env, values))
    if count > 1:
        spent = ctx.steps, ctx.transfers
        try:
            ctx.check_steps(count, stmt.span)
            every = expand_lanes(ctx.lanes(env, lanes=1), stmt.var, values,
                                 stmt.iter.span)
            ctx.spend(count, 0, stmt.span)  # its iterations, as _bounded counts them
            return zipped([rounds for _, rounds in _lane_groups(stmt, every, ctx)])
        except (NeedScalar, ElaborationError):
            ctx.steps, ctx.transfers = spent
    return zipped(_iterations(stmt, env, ctx))


def _lane_groups(stmt: st.ParallelFor | st.For, every: Env,
                 ctx: ScheduleContext) -> Iterator[tuple[int, RoundList]]:
    """The branches (lanes of `every`) run a group at a time: the first alone, then as many at
    once as make about BRANCH_TRANSFERS transfers, judged by the first. Yields each group's
    lanes and rounds."""
    count = every.lanes or 0
    branch = np.arange(count)
    lo, size = 0, 1
    while lo < count:
        hi = min(lo + size, count)
        made = ctx.transfers
        yield hi - lo, _sequence(stmt.body, filter_lanes(every, (branch >= lo) & (branch < hi),
                                                         stmt.span), ctx)
        if lo == 0:
            size = max(1, BRANCH_TRANSFERS // max(ctx.transfers - made, 1))
        lo = hi


def _loop_as_lanes(stmt: st.For, env: Env, ctx: ScheduleContext) -> RoundList | None:
    """A sequential `for` whose body `parallel for` could run as lanes (a loop of calls): its
    iterations run so too, a group at a time, but each round loop keeps their rounds one after
    another, and the groups' series are joined into one — the rounds and transfers, in order,
    of one iteration at a time, elaborated once per group instead of once per call. None when
    it cannot (one iteration at a time then runs it, and reports any error, or a loop its first
    iteration shows too big, at the iteration that makes it)."""
    values = evaluate(stmt.iter, env)
    count = len(loop_values(stmt.iter, env, values))
    if count <= 1:
        return None
    spent = ctx.steps, ctx.transfers
    groups: list[Series] = []
    try:
        ctx.check_steps(count, stmt.span)
        every = expand_lanes(ctx.lanes(env, lanes=1, sequential=True),
                             stmt.var, values, stmt.iter.span)
        ctx.spend(count, 0, stmt.span)  # its iterations, as _bounded counts them
        for k, (lanes, made) in enumerate(_lane_groups(stmt, every, ctx)):
            if k == 0 and spent[1] + (ctx.transfers - spent[1]) * count > ctx.limits.held:
                raise NeedScalar  # refused after its first iteration, as _bounded words it
            series = [part for part in made.parts if isinstance(part, Series)]
            if len(series) < len(made.parts) or any(len(part) % lanes for part in series):
                raise NeedScalar  # (every part is a round loop's series, of every lane's rounds)
            if series:
                groups.append(interleaved(series, lanes))
    except (NeedScalar, ElaborationError):
        ctx.steps, ctx.transfers = spent
        return None
    out = RoundList()
    if groups:
        out.add_series(in_sequence(groups))
    return out


# ---- calls ------------------------------------------------------------------------------------


def _call(call: ast.Call, env: Env, ctx: ScheduleContext) -> RoundList:
    definition = ctx.functions.get(call.func)
    if definition is None:
        raise ElaborationError(f"unknown schedule '{call.func}'"
                               + did_you_mean(call.func, list(ctx.functions)), call.span)
    if any(d is definition for d in ctx.stack):
        start = next(k for k, d in enumerate(ctx.stack) if d is definition)
        chain = " -> ".join([*(d.name for d in ctx.stack[start:]), call.func])
        raise ElaborationError(f"schedule '{call.func}' calls itself ({chain})", call.span)
    formals = definition.formals or ()
    if len(call.args) > len(formals):
        raise ElaborationError(f"'{call.func}' takes {len(formals)} argument"
                               f"{'s' * (len(formals) != 1)}, got {len(call.args)}", call.span)
    bound: dict[str, object] = {}
    for formal, arg in zip(formals, call.args):
        bound[formal.name] = evaluate(arg, env)
    names = [f.name for f in formals]
    for keyword in call.kwargs:
        if keyword.name not in names:
            raise ElaborationError(f"'{call.func}' has no parameter '{keyword.name}' "
                                   f"(parameters: {', '.join(names) or 'none'})", keyword.span)
        if keyword.name in bound:
            raise ElaborationError(f"argument '{keyword.name}' is given twice", keyword.span)
        bound[keyword.name] = evaluate(keyword.value, env)
    callee = replace(env, local={})
    for formal in formals:
        if formal.name not in bound:
            if formal.default is None:
                raise ElaborationError(f"'{call.func}' needs argument '{formal.name}'", call.span)
            bound[formal.name] = evaluate(formal.default, replace(callee, local=dict(bound)))
    ctx.spend(env.lanes or 1, 0, call.span)  # a call per lane
    if len(ctx.calls) >= MAX_CALL_DEPTH:
        raise LimitError(f"schedule calls nest more than {MAX_CALL_DEPTH} deep here",
                         call.span, (f"the chain starts at {ctx.calls[0].func} ({ctx.calls[0].span})",))
    ctx.stack.append(definition)
    ctx.calls.append(call)
    try:
        return _sequence(definition.body, replace(callee, local=bound), ctx)
    except ElaborationError as exc:
        raise at_the_call(exc, ctx) from None
    finally:
        ctx.stack.pop()
        ctx.calls.pop()

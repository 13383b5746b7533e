"""Errors a schedule's body raises, reported where the user can act on them: an `error`
statement's message at the outermost call, the line the user wrote, and so is an error
raised inside a schedule of another file (a library's), with notes naming where it was
raised and the chain of calls."""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ElaborationError
from ..language import statements as st
from ..language import syntax as ast
from ..model.values import Devices, Quantity, kind_of
from .evaluate import evaluate
from .lanes import Env

if TYPE_CHECKING:  # the schedule elaborator passes its context in
    from .schedule import ScheduleContext


def at_the_call(exc: ElaborationError, ctx: ScheduleContext) -> ElaborationError:
    """An error inside a schedule of another file (a library's index out of range, a rank not
    in the collective), moved to the outermost call, the line the user wrote, with notes naming
    where it was raised and the call chain, as `error` statements are reported. Done once, by
    the innermost call; an error in the user's own file stays where it is."""
    user = ctx.calls[0].span
    if getattr(exc, "at_call", False) or exc.span is None or exc.span.source is user.source:
        return exc
    notes = (f"raised at {exc.span} in '{ctx.stack[-1].name}'",
             "called as " + " -> ".join(f"{c.func} ({c.span})" for c in ctx.calls), *exc.notes)
    moved = type(exc)(exc.message, user, notes)
    moved.at_call = True  # a mark for the calls outside
    return moved


def error_text(text: str, values: tuple[ast.Expr, ...], env: Env,
            ctx: ScheduleContext | None = None) -> str:
    """An `error` statement's words: its text, then each value (a string as written)."""
    words = [text] + [v.value if isinstance(v, ast.String) else shown(evaluate(v, env), ctx)
                      for v in values]
    return " ".join(w for w in words if w)


def fail(stmt: st.Fail, env: Env, ctx: ScheduleContext) -> None:
    """`error "text", values...`: reported at the outermost call, the one the user wrote."""
    where = ctx.calls[0].span if ctx.calls else stmt.span
    notes = [f"raised by the 'error' at {stmt.span} in '{ctx.stack[-1].name}'"] if ctx.calls else []
    if len(ctx.calls) > 1:
        notes.append("called as " + " -> ".join(f"{c.func} ({c.span})" for c in ctx.calls))
    error = ElaborationError(error_text(stmt.message, stmt.values, env, ctx), where, tuple(notes))
    error.at_call = True  # already at the user's call
    raise error


def shown(value: object, ctx: ScheduleContext | None = None) -> str:
    """A value in an `error` message: numbers as numbers, devices by name (in a schedule)."""
    if isinstance(value, (np.ndarray, np.integer)) and np.size(value) == 1:
        value = int(np.ravel(value)[0])
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value)).lower()
    if isinstance(value, (int, Fraction)):
        return str(value)
    if isinstance(value, Quantity):
        return str(value.expr)
    if isinstance(value, Devices) and not value.lanes and ctx is not None:
        names = [ctx.device_names[int(i)] for i in np.ravel(value.ids)]
        return names[0] if value.rank == 0 else "[" + ", ".join(names) + "]"
    return kind_of(value)

"""Expression evaluation: exact numbers, quantities with units, devices, regions.

`evaluate(expr, env)` is one function over the AST. In a lane context (`env.lanes` is a
count, see `lanes`) loop variables are NumPy arrays with one entry per lane and every
operation is applied to all lanes at once; an operation with no lane-wise form raises
`NeedScalar` and the caller reruns its round one lane at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from fractions import Fraction
from typing import Any, cast

import numpy as np

from ..errors import ElaborationError, LimitError, Span, UnitError, did_you_mean
from ..language import syntax as ast
from ..model.values import (
    WHOLE,
    Devices,
    Integers,
    IntRange,
    NeedScalar,
    NoneValue,
    Quantity,
    Region,
    TopoRef,
    as_condition,
    check_numeric,
    constant,
    is_condition,
    kind_of,
    normalize,
    one_lane,
    take_lanes,
)
from ..units import (
    DIMENSIONLESS,
    near_units,
    unit,
    unknown_unit,
)
from .arithmetic import INT64_SAFE, apply_binop, compare_values, largest_magnitude, within_bound
from .builtins import BUILTINS
from .indexing import check_index, index_devices, integer_value
from .lanes import Env, expand_lanes, filter_lanes

MAX_REGION_DENOMINATOR = 2**40  # finer splits than 1/2^40 of a buffer are refused


# ---- entry point ------------------------------------------------------------------------------


def evaluate(node: ast.Expr, env: Env) -> object:
    handler = env.extra.get(type(node)) or _HANDLERS.get(type(node))
    if handler is None:
        raise ElaborationError(f"{_describe(node)} cannot be used here", node.span)
    return handler(node, env)


def _describe(node: ast.Node) -> str:
    return {
        ast.TimeOf: "time(...)",
        ast.SolveOf: "solve(...)",
        ast.String: "a string",
    }.get(type(node), type(node).__name__)


# ---- atoms ------------------------------------------------------------------------------------


def _number(node: ast.Number, env: Env) -> object:
    value = normalize(node.value)
    if node.unit is None:
        return value
    try:
        factor, dim = unit(node.unit)
    except KeyError:
        raise UnitError(unknown_unit(node.unit), unit_span(node)) from None
    if dim == DIMENSIONLESS:  # a percentage
        return normalize(node.value * factor)
    return Quantity(constant(normalize(node.value * factor), env.names.symbolic), dim)


def unit_span(node: ast.Number, upto: ast.Node | None = None) -> Span:
    """Where the unit of a number literal is written (through `upto`, when given)."""
    span, end = node.span, (upto or node).span
    col = span.end_col - len(node.unit or "") if span.line == span.end_line else span.col
    return Span(span.source, span.end_line, col, end.end_line, end.end_col)


def _spaced_unit(node: ast.BinOp) -> str | None:
    """`GB / s` when a unit, spaces, '/', spaces and a name follow each other on one line."""
    if not (isinstance(node.left, ast.Number) and isinstance(node.right, ast.Name)):
        return None
    left, right = node.left.span, node.right.span
    if left.end_line != right.line:
        return None
    between = left.source.line(right.line)[left.end_col - 1:right.col - 1]
    return f"{node.left.unit} / {node.right.id}" if between.strip() == "/" else None


def _name(node: ast.Name, env: Env) -> object:
    return env.lookup(node.id, node.span)


def _none(node: ast.NoneLit, env: Env) -> object:
    return NoneValue()


def _all_region(node: ast.AllRegion, env: Env) -> object:
    return WHOLE


def _part(node: ast.Part, env: Env) -> object:
    """`part(i of k) [of r]`, or `part(lo..hi of k) [of r]`: parts lo to hi together."""
    given = evaluate(node.index, env)
    count = integer_value(evaluate(node.count, env), node.count.span, "a part count")
    if isinstance(count, np.ndarray):
        raise NeedScalar
    if count < 1:
        raise ElaborationError(f"a region splits into at least 1 part, not {count}", node.count.span)
    if isinstance(given, IntRange):
        index = integer_value(given.lo, node.index.span, "a part index")
        last = integer_value(given.hi, node.index.span, "a part index")
        check_index(last, count, node.index.span, f"part index of {count} parts")
        if np.any(np.asarray(last) < np.asarray(index)):
            raise ElaborationError("a range of parts runs upwards: lo..hi with lo <= hi",
                                   node.index.span)
        parts = last - index + 1
    else:
        index, parts = integer_value(given, node.index.span, "a part index"), 1
    check_index(index, count, node.index.span, f"part index of {count} parts")
    whole = WHOLE if node.whole is None else evaluate(node.whole, env)
    if not isinstance(whole, Region):
        raise ElaborationError(f"'of' needs a region of the buffer, not {kind_of(whole)}",
                               node.span if node.whole is None else node.whole.span)
    den = whole.den * count
    if den > MAX_REGION_DENOMINATOR:
        raise LimitError(f"region split too finely: 1/{den} of the buffer "
                         f"(the limit is 1/{MAX_REGION_DENOMINATOR})", node.span)
    return Region(whole.off * count + index * whole.length, parts * whole.length, den)


def _range(node: ast.Range, env: Env) -> object:
    lo = integer_value(evaluate(node.lo, env), node.lo.span, "a range bound")
    hi = integer_value(evaluate(node.hi, env), node.hi.span, "a range bound")
    return IntRange(lo, hi)


def _list(node: ast.ListLit, env: Env) -> object:
    if env.lanes not in (None, 1):
        raise NeedScalar
    items = [evaluate(item, env) for item in node.items]
    if items and all(_is_int(item) for item in items):
        return _integers(items, node.span)
    if any(_is_int(item) or isinstance(item, Fraction) for item in items):
        item, expr = next((i, e) for i, e in zip(items, node.items) if not _is_int(i))
        found = str(item) if isinstance(item, Fraction) else kind_of(item)
        raise ElaborationError(f"a list of numbers holds integers, not {found}", expr.span)
    for item, expr in zip(items, node.items):
        if not isinstance(item, Devices) or item.lanes:
            raise ElaborationError(f"a list holds devices, groups or integers, not {kind_of(item)}",
                                   expr.span)
    if not items:
        return Devices(np.zeros(0, dtype=np.int64))
    ids = [item.ids for item in items if isinstance(item, Devices)]  # all are, checked above
    shapes = {i.shape for i in ids}
    if len(shapes) > 1:
        raise ElaborationError("the items of a list must all be devices, or groups of one length",
                               node.span)
    return Devices(np.stack(ids))


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _integers(values: list, span: Span) -> Integers:
    """A list of numbers; its entries fit in int64, so loops over it run as lanes."""
    ints = [int(v) for v in values]
    too_big = next((v for v in ints if abs(v) >= INT64_SAFE), None)
    if too_big is not None:
        raise LimitError(f"a list of numbers holds integers below 2^62, not {too_big}", span)
    return Integers(np.array(ints, dtype=np.int64))


def _comprehension(node: ast.ListComp, env: Env) -> object:
    if env.lanes not in (None, 1):
        return _each_lane(node, env)
    inner = replace(env, lanes=1)
    for clause in node.clauses:
        inner = expand_lanes(inner, clause.var, lanewise(clause.iter, inner), clause.iter.span)
        if clause.cond is not None:
            inner = filter_lanes(inner, lanewise(clause.cond, inner), clause.cond.span)
    count = inner.lanes
    element = lanewise(node.element, inner) if count else None
    if count and (_is_int(element) or isinstance(element, np.ndarray) and element.dtype != bool):
        return _integers(np.broadcast_to(np.asarray(element, dtype=object), (count,)).tolist(),
                         node.span)
    if count and not isinstance(element, Devices):
        raise ElaborationError(f"a list holds devices, groups or integers, not {kind_of(element)}",
                               node.element.span)
    if not count or not isinstance(element, Devices):
        return Devices(np.zeros(0, dtype=np.int64))
    ids = element.ids if element.lanes else np.broadcast_to(element.ids, (count, *element.ids.shape))
    return Devices(np.ascontiguousarray(ids))


def lanewise(expr: ast.Expr, env: Env) -> object:
    """`expr` for all lanes at once, else (an operation with no lane-wise form) one lane at a
    time, the values joined into one lane-varying value: for a comprehension's or a link's
    clauses and elements, which have no scalar rerun of their own."""
    try:
        return evaluate(expr, env)
    except NeedScalar:
        pass
    values: list[Any] = [evaluate(expr, replace(env, local={n: one_lane(v, k) for n, v in env.local.items()},
                                     lanes=None)) for k in range(env.lanes or 0)]
    if not values:
        return IntRange(np.zeros(0, np.int64), np.zeros(0, np.int64))
    if all(isinstance(v, (bool, np.bool_)) for v in values):
        return np.array(values, dtype=bool)
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return np.array([integer_value(v, expr.span, "a value") for v in values], dtype=np.int64)
    if all(isinstance(v, IntRange) for v in values):
        return IntRange(np.array([v.lo for v in values], dtype=np.int64),
                        np.array([v.hi for v in values], dtype=np.int64))
    if all(isinstance(v, Devices) and not v.lanes for v in values):
        if len({v.ids.shape for v in values}) > 1:
            raise ElaborationError("the groups of a nested list must all have one length",
                                   expr.span)
        return Devices(np.stack([v.ids for v in values]), True)
    raise ElaborationError(f"{kind_of(values[0])} cannot vary from one iteration to the next "
                           "here", expr.span)


def _each_lane(node: ast.ListComp, env: Env) -> Devices:
    """A comprehension inside lanes (e.g. nested in another one): built lane by lane."""
    groups = []
    for lane in range(env.lanes or 1):
        pick = np.array([lane])
        local = {name: take_lanes(value, pick) for name, value in env.local.items()}
        groups.append(cast(Devices, _comprehension(node, replace(env, local=local, lanes=1))).ids)
    if len({g.shape for g in groups}) > 1:
        raise ElaborationError("the groups of a nested list must all have one length", node.span)
    return Devices(np.stack(groups) if groups else np.zeros((0, 0), dtype=np.int64), True)


# ---- operators --------------------------------------------------------------------------------


def _unary(node: ast.UnaryOp, env: Env) -> object:
    value: Any = evaluate(node.operand, env)  # a number once check_numeric has passed it
    if node.op == "+":
        check_numeric(value, node.operand.span)
        return value
    if isinstance(value, Quantity):
        return Quantity(-value.expr, value.dim, value.params)
    check_numeric(value, node.operand.span)
    return -value


def _binop(node: ast.BinOp, env: Env) -> object:
    if (node.op == "/" and isinstance(node.left, ast.Number) and node.left.unit
            and isinstance(node.right, ast.Name) and node.right.id not in env.local
            and env.names.lookup(node.right.id) is None):  # `50 GB / s`: a unit with spaces
        spaced = _spaced_unit(node)
        if spaced and near_units(spaced):
            raise UnitError(unknown_unit(spaced), unit_span(node.left, node.right))
    left = evaluate(node.left, env)
    right = evaluate(node.right, env)
    return within_bound(apply_binop(node.op, left, right, node), node.span)


# ---- comparisons and logic --------------------------------------------------------------------


def _compare(node: ast.Compare, env: Env) -> object:
    left = evaluate(node.left, env)
    right = evaluate(node.right, env)
    for value, side in ((left, node.left), (right, node.right)):
        if is_condition(value):  # `(3<4) < 5`: the caret under the condition, and the hint
            check_numeric(value, side.span)
    return compare_values(node.op, left, right, node.span)


def _boolop(node: ast.BoolOp, env: Env) -> object:
    left = as_condition(evaluate(node.left, env), node.left.span)
    if not isinstance(left, np.ndarray):
        if (node.op == "and" and not left) or (node.op == "or" and left):
            return left
        return as_condition(evaluate(node.right, env), node.right.span)
    right = as_condition(evaluate(node.right, env), node.right.span)
    return np.logical_and(left, right) if node.op == "and" else np.logical_or(left, right)


def _conditional(node: ast.Conditional, env: Env) -> object:
    """`a if c else b`: only the branch taken is evaluated; in lanes, each branch on the lanes
    that take it (so `0 if j == 0 else log2(j & -j)` never asks for log2(0)), then merged."""
    cond = as_condition(evaluate(node.cond, env), node.cond.span)
    if not isinstance(cond, np.ndarray):
        return evaluate(node.then if cond else node.orelse, env)
    cond = np.broadcast_to(cond, (1 if env.lanes is None else env.lanes,))
    if cond.all():
        return evaluate(node.then, env)
    if not cond.any():
        return evaluate(node.orelse, env)
    then: Any = evaluate(node.then, filter_lanes(env, cond, node.cond.span))
    orelse: Any = evaluate(node.orelse, filter_lanes(env, ~cond, node.cond.span))
    if all(_is_int(v) or isinstance(v, np.ndarray) and v.dtype != bool for v in (then, orelse)) \
            and max(largest_magnitude(then), largest_magnitude(orelse)) < INT64_SAFE:
        return _merged(cond, then, orelse)
    if isinstance(then, Devices) and isinstance(orelse, Devices) and then.rank == orelse.rank == 0:
        return Devices(_merged(cond, then.ids, orelse.ids), True)
    raise NeedScalar  # regions, quantities, ...: one lane at a time


def _merged(cond: np.ndarray, then: Any, orelse: Any) -> np.ndarray:
    """Lane-wise: `then` (a value or one per lane where cond holds) where cond holds, else
    `orelse` (one per other lane)."""
    out = np.empty(cond.shape, dtype=np.int64)
    out[cond] = then
    out[~cond] = orelse
    return out


def _not(node: ast.Not, env: Env) -> object:
    value = as_condition(evaluate(node.operand, env), node.operand.span)
    return np.logical_not(value) if isinstance(value, np.ndarray) else not value


# ---- indexing ---------------------------------------------------------------------------------


def _index(node: ast.Index, env: Env) -> object:
    base = evaluate(node.base, env)
    index = integer_value(evaluate(node.index, env), node.index.span, "an index")
    if isinstance(base, TopoRef):
        return env.names.index_topology(base, index, node)
    if isinstance(base, Devices) and base.rank >= 1:
        return index_devices(base, index, node.index.span)
    if isinstance(base, Integers):
        n = len(base)
        check_index(index, n, node.index.span, f"list of {n} numbers")
        return base.values[index] if isinstance(index, np.ndarray) else int(base.values[index])
    raise ElaborationError(f"cannot index {kind_of(base)}", node.base.span)


def _attr(node: ast.Attr, env: Env) -> object:
    base = evaluate(node.base, env)
    if isinstance(base, TopoRef):
        return env.names.member(base, node.name, node)
    raise ElaborationError(f"{kind_of(base)} has no member '{node.name}'", node.span)


# ---- calls of built-in functions --------------------------------------------------------------


def _call(node: ast.Call, env: Env) -> object:
    builtin = BUILTINS.get(node.func)
    if builtin is None:
        if env.names.is_schedule(node.func):
            raise ElaborationError(f"'{node.func}' is a schedule: call it as a statement, "
                                   "not inside an expression", node.span)
        raise ElaborationError(f"unknown function '{node.func}'"
                               + did_you_mean(node.func, list(BUILTINS), "functions"), node.span)
    if node.kwargs:
        raise ElaborationError(f"{node.func}() takes no keyword arguments", node.kwargs[0].span)
    arity, function = builtin
    if arity is not None and len(node.args) != arity:
        raise ElaborationError(f"{node.func}() takes {arity} argument{'s' * (arity != 1)}, "
                               f"got {len(node.args)}", node.span)
    if arity is None and not node.args:
        raise ElaborationError(f"{node.func}() needs at least one argument", node.span)
    args = [evaluate(arg, env) for arg in node.args]
    return function(args, node)


_HANDLERS: dict[type, Callable[..., object]] = {  # node type → its function
    ast.Number: _number,
    ast.Name: _name,
    ast.NoneLit: _none,
    ast.AllRegion: _all_region,
    ast.Part: _part,
    ast.Range: _range,
    ast.ListLit: _list,
    ast.ListComp: _comprehension,
    ast.UnaryOp: _unary,
    ast.BinOp: _binop,
    ast.Compare: _compare,
    ast.BoolOp: _boolop,
    ast.Not: _not,
    ast.Conditional: _conditional,
    ast.Index: _index,
    ast.Attr: _attr,
    ast.Call: _call,
}

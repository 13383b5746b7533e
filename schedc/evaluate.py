"""Expression evaluation: exact numbers, quantities with units, devices, regions — and lanes.

`evaluate(expr, env)` is one function over the AST. In a lane context (`env.lanes` is a
count) loop variables are NumPy arrays with one entry per lane and every operation is
applied to all lanes at once; an operation with no lane-wise form raises `NeedScalar` and
the caller reruns its round one lane at a time.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from fractions import Fraction

import numpy as np
import sympy

from . import syntax as ast
from .errors import ElaborationError, LimitError, Span, UnitError
from .units import DIMENSIONLESS, Dim, dim_name, unit
from .values import (
    WHOLE,
    Devices,
    IntRange,
    NeedScalar,
    NoneValue,
    Quantity,
    Region,
    SharedRef,
    TopoRef,
    as_number,
    kind_of,
    normalize,
    take_lanes,
    to_sympy,
)

MAX_REGION_DENOMINATOR = 2**40  # finer splits than 1/2^40 of a buffer are refused
_MAX_EXPONENT = 4096  # 2 ** 10**12 would never finish; refuse instead


class Names:
    """The global names an expression can see: params, lets, topology, and more."""

    def lookup(self, name: str) -> object | None:
        raise NotImplementedError

    def known(self) -> list[str]:
        return []


@dataclass
class Env:
    """Where an expression is evaluated: local bindings over global names, maybe in lanes."""

    names: Names
    local: dict[str, object] = field(default_factory=dict)
    lanes: int | None = None  # None: scalar context; else the number of lanes
    max_lanes: int = 20_000_000
    # Handlers for node kinds that only some contexts allow (time(...) and solve(...) in
    # equations and checks); they take precedence over the built-in ones.
    extra: dict[type, Callable[[ast.Node, Env], object]] = field(default_factory=dict)

    def bind(self, name: str, value: object) -> Env:
        return replace(self, local={**self.local, name: value})

    def lookup(self, name: str, span: Span) -> object:
        if name in self.local:
            return self.local[name]
        found = self.names.lookup(name)
        if found is None:
            candidates = list(self.local) + self.names.known()
            close = difflib.get_close_matches(name, candidates, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise ElaborationError(f"unknown name '{name}'{hint}", span)
        return found


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
        raise UnitError(f"unknown unit '{node.unit}'", node.span) from None
    if dim == DIMENSIONLESS:  # a percentage
        return normalize(node.value * factor)
    return Quantity(to_sympy(normalize(node.value * factor)), dim)


def _name(node: ast.Name, env: Env) -> object:
    return env.lookup(node.id, node.span)


def _none(node: ast.NoneLit, env: Env) -> object:
    return NoneValue()


def _all_region(node: ast.AllRegion, env: Env) -> object:
    return WHOLE


def _part(node: ast.Part, env: Env) -> object:
    index = _integer(evaluate(node.index, env), node.index.span, "a part index")
    count = _integer(evaluate(node.count, env), node.count.span, "a part count")
    if isinstance(count, np.ndarray):
        raise NeedScalar
    if count < 1:
        raise ElaborationError(f"a region splits into at least 1 part, not {count}", node.count.span)
    _check_bounds(index, count, node.index.span, f"part index of {count} parts")
    whole = WHOLE if node.whole is None else evaluate(node.whole, env)
    if not isinstance(whole, Region):
        raise ElaborationError(f"'of' needs a region of the buffer, not {kind_of(whole)}",
                               node.whole.span)
    den = whole.den * count
    if den > MAX_REGION_DENOMINATOR:
        raise LimitError(f"region split too finely: 1/{den} of the buffer "
                         f"(the limit is 1/{MAX_REGION_DENOMINATOR})", node.span)
    return Region(whole.off * count + index * whole.length, whole.length, den)


def _range(node: ast.Range, env: Env) -> object:
    lo = _integer(evaluate(node.lo, env), node.lo.span, "a range bound")
    hi = _integer(evaluate(node.hi, env), node.hi.span, "a range bound")
    return IntRange(lo, hi)


def _list(node: ast.ListLit, env: Env) -> object:
    if env.lanes not in (None, 1):
        raise NeedScalar
    items = [evaluate(item, env) for item in node.items]
    for item, expr in zip(items, node.items):
        if not isinstance(item, Devices) or item.lanes:
            raise ElaborationError(f"a list holds devices or groups, not {kind_of(item)}", expr.span)
    if not items:
        return Devices(np.zeros(0, dtype=np.int64))
    shapes = {item.ids.shape for item in items}
    if len(shapes) > 1:
        raise ElaborationError("the items of a list must all be devices, or groups of one length",
                               node.span)
    return Devices(np.stack([item.ids for item in items]))


def _comprehension(node: ast.ListComp, env: Env) -> object:
    if env.lanes not in (None, 1):
        raise NeedScalar
    inner = replace(env, lanes=1)
    for clause in node.clauses:
        inner = expand_lanes(inner, clause.var, evaluate(clause.iter, inner), clause.iter.span)
        if clause.cond is not None:
            inner = filter_lanes(inner, evaluate(clause.cond, inner), clause.cond.span)
    count = inner.lanes
    element = evaluate(node.element, inner) if count else None
    if count and not isinstance(element, Devices):
        raise ElaborationError(f"a list holds devices or groups, not {kind_of(element)}",
                               node.element.span)
    if not count:
        return Devices(np.zeros(0, dtype=np.int64))
    ids = element.ids if element.lanes else np.broadcast_to(element.ids, (count, *element.ids.shape))
    return Devices(np.ascontiguousarray(ids))


# ---- lanes ------------------------------------------------------------------------------------


def expand_lanes(env: Env, var: str, iterable: object, span: Span) -> Env:
    """Every lane becomes one lane per element of `iterable` (a range or a group)."""
    lanes = env.lanes or 1
    if isinstance(iterable, IntRange):
        lo = np.broadcast_to(np.asarray(iterable.lo, dtype=np.int64), (lanes,))
        hi = np.broadcast_to(np.asarray(iterable.hi, dtype=np.int64), (lanes,))
        counts = np.maximum(hi - lo + 1, 0)
        total = int(counts.sum())
        _check_lanes(total, env, span)
        origin = np.repeat(np.arange(lanes), counts)
        starts = np.cumsum(counts) - counts
        values = lo[origin] + (np.arange(total) - starts[origin])
    elif isinstance(iterable, Devices) and iterable.rank >= 1:
        n = len(iterable)
        total = lanes * n
        _check_lanes(total, env, span)
        origin = np.repeat(np.arange(lanes), n)
        if iterable.lanes:
            ids = iterable.ids.reshape(total, *iterable.ids.shape[2:])
        else:
            ids = iterable.ids[np.tile(np.arange(n), lanes)]
        values = Devices(ids, True)
    else:
        raise ElaborationError(f"cannot loop over {kind_of(iterable)}; "
                               "expected a range (lo..hi) or a group", span)
    local = {name: take_lanes(value, origin) for name, value in env.local.items()}
    local[var] = values
    return replace(env, local=local, lanes=total)


def filter_lanes(env: Env, condition: object, span: Span) -> Env:
    """Keep the lanes where `condition` holds."""
    keep = _condition(condition, span)
    if not isinstance(keep, np.ndarray):
        return env if keep else replace(env, local={}, lanes=0)
    index = np.flatnonzero(np.broadcast_to(keep, (env.lanes or 1,)))
    local = {name: take_lanes(value, index) for name, value in env.local.items()}
    return replace(env, local=local, lanes=len(index))


def _check_lanes(total: int, env: Env, span: Span) -> None:
    if total > env.max_lanes:
        raise LimitError(f"this loop makes {total:,} iterations in one go; the limit is "
                         f"{env.max_lanes:,} (raise it with --max-transfers)", span)


def lane_array(value: object, lanes: int) -> np.ndarray:
    if isinstance(value, np.ndarray) and value.shape == (lanes,):
        return value
    return np.broadcast_to(np.asarray(value, dtype=np.int64), (lanes,))


# ---- operators --------------------------------------------------------------------------------


def _unary(node: ast.UnaryOp, env: Env) -> object:
    value = evaluate(node.operand, env)
    if node.op == "+":
        _numeric(value, node.operand.span)
        return value
    if isinstance(value, Quantity):
        return Quantity(-value.expr, value.dim)
    _numeric(value, node.operand.span)
    return -value


def _binop(node: ast.BinOp, env: Env) -> object:
    left = evaluate(node.left, env)
    right = evaluate(node.right, env)
    return apply_binop(node.op, left, right, node)


def apply_binop(op: str, left: object, right: object, node: ast.BinOp) -> object:
    if isinstance(left, Quantity) or isinstance(right, Quantity):
        return _quantity_op(op, left, right, node)
    _numeric(left, node.left.span)
    _numeric(right, node.right.span)
    lanes = isinstance(left, np.ndarray) or isinstance(right, np.ndarray)
    if lanes and (isinstance(left, Fraction) or isinstance(right, Fraction)):
        raise NeedScalar
    if op in ("+", "-", "*"):
        return {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}[op](left, right)
    if op in ("/", "//", "%"):
        if np.any(np.asarray(right) == 0):
            raise ElaborationError("division by zero", node.right.span)
        if op == "//":
            return left // right
        if op == "%":
            return left % right
        if lanes:
            if np.any(np.asarray(left) % np.asarray(right)):
                raise NeedScalar
            return left // right
        return normalize(Fraction(left) / Fraction(right))
    if op == "**":
        return _power(left, right, node)
    for value, span in ((left, node.left.span), (right, node.right.span)):
        if isinstance(value, Fraction):
            raise ElaborationError(f"'{op}' needs integers, not {value}", span)
    if op in ("<<", ">>"):
        if np.any(np.asarray(right) < 0) or np.any(np.asarray(right) > _MAX_EXPONENT):
            raise ElaborationError(f"shift count must be in 0..{_MAX_EXPONENT}", node.right.span)
        if lanes and op == "<<" and np.any(np.asarray(right) > 62):
            raise NeedScalar
        return left << right if op == "<<" else left >> right
    return {"&": lambda a, b: a & b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b}[op](left, right)


def _power(base, exponent, node: ast.BinOp):
    if isinstance(exponent, Fraction):
        raise ElaborationError("an exponent must be an integer", node.right.span)
    if np.any(np.abs(np.asarray(exponent)) > _MAX_EXPONENT):
        raise LimitError(f"exponent too large (the limit is {_MAX_EXPONENT})", node.right.span)
    if isinstance(base, np.ndarray) or isinstance(exponent, np.ndarray):
        if np.any(np.asarray(exponent) < 0) or np.any(np.abs(np.asarray(base, dtype=float)) ** np.asarray(exponent) > 2.0**62):
            raise NeedScalar
        return np.asarray(base) ** np.asarray(exponent)
    if base == 0 and exponent < 0:
        raise ElaborationError("division by zero", node.span)
    return normalize(Fraction(base) ** exponent)


def _quantity_op(op: str, left: object, right: object, node: ast.BinOp) -> Quantity | int | Fraction:
    if isinstance(left, np.ndarray) or isinstance(right, np.ndarray):
        raise NeedScalar
    a = _as_quantity(left, node.left.span)
    b = _as_quantity(right, node.right.span)
    if op in ("+", "-"):
        if a.dim != b.dim:
            verb = "add" if op == "+" else "subtract"
            raise UnitError(f"cannot {verb} {dim_name(a.dim)} and {dim_name(b.dim)}", node.span)
        return _settle(Quantity(a.expr + b.expr if op == "+" else a.expr - b.expr, a.dim))
    if op == "*":
        return _settle(Quantity(a.expr * b.expr, _dim_add(a.dim, b.dim, 1)))
    if op == "/":
        if b.expr == 0:
            raise ElaborationError("division by zero", node.right.span)
        return _settle(Quantity(a.expr / b.expr, _dim_add(a.dim, b.dim, -1)))
    if op == "**":
        n = as_number(right) if not isinstance(right, Quantity) or right.dim == DIMENSIONLESS else None
        if not isinstance(n, int) or abs(n) > 64:
            raise ElaborationError("a quantity can only be raised to an integer power up to 64",
                                   node.right.span)
        return _settle(Quantity(a.expr**n, (a.dim[0] * n, a.dim[1] * n)))
    raise UnitError(f"'{op}' needs plain numbers, not {dim_name(a.dim)} and {dim_name(b.dim)}",
                    node.span)


def _dim_add(a: Dim, b: Dim, sign: int) -> Dim:
    return (a[0] + sign * b[0], a[1] + sign * b[1])


def _as_quantity(value: object, span: Span) -> Quantity:
    if isinstance(value, Quantity):
        return value
    if isinstance(value, (int, Fraction)) and not isinstance(value, bool):
        return Quantity(to_sympy(value), DIMENSIONLESS)
    raise ElaborationError(f"expected a number or a quantity, not {kind_of(value)}", span)


def _settle(q: Quantity) -> Quantity | int | Fraction:
    """A dimensionless constant quantity is just a number."""
    number = as_number(q)
    return q if number is None else number


def _numeric(value: object, span: Span) -> None:
    ok = (isinstance(value, (int, Fraction)) and not isinstance(value, bool)) or (
        isinstance(value, np.ndarray) and value.dtype != bool)
    if not ok:
        raise ElaborationError(f"expected a number, not {kind_of(value)}", span)


# ---- comparisons and logic --------------------------------------------------------------------


def _compare(node: ast.Compare, env: Env) -> object:
    left = evaluate(node.left, env)
    right = evaluate(node.right, env)
    return compare_values(node.op, left, right, node.span)


_COMPARE: dict[str, Callable] = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}


def compare_values(op: str, left: object, right: object, span: Span) -> object:
    if isinstance(left, Devices) and isinstance(right, Devices):
        if op not in ("==", "!=") or left.rank or right.rank:
            raise ElaborationError("devices can only be compared with == and !=, one at a time", span)
        return _COMPARE[op](left.ids, right.ids)
    if isinstance(left, Quantity) or isinstance(right, Quantity):
        if isinstance(left, np.ndarray) or isinstance(right, np.ndarray):
            raise NeedScalar
        a, b = _as_quantity(left, span), _as_quantity(right, span)
        if a.dim != b.dim:
            raise UnitError(f"cannot compare {dim_name(a.dim)} with {dim_name(b.dim)}", span)
        if a.is_symbolic or b.is_symbolic:
            names = ", ".join(sorted(str(s) for s in (a.expr - b.expr).free_symbols))
            raise ElaborationError(f"this comparison depends on params ({names}), so it has no "
                                   "single answer", span)
        return bool(_COMPARE[op](a.expr, b.expr))
    _numeric(left, span)
    _numeric(right, span)
    if (isinstance(left, np.ndarray) or isinstance(right, np.ndarray)) and (
            isinstance(left, Fraction) or isinstance(right, Fraction)):
        raise NeedScalar
    result = _COMPARE[op](left, right)
    return result if isinstance(result, np.ndarray) else bool(result)


def _condition(value: object, span: Span) -> bool | np.ndarray:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, np.ndarray) and value.dtype == bool:
        return value
    raise ElaborationError(f"expected a condition, not {kind_of(value)}", span)


def _boolop(node: ast.BoolOp, env: Env) -> object:
    left = _condition(evaluate(node.left, env), node.left.span)
    if not isinstance(left, np.ndarray):
        if (node.op == "and" and not left) or (node.op == "or" and left):
            return left
        return _condition(evaluate(node.right, env), node.right.span)
    right = _condition(evaluate(node.right, env), node.right.span)
    return np.logical_and(left, right) if node.op == "and" else np.logical_or(left, right)


def _not(node: ast.Not, env: Env) -> object:
    value = _condition(evaluate(node.operand, env), node.operand.span)
    return np.logical_not(value) if isinstance(value, np.ndarray) else not value


# ---- indexing ---------------------------------------------------------------------------------


def _index(node: ast.Index, env: Env) -> object:
    base = evaluate(node.base, env)
    index = _integer(evaluate(node.index, env), node.index.span, "an index")
    if isinstance(base, TopoRef):
        return env.names.index_topology(base, index, node)
    if isinstance(base, Devices) and base.rank >= 1:
        return index_devices(base, index, node.index.span)
    raise ElaborationError(f"cannot index {kind_of(base)}", node.base.span)


def index_devices(devices: Devices, index, span: Span) -> Devices:
    n = len(devices)
    _check_bounds(index, n, span, f"group of {n}")
    if isinstance(index, np.ndarray):
        if devices.lanes:
            return Devices(devices.ids[np.arange(len(index)), index], True)
        return Devices(devices.ids[index], True)
    return Devices(devices.ids[:, index] if devices.lanes else devices.ids[index], devices.lanes)


def _check_bounds(index, n: int, span: Span, what: str) -> None:
    if isinstance(index, np.ndarray):
        if not index.size or (index.min() >= 0 and index.max() < n):
            return
    elif 0 <= index < n:
        return
    bad = np.asarray(index)
    bad = bad[(bad < 0) | (bad >= n)] if bad.ndim else (bad if (bad < 0 or bad >= n) else None)
    if bad is not None and np.size(bad):
        first = int(np.ravel(bad)[0])
        valid = f"0..{n - 1}" if n else "none"
        raise ElaborationError(f"index {first} out of range for a {what} (valid: {valid})", span)


def _attr(node: ast.Attr, env: Env) -> object:
    base = evaluate(node.base, env)
    if isinstance(base, TopoRef):
        return env.names.member(base, node.name, node)
    raise ElaborationError(f"{kind_of(base)} has no member '{node.name}'", node.span)


def _integer(value: object, span: Span, what: str):
    if isinstance(value, np.ndarray) and value.dtype != bool:
        return value
    number = as_number(value) if isinstance(value, (int, Fraction, Quantity)) else None
    if isinstance(number, int):
        return number
    if isinstance(value, Quantity) and value.is_symbolic:
        raise ElaborationError(f"{what} must be a concrete integer, but this depends on params "
                               f"({', '.join(sorted(map(str, value.expr.free_symbols)))})", span)
    raise ElaborationError(f"{what} must be an integer, not {kind_of(value) if number is None else number}",
                           span)


# ---- calls of built-in functions --------------------------------------------------------------


def _call(node: ast.Call, env: Env) -> object:
    builtin = _BUILTINS.get(node.func)
    if builtin is None:
        if env.names.is_schedule(node.func):
            raise ElaborationError(f"'{node.func}' is a schedule: call it as a statement, "
                                   "not inside an expression", node.span)
        known = list(_BUILTINS)
        close = difflib.get_close_matches(node.func, known, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else f" (functions: {', '.join(known)})"
        raise ElaborationError(f"unknown function '{node.func}'{hint}", node.span)
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


def _len(args, node):
    (value,) = args
    if isinstance(value, Devices) and value.rank >= 1:
        return len(value)
    if isinstance(value, IntRange):
        count = np.maximum(np.asarray(value.hi) - np.asarray(value.lo) + 1, 0)
        return int(count) if count.ndim == 0 else count
    raise ElaborationError(f"len() needs a group or a range, not {kind_of(value)}", node.args[0].span)


def _extremum(args, node):
    pick_max = node.func == "max"
    if any(isinstance(a, Quantity) for a in args):
        if any(isinstance(a, np.ndarray) for a in args):
            raise NeedScalar
        qs = [_as_quantity(a, arg.span) for a, arg in zip(args, node.args)]
        if len({q.dim for q in qs}) > 1:
            raise UnitError(f"{node.func}() of {dim_name(qs[0].dim)} and "
                            f"{dim_name(next(q.dim for q in qs if q.dim != qs[0].dim))}", node.span)
        expr = (sympy.Max if pick_max else sympy.Min)(*[q.expr for q in qs])
        return _settle(Quantity(expr, qs[0].dim))
    for a, arg in zip(args, node.args):
        _numeric(a, arg.span)
    if any(isinstance(a, np.ndarray) for a in args):
        if any(isinstance(a, Fraction) for a in args):
            raise NeedScalar
        result = args[0]
        for a in args[1:]:
            result = np.maximum(result, a) if pick_max else np.minimum(result, a)
        return result
    return max(args) if pick_max else min(args)


def _rounding(args, node):
    (value,) = args
    if isinstance(value, Quantity):
        number = as_number(value)
        if number is None:
            raise ElaborationError(f"{node.func}() needs a plain number, not {kind_of(value)}",
                                   node.args[0].span)
        value = number
    _numeric(value, node.args[0].span)
    if isinstance(value, np.ndarray):
        return value
    return math.ceil(value) if node.func == "ceil" else math.floor(value)


def _log2(args, node):
    (value,) = args
    _numeric(value, node.args[0].span)
    values = np.asarray(value)
    if isinstance(value, Fraction) or np.any(values <= 0) or np.any(values & (values - 1)):
        bad = value if not isinstance(value, np.ndarray) else int(values[(values <= 0) | (values & (values - 1) != 0)][0])
        raise ElaborationError(f"log2({bad}) is not an integer; this needs a power of two",
                               node.args[0].span)
    if isinstance(value, np.ndarray):
        return np.log2(values).astype(np.int64)
    return int(value).bit_length() - 1


def _abs(args, node):
    (value,) = args
    if isinstance(value, Quantity):
        return _settle(Quantity(sympy.Abs(value.expr), value.dim))
    _numeric(value, node.args[0].span)
    return abs(value)


_BUILTINS: dict[str, tuple[int | None, Callable]] = {
    "len": (1, _len),
    "min": (None, _extremum),
    "max": (None, _extremum),
    "ceil": (1, _rounding),
    "floor": (1, _rounding),
    "log2": (1, _log2),
    "abs": (1, _abs),
}


_HANDLERS: dict[type, Callable[[ast.Node, Env], object]] = {
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
    ast.Index: _index,
    ast.Attr: _attr,
    ast.Call: _call,
}


# ---- helpers for callers ----------------------------------------------------------------------


def expect_quantity(value: object, dim: Dim, span: Span, what: str) -> Quantity:
    """`value` as a quantity of dimension `dim`, or a unit error naming `what`."""
    if isinstance(value, (int, Fraction)) and not isinstance(value, bool) and dim == DIMENSIONLESS:
        return Quantity(to_sympy(value), dim)
    if isinstance(value, Quantity) and value.dim == dim:
        return value
    found = dim_name(value.dim) if isinstance(value, Quantity) else kind_of(value)
    if isinstance(value, (int, Fraction)) and not isinstance(value, bool):
        found = f"a plain number ({value}); give it a unit"
    raise UnitError(f"{what} must be {dim_name(dim)}, not {found}", span)


def expect_device(value: object, span: Span, what: str) -> Devices:
    if isinstance(value, Devices) and value.rank == 0:
        return value
    if isinstance(value, SharedRef):
        raise ElaborationError(f"{what} must be a device, not a shared resource", span)
    raise ElaborationError(f"{what} must be a device, not {kind_of(value)}", span)

"""Where expressions are evaluated: `Env` (local bindings over global `Names`) and lanes.

Inside a `round`, loops are not run one iteration at a time: each iteration is a *lane*, a
loop variable is a NumPy array with one entry per lane, and `expand_lanes` / `filter_lanes`
turn a loop or a condition into a new set of lanes, carrying every lane-varying binding along.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import ElaborationError, LimitError, Span, did_you_mean
from ..language import syntax as ast
from .. import limits
from ..limits import MAX_LANES
from ..model.values import Devices, Integers, IntRange, as_condition, kind_of, take_lanes


class Names:
    """The global names an expression can see: params, lets, topology, schedules.
    `symbolic`: params are SymPy symbols and constant quantities SymPy rationals (formulas
    are built from them); else every param is its value (`schedc.model.scalars`)."""

    symbolic = True

    def lookup(self, name: str) -> object | None:
        """The value of a global name, or None."""
        raise NotImplementedError

    def known(self) -> list[str]:
        """Every global name, for 'did you mean' hints."""
        return []

    def index_topology(self, ref, index, node: ast.Index) -> object:
        """`ref[index]` for a host family being indexed."""
        raise NotImplementedError

    def member(self, ref, name: str, node: ast.Attr) -> object:
        """`ref.name` for a host."""
        raise NotImplementedError

    def is_schedule(self, name: str) -> bool:
        return False


@dataclass
class Env:
    """Where an expression is evaluated: local bindings over global names, maybe in lanes."""

    names: Names
    local: dict[str, object] = field(default_factory=dict)
    lanes: int | None = None  # None: scalar context; else the number of lanes
    max_lanes: int = MAX_LANES  # what is left of the transfer limit here
    lane_limit: int = MAX_LANES  # the limit itself (--max-transfers), which messages quote
    # The lanes are consecutive iterations of a sequential loop (else branches of a parallel
    # one): a round loop keeps their rounds one after another instead of side by side.
    sequential: bool = False
    # Handlers for node kinds that only some contexts allow (time(...) and solve(...) in
    # equations and checks); they take precedence over the built-in ones.
    extra: dict[type, Callable[..., object]] = field(default_factory=dict)

    def bind(self, name: str, value: object) -> Env:
        return replace(self, local={**self.local, name: value})

    def lookup(self, name: str, span: Span) -> object:
        if name in self.local:
            return self.local[name]
        found = self.names.lookup(name)
        if found is None:
            known = [n for n in self.local if not n.startswith("<")] + self.names.known()
            raise ElaborationError(f"unknown name '{name}'" + did_you_mean(name, known), span)
        return found


def expand_lanes(env: Env, var: str, iterable: object, span: Span) -> Env:
    """Every lane becomes one lane per element of `iterable` (a range, a group or a list of
    numbers)."""
    lanes = 1 if env.lanes is None else env.lanes  # 0 lanes (an empty outer loop) stay 0
    if isinstance(iterable, IntRange):
        lo = np.broadcast_to(np.asarray(iterable.lo, dtype=np.int64), (lanes,))
        hi = np.broadcast_to(np.asarray(iterable.hi, dtype=np.int64), (lanes,))
        counts = np.maximum(hi - lo + 1, 0)  # bounds within ±2^62: no int64 overflow
        _check_lanes(int(counts.max(initial=0)), env, span)  # so the sum below cannot wrap
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
    elif isinstance(iterable, Integers):
        n = len(iterable)
        total = lanes * n
        _check_lanes(total, env, span)
        origin = np.repeat(np.arange(lanes), n)
        values = np.tile(iterable.values, lanes)
    else:
        raise ElaborationError(f"cannot loop over {kind_of(iterable)}; "
                               "expected a range (lo..hi), a group or a list", span)
    local = {name: take_lanes(value, origin) for name, value in env.local.items()}
    local[var] = values
    return replace(env, local=local, lanes=total)


def filter_lanes(env: Env, condition: object, span: Span) -> Env:
    """Keep the lanes where `condition` holds."""
    keep = as_condition(condition, span)
    if not isinstance(keep, np.ndarray):
        if keep:
            return env
        # No lane is kept, but the loop variables stay bound (to no values), so the
        # statement's expressions still evaluate: `link ... for h in 0..n-1 if fabric == 2`.
        keep = np.zeros(1, dtype=bool)
    index = np.flatnonzero(np.broadcast_to(keep, (1 if env.lanes is None else env.lanes,)))
    local = {name: take_lanes(value, index) for name, value in env.local.items()}
    return replace(env, local=local, lanes=len(index))


def _check_lanes(total: int, env: Env, span: Span) -> None:
    if total > env.max_lanes:
        made = env.lane_limit - env.max_lanes  # by the statements before this loop
        after = f" after {made:,} transfers already made" if made > 0 else ""
        raise LimitError(f"this loop makes {total:,} iterations in one go{after}; the limit is "
                         f"{env.lane_limit:,} ({_raise_it(env.lane_limit)})", span)


def _raise_it(limit: int) -> str:
    """How to get past a lane limit: --max-transfers, unless the limit is what memory holds."""
    if limit < limits.MEMORY_TRANSFERS:
        return "raise it with --max-transfers"
    return (f"what this machine's {limits.format_bytes(limits.MEMORY)} of memory holds at "
            f"{limits.BYTES_PER_TRANSFER} B a transfer")


def lane_array(value: object, lanes: int) -> np.ndarray:
    if isinstance(value, np.ndarray) and value.shape == (lanes,):
        return value
    return np.broadcast_to(np.asarray(value, dtype=np.int64), (lanes,))

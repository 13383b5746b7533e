"""One transfer or send statement → a `Batch` of transfers (one per lane), its endpoints
checked against the collective's ranks; sizes as linear forms over size params; and the
`RoundList` that statement sequences build."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from math import lcm
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ElaborationError, Span
from ..language import statements as st
from ..language import syntax as ast
from ..model.ir import Batch, LinearBytes, Round, Rounds, Series
from ..model.scalars import is_plain
from ..model.values import (
    NeedScalar,
    Quantity,
    Region,
    check_positive,
    expect_device,
    expect_quantity,
    from_rational,
    kind_of,
)
from ..units import BYTES
from .evaluate import evaluate
from .lanes import Env, lane_array

if TYPE_CHECKING:  # the schedule elaborator passes its context in
    from .schedule import ScheduleContext

RoundBuffer = list[Batch]


class RoundList:
    """The rounds a sequence of statements has made so far: round buffers, and the series of
    round loops, kept whole unless a parallel composition must take them round by round."""

    def __init__(self) -> None:
        self.parts: list[list[RoundBuffer] | Series] = []
        self.count = 0

    def __len__(self) -> int:
        return self.count

    def append(self, buffer: RoundBuffer) -> None:
        last = self.parts[-1] if self.parts else None
        if not isinstance(last, list):
            last = []
            self.parts.append(last)
        last.append(buffer)
        self.count += 1

    def extend(self, other: RoundList) -> None:
        for part in other.parts:
            if isinstance(part, Series):
                self.parts.append(part)
                self.count += len(part)
            else:
                for buffer in part:
                    self.append(buffer)

    def add_series(self, series: Series) -> None:
        if len(series):
            self.parts.append(series)
            self.count += len(series)

    def buffers(self) -> list[RoundBuffer]:
        """Every round's batches, a series' rounds made one by one."""
        out: list[RoundBuffer] = []
        for part in self.parts:
            if isinstance(part, Series):
                out += [list(part.round(k).batches) for k in range(len(part))]
            else:
                out += part
        return out

    def rounds(self) -> Rounds:
        """The IR's rounds, empty ones dropped."""
        return Rounds([p.busy() if isinstance(p, Series) else tuple(Round(tuple(b)) for b in p if b)
                       for p in self.parts])


def zipped(branches: list[RoundList]) -> RoundList:
    """Round-wise parallel composition: round j of every branch together make round j. Branches
    made of series alone, of the same lengths in the same order, stay series (each of all the
    branches' batches)."""
    busy = [b for b in branches if len(b)]
    out = RoundList()
    if len(busy) == 1:
        return busy[0]
    shapes = {tuple(len(p) if isinstance(p, Series) else None for p in b.parts) for b in busy}
    if len(shapes) == 1 and None not in next(iter(shapes)):
        for parts in zip(*(b.parts for b in busy)):
            out.add_series(Series(tuple(x for s in parts for x in s.batches),
                                  np.concatenate([s.starts for s in parts])))
        return out
    lists = [b.buffers() for b in busy]
    for j in range(max((len(b) for b in lists), default=0)):
        out.append([batch for b in lists if j < len(b) for batch in b[j]])
    return out


def transfer_batch(stmt: st.Transfer | st.Send, env: Env, ctx: ScheduleContext) -> Batch:
    lanes = env.lanes or 1
    src = _endpoint(stmt.src, env, lanes, ctx, "the source")
    dst = _endpoint(stmt.dst, env, lanes, ctx, "the destination")
    same = np.flatnonzero(src == dst)
    if len(same):
        raise ElaborationError(f"a transfer from {ctx.device_names[src[same[0]]]} to itself",
                               stmt.span)
    into_off = None
    if isinstance(stmt, st.Send):
        value = evaluate(stmt.size, env)
        if isinstance(value, np.ndarray):
            raise NeedScalar
        message = expect_quantity(value, BYTES, stmt.size.span, "a message size")
        check_positive(message, ctx.nominal, stmt.size.span, "a message size")
        size = linear_bytes(message, stmt.size.span)
        off, length, den = np.zeros(lanes, np.int64), np.ones(lanes, np.int64), 1
    else:
        region = _region(stmt.region, env)
        off, length, den = lane_array(region.off, lanes), lane_array(region.length, lanes), region.den
        if stmt.into is not None:
            into = _region(stmt.into, env)
            den = lcm(region.den, into.den)
            a, b = den // region.den, den // into.den
            off, length = off * a, length * a
            into_off, into_length = lane_array(into.off, lanes) * b, lane_array(into.length, lanes) * b
            if np.any(into_length != length):
                raise ElaborationError("the 'into' region differs in size from the region sent",
                                       stmt.into.span)
        size = ctx.collective.size
    return Batch(stmt.op if isinstance(stmt, st.Transfer) else "send", src, dst, off, length,
                 den, into_off, size, stmt.span)


def _endpoint(expr: ast.Expr, env: Env, lanes: int, ctx: ScheduleContext, what: str) -> np.ndarray:
    ids = lane_array(expect_device(evaluate(expr, env), expr.span, what).ids, lanes)
    outside = np.flatnonzero(~ctx.is_rank[ids])
    if len(outside):
        name = ctx.device_names[ids[outside[0]]]
        raise ElaborationError(f"{name} is not a rank of the collective "
                               f"({ctx.collective.kind} over {len(ctx.collective.ranks)} ranks)",
                               expr.span, (f"the collective is declared at {ctx.collective.span}",))
    return ids


def _region(expr: ast.Expr, env: Env) -> Region:
    value = evaluate(expr, env)
    if not isinstance(value, Region):
        raise ElaborationError(f"expected a region of the buffer (all, part(i of k), ...), "
                               f"not {kind_of(value)}", expr.span)
    return value


def merge_batches(batches: RoundBuffer) -> RoundBuffer:
    """Join the batches one statement made in a round (when run lane by lane) into one."""
    if len(batches) <= 1:
        return batches
    groups: dict[tuple, list[Batch]] = {}
    for b in batches:
        key = (b.op, b.span, b.den, b.size, b.into_off is None)
        groups.setdefault(key, []).append(b)
    merged = []
    for group in groups.values():
        first = group[0]
        if len(group) == 1:
            merged.append(first)
            continue
        merged.append(replace(
            first,
            src=np.concatenate([b.src for b in group]),
            dst=np.concatenate([b.dst for b in group]),
            off=np.concatenate([b.off for b in group]),
            length=np.concatenate([b.length for b in group]),
            into_off=None if first.into_off is None else np.concatenate([b.into_off for b in group]),
        ))
    return merged


def linear_bytes(q: Quantity, span: Span) -> LinearBytes:
    """A size as a linear form over size params: 2*V + 1 MiB → ((1, 1048576), (V, 2));
    compiled without formulas, the size is a number: ((1, its bytes),)."""
    if is_plain(q.expr):
        return ((1, Fraction(q.expr)),) if q.expr else ()
    import sympy
    terms: dict[sympy.Expr, Fraction] = {}
    for term, coeff in sympy.expand(q.expr).as_coefficients_dict().items():
        if not (term == 1 or term.is_Symbol) or not coeff.is_Rational:
            raise ElaborationError(f"a size must be linear in params (like 2*V + 1 MiB), "
                                   f"not {q.expr}", span)
        terms[term] = terms.get(term, Fraction(0)) + from_rational(coeff)
    return tuple(sorted(((s, c) for s, c in terms.items() if c), key=lambda sc: str(sc[0])))

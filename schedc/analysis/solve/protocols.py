"""Where the winning protocol changes: with every param but one (x) at its nominal value, the
intervals of x on which each protocol is the fastest.

A schedule's time under protocols is Min(T_p, ...), each T_p a sum of α + Max(...) terms;
`cost.regimes.pieces` cuts the x axis wherever any Max or the Min switches argument, exactly.
On each piece the fastest protocol is the one smallest at a point inside it; neighbouring
pieces with one winner are merged, so the boundaries left are the switch points.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from ...cost.regimes import pieces, sample
from ...cost.timing import Timing


@dataclass(frozen=True)
class ProtocolSpan:
    protocol: str
    lo: sympy.Expr  # exact; 0 or a switch point
    hi: sympy.Expr  # exact; a switch point or oo


def protocol_spans(timing: Timing, x: sympy.Symbol) -> list[ProtocolSpan]:
    """The intervals of x (> 0) on which each protocol wins; [] without protocols."""
    times = timing.cost.protocol_times
    if not times or x not in timing.cost.formula.free_symbols:
        return []
    values = {s: v for s, v in timing.nominal.items() if s != x}
    spans: list[ProtocolSpan] = []
    for piece in pieces([timing.cost.formula], x, values):
        point = {**values, x: sample(piece.lo, piece.hi)}
        scores = [t.formula.xreplace(point) for t in times]
        best = min(range(len(times)), key=lambda k: scores[k])
        if spans and spans[-1].protocol == times[best].name:
            spans[-1] = ProtocolSpan(spans[-1].protocol, spans[-1].lo, piece.hi)
        else:
            spans.append(ProtocolSpan(times[best].name, piece.lo, piece.hi))
    return spans

"""Sensitivity: ∂T/∂p and the elasticity (p/T)·∂T/∂p of a schedule's time at the nominal point.

A time is piecewise (Max), so at a regime boundary it has a kink: raising p and lowering p
change T at different rates. The seed's PCIe ring sits on one — its GPU links and the NIC
slot are both 32 GB/s, so a faster local link gains nothing while a slower one costs at
once. Both one-sided derivatives are therefore reported, from the regimes just above and
just below the nominal value (`regimes.pieces` on a neighbourhood of it).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from ...cost.regimes import NotRational, key, pieces, same
from ...cost.timing import Timing
from ...deadline import OutOfTime, TimeLimit
from ...elaborate.program import Param, Program
from ...errors import CostError


@dataclass(frozen=True)
class Sensitivity:
    param: Param
    up: sympy.Expr  # ∂T/∂p as p rises from its nominal value (s per base unit)
    down: sympy.Expr  # as p falls
    elasticity_up: sympy.Expr  # (p/T)·∂T/∂p, dimensionless
    elasticity_down: sympy.Expr

    @property
    def kink(self) -> bool:
        return self.up != self.down


def sensitivities(program: Program, timing: Timing, limit: TimeLimit) -> list[Sensitivity]:
    """One entry per param of the program, in declaration order; structural params (a host
    count) are left out: the time is not a formula in them (see `schedc scale`)."""
    formula, nominal = timing.cost.formula, program.nominal
    total = formula.xreplace(nominal)
    out = []
    for param in program.params.values():
        if param.structural:
            continue
        x = param.symbol
        p0 = nominal[x]
        if not formula.has(x):
            out.append(Sensitivity(param, *(sympy.S.Zero,) * 4))
            continue
        values = {s: v for s, v in nominal.items() if s != x}
        at_edge = p0 == 0 and x.is_nonnegative  # alpha = 0, say: it cannot fall below
        lo, hi = (p0 / 2, 2 * p0) if p0 > 0 else (p0 if at_edge else p0 - 1, p0 + 1)
        try:
            with limit.running():
                around = pieces([formula], x, values, lo, hi)
        except OutOfTime:
            raise CostError(f"the sensitivity to {param.name} could not be found within {limit}",
                            timing.schedule.span) from None
        except NotRational as exc:
            raise CostError(f"the time is not a rational function of {param.name} ({exc.args[0]})",
                            timing.schedule.span) from None
        # The regimes just above and just below p0 (the same one unless p0 is a kink).
        above = next(p for p in around if key(p0) < key(p.hi) and not same(p0, p.hi))
        below = above if at_edge else next(
            p for p in reversed(around) if key(p.lo) < key(p0) and not same(p.lo, p0))
        up, down = (sympy.diff(p.plain[0], x).xreplace(values).xreplace({x: p0})
                    for p in (above, below))
        scale = p0 / total if total else sympy.nan  # a schedule without rounds takes no time
        out.append(Sensitivity(param, up, down, scale * up, scale * down))
    return out

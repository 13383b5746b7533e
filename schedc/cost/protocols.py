"""A schedule's time under protocols: the minimum over them of Σ_rounds (α_p + max_e
V[r,e] / rate_p(B_e)), where rate_p(B) = eff_p · B, capped per link class (model.protocol).

A round's start-up and transfer add up as the plain cost's do (`step cost`: their sum, or
their max). The rounds' loads do not depend on the protocol, so each protocol's time is built from the
round classes of the plain cost: its start-up replaces the file's α (plus any route latency),
and every term's bandwidth becomes the protocol's rate. The regime form is the winning
protocol's, resolved at the nominal point; it holds while the winner stays the fastest.
"""

from __future__ import annotations

from dataclasses import replace

import sympy

from ..model.protocol import Protocol
from ..model.topology import Topology
from .formula import Cost, ProtocolTime, _note, nominal_value, resolve, step_time
from .lower import Loads
from .regimes import at_least


def with_protocols(base: Cost, loads: Loads, topology: Topology, alpha: sympy.Expr,
                   nominal: dict, protocols: tuple[Protocol, ...]) -> Cost:
    if not protocols:
        return base
    times = []
    for protocol in protocols:
        total = protocol.launch
        for c in base.classes:
            used = classes_loaded(loads, topology, c.first)
            startup = c.startup - alpha + protocol.startup(used)
            terms = [t.expr * t.bandwidth / protocol.rate(
                t.bandwidth, {topology.resources[r].cls for r in t.resources}) for t in c.terms]
            total += c.count * step_time(startup, terms, c.overlapped)
        times.append(ProtocolTime(protocol.name, total, nominal_value(total, nominal)))
    best = min(range(len(times)), key=lambda k: times[k].value)  # a tie: the first declared
    conditions: dict[str, sympy.Expr] = {}
    regime = resolve(times[best].formula, nominal, conditions)
    for k, other in enumerate(times):
        if k != best:
            _note(at_least(resolve(other.formula, nominal, {}), regime), conditions)
    formula = (times[0].formula if len(times) == 1
               else sympy.Min(*[t.formula for t in times], evaluate=False))
    return replace(base, formula=formula, regime_formula=regime,
                   conditions=tuple(conditions.values()), protocol=times[best].name,
                   protocol_times=tuple(times))


def classes_loaded(loads: Loads, topology: Topology, first_round: int) -> set[str]:
    """The classes of the links that a round loads."""
    shape = int(loads.shape_of[first_round])
    return {topology.resources[int(loads.resource[k])].cls for k in loads.entries(shape)
            if any(loads.amount[k]) and topology.resources[int(loads.resource[k])].bandwidth
            is not None}

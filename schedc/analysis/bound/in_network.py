"""All-reduce's lower bounds on a machine whose switches reduce in the network (NVLS, SHARP).

There the ranks need not send and receive 2(p - 1)·V themselves (the end-host bound over ranks
fails) and reduce-scatter's optimum plus all-gather's bounds nothing. Two arguments remain:

- **every cut** (`in_network`): whoever reduces, the sum of every rank's data must reach every
  rank, so V enters every set of devices that holds some but not all ranks;
- **the end hosts, taken as hosts** (`host_ends`): when every switch that reduces sits inside a
  host that holds ranks, each host is one end that reduces, and the hosts' own links carry
  2(H - 1)·V in all, each way (per element, H - 1 partial sums must enter a host that combines
  them and H - 1 copies of the sum must reach the others: Patarasuk & Yuan's count, hosts for
  ranks), so T ≥ 2(H - 1)·V / Σ_h B⁻(host h), and the same outwards.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import sympy

from ...model.ir import Collective, LinearBytes, linear_expr, linear_scale, linear_value
from .cuts import RankCuts
from .optimum import OptimalCut, Optimum, cut_into, narrowest


def in_network(finder: RankCuts, collective: Collective, nominal: dict) -> OptimalCut | None:
    """All-reduce's cut bound over all cuts, exact: T ≥ V / min B⁻(S) over every S holding some
    but not all ranks. The narrowest such S separates ranks[0] from some rank, one way or the
    other: 2(N - 1) max-flows. None when some rank cannot be reached."""
    ranks = collective.ranks
    if len(ranks) < 2:
        return None
    graph = finder.network.graph
    pairs = [pair for other in ranks[1:] for pair in ((ranks[0], other), (other, ranks[0]))]
    found = narrowest(graph, pairs)
    if found is None:
        return None
    return cut_into(finder, graph, collective, "allreduce", found[0], Fraction(1), found[1],
                    nominal)


def in_network_optimum(finder: RankCuts, collective: Collective, nominal: dict) -> Optimum | None:
    """`in_network`'s cut as the optimum `bound` reports for an all-reduce where switches
    reduce."""
    cut = in_network(finder, collective, nominal)
    return None if cut is None else Optimum("allreduce", (cut,), cut.time, cut.value)


@dataclass(frozen=True)
class EndHost:
    """The end-host bound (`bounds._end_host`, the ranks as ends), or with hosts for ranks
    where switches reduce inside them (`host_ends`)."""

    total: LinearBytes  # 2(p-1)·V (hosts: 2(H-1)·V): what the ends send together, and receive
    egress: sympy.Expr  # Σ over the ends of the bandwidth out of them
    ingress: sympy.Expr
    bound: sympy.Expr
    value: Fraction
    hosts: int = 0  # 0: the ranks are the ends; H: the H hosts that hold them are


def host_ends(finder: RankCuts, collective: Collective | None, nominal: dict) -> EndHost | None:
    """The bound over hosts (module docstring); None unless the collective is an all-reduce
    over ranks of two or more hosts, every switch that reduces is in one of them, and no
    unlimited link enters or leaves one."""
    if collective is None or collective.kind != "allreduce":
        return None
    topology = finder.topology
    hosts = sorted({topology.devices[r].host for r in collective.ranks}, key=str)
    if None in hosts or len(hosts) < 2:
        return None
    if any(d.reduces and d.host not in hosts for d in topology.devices):
        return None  # a switch that reduces outside every end: the count does not hold
    graph = finder.network.graph
    sums = []
    for way in (graph.reverse(copy=False), graph):  # out of each host, then into it
        rates, values = [], Fraction(0)
        for h in hosts:
            inside = {d.id for d in topology.devices if d.host == h}
            edges = [d for u, v, d in way.edges(data=True) if u not in inside and v in inside]
            if any("capacity" not in d for d in edges):
                return None  # an unlimited way in or out
            values += Fraction(sum(d["capacity"] for d in edges), finder.network.scale)
            rates += [topology.resources[r].effective_bandwidth for d in edges
                      for r in d["resources"]]
        sums.append((sympy.Add(*rates), values))
    (egress, out_rate), (ingress, in_rate) = sums
    if not out_rate or not in_rate:
        return None
    total = linear_scale(collective.size, Fraction(2 * (len(hosts) - 1)))
    moved = linear_value(total, nominal)
    bandwidth = egress if out_rate <= in_rate else ingress
    return EndHost(total, egress, ingress, sympy.factor_terms(linear_expr(total) / bandwidth),
                   max(moved / out_rate, moved / in_rate), len(hosts))

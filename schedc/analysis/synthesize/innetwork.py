"""All-reduce through switches that reduce in the network (NVLS, SHARP): which ranks reduce
into which switch, and how a pipelined schedule's bandwidth term falls with its chunks.

With such a switch a rank sends its data once and receives the sum once: V each way, where
reduce-scatter then all-gather moves 2(N - 1)/N·V through every rank. The schedule
`synthesize` writes for it (`export.sched_innetwork`) runs one chunk through a fixed list of
stages; this module says when it applies and what it costs to pipeline.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from ...limits import MAX_CHUNKS
from ...model.topology import Topology
from .plan import descend


@dataclass(frozen=True)
class Reducing:
    """The ranks grouped by the switch that reduces for them: `groups[h]` (device ids, in
    rank order) are linked both ways to `switches[h]`; every group has the same size."""

    groups: tuple[tuple[int, ...], ...]
    switches: tuple[int, ...]

    @property
    def stages(self) -> int:
        """The stages one chunk goes through: into the switch and back (one group); with
        several, each rank also takes its share of its group's sum, the ranks of one index
        all-reduce it in a ring over the groups (2(H - 1) steps), and give it back."""
        h = len(self.groups)
        return 2 if h == 1 else 2 * h + 2


def reducing_groups(topology: Topology, ranks: tuple[int, ...]) -> Reducing | None:
    """The groups, when every rank is linked (both ways) to exactly one switch that reduces
    and the groups are of one size; None otherwise (then trees are written)."""
    reducing = {d.id for d in topology.devices if d.reduces}
    if not reducing:
        return None
    members = set(ranks)
    out = {(h.src, h.dst) for h in topology.hops if h.src in members and h.dst in reducing}
    back = {(h.dst, h.src) for h in topology.hops if h.dst in members and h.src in reducing}
    switch_of: dict[int, list[int]] = {}
    for rank, switch in sorted(out & back):
        switch_of.setdefault(rank, []).append(switch)
    if any(len(switch_of.get(r, ())) != 1 for r in ranks):
        return None
    groups: dict[int, list[int]] = {}
    for r in ranks:  # in rank order: groups by their first rank, members as they come
        groups.setdefault(switch_of[r][0], []).append(r)
    if len({len(g) for g in groups.values()}) != 1:
        return None
    return Reducing(tuple(tuple(g) for g in groups.values()), tuple(groups))


def first_count(stages: int) -> int:
    """The fewest chunks from which the pipeline's times follow its model: stages - 1."""
    return max(stages - 1, 1)


@dataclass(frozen=True)
class Pipeline:
    """B(K) = steady + excess / K, the bandwidth term at α = 0 of K chunks through `stages`
    stages, exact for K ≥ stages - 1: every round then either runs all stages (one K-th of
    the data each) or is one of the same fill and drain rounds, each a fixed multiple of V/K."""

    stages: int
    steady: Fraction  # seconds: the limit of many chunks
    excess: Fraction  # seconds·chunks: what filling and draining the pipeline add

    @classmethod
    def of(cls, stages: int, at_first: Fraction, at_twice: Fraction) -> Pipeline:
        """From the compiled bandwidth terms at K = `first_count(stages)` and twice it."""
        first = first_count(stages)
        excess = 2 * first * (at_first - at_twice)
        return cls(stages, at_twice - excess / (2 * first), excess)

    def at(self, chunks: int) -> Fraction:
        return self.steady + self.excess / chunks

    def chunks_within(self, goal: Fraction, within: float) -> int:
        """The fewest chunks (≥ stages - 1, where the model holds) within `within` of `goal`."""
        target = goal * (1 + Fraction(within))
        first = first_count(self.stages)
        if self.excess <= 0 or self.at(first) <= target:
            return first
        return max(first, math.ceil(self.excess / (target - self.steady)))


def fastest_count(time: Callable[[int], Fraction], stages: int, written: int) -> int:
    """The chunk count fastest at the file's α. For K ≥ stages - 1 the time is
    c + a·K + b/K (a start-up per round, the fill's bytes over K), so three compiled times
    give a, b and K = √(b/a); the count is then moved down the compiled times to a local
    minimum (protocols that switch with the chunk's size bend the curve a little)."""
    ks = [first_count(stages) * m for m in (1, 2, 4)]  # (the first two: Pipeline.of's)
    t = [time(k) for k in ks]
    # T(K) = c + a·K + b/K: eliminate c between pairs of the three points.
    d1 = (t[1] - t[0], Fraction(ks[1] - ks[0]), Fraction(1, ks[1]) - Fraction(1, ks[0]))
    d2 = (t[2] - t[1], Fraction(ks[2] - ks[1]), Fraction(1, ks[2]) - Fraction(1, ks[1]))
    det = d1[1] * d2[2] - d2[1] * d1[2]
    a = (d1[0] * d2[2] - d2[0] * d1[2]) / det
    b = (d1[1] * d2[0] - d2[1] * d1[0]) / det
    if a <= 0:
        return written  # no start-up per round: more chunks never hurt
    best = min(MAX_CHUNKS, max(1, round(math.sqrt(max(float(b), 0.0) / float(a)))))
    return descend(time, best, 16)

"""From a packing's float weights to a schedule: whole units of a shard per tree, and the
number of pipelined chunks.

Units. Tree T of root c carries u_T of U equal units of c's shard (u_T from the LP's
weights by largest remainder, so a root's units add up to U exactly). U is the smallest power
of two whose rounding keeps the steady-state time within a quarter of the allowed excess.

Chunks. Each tree's slice is sent in K chunks, chunk k over an edge into depth d in round
k + d - 1 (out-trees; in-trees run the other way: from depth d in round k + D - d). A round
carries one chunk of every stage in flight, so with m_d the load of every tree's edges of
stage d (per shard, over bandwidth) the rounds cost, at α = 0,

    B(K) = Σ_rounds max_e Σ_{stages d in flight} m_d[e] / K

(`bandwidth_time`): the steady rounds cost S / K each, S = max_e Σ_d m_d[e], and the D - 1
rounds of fill and of drain less. B(K) - S falls as 1/K, so the smallest K within a tolerance
of the optimum, and the K that minimises (K + D - 1)·α + B(K), are found by scanning K
(`fastest_chunks`: with protocols, α and the bandwidth's scale read off the compiled time).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ...cost.formula import nominal_value
from ...cost.timing import Timing
from ...errors import LimitError
from ...language.parser import MAX_TOKENS
from ...limits import MAX_CHUNKS, MAX_UNITS
from ...model.collectives import KINDS
from .packing import Packing, Tree



@dataclass(frozen=True)
class PlannedTree:
    root: int  # a rank's index in the collective's order
    first: int  # its slice: units first .. first + units - 1 of `units` of the root's shard
    units: int
    edges: tuple[tuple[int, int, int], ...]  # (parent, child, depth of the child)


@dataclass(frozen=True)
class Plan:
    kind: str
    trees: tuple[PlannedTree, ...]
    units: int  # U
    depth: int  # D: the deepest child
    stages: np.ndarray  # m_d per stage d = 1..D (rows), per resource: seconds per shard byte
    images: np.ndarray | None = None  # the packing's (see `Packing.images`): the trees are
    # root 0's first, then each root's as their images, in the same order and units

    def bandwidth_time(self, chunks: int, shard: float) -> float:
        """B(K) at α = 0 for a shard of `shard` bytes (see the module docstring): from K ≥ D - 1
        on, the fill and drain rounds no longer change and each chunk more adds one steady
        round, so B(K)·K = A(D - 1) + (K - D + 1)·S exactly."""
        first = max(self.depth - 1, 1)
        if chunks <= first:
            return self._rounds(chunks) * shard / chunks
        return (self._rounds(first) + (chunks - first) * self.steady(1.0)) * shard / chunks

    def _rounds(self, chunks: int) -> float:
        """Σ over the K + D - 1 rounds of the busiest resource's load, per shard byte."""
        d = self.depth
        total = 0.0
        inward = KINDS[self.kind].reduces
        stage = np.arange(1, d + 1)
        for s in range(chunks + d - 1):
            k = s - (d - stage) if inward else s - (stage - 1)
            active = (k >= 0) & (k < chunks)
            if active.any():
                total += float(self.stages[active].sum(axis=0).max())
        return total

    def steady(self, shard: float) -> float:
        """The time as chunks grow without bound: S × shard."""
        return float(self.stages.sum(axis=0).max()) * shard


def plan(packing: Packing, within: float, units: int | None = None) -> Plan:
    """Units for every tree: `units` if given, else the smallest power of two within
    `within`/4 of the packing's own steady time (refused past MAX_UNITS)."""
    packing = _symmetric(packing)
    best = None
    roots = sorted({t.root for t in packing.trees})
    exact = _steady(packing, {k: t.weight for k, t in enumerate(packing.trees)}, roots)
    if units is not None:
        best = (units, _units(packing, roots, units))
    else:
        units = 8
    while best is None and units <= MAX_UNITS:
        shares = _units(packing, roots, units)
        if _steady(packing, {k: u / units for k, u in shares.items()}, roots, per_root=False) \
                <= exact * (1 + within / 4):
            best = (units, shares)
            break
        units *= 2
    if best is None:
        raise LimitError(f"the trees' weights need more than {MAX_UNITS} units of a shard to stay "
                         f"within {within:.2%}; allow more with a larger --within")
    units, shares = best
    trees = []
    first = {c: 0 for c in roots}
    for k, tree in enumerate(packing.trees):
        if not shares[k]:
            continue
        depth = tree.depths()
        trees.append(PlannedTree(tree.root, first[tree.root], shares[k],
                                 tuple((a, b, depth[b]) for a, b in tree.edges)))
        first[tree.root] += shares[k]
    deepest = max(e[2] for t in trees for e in t.edges)
    stages = np.zeros((deepest, len(packing.resources)))
    for t in trees:
        for a, b, d in t.edges:
            stages[d - 1] += packing.edge_load(a, b) * (t.units / units)
    return Plan(packing.kind, tuple(trees), units, deepest, stages, packing.images)


def _symmetric(packing: Packing) -> Packing:
    """With `images`, the trees in the order root 0's, then their images root by root, so
    that rounding (ties broken by that order) gives every root root 0's units: the written
    file then lists root 0's trees and the images only."""
    if packing.images is None:
        return packing
    first = [t for t in packing.trees if t.root == 0]
    trees = tuple(Tree(c, tuple((int(image[a]), int(image[b])) for a, b in t.edges), t.weight)
                  for c, image in enumerate(packing.images) for t in first)
    if sorted(trees, key=lambda t: (t.root, t.edges)) != sorted(
            packing.trees, key=lambda t: (t.root, t.edges)):
        return replace(packing, images=None)  # not the images of root 0's: write them all
    rows = [[packing.edge_rows[e] for e in t.edges] for t in trees]
    loads = np.array([np.asarray(packing.edge_seconds[r].sum(axis=0)).ravel() for r in rows])
    return replace(packing, trees=trees, loads=loads)


def chunks_within(p: Plan, goal: float, shard: float, within: float) -> int:
    """The smallest K whose bandwidth term is within `within` of `goal` (seconds): B(K) falls
    as 1/K from D - 1 on (`Plan.bandwidth_time`), so K is solved for, not searched."""
    target = goal * (1 + within)
    if p.steady(shard) > target:
        raise LimitError(f"with {p.units} units a shard the trees' rounding alone is "
                         f"{p.steady(shard) / goal - 1:.2%} above their goal, more than "
                         f"{within:.2%}: give --chunks, or more --units")
    first = max(p.depth - 1, 1)
    for k in range(1, first + 1):
        if p.bandwidth_time(k, shard) <= target:
            return k
    excess = (p._rounds(first) - first * p.steady(1.0)) * shard  # B(K) = S·shard + excess/K
    k = max(first + 1, math.ceil(excess / (target - p.steady(shard))) if excess > 0 else first)
    while k > first + 1 and p.bandwidth_time(k - 1, shard) <= target:  # (rounding of the ceil)
        k -= 1
    return within_limit(k, within)


def within_limit(chunks: int, within: float) -> int:
    """`chunks`, unless it is past MAX_CHUNKS: then the refusal that says so."""
    if chunks > MAX_CHUNKS:
        raise LimitError(f"{chunks:,} chunks would be needed to come within {within:.2%} of "
                         f"the goal, more than {MAX_CHUNKS:,}: give --chunks or a larger --within")
    return chunks


def descend(time: Callable[[int], Any], start: int, moves: int) -> int:
    """From `start`, to the neighbouring chunk count (1 .. MAX_CHUNKS) while its time is
    lower, at most `moves` times: a local minimum of `time` near the model's count."""
    best = start
    for _ in range(moves):
        step = min((k for k in (best - 1, best + 1) if 1 <= k <= MAX_CHUNKS), key=time)
        if time(step) >= time(best):
            break
        best = step
    return best


def alpha_optimal(plans: list[Plan], shard: float, alpha: float, written: int) -> int:
    """The K minimising Σ_phases (K + D - 1)·α + B(K), the smallest on a tie: α·K grows and
    B(K) falls as excess/K, so near √(Σ excess / α); without a start-up more chunks always
    help, and the count written is kept."""
    if alpha <= 0:
        return written

    def time(k: int) -> float:
        return sum((k + p.depth - 1) * alpha + p.bandwidth_time(k, shard) for p in plans)

    excess = sum(max(p.bandwidth_time(1, shard) - p.steady(shard), 0.0) for p in plans)
    guess = min(MAX_CHUNKS, max(1, round(math.sqrt(excess / (alpha * len(plans))))))
    deepest = max(p.depth for p in plans)
    near = {*range(1, deepest + 1), *range(max(1, guess - 3), min(MAX_CHUNKS, guess + 3) + 1)}
    return min(sorted(near), key=time)


def _units(packing: Packing, roots: list[int], units: int) -> dict[int, int]:
    """Each tree's whole units, by largest remainder within its root (ties: tree order)."""
    shares: dict[int, int] = {}
    for c in roots:
        mine = [k for k, t in enumerate(packing.trees) if t.root == c]
        total = sum(packing.trees[k].weight for k in mine)
        exact = {k: packing.trees[k].weight / total * units for k in mine}
        floor = {k: int(v) for k, v in exact.items()}
        left = units - sum(floor.values())
        for k in sorted(mine, key=lambda k: (floor[k] - exact[k], k))[:left]:
            floor[k] += 1
        shares.update(floor)
    return shares


def _steady(packing: Packing, weights: dict[int, float], roots: list[int],
            per_root: bool = True) -> float:
    """max_e Σ_T share_T · load_T[e] per shard byte, where a tree's share is its part of its
    root's shard (`per_root`: weights normalised within each root)."""
    if per_root:
        totals = {c: sum(w for k, w in weights.items() if packing.trees[k].root == c) for c in roots}
        weights = {k: w / totals[packing.trees[k].root] for k, w in weights.items()}
    load = sum((w * packing.loads[k] for k, w in weights.items()), np.zeros(len(packing.resources)))
    return float(np.max(load))


def fastest_chunks(plans: list[Plan], shard: float, chunks: int, timing: Timing, program,
                   size, compiled_at: Callable[[int], Callable[[dict], float]]) -> int:
    """The chunk count fastest at the file's own start-ups. Per round these are α and the
    route's latency, and with `protocol`s the protocol's α, a launch per call and a share of
    each link, none of which the plans' B(K) knows; so they are read off the compiled time,
    T(K) = c + (K + D - 1)·a + s·B(K). At the written K, T at twice the size less T gives
    s·B(K) (protocols do not switch between V and 2V at the sizes this is asked for), hence
    c + R·a; the same at K + 1 gives a. The K this model puts first is then checked against
    its neighbours by compiling them (a link's own protocol share moves B(K) a little), and
    moved to a local minimum of the compiled time. Without protocols or latencies a is α,
    and nothing is compiled again; with a size that is a number, nothing can be doubled: α
    alone is used. `compiled_at(K)`: the file written with K chunks, compiled and verified,
    as its time in seconds with some params at other values (symbol → value; the numeric
    path: no formula is built for a candidate)."""
    alpha = float(nominal_value(program.alpha, program.nominal))
    symbols = size.free_symbols
    if not symbols:
        return alpha_optimal(plans, shard, alpha, chunks)
    doubled = {x: 2 * program.nominal[x] for x in symbols}

    def fixed_part(seconds: Callable[[dict], float]) -> tuple[float, float]:  # (c + R·a, s·B(K))
        once, twice = seconds({}), seconds(doubled)
        return 2 * once - twice, twice - once

    def written(values: dict) -> float:
        return float(nominal_value(timing.cost.formula, {**program.nominal, **values}))

    start_ups, moved = fixed_part(written)
    if abs(start_ups - timing.cost.rounds * alpha) <= 1e-12 * max(start_ups, 1e-30):
        return alpha_optimal(plans, shard, alpha, chunks)
    times = {chunks: written, chunks + 1: compiled_at(chunks + 1)}
    per_round = fixed_part(times[chunks + 1])[0] - start_ups
    scale = moved / sum(p.bandwidth_time(chunks, shard) for p in plans)
    best = alpha_optimal(plans, shard, per_round / scale, chunks)

    def time(k: int) -> float:  # compiled: links with their own protocol shares move B(K)
        if k not in times:
            times[k] = compiled_at(k)
        return times[k]({})

    return descend(time, best, 8)  # the model's count, then down the compiled times


def check_tables(plans: list[Plan], routes: Sequence[str] = ()) -> None:
    """Refuse, before the text is made, tables the parser would refuse: each number and the
    comma after it are two tokens (3 numbers a tree written, 4 a tree edge, and with images
    one per rank and root); each `route` statement's tokens (words, numbers, `->` and
    punctuation, as the lexer splits them, and its newline) count too."""
    numbers = 0
    for plan in plans:
        images = plan.images
        written = [t for t in plan.trees if images is None or t.root == 0]
        numbers += 3 * len(written) + 4 * sum(len(t.edges) for t in written)
        numbers += 0 if images is None else images.size
    tokens = 2 * numbers + sum(1 + len(re.findall(r"->|\w+|\S", line)) for line in routes)
    if tokens > MAX_TOKENS:
        raise LimitError(f"the written tables would take about {tokens:,} tokens, past "
                         f"the parser's {MAX_TOKENS:,}: nothing written; synthesize over "
                         "fewer ranks")

"""The comment at the head of a file `synthesize` writes: how it was found, the optimum it is
measured against and why no schedule does better, and its compiled time."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..units import format_seconds

if TYPE_CHECKING:
    from ..analysis.synthesize.result import Synthesis


def _short(s: Synthesis) -> str:
    """Why trees over schedc's routes can stop below the optimum, when they do."""
    if s.reached >= 1 - 1e-6:
        return ""
    return (" (no single route per pair of ranks carries the cut's bandwidth: schedc's routing "
            "policy or the machine's pins" + (f"; {s.unsearched}" if s.unsearched else "") + ")")


def _pinned(s: Synthesis) -> str:
    if not s.pinned:
        return ""
    return (f"; {s.pinned} routes pinned, found by pricing any path by shortest paths, as the "
            "optimum's cut counts them")


def trees_header(s: Synthesis, source: str) -> list[str]:
    """The comment at the head of a file of packed trees."""
    cuts = "; ".join(s.optimum_cuts) if s.kind != "allreduce" else \
        "; ".join(f"{k}: {c}" for k, c in zip(("reduce-scatter", "all-gather"), s.optimum_cuts))
    return [
        f"Synthesized by `schedc synthesize {source} --collective {s.kind}`: {s.trees} "
        f"packed trees, pipelined.",
        *([f"Optimum at alpha = 0 (exact): {format_seconds(s.optimum)} = {s.optimum_formula}.",
           f"No schedule does better: its data must cross the cut {cuts}."]
          if s.kind != "allreduce" else
          [f"Reduce-scatter's optimum plus all-gather's at alpha = 0 (exact, each over all cuts): "
           f"{format_seconds(s.optimum)} = {s.optimum_formula}; not a lower bound on all-reduce",
           f"(schedc bound compares it with one). Their cuts: {cuts}."]),
        f"Found by column generation (HiGHS LP, {s.iterations} rounds of pricing by minimum "
        f"arborescences{_pinned(s)}), {s.reached:.6%} of the optimum's rate{_short(s)};",
        f"trees rounded to {s.units} units of a shard, depth {s.depth}.",
        f"Time (compiled, chunks = {s.chunks}): {s.formula}",
        f"  = {format_seconds(s.time)}; at alpha = 0 {format_seconds(s.bandwidth_time)}, "
        f"{s.ratio:.4f}x the optimum.",
        f"At this machine's alpha the fastest is chunks = {s.alpha_chunks} (--set chunks=K).",
    ]


def in_network_header(s: Synthesis, source: str, switches: int) -> list[str]:
    """The comment at the head of a file of an all-reduce through `switches` that reduce."""
    several = switches > 1
    return [
        f"Synthesized by `schedc synthesize {source} --collective allreduce`: all-reduce "
        f"in the network, through {switches} "
        f"{'switches that reduce' if several else 'switch that reduces'}, pipelined.",
        "Every rank reduces its data into its switch, which sums it"
        + ("; rank i of every group takes part i of its group's sum, the ranks i all-reduce it "
           "in a ring over the groups and give it back to their switch" if several else "")
        + "; the switch sends the sum to every rank.",
        f"Lower bound at alpha = 0 (exact): {format_seconds(s.optimum)} = {s.optimum_formula}.",
        "No all-reduce does better: " + (
            f"the sum must enter every side holding some but not all ranks, V across "
            f"{s.optimum_cuts[0]}." if " | " in s.optimum_cuts[0] else
            f"{s.optimum_cuts[0]} must carry it."),
        f"This schedule's many-chunk limit is {1 / s.reached:.6f}x it.",
        f"Time (compiled, chunks = {s.chunks}): {s.formula}",
        f"  = {format_seconds(s.time)}; at alpha = 0 {format_seconds(s.bandwidth_time)}, "
        f"{s.ratio:.4f}x the optimum.",
        f"At this machine's alpha the fastest is chunks = {s.alpha_chunks} (--set chunks=K).",
    ]

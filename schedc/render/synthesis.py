"""`schedc synthesize` results → text and JSON (schema `schedc.synthesize/1`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..units import format_seconds
from ..words import counted
from . import schema
from .text import dump_json, json_number

if TYPE_CHECKING:
    from ..analysis.synthesize.result import Synthesis


def synthesis_text(s: Synthesis, written: str | None) -> str:
    where = f"wrote {written}" if written else "printed above"
    return "\n".join([
        *(_in_network_head(s, where) if s.method == "in-network" else _trees_head(s, where)),
        f"  time         {format_seconds(s.time)}  (compiled and verified, chunks = {s.chunks}, "
        f"{counted(s.rounds, 'round')})",
        f"  formula      {s.formula}",
        f"  at α = 0     {format_seconds(s.bandwidth_time)} = {s.ratio:.4f}× the optimum",
        f"  chunks       {s.chunks} written; {s.alpha_chunks} minimises the time at the file's α "
        f"(--set chunks={s.alpha_chunks})",
    ]) + "\n"


def _trees_head(s: Synthesis, where: str) -> list[str]:
    kinds = "reduce-scatter + all-gather" if s.kind == "allreduce" else s.kind
    return [
        f"{s.name}: {s.kind}, {s.trees} packed trees, depth {s.depth}, {s.units} units a shard "
        f"({where})",
        f"  optimum      {format_seconds(s.optimum)} = {s.optimum_formula}  (exact, α = 0; "
        f"{kinds}" + ("; not a lower bound on all-reduce)" if s.kind == "allreduce" else ")"),
        *(f"  cut          {side}" + (f"  ({label})" if s.kind == "allreduce" else "")
          for side, label in zip(s.optimum_cuts, ("reduce-scatter", "all-gather"))),
        f"  packing      {s.reached:.6%} of the optimum's rate ({counted(s.iterations, 'round')} of pricing)"
        + ("" if s.reached >= 1 - 1e-6 else
           "\n               below it: no single route per pair of ranks carries the cut's "
           "bandwidth" + (f"\n               {s.unsearched}" if s.unsearched else "")),
        *([f"  routes       {s.pinned} pinned where schedc's own differ (a `topology` "
           "block in the file)"] if s.pinned else []),
    ]


def _in_network_head(s: Synthesis, where: str) -> list[str]:
    return [
        f"{s.name}: {s.kind} in the network (switches that reduce), {s.depth} stages a chunk "
        f"({where})",
        f"  optimum      {format_seconds(s.optimum)} = {s.optimum_formula}  (exact, α = 0; a "
        "lower bound on every all-reduce: bound says why)",
        f"  {'cut' if ' | ' in s.optimum_cuts[0] else 'bound by':<12} {s.optimum_cuts[0]}",
        f"  pipeline     {s.reached:.6%} of the optimum's rate with many chunks",
    ]


def synthesis_json(s: Synthesis, written: str | None) -> str:
    return dump_json({
        "schema": schema.SYNTHESIZE,
        "name": s.name,
        "collective": s.kind,
        "method": s.method,
        "written": written,
        "text": None if written else s.text,
        "optimum_s": json_number(s.optimum, integer=False),
        "optimum_formula": str(s.optimum_formula),
        "optimum_cuts": list(s.optimum_cuts),
        "packing_reached": s.reached,
        "pricing_rounds": s.iterations,
        "pinned_routes": s.pinned,
        "paths_unsearched": s.unsearched or None,
        "trees": s.trees,
        "depth": s.depth,
        "units": s.units,
        "chunks": s.chunks,
        "alpha_optimal_chunks": s.alpha_chunks,
        "rounds": s.rounds,
        "time_s": json_number(s.time, integer=False),
        "time_formula": str(s.formula),
        "bandwidth_time_s": json_number(s.bandwidth_time, integer=False),
        "ratio": s.ratio,
    })

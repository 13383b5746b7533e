"""`schedc bound` results as JSON (schema `schedc.bound/1`, see the README), and the helpers
the document of every `--format` (`render.bound`) shares with it."""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import TYPE_CHECKING

from ..elaborate.program import Program
from ..model.ir import LinearBytes, linear_expr, linear_value
from ..model.topology import Topology
from . import schema
from .text import dump_json, json_number, listing, params_json

if TYPE_CHECKING:  # (only annotations: `compare` need not import the bounds)
    from ..analysis.bound.bounds import Bounds, Crossing, CutBound, Efficiency


@lru_cache(maxsize=4096)
def formula_str(expr) -> str:
    """A formula as text; cached, since a thousand cuts share a handful of formulas."""
    return str(expr)


def bytes_at(form: LinearBytes, nominal: dict) -> Fraction:
    return linear_value(form, nominal) if form else Fraction(0)


def resource_names(topology: Topology, resources) -> list[str]:
    return [topology.resources[r].name for r in resources]


def _crossing_json(c: Crossing, nominal: dict, memo: dict) -> dict:
    """One way of a cut; `memo` holds those already made (thousands of cuts share a few)."""
    key = (c.capacity.value, c.capacity.bandwidth, c.bytes, c.value)
    if key not in memo:
        memo[key] = {
            "bandwidth": json_number(c.capacity.value),
            "bandwidth_formula": None if c.capacity.bandwidth is None else formula_str(c.capacity.bandwidth),
            "bytes": json_number(bytes_at(c.bytes, nominal)),
            "bytes_formula": formula_str(linear_expr(c.bytes)) if c.bytes else "0",
            "bound_s": json_number(c.value, integer=False),
        }
    return memo[key]


def _cut_json(c: CutBound, nominal: dict, memo: dict) -> dict:
    return {
        "name": c.cut.name,
        "family": c.cut.family,
        "ranks": [len(c.cut.side), len(c.cut.ranks) - len(c.cut.side)],
        "bound_s": _crossing_json(c.crossing, nominal, memo)["bound_s"],
        "forward": _crossing_json(c.forward, nominal, memo),
        "backward": _crossing_json(c.backward, nominal, memo),
    }


def _binding_json(c: CutBound, topology: Topology, nominal: dict) -> dict:
    crossing = c.crossing
    return {
        "name": c.cut.name,
        "family": c.cut.family,
        "direction": c.binding,
        "sides": [[topology.devices[r].name for r in c.cut.side],
                  [topology.devices[r].name for r in c.cut.rest]],
        "bandwidth": json_number(crossing.capacity.value),
        "bandwidth_formula": None if crossing.capacity.bandwidth is None else str(crossing.capacity.bandwidth),
        "resources": resource_names(topology, crossing.capacity.resources),
        "bytes": json_number(bytes_at(crossing.bytes, nominal)),
        "bytes_formula": str(linear_expr(crossing.bytes)) if crossing.bytes else "0",
        "bound_s": json_number(crossing.value, integer=False),
        "bound_formula": str(crossing.bound),
    }


def _schedule_json(e: Efficiency, b: Bounds, topology: Topology, nominal: dict) -> dict:
    t = e.timing
    busiest = topology.resources[e.busiest] if e.busiest is not None else None
    entry = {
        "name": t.name,
        "time_s": json_number(t.time, integer=False),
        "overlapped_s": json_number(e.overlapped_value, integer=False),
        "overlapped_formula": str(e.overlapped.time) if e.overlapped else "0",
        "ratio": json_number(e.ratio, integer=False),
        "limited_by": None if busiest is None else {
            "resource": busiest.name,
            "class": busiest.cls,
            "busy_s": json_number(e.overlapped_value, integer=False),
            "window_limited": busiest.window_limited(nominal),
        },
        "window_limited_rounds": sum(c.count for c in t.cost.classes if c.window_limited),
        "binding_cut": None,
    }
    if b.binding is not None:
        entry["binding_cut"] = {
            "bytes_forward": json_number(bytes_at(e.cut_bytes[0], nominal)),
            "bytes_backward": json_number(bytes_at(e.cut_bytes[1], nominal)),
            "resources_used": e.cut_used[0],
            "resources": e.cut_used[1],
        }
    return entry


def bound_json(program: Program, groups: list[Bounds]) -> str:
    """The first collective's bounds at the top level (most files declare one), and every
    collective's, in the same shape, under `collectives`."""
    parts = [_bounds_json(program, b) for b in groups]
    document = {"schema": schema.BOUND, "file": program.path, "params": params_json(program),
                **parts[0], "collectives": parts}
    return dump_json(document)


def _bounds_json(program: Program, b: Bounds) -> dict:
    topology, nominal = program.topology, program.nominal
    c = b.collective
    memo: dict = {}
    end_host = None
    if b.end_host is not None:
        h = b.end_host
        end_host = {
            "bound_s": json_number(h.value, integer=False),
            "bound_formula": str(h.bound),
            "bytes": json_number(bytes_at(h.total, nominal)),
            "bytes_formula": str(linear_expr(h.total)),
            "egress_formula": str(h.egress),
            "ingress_formula": str(h.ingress),
            "ends": "hosts" if h.hosts else "ranks",
        }
    return {
        "collective": None if c is None else {
            "kind": c.kind,
            "ranks": len(c.ranks),
            "bytes": json_number(bytes_at(c.size, nominal)),
            "bytes_formula": str(linear_expr(c.size)),
        },
        "bound_s": json_number(b.best_value, integer=False),
        "bound_formula": str(b.best),
        "binds": b.binds,
        "binding_cut": None if b.binding is None else _binding_json(b.binding, topology, nominal),
        "end_host": end_host,
        **({"end_host_not_applicable": in_network_reason(b)}
           if b.in_network and b.end_host is None else {}),
        "optimum": _optimum_json(b, topology, nominal),
        "cuts": [_cut_json(k, nominal, memo) for k in b.cuts],
        "schedules": [_schedule_json(e, b, topology, nominal) for e in b.schedules],
    }


def _optimum_json(b: Bounds, topology: Topology, nominal: dict) -> dict | None:
    o = b.optimum
    if o is None:
        return None
    return {
        "time_s": json_number(o.value, integer=False),
        "time_formula": str(o.time),
        "lower_bound": o.kind != "allreduce",  # all-reduce's: reduce-scatter + all-gather
        "cuts": [{
            "kind": part.kind,
            "sides": sides,
            "inside_ranks": len(part.ranks_inside),
            "bytes": json_number(bytes_at(part.bytes, nominal)),
            "bytes_formula": str(linear_expr(part.bytes)),
            "bandwidth": json_number(bytes_at(part.bytes, nominal) / part.value),
            "bandwidth_formula": str(part.bandwidth),
            "resources": resource_names(topology, part.resources),
            "time_s": json_number(part.value, integer=False),
            "time_formula": str(part.time),
            "max_flows": part.solved,
        } for part, sides in zip(o.parts, b.optimum_sides)],
    }


def in_network_reason(b: Bounds, hosts: bool = False) -> str:
    reduces = f"{listing(list(b.in_network))} reduce{'s' * (len(b.in_network) == 1)} in the network"
    if hosts:
        return f"{reduces}, inside the hosts"
    return reduces + " (NVLS/SHARP), so the ranks need not send and receive 2(p-1)·V themselves"

"""Dumps of each pipeline stage, for `schedc emit ast|ir|loads|formula|routes` and golden tests."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import islice

import numpy as np

from ..cost.lower import Loads
from ..cost.timing import Timing
from ..elaborate.program import Program
from ..errors import Span
from ..language.syntax import Module, dump
from ..model.ir import Batch, Schedule, linear_expr
from ..model.region_text import buffer_text, region_text
from ..model.topology import Topology
from ..words import counted


def emit_ast(module: Module) -> str:
    return dump(module.body) + "\n"


def line_count(stage: str, schedule: Schedule, loads: Loads | None = None) -> int:
    """How many lines `emit_ir` (or `emit_loads`, given the loads) prints, before printing."""
    if stage == "loads":  # a round lists the entries of its shape
        assert loads is not None, "counting the loads stage needs the loads"
        per_shape = np.bincount(loads.shape, minlength=len(loads.shape_cross))
        return 1 + loads.rounds + int(per_shape[loads.shape_of].sum())
    return 1 + len(schedule.rounds) + schedule.transfer_count


def emit_ir(program: Program, schedule: Schedule) -> str:
    names = [d.name for d in program.topology.devices]
    c = schedule.collective
    lines = [f"schedule {schedule.name}: {c.kind} over {len(c.ranks)} ranks, "
             f"{counted(len(schedule.rounds), 'round')}, "
             f"{counted(schedule.transfer_count, 'transfer')}"]
    layout = c.layout

    def show(batches: tuple[Batch, ...], pad: str) -> None:
        for b in batches:
            for k in range(len(b)):
                t = b.transfer(k)
                if layout is None:
                    region, into = region_text(t.region), region_text(t.into) if t.into else ""
                else:  # separate buffers: name the chunks (a send moves no region: `-`)
                    region = region_text(None) if t.region is None else \
                        buffer_text(t.region, layout)
                    into = buffer_text(t.into, layout) if t.into else ""
                into = f" into {into}" if into else ""
                origin = f"  ({b.origin})" if b.origin else ""
                lines.append(f"{pad}{t.op} {region}{into} {names[t.src]} -> {names[t.dst]}"
                             f"  {linear_expr(t.bytes)} B  @ {t.span}{origin}")

    for phase in schedule.prologue:
        lines.append("  before round 1, within ranks")
        show(phase, "    ")
    for index, rnd in enumerate(schedule.rounds, 1):
        lines.append(f"  round {index}")
        show(rnd.batches, "    ")
        for phase in rnd.local:
            lines.append(f"  after round {index}, within ranks")
            show(phase, "    ")
    return "\n".join(lines) + "\n"


def emit_loads(program: Program, schedule: Schedule, loads: Loads) -> str:
    resources = program.topology.resources
    lines = [f"schedule {schedule.name}: bytes per round per resource"]
    for index, shape in enumerate(loads.shape_of.tolist()):
        cross = " (cross-host)" if loads.shape_cross[shape] else ""
        lines.append(f"  round {index + 1}{cross}")
        for k in loads.entries(shape):
            r = resources[int(loads.resource[k])]
            lines.append(f"    {r.name:<36} {linear_expr(loads.form(loads.amount[k]))} B"
                         f"  / {r.effective_bandwidth}")
    return "\n".join(lines) + "\n"


def emit_formula(t: Timing) -> str:
    schedule = t.schedule
    lines = [f"{schedule.name}:", f"  T = {t.cost.formula}", f"  regime: {t.cost.regime_formula}"]
    lines += [f"    while {r}" for r in t.cost.conditions]
    return "\n".join(lines) + "\n"


ROUTE_PATHS_SHOWN = 8  # paths listed per pair; the rest are counted


def schedule_pairs(schedule: Schedule, devices: int) -> list[tuple[int, int, Span]]:
    """The distinct (source, destination) pairs of a schedule's transfers, in the order they
    first appear, each with the span of its first transfer."""
    batches = [b for rnd in schedule.rounds for b in rnd.batches]
    if not batches:
        return []
    keys = np.concatenate([b.src * devices + b.dst for b in batches])
    batch_of = np.repeat(np.arange(len(batches)), [len(b) for b in batches])
    pairs, first = np.unique(keys, return_index=True)
    order = np.argsort(first, kind="stable")
    return [(int(pairs[k] // devices), int(pairs[k] % devices), batches[batch_of[first[k]]].span)
            for k in order]


def emit_routes(topology: Topology, title: str | None,
                pairs: Sequence[tuple[int, int, Span | None]]) -> str:
    """Each pair's route: one line when it has one path; else every path (up to
    ROUTE_PATHS_SHOWN) with its share of the bytes. `title`: the schedule's name, or None
    for pairs given on the command line."""
    several = sum(1 for a, b, span in pairs if not topology.route(a, b, span).unique)
    policy = f"routing {topology.policy}"
    lines = [f"{title}: {len(pairs)} pair{'s' if len(pairs) != 1 else ''}, {several} over "
             f"several routes ({policy})" if title is not None else f"{policy}:"]
    for a, b, span in pairs:
        route = topology.route(a, b, span)
        pair = f"{topology.devices[a].name} -> {topology.devices[b].name}"
        pinned = "  (pinned)" if route.pinned else ""
        if route.unique:
            (names, _), = topology.route_paths(a, b, span)
            lines.append(f"  {pair}: {' -> '.join(names)}{pinned}")
            continue
        count = topology.path_count(a, b, span)
        lines.append(f"  {pair}: {count} routes{pinned}")
        for names, share in islice(topology.route_paths(a, b, span), ROUTE_PATHS_SHOWN):
            lines.append(f"    {str(share):>6}  {' -> '.join(names)}")
        if count > ROUTE_PATHS_SHOWN:
            lines.append(f"    … {count - ROUTE_PATHS_SHOWN:,} more")
    return "\n".join(lines) + "\n"

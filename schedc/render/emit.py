"""Dumps of each pipeline stage, for `schedc emit ast|ir|loads|formula` and golden tests."""

from __future__ import annotations

from ..cost.lower import Loads
from ..cost.timing import Timing
from ..elaborate.program import Program
from ..language.syntax import Module, dump
from ..model.ir import Batch, Schedule, buffer_text, linear_expr, region_text

STAGES = ("ast", "ir", "loads", "formula")


def emit_ast(module: Module) -> str:
    return dump(module.body) + "\n"


def emit_ir(program: Program, schedule: Schedule) -> str:
    names = [d.name for d in program.topology.devices]
    c = schedule.collective
    lines = [f"schedule {schedule.name}: {c.kind} over {len(c.ranks)} ranks, "
             f"{len(schedule.rounds)} rounds, {schedule.transfer_count} transfers"]
    layout = c.layout

    def show(batches: tuple[Batch, ...], pad: str) -> None:
        for b in batches:
            for k in range(len(b)):
                t = b.transfer(k)
                if layout is None:
                    region, into = region_text(t.region), region_text(t.into) if t.into else ""
                else:  # separate buffers: name the chunks
                    region, into = buffer_text(t.region, layout), \
                        buffer_text(t.into, layout) if t.into else ""
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

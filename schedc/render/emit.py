"""Dumps of each pipeline stage, for `schedc emit ast|ir|loads|formula` and golden tests."""

from __future__ import annotations

import numpy as np

from ..cost.lower import Loads
from ..cost.timing import Timing
from ..elaborate.program import Program
from ..language.syntax import Module, dump
from ..model.ir import Schedule, linear_expr, region_text

STAGES = ("ast", "ir", "loads", "formula")


def emit_ast(module: Module) -> str:
    return dump(module.body) + "\n"


def line_count(stage: str, schedule: Schedule, loads: Loads | None = None) -> int:
    """How many lines `emit_ir` (or `emit_loads`, given the loads) prints, before printing."""
    if stage == "loads":  # a round lists the entries of its shape
        per_shape = np.bincount(loads.shape, minlength=len(loads.shape_cross))
        return 1 + loads.rounds + int(per_shape[loads.shape_of].sum())
    return 1 + len(schedule.rounds) + schedule.transfer_count


def emit_ir(program: Program, schedule: Schedule) -> str:
    names = [d.name for d in program.topology.devices]
    c = schedule.collective
    lines = [f"schedule {schedule.name}: {c.kind} over {len(c.ranks)} ranks, "
             f"{len(schedule.rounds)} rounds, {schedule.transfer_count} transfers"]
    for index, rnd in enumerate(schedule.rounds, 1):
        lines.append(f"  round {index}")
        for t in rnd.transfers():
            into = f" into {region_text(t.into)}" if t.into else ""
            lines.append(f"    {t.op} {region_text(t.region)}{into} {names[t.src]} -> {names[t.dst]}"
                         f"  {linear_expr(t.bytes)} B  @ {t.span}")
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

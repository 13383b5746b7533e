"""The pipeline in one place: file → program → IR → loads → cost, per result schedule."""

from __future__ import annotations

from .cost import cost, nominal_value
from .elaborate import Program
from .lower import Loads, lower
from .report import Timing


def time_schedule(program: Program, name: str) -> Timing:
    return time_schedule_with_loads(program, name)[1]


def time_schedule_with_loads(program: Program, name: str) -> tuple[Loads, Timing]:
    schedule = program.schedule(name)
    loads = lower(schedule, program.topology)
    result = cost(loads, program.topology, program.alpha, program.nominal)
    timing = Timing(schedule, result, nominal_value(result.formula, program.nominal), program.nominal)
    return loads, timing


def selected(program: Program, names: tuple[str, ...] = ()) -> list[str]:
    """The schedules a command works on: those named, else every result schedule of the file."""
    if not names:
        return [r.name for r in program.results]
    return [program.result(n).name for n in names]

"""The pipeline in one place: file → program → IR → loads → cost, per result schedule.

Timings are cached on the program, so every command and check that asks for a schedule's
time compiles it once.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..elaborate.program import Program
from ..errors import UsageError
from ..model.ir import LinearBytes, Schedule, linear_value
from .formula import Cost, cost, nominal_value
from .lower import Loads, lower


@dataclass(frozen=True)
class Timing:
    """Everything `time` and `compare` report about one schedule."""

    schedule: Schedule
    cost: Cost
    time: Fraction  # seconds at the nominal point
    nominal: dict

    @property
    def name(self) -> str:
        return self.schedule.name

    def bytes_value(self, form: LinearBytes) -> Fraction:
        return linear_value(form, self.nominal)


def time_schedule(program: Program, name: str) -> Timing:
    return time_schedule_with_loads(program, name)[1]


def time_schedule_with_loads(program: Program, name: str) -> tuple[Loads, Timing]:
    found = program.timings.get(name)
    if found is None:
        schedule = program.schedule(name)
        loads = lower(schedule, program.topology)
        result = cost(loads, program.topology, program.alpha, program.nominal)
        timing = Timing(schedule, result, nominal_value(result.formula, program.nominal),
                        program.nominal)
        found = program.timings[name] = (loads, timing)
    return found


def selected(program: Program, names: tuple[str, ...] = (), required: bool = True) -> list[str]:
    """The schedules a command works on: those named, else every result schedule of the file
    (which must have one, unless `required` is false)."""
    if names:
        return [program.result(n).name for n in names]
    if required and not program.results:
        raise UsageError(f"{program.path} has no result schedules (a machine or a library file?); "
                         "give a file that declares a collective and schedules")
    return [r.name for r in program.results]

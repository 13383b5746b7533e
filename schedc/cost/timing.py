"""What `time` and `compare` report about one schedule (computed by `schedc.session`)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..model.ir import LinearBytes, Schedule, linear_value
from .formula import Cost


@dataclass(frozen=True)
class Timing:
    schedule: Schedule
    cost: Cost
    time: Fraction  # seconds at the nominal point
    nominal: dict

    @property
    def name(self) -> str:
        return self.schedule.name

    def bytes_value(self, form: LinearBytes) -> Fraction:
        return linear_value(form, self.nominal)

"""One compilation of one file: the program, and every schedule's IR, loads and time, each
computed once.

Every command opens one `Session` and asks it; analyses that derive more per schedule (the
verdict of `analysis.verify`, say) keep it here with `memo`, so no stage caches on its own.

    >>> session = Session.open("schedules/seed/nvlink_2x8.sched")    # doctest: +SKIP
    >>> float(session.timing("ring").time)                            # doctest: +SKIP
    0.0075746...
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from .cost.formula import cost, nominal_value
from .cost.lower import Loads, lower
from .cost.protocols import with_protocols
from .cost.timing import Timing
from .elaborate.program import DEFAULT_LIMITS, Program, load_program, parse_override
from .elaborate.schedule import Limits
from .errors import Span, UsageError
from .model.ir import Schedule

T = TypeVar("T")


@dataclass(eq=False)
class Session:
    program: Program
    _memo: dict[tuple[str, str], object] = field(default_factory=dict, repr=False)

    @classmethod
    def open(cls, path: str | Path, sets: Iterable[str] = (), limits: Limits = DEFAULT_LIMITS,
             machine: str | Path | None = None, ranks: str | None = None) -> Session:
        """Load a `.sched` file with `--set NAME=VALUE` overrides (text, with units), or an
        MSCCL XML algorithm (`.xml`) on the machine of a `.sched` file, its ranks mapped to
        the XML's gpu ids in order or by the expression `ranks`."""
        overrides = tuple(parse_override(s) for s in sets)
        if Path(path).suffix.lower() == ".xml":
            from .msccl.program import load_algorithm
            return cls(load_algorithm(path, machine, ranks, overrides, limits))
        if machine is not None or ranks is not None:
            raise UsageError(f"--machine and --ranks are for MSCCL XML algorithms; {path} "
                             "brings its own machine")
        return cls(load_program(path, overrides, limits))

    def memo(self, kind: str, name: str, compute: Callable[[], T]) -> T:
        """`compute()` the first time (kind, name) is asked for, the same object after."""
        key = (kind, name)
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]  # type: ignore[return-value]

    def schedule(self, name: str, span: Span | None = None) -> Schedule:
        """The IR of a result schedule."""
        self.program.result(name, span)  # a clear error for an unknown name
        return self.memo("ir", name, lambda: self.program.schedule(name))

    def loads(self, name: str) -> Loads:
        self.program.require_machine(name)
        return self.memo("loads", name, lambda: lower(self.schedule(name), self.program.topology))

    def timing(self, name: str, span: Span | None = None) -> Timing:
        def compute() -> Timing:
            schedule, program = self.schedule(name, span), self.program
            result = cost(self.loads(name), program.topology, program.alpha, program.nominal)
            result = with_protocols(result, self.loads(name), program.topology, program.alpha,
                                    program.nominal, program.protocols)
            return Timing(schedule, result, nominal_value(result.formula, program.nominal),
                          program.nominal)
        return self.memo("timing", name, compute)

    def selected(self, names: Iterable[str] = (), required: bool = True) -> list[str]:
        """The schedules a command works on: those named, else every result schedule of the
        file (which must have one, unless `required` is false)."""
        names = tuple(names)
        program = self.program
        if names:
            return [program.result(n).name for n in names]
        if required and not program.results:
            raise UsageError(f"{program.path} has no result schedules (a machine or a library "
                             "file?); give a file that declares a collective and schedules")
        return [r.name for r in program.results]

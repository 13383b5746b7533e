"""One compilation of one file: the program, and every schedule's IR, loads and time, each
computed once.

Every command opens one `Session` and asks it; analyses that derive more per schedule (the
verdict of `analysis.verify`, say) keep it here with `memo`, so no stage caches on its own.

    >>> session = Session.open("schedules/seed/nvlink_2x8.sched")    # doctest: +SKIP
    >>> float(session.timing("ring").time)                            # doctest: +SKIP
    0.0075746...
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from .cost.lower import Loads, lower
from .cost.numeric import NumericTiming, numeric_timing
from .elaborate.loader import load_program
from .elaborate.program import (
    DEFAULT_LIMITS,
    Override,
    Param,
    Program,
    declared_at,
    parse_override,
)
from .elaborate.schedule import Limits, Watch
from .errors import OUT_OF_MEMORY, LimitError, SchedcError, Span, UsageError
from .model.changes import NO_CHANGES, Changes, apply, parse
from .model.ir import Schedule, linear_value
from .model.scalars import exact_value
from .model.topology import Topology

if TYPE_CHECKING:
    import sympy

    from .cost.timing import Timing

T = TypeVar("T")


@dataclass(eq=False)
class Session:
    program: Program
    _memo: dict[tuple[str, str], object] = field(default_factory=dict, repr=False)
    # How the session was opened, so an error that a structural --set causes can say so.
    origin: tuple[Path, tuple[Override, ...], Limits] | None = field(default=None, repr=False)
    # The sessions of this file at other values of its structural params (`at`), shared by
    # all of them: each distinct point is compiled once per run.
    _instances: dict[tuple, Session] = field(default_factory=dict, repr=False)
    _parsed: dict = field(default_factory=dict, repr=False)  # syntax trees, shared likewise
    # `--fail` and `--derate`: applied to the machine of every instance (schedc.model.changes)
    changes: Changes = field(default_factory=Changes, repr=False)

    @classmethod
    def open(cls, path: str | Path, sets: Iterable[str] = (), limits: Limits = DEFAULT_LIMITS,
             machine: str | Path | None = None, ranks: str | None = None,
             changes: Changes = NO_CHANGES, symbolic: bool = True) -> Session:
        """Load a `.sched` file with `--set NAME=VALUE` overrides (text, with units), or an
        MSCCL XML algorithm (`.xml`) on the machine of a `.sched` file, its ranks mapped to
        the XML's gpu ids in order or by the expression `ranks`; `changes` fail or derate
        parts of the machine first. `symbolic=False` (`--no-formula`): a `.sched` file's
        params are their values, so only `numeric_timing` can be asked for, and SymPy is not
        imported (an MSCCL algorithm is compiled with formulas all the same)."""
        overrides = tuple(parse_override(s) for s in sets)
        if Path(path).suffix.lower() == ".xml":
            from .msccl.program import load_algorithm
            return cls(_changed(load_algorithm(path, machine, ranks, overrides, limits), changes),
                       changes=changes)
        if machine is not None or ranks is not None:
            raise UsageError(f"--machine and --ranks are for MSCCL XML algorithms; {path} "
                             "brings its own machine")
        return cls.load(path, overrides, limits, changes=changes, symbolic=symbolic)

    @classmethod
    def load(cls, path: str | Path, overrides: tuple[Override, ...],
             limits: Limits = DEFAULT_LIMITS, parsed: dict | None = None,
             changes: Changes = NO_CHANGES, symbolic: bool = True) -> Session:
        parsed = {} if parsed is None else parsed
        try:
            program = load_program(path, overrides, limits, parsed, symbolic)
        except SchedcError as error:
            raise _blame(error, Path(path), overrides, limits, None, parsed, symbolic) from None
        return cls(_changed(program, changes), origin=(Path(path), overrides, limits),
                   _parsed=parsed, changes=changes)

    def on(self, topology: Topology, params: Mapping[str, Param] | None = None) -> Session:
        """This file's schedules on another machine with the same devices (a what-if):
        the schedules' IR is shared, their loads and times computed anew; `params` adds
        params (a derating factor `d`)."""
        program = replace(self.program, topology=topology,
                          params={**self.program.params, **(params or {})})
        return Session(program, {k: v for k, v in self._memo.items() if k[0] == "ir"},
                       changes=self.changes)

    def with_step_rule(self, rule: str, chunk: sympy.Expr | None = None) -> Session:
        """This file with `step cost RULE` instead of its own (`chunk`: the bytes of a
        `pipelined` rule's chunk, a SymPy expression), the schedules' IR and loads shared,
        their times computed anew: calibrate compares the rules."""
        if rule == self.program.step_rule and chunk == self.program.step_chunk:
            return self
        if rule == "pipelined" and chunk is None:
            raise UsageError("`step cost pipelined` needs its chunk (the bytes of one chunk)")
        return Session(replace(self.program, step_rule=rule,
                               step_chunk=chunk if rule == "pipelined" else None),
                       {k: v for k, v in self._memo.items() if k[0] in ("ir", "loads")},
                       changes=self.changes)

    def structural(self) -> dict[str, int]:
        """The structural params (unitless integers: `param hosts = 2`) and their values."""
        return {p.name: p.nominal.numerator for p in self.program.params.values() if p.structural}

    def at(self, values: Mapping[str, int]) -> Session:
        """This file compiled with the structural params `values` (others as in this session)."""
        point = {**self.structural(), **values}
        key = tuple(sorted(point.items()))
        if not self._instances:
            self._instances[tuple(sorted(self.structural().items()))] = self
        if key not in self._instances:
            if self.origin is None:
                raise UsageError("this session was not opened from a file; use Session.open")
            path, overrides, limits = self.origin
            kept = tuple(o for o in overrides if o.name not in values)
            given = tuple(parse_override(f"{name}={value}") for name, value in values.items())
            opened = Session.load(path, kept + given, limits, self._parsed, self.changes,
                                  self.program.symbolic)
            opened._instances = self._instances
            self._instances[key] = opened
        return self._instances[key]

    @property
    def modules(self) -> tuple:
        """The syntax trees of every file this session has read (for `elaborate.structure`)."""
        return tuple(self._parsed.values())

    @property
    def compiles(self) -> int:
        """How many distinct points of the structural params this run has compiled."""
        return max(1, len(self._instances))

    def memo(self, kind: str, name: str, compute: Callable[[], T]) -> T:
        """`compute()` the first time (kind, name) is asked for, the same object after."""
        key = (kind, name)
        if key not in self._memo:
            try:
                self._memo[key] = compute()
            except SchedcError as error:
                if self.origin is None:
                    raise
                raise _blame(error, *self.origin, (kind, name), self._parsed,
                             self.program.symbolic) from None
            except MemoryError:  # at the schedule that took it (its statement, when it has one)
                found = [r.definition.span for r in self.program.results if r.name == name]
                raise LimitError(f"{OUT_OF_MEMORY} (computing the {kind} of schedule '{name}')",
                                 found[0] if found else None) from None
        return self._memo[key]  # type: ignore[return-value]

    def schedule(self, name: str, span: Span | None = None, watch: Watch | None = None) -> Schedule:
        """The IR of a result schedule; `watch` sees its round loops as they are made, if it
        is made now."""
        self.program.result(name, span)  # a clear error for an unknown name
        return self.memo("ir", name, lambda: self.program.schedule(name, watch=watch))

    def loads(self, name: str) -> Loads:
        self.program.require_machine(name)
        return self.memo("loads", name, lambda: lower(self.schedule(name), self.program.topology))

    def timing(self, name: str, span: Span | None = None) -> Timing:
        """The schedule's formula, regime and time (`cost.formula`, with SymPy)."""
        if not self.program.symbolic:
            raise UsageError("this file was compiled without formulas (--no-formula): it has "
                             "numeric timings only")
        from .cost.formula import nominal_value
        from .cost.pipeline import pipelined
        from .cost.protocols import with_protocols
        from .cost.timing import Timing
        from .model.ir import linear_expr

        def compute() -> Timing:
            schedule, program = self.schedule(name, span), self.program
            result = self._cost(name, span)
            result = with_protocols(result, self.loads(name), program.topology, program.alpha,
                                    program.nominal, program.protocols)
            if program.step_chunk is not None:  # `step cost pipelined chunk Q`
                size = linear_expr(program.result(name).collective.size)
                result = pipelined(result, self.loads(name), program.topology, program.alpha,
                                   program.nominal, program.protocols, program.step_chunk, size,
                                   _classes_apart(program.protocols))
            return Timing(schedule, result, nominal_value(result.formula, program.nominal),
                          program.nominal)
        return self.memo("timing", name, compute)

    def _cost(self, name: str, span: Span | None = None):
        """The formula before protocols and a pipeline (`cost.formula.cost`), kept."""
        from .cost.formula import cost

        def compute():
            self.schedule(name, span)
            program = self.program
            return cost(self.loads(name), program.topology, program.alpha, program.nominal,
                        program.step_rule == "max", _classes_apart(program.protocols))
        return self.memo("cost", name, compute)

    def round_classes(self, name: str, span: Span | None = None) -> tuple:
        """The schedule's round classes, each with its terms (`cost.formula`, SymPy): those of
        `timing`, without building its formula under protocols (the minimum over them costs
        ten times the rest; `predict`'s bound column reads the classes only)."""
        if self.program.step_chunk is not None:  # a pipeline's classes: the timing's own
            return self.timing(name, span).cost.classes
        return self._cost(name, span).classes

    def numeric_timing(self, name: str, span: Span | None = None) -> NumericTiming:
        """The schedule's time and traffic at the nominal point, without a formula
        (`cost.numeric`): the same time as `timing`'s, whether compiled with formulas or not."""
        return self.memo("numbers", name, lambda: self.numeric_timing_at(name, {}, span))

    def numeric_timing_at(self, name: str, values: Mapping, span: Span | None = None
                          ) -> NumericTiming:
        """`numeric_timing` with some params at other values (symbol → SymPy number; the
        file compiled with formulas, so that they are symbols), e.g. the collective's size
        at each size of an nccl-tests log (`predict`): the value of `timing`'s formula there,
        with no formula built. Not kept: the caller keeps what it needs."""
        program = self.program
        nominal = {**program.nominal, **values} if values else program.nominal
        chunks = None
        if program.step_chunk is not None:  # `step cost pipelined chunk Q`: max(1, size/Q)
            size = linear_value(program.result(name).collective.size, nominal)
            chunks = max(Fraction(1), size / exact_value(program.step_chunk, nominal))
        return numeric_timing(self.schedule(name, span), self.loads(name), program.topology,
                              program.alpha, nominal, program.protocols,
                              program.step_rule == "max", chunks)

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


def _changed(program: Program, changes: Changes) -> Program:
    """The program on its machine with `changes` (failures, deratings) applied."""
    if not changes:
        return program
    failed, derated = parse(program.topology, changes)
    return replace(program, topology=apply(program.topology, failed, derated))


class OutOfRange(UsageError):
    """A structural --set gives a value the file cannot be compiled at."""


_RETRIED: dict[str, Callable[[Session, str], object]] = {
    "ir": Session.schedule, "loads": Session.loads, "timing": Session.timing,
    "numbers": Session.numeric_timing}


def _blame(error: SchedcError, path: Path, overrides: tuple[Override, ...], limits: Limits,
           asked: tuple[str, str] | None, parsed: dict, symbolic: bool = True) -> SchedcError:
    """An error that only a structural `--set` causes (`--set hosts=0`), shown at that --set
    with a note at the declaration; any other error as it is. Tried again without those
    --sets: only errors, so the extra compile costs nothing on success."""
    if isinstance(error, (LimitError, UsageError)) or not overrides:  # (OutOfRange too)
        return error
    if asked is not None and asked[0] not in _RETRIED:
        return error  # another analysis's memo: not retried, so not blamed
    try:
        plain = load_program(path, (), limits, parsed, symbolic)
        structural = [o for o in overrides
                      if o.name in plain.params and plain.params[o.name].structural]
        if not structural:
            return error
        rest = tuple(o for o in overrides if o not in structural)
        retry = Session(load_program(path, rest, limits, parsed, symbolic))
        if asked is not None:
            _RETRIED[asked[0]](retry, asked[1])
    except SchedcError:
        return error  # it fails without them too: not theirs to blame
    first = structural[0]
    value = ", ".join(f"{o.name} = {o.source.text.strip()}" for o in structural)
    declared = plain.params[first.name]
    notes = (declared_at(declared.name, declared.span),
             *([f"where it fails: {error.span}: "
                f"{error.span.source.line(error.span.line).strip()}"] if error.span else []),
             *error.notes)
    return OutOfRange(f"{value} is out of range for this file: {error.message}",
                      first.value.span, notes)


def _classes_apart(protocols) -> frozenset[str]:
    """The link classes some protocol gives a share or a cap of its own."""
    return frozenset(c for p in protocols for c, _ in (*p.class_eff, *p.class_cap))

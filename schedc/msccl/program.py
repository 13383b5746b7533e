"""An MSCCL XML algorithm → a `Program`: its schedule as IR, on a machine from a `.sched` file.

The machine file gives the topology, the params and the per-round start-up; the XML's gpu
ids map to its `ranks` in order (`--ranks EXPR` names other devices). The collective's size
is the param `V` (bytes; the machine's own `V` if it declares one, else a new param whose
nominal value is the XML's maxBytes, `--set V=...` to change it). Without a machine the
program has bare devices `gpu[0]`, ... : enough to verify the data flow, which does not
depend on a machine, and for `emit ir`; times need `--machine`.

An algorithm that may run both in place and out of place gives two schedules, NAME (out of
place) and NAME_inplace: the executor may run either, and each must be right.
"""

from __future__ import annotations

import gc
import re
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np
import sympy

from ..elaborate.evaluate import evaluate
from ..elaborate.lanes import Env
from ..elaborate.loader import load_program
from ..elaborate.program import (
    DEFAULT_LIMITS,
    Override,
    Param,
    Program,
    ProgramNames,
    Result,
)
from ..elaborate.schedule import Limits
from ..elaborate.namespace import Namespace
from ..errors import ElaborationError, SourceFile, Span, UsageError
from ..limits import MAX_SIZE
from ..language.parser import parse_expression
from ..model.ir import Batch, Collective, Round, Rounds, Schedule
from ..model.topology import Device, Topology
from ..model.values import Devices, Quantity, from_rational, kind_of
from ..units import BYTES, dim_name
from .document import Algo, read_algo
from .layout import Layout, buffer_layout, lay_out
from .rounds import Operation, schedule_operations
from .stops import stop_at_ra

SIZE = "V"


@dataclass(frozen=True, eq=False)
class AlgorithmProgram(Program):
    """A program whose result schedules come from an XML file, already as IR."""

    algo: Algo | None = None
    imported: dict[str, Schedule] | None = None
    machine: str | None = None

    @property
    def warnings(self) -> tuple:
        """What the reader took as a default, and which executor would refuse the file."""
        return () if self.algo is None else self.algo.warnings

    def schedule(self, name: str, span: Span | None = None, watch: object = None) -> Schedule:
        self.result(name, span)  # (read whole already: nothing left to watch)
        assert self.imported is not None, "load_algorithm gives every algorithm program its IR"
        return self.imported[name]

    @property
    def has_machine(self) -> bool:
        return self.machine is not None

    def require_machine(self, name: str) -> None:
        if self.machine is None:
            raise UsageError(f"{self.path}: the time of '{name}' depends on the machine it runs "
                             "on; name one with --machine M.sched (e.g. --machine "
                             "schedules/machines/ndv4.sched)")


@contextmanager
def _no_collection():
    """No cyclic garbage collection while a file is read, as `schedc.cli.main` does for a
    whole command: reading makes ~40 objects a step and none of them garbage, but each full
    collection walks them all (half the time of an 8,000-step file in-process)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def load_algorithm(path: str | Path, machine: str | Path | None = None, ranks: str | None = None,
                   overrides: tuple[Override, ...] = (), limits: Limits = DEFAULT_LIMITS
                   ) -> AlgorithmProgram:
    with _no_collection():
        return _load(path, machine, ranks, overrides, limits)


def _load(path: str | Path, machine: str | Path | None, ranks: str | None,
          overrides: tuple[Override, ...], limits: Limits) -> AlgorithmProgram:
    algo = stop_at_ra(read_algo(path))  # microsoft/msccl's kernel stops a thread block there
    size_override = next((o for o in overrides if o.name == SIZE), None)
    rest = tuple(o for o in overrides if o.name != SIZE)
    if machine is not None:
        base = load_program(machine, rest, limits)
        if SIZE in base.params and size_override is not None:
            base = load_program(machine, overrides, limits)
    else:
        if rest:
            raise UsageError(f"--set {rest[0].name}: no param named '{rest[0].name}' (without "
                             f"--machine the only param is {SIZE})")
        base = _bare_machine(str(path), algo.ngpus, limits)
    params = dict(base.params)
    if SIZE not in params:
        params[SIZE] = _size_param(algo, size_override, base)
        base.names.values[SIZE] = Quantity(params[SIZE].symbol, BYTES)
    size = params[SIZE].symbol
    devices = _ranks(algo, base, ranks)
    results, imported = [], {}
    name = _identifier(algo.name)
    layouts = [(name, False)] * algo.outofplace + \
        [(name + "_inplace" if algo.outofplace else name, True)] * algo.inplace
    for schedule_name, inplace in layouts:
        schedule = build_schedule(algo, schedule_name, inplace, size, devices)
        results.append(Result(schedule_name, None, schedule.collective))  # type: ignore[arg-type]
        imported[schedule_name] = schedule
    return AlgorithmProgram(path=str(path), params=params, topology=base.topology,
                            alpha=base.alpha, results=results, functions={}, names=base.names,
                            checks=[], limits=limits, algo=algo, imported=imported,
                            machine=None if machine is None else str(machine))


def build_schedule(algo: Algo, name: str, inplace: bool, size: sympy.Symbol,
                   devices: tuple[int, ...]) -> Schedule:
    """The algorithm's rounds of transfers (see `rounds`), on the given devices."""
    layout = lay_out(algo, inplace)
    operations = schedule_operations(algo, layout)
    collective = Collective(algo.collective, ((size, Fraction(1)),), devices, None, algo.span,
                            buffer_layout(layout))
    rounds: list[tuple[list[Batch], list[list[Batch]]]] = []
    prologue: list[list[Batch]] = []
    last: tuple[int, int] | None = None
    scale = ((size, Fraction(layout.chunks, algo.nchunksperloop)),)  # bytes per buffer chunk
    for operation in sorted(operations, key=lambda o: (o.time, _order(o))):
        batch = _batch(operation, layout, scale, devices)
        level, phase = operation.time
        if phase == 0:
            if not rounds or last is None or last[0] != level:
                rounds.append(([], []))
            rounds[-1][0].append(batch)
        else:
            phases = rounds[-1][1] if rounds else prologue
            if last != operation.time:
                phases.append([])
            phases[-1].append(batch)
        last = operation.time
    return Schedule(name, collective,
                    Rounds([tuple(Round(tuple(b), tuple(tuple(p) for p in local))
                                  for b, local in rounds)]),
                    algo.span, tuple(tuple(p) for p in prologue))


def _order(o: Operation) -> tuple:
    # Transfers of a round in (source, destination, size) order, so that rounds moving the
    # same bytes between the same pairs have the same shape (and are lowered once).
    return (o.src_gpu, o.dst_gpu, o.cnt, o.src, o.dst, o.origin)


def _batch(o: Operation, layout: Layout, scale: tuple, devices: tuple[int, ...]) -> Batch:
    one = lambda v: np.array([v], dtype=np.int64)  # noqa: E731
    return Batch(o.op, one(devices[o.src_gpu]), one(devices[o.dst_gpu]), one(o.src), one(o.cnt),
                 layout.chunks, None if o.src == o.dst else one(o.dst),
                 scale, o.span, o.origin)


def _identifier(name: str) -> str:
    """The algorithm's name as a schedule name (`time(NAME)` must be able to say it)."""
    text = re.sub(r"\W", "_", name.strip()) or "algorithm"
    return text if text[0].isalpha() or text[0] == "_" else "algo_" + text


def _size_param(algo: Algo, override: Override | None, base: Program) -> Param:
    """V: `--set V=...`, else the file's maxBytes. maxBytes is the top of the sizes the
    executor picks the algorithm for, not a size it was made for (msccl-executor-nccl
    msccl_lifecycle.cc:335: `nBytes >= m.minBytes && (m.maxBytes == 0 || nBytes <=
    m.maxBytes)`): a file without a limit (0, or 2^63 - 1, which every size is below) says
    no size, and is refused without one rather than timed at 9,223 PB."""
    nominal = Fraction(algo.max_bytes)
    if override is None and algo.max_bytes in (0, MAX_SIZE):
        raise UsageError(f"{SIZE}: the file sets no size limit (maxBytes=\"{algo.max_bytes}\": "
                         "the executor picks it for any size), so it gives no message size; "
                         f"pass --set {SIZE}=SIZE (e.g. --set {SIZE}=192MiB)", algo.span)
    if override is not None:
        value = evaluate(override.value, Env(base.names))
        if not isinstance(value, Quantity) or value.dim != BYTES or value.is_symbolic:
            got = dim_name(value.dim) if isinstance(value, Quantity) else kind_of(value)
            raise UsageError(f"{SIZE} is a size in bytes; the value given is {got}",
                             override.value.span)
        nominal = from_rational(value.expr)
        if nominal <= 0:
            raise UsageError(f"{SIZE} must be positive", override.value.span)
    symbol = sympy.Symbol(SIZE, positive=True)
    return Param(SIZE, symbol, BYTES, nominal, algo.span)


def _bare_machine(path: str, ngpus: int, limits: Limits) -> Program:
    span = Span(SourceFile(path, ""), 1, 1, 1, 1)
    devices = [Device(i, f"gpu[{i}]", "gpu", None, False, span) for i in range(ngpus)]
    return Program(path=path, params={}, topology=Topology(devices, [], [], []),
                   alpha=sympy.Integer(0), results=[], functions={},
                   names=ProgramNames(Namespace()), checks=[], limits=limits)


def _ranks(algo: Algo, base: Program, expression: str | None) -> tuple[int, ...]:
    topology = base.topology
    if expression is not None:
        source = SourceFile("--ranks", expression)
        value = evaluate(parse_expression(source), Env(base.names))
        where = Span(source, 1, 1, 1, len(expression) + 1)
    else:
        value = base.names.lookup("ranks")
        where = None
        if value is None:  # no `ranks`: the machine's GPUs in declaration order
            value = Devices(np.array([d.id for d in topology.devices if d.kind == "gpu"],
                                     dtype=np.int64))
    if not isinstance(value, Devices) or value.rank != 1:
        raise (UsageError if expression else ElaborationError)(
            f"the ranks must be a list of devices, not {kind_of(value)}", where)
    ids = tuple(int(i) for i in value.ids)
    if len(ids) != algo.ngpus:
        hint = "" if expression else " (the machine's `ranks`; --ranks EXPR picks others)"
        raise UsageError(f"{algo.span.source.path}: the algorithm is for {algo.ngpus} gpus; "
                         f"the ranks given are {len(ids)}{hint}", where)
    if len(set(ids)) != len(ids):
        raise UsageError("a device appears twice in the ranks", where)
    return ids


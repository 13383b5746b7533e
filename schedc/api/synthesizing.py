"""`schedc.synthesize`: the schedule that reaches a machine's exact optimum, as a `.sched` file.

The steps, each owned by its module: the collective is read from the file (or `over`,
`size`, `root`); `analysis.bound.optimum` gives the exact optimum and its cut;
`analysis.synthesize.packing` packs trees that reach it; `analysis.synthesize.plan` rounds
them into units and picks the chunks; `export.sched_schedule` writes the file; and the file is
then compiled and verified like any other before it is written, so every figure reported is
the compiler's, from the text written.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

from ..analysis.synthesize.result import Synthesis
from ..choices import PACKED
from ..errors import SchedcError, UsageError
from ..language.quote import string
from ..limits import MAX_CHUNKS, MAX_UNITS
from ..render.synthesis_header import trees_header
from .compiling import LoadOptions, numeric_times, verified_timings, work_limits
from .options import Options, choice, count, option, text

if TYPE_CHECKING:  # (annotations only: `import schedc` stays cheap)
    from ..cost.timing import Timing

# Pricing solves one minimum arborescence over all ranks per root orbit and round, and the LP
# has a row per resource orbit: one GB200 rack (72 ranks) priced root by root took 29 s of CPU.
MAX_RANKS = 160  # two GB200 NVL72 racks (144): 6.6 s of CPU, their symmetry priced once


@dataclass(frozen=True)
class SynthesizeOptions(Options):
    collective: str = choice(None, "--collective", PACKED)
    chunks: int | None = count(None, "--chunks", 1, MAX_CHUNKS)  # None: auto
    within: float = option(0.01, "--within", "share")  # a fraction: 1% = 0.01
    units: int | None = count(None, "--units", 1, MAX_UNITS)
    max_ranks: int = count(MAX_RANKS, "--max-ranks", 2)
    name: str | None = text(None, "--name")
    over: str | None = text(None, "--over")
    size: str | None = text(None, "--size")
    root: str | None = text(None, "--root")

    def __post_init__(self) -> None:
        super().__post_init__()
        for flag, given in (("--over", self.over), ("--size", self.size), ("--root", self.root)):
            if given is not None and (";" in given or "#" in given or not given.isprintable()):
                raise UsageError(f"{flag} is one expression on one line (no ';', '#' or "
                                 f"control characters): {given!r}")
        if self.root is not None and self.collective is not None:
            from ..model.collectives import KINDS
            rooted = [k for k in PACKED if KINDS[k].rooted]
            if self.collective not in rooted:  # (it was ignored, silently)
                raise UsageError(f"--root goes with {' or '.join(rooted)}, not "
                                 f"{self.collective}")
        if self.name is not None and not self.name.isidentifier():
            raise UsageError(f"--name is a schedule name (letters, digits, _), not "
                             f"{self.name!r}")


def synthesize(path: str | Path, collective: str, *, over: str | None = SynthesizeOptions.over,
               size: str | None = SynthesizeOptions.size,
               root: str | None = SynthesizeOptions.root, output: str | Path | None = None,
               chunks: int | None = SynthesizeOptions.chunks,
               within: float = SynthesizeOptions.within,
               name: str | None = SynthesizeOptions.name, sets: tuple[str, ...] = (),
               max_ranks: int = SynthesizeOptions.max_ranks,
               units: int | None = SynthesizeOptions.units,
               max_transfers: int | None = LoadOptions.max_transfers,
               max_rounds: int | None = LoadOptions.max_rounds, force: bool = False
               ) -> Synthesis:
    """Pack trees that reach the exact optimum of `collective` on the machine of the `.sched`
    file `path`, and write them as a schedule: the text imports `path` relative to `output`'s
    folder (the current folder when None). `over`, `size` and `root` default to the file's
    first collective's (`over`, in a file with none, to every gpu); `chunks` None picks the
    fewest within `within` of the optimum at α = 0.
    `units` fixes how many units a shard is cut into (default: the fewest powers of two whose
    rounding stays within `within`/4; fewer make smaller MSCCL XML). More than `max_ranks`
    ranks are refused before any work; `max_transfers` and `max_rounds` bound the written
    schedule's compile as `load`'s do. The text is compiled and verified before it is
    returned, and written to `output` when given (whole or not at all; an existing file is
    refused before any work unless `force`).

        >>> s = schedc.synthesize("schedules/algorithms/flat_8.sched", "allgather")
        >>> round(s.ratio, 6)
        1.0
    """
    o = SynthesizeOptions(collective, chunks, within, units, max_ranks, name, over, size, root)
    chunks, within, units, max_ranks = o.chunks, o.within, o.units, o.max_ranks
    source = Path(path)
    if output is not None:
        from ..files import check_replaced
        check_replaced(output, force)
    folder = Path(output).resolve().parent if output is not None else Path.cwd()
    machine = os.path.relpath(source.resolve(), folder)
    with tempfile.TemporaryDirectory(prefix="schedc-synthesize-") as scratch:
        made = _synthesize(source, machine, collective, over, size, root, chunks, within,
                           name or f"synthesized_{collective}", sets, Path(scratch), max_ranks,
                           units, work_limits(max_transfers, max_rounds))
    if output is not None:
        from ..render.files import write_atomically
        write_atomically(Path(output), made.text)
    return made


def synthesized_timing(session) -> Timing:
    """The timing of the schedule `synthesize` writes for the first collective of the file
    `session` was opened from (with its --set values and limits), at the chunk count that is
    fastest at the file's α; compiled from the written text, verified."""
    from ..session import Session
    if session.origin is None or not session.program.results:
        raise UsageError("--with-synthesized needs a .sched file with a collective and schedules")
    path, overrides, limits = session.origin
    kind = session.program.results[0].collective.kind
    if kind not in PACKED:
        raise UsageError(f"--with-synthesized: synthesize packs {', '.join(PACKED)}, not {kind}")
    sets = tuple(f"{o.name}={o.source.text}" for o in overrides)
    with tempfile.TemporaryDirectory(prefix="schedc-synthesize-") as scratch:
        out = Path(scratch) / "synthesized.sched"
        made = synthesize(path, kind, output=out, sets=sets, max_transfers=limits.transfers,
                          max_rounds=limits.steps)
        fastest = Session.open(out, (*sets, f"chunks={made.alpha_chunks}"), limits)
        (timing,) = verified_timings(fastest, [made.name])
    return timing


def _synthesize(source, machine, kind, over, size, root, chunks, within, name, sets,
                scratch, max_ranks, units, limits) -> Synthesis:
    from ..analysis.bound.cuts import RankCuts
    from ..analysis.bound.optimum import optimum, side_names
    from ..analysis.synthesize.innetwork import reducing_groups
    from ..analysis.synthesize.plan import check_tables, chunks_within, fastest_chunks, plan
    from ..export.sched_schedule import Phase, schedule_text
    from ..model.ir import linear_expr, linear_value
    from ..model.symmetry import index_shift
    from .in_network import in_network_synthesis

    program, coll, (over, size, root), tables = _probe(source, kind, over, size, root, name,
                                                      sets, scratch, limits, max_ranks)
    finder = RankCuts(program.topology, program.nominal, coll.ranks)
    exact = optimum(finder, coll, program.nominal)
    if exact is None:
        raise UsageError(f"nothing to synthesize for this {kind}: no link with a bandwidth "
                         "limits its ranks, or some rank cannot be reached (bound says which)")
    reducing = reducing_groups(program.topology, coll.ranks) if kind == "allreduce" else None
    if reducing is not None:  # through switches that reduce, when that beats trees
        made = in_network_synthesis(
            program, coll, finder, reducing, exact.value, source=source, machine=machine,
            over=over, size=size, name=name, chunks=chunks, within=within,
            compiled=lambda text: _compiled(text, name, sets, scratch, limits))
        if made is not None:
            return made
    n = len(coll.ranks)
    whole = float(linear_value(coll.size, program.nominal))
    shard = whole if root is not None else whole / n
    shifts = tuple(s for s in (finder.shift, index_shift(program.topology, coll.ranks)) if s)
    packings, pins, unsearched = _packings(program, coll, exact, shard, shifts)
    phases, goals = [], []
    for part, packing in zip(exact.parts, packings):
        # Below the optimum, the trees reach no more (the cut counts paths that no pinned
        # route lets them take): come within `within` of what they reach.
        goals.append(float(part.value) / min(packing.reached, 1.0))
        prefix = tables + ("" if len(packings) == 1 else
                           "rs_" if packing.kind == "reduce_scatter" else "ag_")
        phases.append(Phase(plan(packing, within, units), prefix))
    check_tables([p.plan for p in phases], _route_lines(program.topology, pins))
    if chunks is None:  # each phase within `within` of its goal: the sum is too
        chunks = max(chunks_within(p.plan, goal, shard, within) for p, goal in zip(phases, goals))

    def text(header: list[str], machine_path: str, k: int | None = None) -> str:
        return schedule_text(machine=machine_path, kind=kind, size=size, over=over, root=root,
                             name=name, chunks=k or chunks, phases=phases, ranks=n,
                             header=header, routes=_route_lines(program.topology, pins))

    bandwidth, timing = _compiled(text([], str(source.resolve())), name, sets, scratch, limits)
    alpha_chunks = fastest_chunks(
        [p.plan for p in phases], shard, chunks, timing, program, linear_expr(coll.size),
        lambda k: _candidate(text([], str(source.resolve()), k), name, sets, scratch, limits))
    result = Synthesis("", name, kind, chunks, alpha_chunks, exact.value, exact.time,
                       side_names(finder, exact.parts), bandwidth, timing.time, timing.cost.formula,
                       timing.cost.rounds, sum(len(p.plan.trees) for p in phases),
                       phases[0].plan.units, max(p.plan.depth for p in phases),
                       min(p.reached for p in packings), sum(p.iterations for p in packings),
                       len(pins), unsearched=unsearched)
    return replace(result, text=text(trees_header(result, source.name), machine))


def _probe(source, kind, over, size, root, name, sets, scratch, limits, max_ranks):
    """The collective to synthesize, compiled from FILE and the options in a probe file:
    (program, collective, its (over, size, root) source text, the tables' name prefix)."""
    from ..export.sched_schedule import TABLES
    from ..model.collectives import KINDS
    from ..session import Session

    session = Session.open(source, sets, limits)
    declared = _declared(session)
    size = size or (declared[1] if declared else None)
    over = over or (declared[2] if declared else None) or _every_gpu(session)
    if KINDS[kind].rooted:
        root = root or (declared[3] if declared and declared[3] else f"{name}_ranks[0]")
    else:
        root = None
    if size is None:
        raise UsageError(f"{source} declares no collective: give --size BYTES (and --over "
                         "RANKS; by default every gpu, in the order the machine declares them)")
    group = f"{name}_ranks"
    decl = [f"let {group} = {over}", f"{kind} {size} over {group}" + (f" root {root}" if root else "")]
    try:
        probe = _compile(scratch, source.resolve(), decl + [f"schedule {name} {{}}"], sets, limits)
    except SchedcError as error:
        raise _at_option(error, scratch, decl, over, size, root) from None
    coll = probe.program.result(name).collective
    taken = _names_in_use(probe) - {group, name}
    if "chunks" in taken:
        raise UsageError(f"{source} already defines 'chunks', the param the written file "
                         "declares for its pipeline: synthesize from a file that does not")
    if any(n.startswith(name + "_") for n in taken):
        raise UsageError(f"{source} already defines a name starting {name}_, as the written "
                         "file's do: choose another --name")
    if len(coll.ranks) > max_ranks:
        raise UsageError(f"synthesizing over {len(coll.ranks)} ranks is refused: the limit is "
                         f"{max_ranks} (raise it with --max-ranks; pricing grows as ranks^3)")
    if len(coll.ranks) < 2:
        raise UsageError(f"--over {over}: over one rank, {kind} moves nothing to synthesize")
    # The tables' names, prefixed with the schedule's when FILE uses one of them.
    tables = f"{name}_" if taken & {p + t for p in ("", "rs_", "ag_") for t in TABLES} else ""
    return probe.program, coll, (over, size, root), tables


def _compiled(text: str, name: str, sets, scratch: Path, limits) -> tuple[Fraction, Timing]:
    """The written text compiled and verified: its time at α = 0 and its timing."""
    from ..cost.formula import nominal_value
    try:  # the written file is not kept: its errors are said without its (temporary) lines
        compiled = _compile(scratch, None, [text], sets, limits)
        (timing,) = verified_timings(compiled, [name])
    except SchedcError as error:
        raise type(error)(f"the synthesized schedule is refused, nothing written: "
                          f"{error.message}", None, error.notes) from None
    # At α = 0: every round class's busiest resource, without its start-up (a param, a
    # number, a protocol's or a route's latency alike).
    bandwidth = sum((c.count * nominal_value(c.time - c.startup, compiled.program.nominal)
                     for c in timing.cost.classes), Fraction(0))
    return bandwidth, timing


def _candidate(text: str, name: str, sets, scratch: Path, limits):
    """Another chunk count's text compiled and verified, as its time in seconds with some
    params at other values: from the loads (the numeric path), no formula built."""
    try:
        compiled = _compile(scratch, None, [text], sets, limits)
        numeric_times(compiled, [name])
    except SchedcError as error:
        raise type(error)(f"the synthesized schedule is refused, nothing written: "
                          f"{error.message}", None, error.notes) from None
    return lambda values: float(compiled.numeric_timing_at(name, values).time)


def _packings(program, coll, exact, shard: float, shifts):
    """Each part's packing (all-reduce: reduce-scatter, then all-gather) and the routes they
    need pinned: none when schedc's own routes reach the optimum; otherwise the paths
    `synthesize.paths` finds, kept when the packings on them reach more."""
    from ..analysis.synthesize.packing import pack
    from ..analysis.synthesize.paths import MAX_PATH_WORK, pinned_paths, search_work, with_pins

    def packed(topology):
        return [pack(topology, program.nominal, coll.ranks, part.kind, coll.root,
                     shard / float(part.value), coll.span, shifts) for part in exact.parts]

    plain = packed(program.topology)
    if min(p.reached for p in plain) >= 1 - 1e-6:
        return plain, {}, ""
    work = max(search_work(program.topology, coll.ranks, p.kind, shifts) for p in exact.parts)
    if work > MAX_PATH_WORK:  # the routed trees stay, and the output says why
        return plain, {}, (f"other paths not searched: a round of pricing would take {work:,} "
                           f"arborescence entries (ranks² × roots priced), past {MAX_PATH_WORK:,}")
    pins: dict = {}
    for part, packing in zip(exact.parts, plain):
        topology = with_pins(program.topology, pins, coll.span)
        pins.update(pinned_paths(topology, program.nominal, coll.ranks, part.kind, coll.root,
                                 shard / float(part.value), packing.trees if not pins else (),
                                 shifts))
    if not pins:
        return plain, {}, ""
    routed = packed(with_pins(program.topology, pins, coll.span))
    if min(p.reached for p in routed) <= min(p.reached for p in plain) + 1e-9:
        return plain, {}, ""
    return routed, pins, ""


def _route_lines(topology, pins: dict) -> list[str]:
    """Each pinned route as the statement that pins it."""
    from ..export.sched_schedule import route_statement
    names = [d.name for d in topology.devices]
    return [route_statement(names[a], names[b], [names[d] for d in path[1:-1]])
            for (a, b), path in sorted(pins.items())]


def _names_in_use(session) -> set[str]:
    """Every name FILE and its imports define at the top level (lets, params, schedules,
    devices and hosts: a nested device's family name too, which errs on the safe side)."""
    from dataclasses import fields, is_dataclass

    from ..language import syntax as ast
    names: set[str] = set()

    def walk(node) -> None:
        if isinstance(node, ast.DeclName):
            names.add(node.name)
        elif isinstance(node, (tuple, list)):
            for item in node:
                walk(item)
        elif is_dataclass(node) and isinstance(node, ast.Node):
            for f in fields(node):
                if not isinstance(getattr(node, f.name), str):
                    walk(getattr(node, f.name))

    for module in session.modules:
        for stmt in module.body:
            if isinstance(stmt, (ast.Let, ast.ParamDecl, ast.ScheduleDef)):
                names.add(stmt.name)
            walk(stmt)
    return names


def _declared(session) -> tuple[str, str, str, str | None] | None:
    """The main file's first collective declaration, as (kind, size, over, root) source text."""
    from ..analysis.solve.equations import source_text
    from ..language import syntax as ast
    for module in session.modules[:1]:
        for stmt in module.body:
            if isinstance(stmt, ast.CollectiveDecl):
                return (stmt.kind, source_text(stmt.size.span), source_text(stmt.group.span),
                        source_text(stmt.root.span) if stmt.root is not None else None)
    return None


def _every_gpu(session) -> str:
    """Every gpu of FILE's machine in declaration order, as a list expression (nccl-tests'
    default too: one rank per GPU)."""
    return "[" + ", ".join(d.name for d in session.program.topology.devices
                           if d.kind == "gpu") + "]"


def _compile(scratch: Path, machine: Path | None, lines: list[str], sets, limits):
    from ..session import Session
    head = [f"import {string(str(machine))}"] if machine is not None else []
    path = scratch / "synthesized.sched"
    path.write_text("\n".join(head + lines) + "\n", encoding="utf-8")
    return Session.open(path, sets, limits)


def _at_option(error: SchedcError, scratch: Path, decl: list[str], over: str, size: str,
               root: str | None) -> SchedcError:
    """An error in the declarations made from --over, --size and --root, said at the option
    (the probe file that held them is temporary); an error in FILE keeps its position."""
    span = error.span
    if span is None or Path(span.source.path) != scratch / "synthesized.sched":
        return error
    line = span.line - 2  # after the import: the ranks' `let`, then the collective
    collective = decl[1]  # `KIND SIZE over GROUP [root ROOT]`: which part the column is in
    at = span.col - 1
    if line == 0 or (line == 1 and collective.index(" over ") < at and
                     (root is None or at < collective.index(" root "))):
        option, value = "--over", over
    elif line == 1 and root is not None and at > collective.index(" root "):
        option, value = "--root", root
    else:
        option, value = "--size", size
    return UsageError(f"{option} {value}: {error.message}", None, error.notes)

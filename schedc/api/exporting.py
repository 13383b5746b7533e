"""What other systems read, and the report page: `export_msccl` (a schedule as an MSCCL XML
algorithm), `export_astra` (as an ASTRA-sim custom collective), `tune` (NCCL tuner tables
from the solved crossovers), `report` (one HTML page)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ..choices import EXECUTORS, LAYOUTS, NCCL_EXECUTOR, NCCL_PROTOCOLS, TUNER_COLLECTIVES
from ..deadline import DEFAULT_TIMEOUT
from ..limits import MAX_CHANNELS, MAX_CUTS, MAX_SIZE, MAX_STEP_IDS
from ..words import counted
from .compiling import refusal, verified_timings
from .options import Options, byte_size, choice, count, text, time_limit

if TYPE_CHECKING:
    from ..analysis.solve.crossovers import Envelope
    from ..export.astra import AstraExport
    from ..language.syntax import NcclName
    from ..session import Session

@dataclass(frozen=True)
class ValidateOptions(Options):
    """`verify FILE.xml --executor E [--max-steps N]`; `export msccl`'s are these too."""

    executor: str | None = choice(None, "--executor", EXECUTORS)
    max_steps: int | None = count(None, "--max-steps", 1, MAX_STEP_IDS)


@dataclass(frozen=True)
class ExportMscclOptions(Options):
    proto: str = choice("Simple", "--proto", NCCL_PROTOCOLS)
    channels: int = count(1, "--channels", 1, MAX_CHANNELS)
    executor: str = choice(NCCL_EXECUTOR, "--executor", EXECUTORS)
    max_steps: int | None = count(None, "--max-steps", 1, MAX_STEP_IDS)
    # bytes, or text with a unit ("192MiB"); max_bytes None: the schedule's own size
    min_bytes: int = byte_size(0, "--min-bytes", 0, MAX_SIZE)
    max_bytes: int | None = byte_size(None, "--max-bytes", 0, MAX_SIZE)
    layout: str = choice("inplace", "layout", LAYOUTS)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_bytes is not None and self.max_bytes < self.min_bytes:
            from ..errors import UsageError
            raise UsageError("--max-bytes is less than --min-bytes")


def export_msccl(session: Session, schedule: str, *, proto: str = ExportMscclOptions.proto,
                 channels: int = ExportMscclOptions.channels,
                 executor: str = ExportMscclOptions.executor,
                 min_bytes: int | str = ExportMscclOptions.min_bytes,
                 max_bytes: int | str | None = ExportMscclOptions.max_bytes, verify: bool = True,
                 max_steps: int | None = ExportMscclOptions.max_steps,
                 layout: str = ExportMscclOptions.layout, output: str | Path | None = None,
                 force: bool = False) -> str:
    """A schedule as an MSCCL XML algorithm (the text), verified first, within `executor`'s
    limits ("msccl-executor-nccl", or "msccl": microsoft/msccl, which also names
    reduce-scatter as msccl-tools does): `proto` the NCCL protocol it runs with, every
    transfer cut into `channels` pieces, for message sizes from `min_bytes` to `max_bytes`
    (bytes, or text with a unit: "192MiB"; by default the schedule's own size at the nominal
    point, so that the file read back says what size it was made for: an executor picks it for
    `minBytes <= nBytes <= maxBytes`, msccl-executor-nccl msccl_lifecycle.cc:335);
    `max_steps` the executor build's MSCCL_MAX_NUM_STEPS (default 64 for
    msccl-executor-nccl, 256 for msccl); `layout` "inplace", "outofplace" or "both".
    `output`: also write it to this file (whole or not at all; an existing file is refused
    before any work unless `force`).

        >>> xml = schedc.export_msccl(session, "ring")
        >>> xml.splitlines()[0]
        '<algo name="ring" ...'
    """
    from ..errors import UsageError
    from ..export.msccl_xml import TooLarge
    from ..export.msccl_xml import export_msccl as write_xml
    # (a size may be text with a unit, "192MiB": the field reads it into an int)
    o = ExportMscclOptions(proto, channels, executor, max_steps,
                           min_bytes, max_bytes, layout)  # type: ignore[arg-type]
    if output is not None:
        _check_replaced(Path(output), force)
    name = session.selected((schedule,))[0]
    if o.max_bytes is None:  # the schedule's own size (checked against min_bytes again)
        o = replace(o, max_bytes=_schedule_size(session, name))
    if verify:
        from ..analysis.verify.verdict import verdict
        found = verdict(session, name)
        if not found.ok:
            raise refusal([found])
    def write(at: Session) -> str:
        assert o.max_bytes is not None
        return write_xml(at.schedule(name), name, o.proto, o.channels, o.executor,
                         o.min_bytes, o.max_bytes, o.max_steps, o.layout)
    try:
        text = write(session)
    except TooLarge as refused:  # a size refusal: fewer chunks may fit
        fewer = _fewer_chunks(session, write)
        if fewer is None:
            raise
        raise UsageError(f"{refused.message}; with --set chunks={fewer} (this file's pipelined "
                         f"chunks, {session.structural()['chunks']} now) it fits"
                         if fewer else f"{refused.message}, and no --set chunks fits",
                         refused.span, refused.notes) from None
    if output is not None:
        from ..render.files import write_atomically
        write_atomically(Path(output), text)
    return text


def _fewer_chunks(session: Session, write) -> int | None:
    """For a file whose pipeline depth is the structural param `chunks` (as `synthesize`
    writes): the most chunks below the current count whose XML fits (0: none does; each
    chunk adds steps, so it is found by bisection), or None without such a param."""
    from ..export.msccl_xml import TooLarge
    now = session.structural().get("chunks")
    if now is None or now < 2:
        return None

    def fits(k: int) -> bool:
        try:
            write(session.at({"chunks": k}))
        except TooLarge:
            return False
        return True

    lo, hi = 0, now  # chunks lo fit (0: vacuously), hi do not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def _schedule_size(session: Session, name: str) -> int:
    """The schedule's collective size at the nominal point, in whole bytes (rounded up, so
    that the executor still picks the file for that size), within int64."""
    import math

    from ..model.ir import linear_value
    size = linear_value(session.schedule(name).collective.size, session.program.nominal)
    return min(max(math.ceil(size), 0), MAX_SIZE)


def _check_replaced(path: Path, force: bool) -> None:
    """Refuse, before any work, an output that would replace a file unless `force`."""
    from ..errors import UsageError
    from ..files import check_output
    if not force and path.exists() and path.is_file():
        raise UsageError(f"{path} exists; --force replaces it")
    check_output(path)


def validate_msccl(path: str, executor: str | None,
                   max_steps: int | None = ValidateOptions.max_steps) -> str:
    """Check an MSCCL XML file against one executor's rules without importing it: a summary
    when it would load, else `ExecutorRulesError` listing every violation at its line and
    column. `max_steps`: the build's MSCCL_MAX_NUM_STEPS (default: the executor's own).

        >>> schedc.validate_msccl("tests/fixtures/hierarchical.xml", "msccl")
        'tests/fixtures/hierarchical.xml: msccl would load it ...'
    """
    from ..errors import UsageError
    from ..msccl.document import check_file
    from ..msccl.rules import ExecutorRulesError
    if executor is None:
        raise UsageError("--max-steps goes with --executor")
    max_steps = ValidateOptions(executor, max_steps).max_steps  # (and the executor's name)
    if Path(path).suffix.lower() != ".xml":
        raise UsageError(f"{path}: --executor checks an MSCCL XML file (FILE.xml) against the "
                         "executor's rules; a .sched file is verified without --executor")
    found, counts = check_file(path, executor, max_steps)
    if found:
        raise ExecutorRulesError(executor, found)
    gpus, tbs, steps = counts
    return (f"{path}: {executor} would load it ({counted(gpus, 'gpu')}, at most "
            f"{counted(tbs, 'thread block')} and {counted(steps, 'step')} in one thread block)")


def export_astra(session: Session, schedule: str, *, prefix: str | None = None,
                 verify: bool = True) -> AstraExport:
    """A schedule as an ASTRA-sim custom collective at the file's nominal point, verified
    first: per-rank Chakra traces of its sends and receives, the workload that calls it and
    the system, network and memory configurations (`.files()` makes them).

        >>> astra = schedc.export_astra(session, "hierarchical")
        >>> astra.ranks, [d.npus for d in astra.network.dimensions]
        (16, [8, 2])
    """
    from ..export.astra import export_astra as astra_files
    name = session.selected((schedule,))[0]
    if verify:
        from ..analysis.verify.verdict import verdict
        found = verdict(session, name)
        if not found.ok:
            raise refusal([found])
    program = session.program
    program.require_machine(name)
    timing = session.timing(name)
    return astra_files(session.schedule(name), program.topology, program.alpha,
                       program.nominal, timing.time, prefix, verified=verify)


class TunedTable(NamedTuple):
    """The fastest schedule per size range on one compiled machine."""

    envelope: Envelope
    nccl: dict[str, NcclName | None]  # schedule → the NCCL algorithm/protocol it stands for
    names: list[str]  # the schedules that competed
    nodes: int  # nNodes (-1: any)
    ranks: int  # nRanks
    labelled: Envelope | None = None  # the fastest of the labelled schedules: the rows
    against: tuple = ()  # with against_nccl: schedc.api.nccl.Against rows
    against_notes: tuple[str, ...] = ()  # with against_nccl: the ranges not compared


@dataclass(frozen=True)
class Tuning:
    collective: str
    source: str  # the file
    per_nodes: str | None  # the structural param of a table per node count (None: one table)
    tables: tuple[TunedTable, ...]
    margin: str | None = None  # with against_nccl: the margin, as given ("5%")
    channels: int = 0  # the tuner table's channels column (`TuneOptions.channels`)


@dataclass(frozen=True)
class TuneOptions(Options):
    collective: str = choice(None, "--collective", tuple(TUNER_COLLECTIVES))
    # The channels column: 0 keeps NCCL's own count, -1 the example plugin's default (1).
    channels: int = count(0, "--channels", -1)
    timeout: float = time_limit(DEFAULT_TIMEOUT)
    margin: str = text("5%", "--margin")  # with against_nccl (`parse_margin` reads it)


def tune(session: Session, collective: str, sizes: str, *, nodes: str | Iterable[int] | None = None,
         nodes_param: str | None = None, timeout: float = TuneOptions.timeout, verify: bool = True,
         against_nccl: str | None = None, channels: int = TuneOptions.channels) -> Tuning:
    """The fastest schedule of the file per message-size range ("8B:16GB", as `--sizes`),
    among those computing `collective`, from exact crossovers. With `nodes` ("1,2,4" or a
    list of ints), one table per value of the file's structural param (`nodes_param`,
    default its only one), each compiled at that value. Write it with
    `schedc.export.tuner.tuner_csv`. With `against_nccl`, a margin ("5%" or "0.05", as
    `--margin` takes it), the table's `against` rows are only where schedc's model says
    another NCCL pair beats NCCL's own pick by more than it (`schedc.against_nccl`), on the
    file's own machine (so not with `nodes`).

        >>> flat = schedc.load("schedules/examples/tuner_flat_8.sched")
        >>> tuning = schedc.tune(flat, "allreduce", "8B:16GB")
        >>> [s.fastest for s in tuning.tables[0].envelope.stretches]
        ['doubling', 'ring']
    """
    if collective is None:
        from ..errors import UsageError
        raise UsageError("--collective: one of " + ", ".join(TUNER_COLLECTIVES))
    options = TuneOptions(collective, channels, timeout)
    collective, timeout = options.collective, options.timeout
    share = None
    if against_nccl is not None:
        from ..errors import UsageError
        if nodes is not None:
            raise UsageError("--against-nccl compares on the file's own machine: drop --nodes")
        share = parse_margin(against_nccl)
    per_nodes, counts = _node_counts(session, nodes, nodes_param)
    sessions = [session] if per_nodes is None else [session.at({per_nodes: n}) for n in counts]
    tables = tuple(_tune_at(at, collective, sizes, timeout, verify) for at in sessions)
    if share is not None:
        from .nccl import against_nccl as against
        (table,) = tables
        rows, notes = against(session, table, collective, share, verify)
        tables = (table._replace(against=rows, against_notes=notes),)
    return Tuning(collective, session.program.path, per_nodes, tables, against_nccl,
                  options.channels)


def _node_counts(session: Session, nodes: str | Iterable[int] | None, param: str | None
                 ) -> tuple[str | None, list[int]]:
    """The structural param and its values that --nodes asks for (None: one table)."""
    from ..errors import UsageError, did_you_mean
    if nodes is None:
        if param is not None:
            raise UsageError("--nodes-param goes with --nodes")
        return None, []
    try:
        counts = sorted({int(n) for n in (nodes.split(",") if isinstance(nodes, str) else nodes)})
    except ValueError:
        raise UsageError(f"--nodes expects node counts like 1,2,4, got {nodes!r}") from None
    if not counts or counts[0] < 1:
        raise UsageError("--nodes: node counts start at 1")
    structural = [p.name for p in session.program.params.values() if p.structural]
    if param is None:
        if len(structural) != 1:
            raise UsageError("--nodes needs the file's host count as its one structural param "
                             f"(`param hosts = 2`); it has {len(structural) or 'none'}"
                             + (": name it with --nodes-param" if structural else ""))
        param = structural[0]
    elif param not in structural:
        raise UsageError(f"--nodes-param {param}: not a structural param of the file"
                         + did_you_mean(param, structural, "structural params"))
    return param, counts


def _tune_at(session: Session, collective: str, sizes: str, timeout: float,
             verify: bool) -> TunedTable:
    from ..analysis.solve.crossovers import fastest
    from ..analysis.solve.sweep import parse_range
    from ..errors import ElaborationError, SourceFile, UsageError
    from ..export.tuner import ALGORITHMS, PROTOCOLS
    program = session.program
    names = [r.name for r in program.results if r.collective.kind == collective]
    if len(names) < 1:
        raise UsageError(f"{program.path} has no {collective} schedules")
    verified_timings(session, names, verify)
    results = [program.result(n) for n in names]
    sizes_of = {r.collective.size for r in results}
    size = next(iter(sizes_of))
    if len(sizes_of) != 1 or len(size) != 1 or size[0][1] != 1 or size[0][0] == 1:
        raise UsageError(f"the {collective} schedules must all be of one size, a param (like "
                         "`allreduce V over ranks`), for a table over sizes")
    param = next(p for p in program.params.values() if p.symbol == size[0][0])
    lo, hi = parse_range(sizes, param, program, SourceFile("--sizes", sizes))
    from ..export.tuner import refused_pair
    ranks = results[0].collective.ranks
    hosts = {program.topology.devices[d].host for d in ranks}
    nodes = -1 if None in hosts else len(hosts)
    one_per_node = None not in hosts and len(hosts) == len(ranks)
    nccl = {}
    for r in results:
        choice = getattr(r.definition, "nccl", None)
        if choice is not None:
            for value, known, what in ((choice.algorithm, ALGORITHMS, "algorithm"),
                                       (choice.protocol, PROTOCOLS, "protocol")):
                if value not in known:
                    raise ElaborationError(f"'{value}' is not an NCCL {what} the tuner knows "
                                           f"({', '.join(known)})", choice.span)
            why = refused_pair(collective, choice.algorithm, choice.protocol, one_per_node)
            if why:
                raise ElaborationError(f"NCCL ignores {choice.algorithm}/{choice.protocol} for "
                                       f"{collective}: {why}", choice.span)
        nccl[r.name] = choice
    labelled = [n for n in names if nccl.get(n) is not None]
    if not labelled:
        raise UsageError(f"{program.path}: no {collective} schedule stands for an NCCL "
                         "algorithm, so the tuner table would have no rows; label the ones "
                         "that do, e.g. `schedule ring as ring/simple = ring_allreduce(ranks)` "
                         f"(ALGO: {', '.join(ALGORITHMS)}; PROTO: {', '.join(PROTOCOLS)})")
    envelope = fastest(session, names, param, lo, hi, timeout)
    rows = envelope if labelled == names else fastest(session, labelled, param, lo, hi, timeout)
    return TunedTable(envelope, nccl, names, nodes, len(ranks), rows)


@dataclass(frozen=True)
class ReportOptions(Options):
    timeout: float = time_limit(DEFAULT_TIMEOUT)
    max_cuts: int = count(MAX_CUTS, "--max-cuts")


def report(session: Session, *, timeout: float = ReportOptions.timeout,
           max_cuts: int = ReportOptions.max_cuts, verify: bool = True) -> str:
    """`schedc report`: one self-contained HTML page about the file (the comparison table,
    every formula typeset, time against each param with the crossovers marked, each
    schedule round by round, the bounds, the reports and expects), verified first.

        >>> page = schedc.report(schedc.load("schedules/seed/pcie_2x4.sched"))
        >>> page.startswith("<!DOCTYPE html>")
        True
    """
    from ..analysis.overview import overview
    from ..render.html import report_html
    options = ReportOptions(timeout, max_cuts)
    timeout, max_cuts = options.timeout, options.max_cuts
    timings = verified_timings(session, session.selected(), verify)
    return report_html(session.program, overview(session, timings, timeout, max_cuts))


def parse_margin(text: str) -> float:
    """`5%` or `0.05` → 0.05."""
    from ..errors import UsageError
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise UsageError(f"--margin expects a share like 5%, got {text!r}") from None
    if not 0 <= value < 10:
        raise UsageError(f"--margin {text}: between 0% and 1000%")
    return value

"""`tune`: NCCL tuner tables from the solved crossovers (the fastest schedule standing for
an NCCL algorithm and protocol per size range), or with `against_nccl` only the rows where
schedc's model beats NCCL's own pick; and the CSV file the command writes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ..choices import TUNER_COLLECTIVES
from ..deadline import DEFAULT_TIMEOUT
from .compiling import verified_timings
from .options import Options, choice, count, text, time_limit

if TYPE_CHECKING:
    from ..analysis.solve.crossovers import Envelope
    from ..language.syntax import NcclName
    from ..session import Session


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
         against_nccl: str | None = None, channels: int = TuneOptions.channels,
         output: str | Path | None = None) -> Tuning:
    """The fastest schedule of the file per message-size range ("8B:16GB", as `--sizes`),
    among those computing `collective`, from exact crossovers. With `nodes` ("1,2,4" or a
    list of ints), one table per value of the file's structural param (`nodes_param`,
    default its only one), each compiled at that value. Write it with
    `schedc.export.tuner.tuner_csv`. With `against_nccl`, a margin ("5%" or "0.05", as
    `--margin` takes it), the table's `against` rows are only where schedc's model says
    another NCCL pair beats NCCL's own pick by more than it (`schedc.against_nccl`), on the
    file's own machine (so not with `nodes`). `output`: also write the table the plugin reads
(`tuning_csv`) to this file, whole or not at all; checked before any work.

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
    if output is not None:
        from ..files import check_output
        check_output(Path(output))
    per_nodes, counts = _node_counts(session, nodes, nodes_param)
    sessions = [session] if per_nodes is None else [session.at({per_nodes: n}) for n in counts]
    tables = tuple(_tune_at(at, collective, sizes, timeout, verify) for at in sessions)
    if share is not None:
        from .nccl import against_nccl as against
        (table,) = tables
        rows, notes = against(session, table, collective, share, verify)
        tables = (table._replace(against=rows, against_notes=notes),)
    tuning = Tuning(collective, session.program.path, per_nodes, tables, against_nccl,
                    options.channels)
    if output is not None:
        from ..render.files import write_atomically
        write_atomically(Path(output), tuning_csv(tuning))
    return tuning


def tuning_csv(tuning: Tuning) -> str:
    """The tuner table `tune -o` writes (nccl_tuner.conf): with a margin, the rows where
    schedc's model beats NCCL's pick; else every table's rows, the file's comments once."""
    from ..export.tuner import against_csv, tuner_csv
    if tuning.margin is not None:
        (t,) = tuning.tables
        return against_csv(t.against, tuning.collective, tuning.channels, t.nodes, t.ranks,
                           tuning.source, tuning.margin)
    return "".join(tuner_csv(t.labelled or t.envelope, tuning.collective, t.nccl,
                             tuning.channels, t.nodes, t.ranks, tuning.source, header=k == 0)
                   for k, t in enumerate(tuning.tables))


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

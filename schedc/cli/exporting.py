"""Commands that write what other systems read: `export msccl` (a schedule as MSCCL XML) and
`tune` (an NCCL tuner table from the solved crossovers)."""

from __future__ import annotations

from pathlib import Path

import click

from ..render import schema
from .compiling import verified_timings
from .options import EXIT_OK, compiling, json_option, no_verify_option, timeout_option
from .paths import OutputPath


@click.group()
def export() -> None:
    """Write a schedule in another system's format."""


@export.command("msccl")
@compiling
@click.option("--schedule", "-s", "name", required=True, metavar="NAME",
              help="The schedule to write.")
@click.option("--output", "-o", type=OutputPath(),
              help="Write the XML here (atomically) instead of printing it.")
@click.option("--proto", type=click.Choice(("Simple", "LL", "LL128")), default="Simple",
              show_default=True, help="The NCCL protocol the executor runs it with.")
@click.option("--channels", type=click.IntRange(1, 32), default=1, show_default=True,
              help="Cut every transfer into this many pieces, one per channel.")
@click.option("--executor", type=click.Choice(("msccl-executor-nccl", "msccl")),
              default="msccl-executor-nccl", show_default=True,
              help="Whose name of reduce-scatter to write (reducescatter / reduce_scatter).")
@click.option("--min-bytes", type=click.IntRange(min=0), default=0, show_default=True,
              help="The smallest size the executor picks it for.")
@click.option("--max-bytes", type=click.IntRange(min=0), default=2**63 - 1,
              help="The largest size the executor picks it for (default: any).")
@no_verify_option
def export_msccl_command(session, name: str, output: Path | None, proto: str, channels: int,
                         executor: str, min_bytes: int, max_bytes: int, no_verify: bool) -> int:
    """A schedule of FILE as an MSCCL XML algorithm, verified first."""
    from ..errors import UsageError
    from ..export.msccl_xml import export_msccl
    from ..render.files import write_atomically
    if max_bytes < min_bytes:
        raise UsageError("--max-bytes is less than --min-bytes")
    name = session.selected((name,))[0]
    if not no_verify:
        from ..analysis.verify.verdict import verdict
        found = verdict(session, name)
        if not found.ok:
            from ..errors import VerificationFailed
            from ..render.verdict import not_reporting
            raise VerificationFailed(not_reporting([found]))
    text = export_msccl(session.schedule(name), name, proto, channels, executor, min_bytes,
                        max_bytes)
    if output is None:
        click.echo(text, nl=False)
    else:
        write_atomically(output, text)
    return EXIT_OK


@click.command()
@compiling
@click.option("--collective", required=True,
              type=click.Choice(("allreduce", "allgather", "reduce_scatter", "broadcast",
                                 "reduce")),
              help="The schedules of FILE that compute this collective compete.")
@click.option("--sizes", required=True, metavar="LO:HI",
              help="The range of message sizes (NCCL's nBytes; schedc's V), e.g. 8B:16GB.")
@click.option("--output", "-o", type=OutputPath(),
              help="Write the tuner table (CSV) here, atomically.")
@click.option("--channels", type=click.IntRange(min=-1), default=-1, show_default=True,
              help="The channels column (-1: NCCL's default).")
@click.option("--nodes", metavar="N,N,...",
              help="A table for each of these values of the file's structural param (the "
                   "host count: `param hosts = 2`), each compiled at that size.")
@click.option("--nodes-param", metavar="PARAM",
              help="The structural param --nodes sets (default: the file's only one).")
@json_option(schema.TUNE)
@timeout_option
@no_verify_option
def tune(session, collective: str, sizes: str, output: Path | None, channels: int,
         nodes: str | None, nodes_param: str | None, as_json: bool, timeout: float,
         no_verify: bool) -> int:
    """The fastest schedule of FILE per size range, from exact crossovers, as a table for
    NCCL's example tuner plugin (nccl_tuner.conf). A schedule stands for an NCCL algorithm
    and protocol with `schedule NAME as ring/simple = ...`; the others are listed, not written."""
    from ..export.tuner import tune_json, tune_table, tune_text, tuner_csv
    from ..render.files import write_atomically
    per_nodes, counts = _node_counts(session, nodes, nodes_param)
    sessions = [session] if per_nodes is None else [session.at({per_nodes: n}) for n in counts]
    found = [_tune_at(at, collective, sizes, timeout, no_verify) for at in sessions]
    source = session.program.path
    if output is not None:
        write_atomically(output, "".join(
            tuner_csv(envelope, collective, nccl, channels, n, ranks, source, header=k == 0)
            for k, (envelope, nccl, _, n, ranks) in enumerate(found)))
    if as_json:
        click.echo(tune_json([tune_table(envelope, collective, nccl, names, channels, n, ranks)
                              for envelope, nccl, names, n, ranks in found], source, per_nodes),
                   nl=False)
    else:
        click.echo("\n".join(tune_text(envelope, collective, nccl, names, n, ranks)
                             for envelope, nccl, names, n, ranks in found), nl=False)
    return EXIT_OK


def _node_counts(session, nodes: str | None, param: str | None) -> tuple[str | None, list[int]]:
    """The structural param and its values that --nodes asks for (None: one table)."""
    from ..errors import UsageError, did_you_mean
    if nodes is None:
        if param is not None:
            raise UsageError("--nodes-param goes with --nodes")
        return None, []
    try:
        counts = sorted({int(n) for n in nodes.split(",")})
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


def _tune_at(session, collective: str, sizes: str, timeout: float, no_verify: bool):
    """(envelope, NCCL names, schedule names, nNodes, nRanks) of one compiled machine."""
    from ..analysis.solve.crossovers import fastest
    from ..analysis.solve.sweep import parse_range
    from ..errors import ElaborationError, SourceFile, UsageError
    from ..export.tuner import ALGORITHMS, PROTOCOLS
    program = session.program
    names = [r.name for r in program.results if r.collective.kind == collective]
    if len(names) < 1:
        raise UsageError(f"{program.path} has no {collective} schedules")
    verified_timings(session, names, no_verify)
    results = [program.result(n) for n in names]
    sizes_of = {r.collective.size for r in results}
    size = next(iter(sizes_of))
    if len(sizes_of) != 1 or len(size) != 1 or size[0][1] != 1 or size[0][0] == 1:
        raise UsageError(f"the {collective} schedules must all be of one size, a param (like "
                         "`allreduce V over ranks`), for a table over sizes")
    param = next(p for p in program.params.values() if p.symbol == size[0][0])
    lo, hi = parse_range(sizes, param, program, SourceFile("--sizes", sizes))
    nccl = {}
    for r in results:
        choice = getattr(r.definition, "nccl", None)
        if choice is not None:
            for value, known, what in ((choice.algorithm, ALGORITHMS, "algorithm"),
                                       (choice.protocol, PROTOCOLS, "protocol")):
                if value not in known:
                    raise ElaborationError(f"'{value}' is not an NCCL {what} the tuner knows "
                                           f"({', '.join(known)})", choice.span)
        nccl[r.name] = choice
    ranks = results[0].collective.ranks
    hosts = {program.topology.devices[d].host for d in ranks}
    nodes = -1 if None in hosts else len(hosts)
    return fastest(session, names, param, lo, hi, timeout), nccl, names, nodes, len(ranks)


COMMANDS = (export, tune)

"""Commands that write what other systems read: `export msccl` (a schedule as MSCCL XML) and
`tune` (an NCCL tuner table from the solved crossovers)."""

from __future__ import annotations

from pathlib import Path

import click

from ..render import schema
from .compiling import verified_timings
from .options import EXIT_OK, compiling, json_option, no_verify_option, timeout_option


@click.group()
def export() -> None:
    """Write a schedule in another system's format."""


@export.command("msccl")
@compiling
@click.option("--schedule", "-s", "name", required=True, metavar="NAME",
              help="The schedule to write.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path),
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
    from ..render.files import write_atomically
    from ..render.msccl_xml import export_msccl
    if max_bytes < min_bytes:
        raise UsageError("--max-bytes is less than --min-bytes")
    name = session.selected((name,))[0]
    if not no_verify:
        from ..analysis.verify import verdict
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
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the tuner table (CSV) here, atomically.")
@click.option("--channels", type=click.IntRange(min=-1), default=-1, show_default=True,
              help="The channels column (-1: NCCL's default).")
@json_option(schema.TUNE)
@timeout_option
@no_verify_option
def tune(session, collective: str, sizes: str, output: Path | None, channels: int,
         as_json: bool, timeout: float, no_verify: bool) -> int:
    """The fastest schedule of FILE per size range, from exact crossovers, as a table for
    NCCL's example tuner plugin (nccl_tuner.conf). A schedule stands for an NCCL algorithm
    and protocol with `schedule NAME as ring/simple = ...`; the others are listed, not written."""
    from ..analysis.crossovers import fastest
    from ..analysis.sweep import parse_range
    from ..errors import SourceFile, UsageError
    from ..render.files import write_atomically
    from ..render.tuner import ALGORITHMS, PROTOCOLS, tune_json, tune_text, tuner_csv
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
                    from ..errors import ElaborationError
                    raise ElaborationError(f"'{value}' is not an NCCL {what} the tuner knows "
                                           f"({', '.join(known)})", choice.span)
        nccl[r.name] = choice
    ranks = results[0].collective.ranks
    hosts = {program.topology.devices[d].host for d in ranks}
    nodes = -1 if None in hosts else len(hosts)
    envelope = fastest(session, names, param, lo, hi, timeout)
    if output is not None:
        write_atomically(output, tuner_csv(envelope, collective, nccl, channels, nodes,
                                           len(ranks), program.path))
    if as_json:
        click.echo(tune_json(envelope, collective, nccl, names, channels, nodes, len(ranks),
                             program.path), nl=False)
    else:
        click.echo(tune_text(envelope, collective, nccl, names, nodes, len(ranks)), nl=False)
    return EXIT_OK


COMMANDS = (export, tune)

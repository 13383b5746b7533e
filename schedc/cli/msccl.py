"""Commands that write what other systems read: `export msccl` (a schedule as MSCCL XML) and
`tune` (an NCCL tuner table from the solved crossovers)."""

from __future__ import annotations

from pathlib import Path

import click

from .options import EXIT_OK, compiling, no_verify_option


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
    from ..analysis.sweep import write_atomically
    from ..errors import UsageError
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


COMMANDS = (export,)

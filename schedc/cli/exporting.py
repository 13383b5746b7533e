"""Commands that write what other systems read: `export msccl` (a schedule as MSCCL XML) and
`tune` (an NCCL tuner table from the solved crossovers)."""

from __future__ import annotations

from pathlib import Path

import click

from ..api.exporting import ExportMscclOptions
from ..api.tuning import TuneOptions
from ..render import schema
from .derived import api_option
from .options import EXIT_OK, compiling, json_option, no_verify_option, timeout_of, wrote
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
@api_option(ExportMscclOptions, "proto", help="The NCCL protocol the executor runs it with.")
@api_option(ExportMscclOptions, "channels",
            help="Cut every transfer into this many pieces, one per channel.")
@api_option(ExportMscclOptions, "executor",
            help="Whose limits to stay within (and whose name of reduce-scatter to write).")
@api_option(ExportMscclOptions, "max_steps", metavar="N",
            help="The executor build's MSCCL_MAX_NUM_STEPS (default: 64 for "
                 "msccl-executor-nccl's default build, 256 for msccl).")
@click.option("--outofplace", "layout", flag_value="outofplace",
              help="Write the out-of-place layout (input i, output o).")
@click.option("--both", "layout", flag_value="both",
              help="Write steps right both in place and out of place (inplace=1 outofplace=1).")
@click.option("--force", is_flag=True, help="Replace the --output file if it exists.")
@api_option(ExportMscclOptions, "min_bytes", metavar="SIZE",
            help="The smallest size the executor picks it for (bytes, or 4KiB, 1.5GB...).")
@api_option(ExportMscclOptions, "max_bytes", metavar="SIZE",
            help="The largest size the executor picks it for (bytes, or 192MiB, 1GB...; "
                 "default: the schedule's size V; 0 or the largest: any size).")
@no_verify_option
def export_msccl_command(session, name: str, output: Path | None, proto: str, channels: int,
                         executor: str, max_steps: int | None, layout: str | None, force: bool,
                         min_bytes: int | str, max_bytes: int | str | None,
                         no_verify: bool) -> int:
    """A schedule of FILE as an MSCCL XML algorithm, verified first, within the executor's
    limits (steps per thread block, cnt < 72, thread blocks per gpu and per channel,
    dependency ids that fit int8_t, 32 channels), or an error naming the limit."""
    from ..api import export_msccl
    text = export_msccl(session, name, proto=proto, channels=channels, executor=executor,
                        min_bytes=min_bytes, max_bytes=max_bytes, verify=not no_verify,
                        max_steps=max_steps, layout=layout or ExportMscclOptions.layout,
                        output=output, force=force)
    if output is None:
        click.echo(text, nl=False)
    else:  # (written by the API)
        wrote(output)
    return EXIT_OK


@click.command()
@compiling
@api_option(TuneOptions, "collective", required=True,
            help="The schedules of FILE that compute this collective compete.")
@click.option("--sizes", required=True, metavar="LO:HI",
              help="The range of message sizes (NCCL's nBytes; schedc's V), e.g. 8B:16GB.")
@click.option("--output", "-o", type=OutputPath(),
              help="Write the tuner table (CSV) here, atomically.")
@api_option(TuneOptions, "channels",
            help="The channels column: 0 keeps NCCL's own count; -1 keeps the example "
                 "plugin's default, which is 1 channel.")
@click.option("--nodes", metavar="N,N,...",
              help="A table for each of these values of the file's structural param (the "
                   "host count: `param hosts = 2`), each compiled at that size.")
@click.option("--nodes-param", metavar="PARAM",
              help="The structural param --nodes sets (default: the file's only one).")
@click.option("--against-nccl", is_flag=True,
              help="Rows only where schedc's model says another NCCL pair beats NCCL's own "
                   "pick (`schedc nccl`) by more than --margin.")
@api_option(TuneOptions, "margin", metavar="P%",
            help="With --against-nccl: how much faster a row's schedule must be.")
@json_option(schema.TUNE)
@timeout_of(TuneOptions)
@no_verify_option
def tune(session, collective: str, sizes: str, output: Path | None, channels: int,
         nodes: str | None, nodes_param: str | None, against_nccl: bool, margin: str,
         as_json: bool, timeout: float, no_verify: bool) -> int:
    """The fastest schedule of FILE per size range, from exact crossovers, as a table for
    NCCL's example tuner plugin (nccl_tuner.conf). A schedule stands for an NCCL algorithm
    and protocol with `schedule NAME as ring/simple = ...`; every size range gets the fastest
    of those, and pairs NCCL would ignore are refused at their label."""
    from ..api import tune as tuned
    from ..render.tuner import against_json, against_text, tune_json, tune_table, tune_text
    typed = click.get_current_context().get_parameter_source("margin")
    if not against_nccl and typed is click.core.ParameterSource.COMMANDLINE:
        from ..errors import UsageError  # (the API takes the margin as `against_nccl`)
        raise UsageError(f"--margin {margin}: it is the margin of --against-nccl; add "
                         "--against-nccl, or leave --margin out")
    tuning = tuned(session, collective, sizes, nodes=nodes, nodes_param=nodes_param,
                   timeout=timeout, verify=not no_verify,
                   against_nccl=margin if against_nccl else None, channels=channels,
                   output=output)
    if output is not None:  # (written by the API)
        wrote(output)
    channels, found = tuning.channels, tuning.tables
    if tuning.margin is not None:
        (t,) = found
        show = against_json(t.against, t.against_notes, collective, tuning.margin,
                            tuning.source) if as_json else \
            against_text(t.against, t.against_notes, collective, tuning.margin)
        click.echo(show, nl=False)
    elif as_json:
        click.echo(tune_json([tune_table(t.envelope, collective, t.nccl, t.names, channels,
                                         t.nodes, t.ranks, t.labelled)
                              for t in found], tuning.source, tuning.per_nodes), nl=False)
    else:
        click.echo("\n".join(tune_text(t.envelope, collective, t.nccl, t.names, t.nodes, t.ranks,
                                       t.labelled) for t in found), nl=False)
    return EXIT_OK


COMMANDS = (export, tune)

"""`schedc synthesize`: the schedule that reaches the machine's exact optimum, written as a
`.sched` file (see `schedc.synthesize`)."""

from __future__ import annotations

from pathlib import Path

import click

from ..api.synthesizing import SynthesizeOptions
from ..render import schema
from .derived import Share, WholeOrAuto, api_option
from .options import EXIT_OK, json_option, limit_options, set_option
from .paths import InputPath, OutputPath


@click.command("synthesize")
@click.argument("file", type=InputPath())
@api_option(SynthesizeOptions, "collective", required=True, help="The collective to synthesize.")
@api_option(SynthesizeOptions, "over", metavar="EXPR",
            help="Its ranks, an expression of FILE (default: its first collective's, else "
                 "every gpu in declaration order).")
@api_option(SynthesizeOptions, "size", metavar="EXPR",
            help="Its buffer (default: FILE's first collective's; required if it has none).")
@api_option(SynthesizeOptions, "root", metavar="EXPR",
            help="broadcast, reduce: the root (default: FILE's, else the first rank).")
@click.option("--output", "-o", type=OutputPath(),
              help="Write the .sched file here (atomically); it imports FILE by a relative "
                   "path. Default: print it.")
@click.option("--force", is_flag=True, help="Replace the --output file if it exists.")
@api_option(SynthesizeOptions, "chunks", metavar="N|auto", param_type=WholeOrAuto(),
            help="Pipelined chunks (the file's `param chunks`); auto: the fewest within "
                 "--within of the optimum at α = 0.")
@api_option(SynthesizeOptions, "within", metavar="PCT", param_type=Share(),
            help="How close to the optimum (at α = 0) --chunks auto and the rounding come.")
@api_option(SynthesizeOptions, "name", metavar="NAME",
            help="The schedule's name (default: synthesized_KIND).")
@api_option(SynthesizeOptions, "units", metavar="N",
            help="Cut each shard into N units for the trees (default: the fewest powers of "
                 "two within --within/4); fewer make smaller MSCCL XML.")
@api_option(SynthesizeOptions, "max_ranks", metavar="N",
            help="Refuse more ranks than this before any work.")
@set_option
@limit_options
@json_option(schema.SYNTHESIZE)
def synthesize_command(file: Path, collective: str, over: str | None, size: str | None,
                       root: str | None, output: Path | None, force: bool, chunks: int | None,
                       within: float, name: str | None, units: int | None, max_ranks: int,
                       sets: tuple[str, ...], limits: dict[str, int], as_json: bool) -> int:
    """Pack trees toward the exact optimum of a collective on FILE's machine (the binding
    cut over all cuts, as `bound` reports it) and write them as a schedule, verified and
    timed by the compiler; --chunks auto comes within --within of what the trees reach at
    α = 0 (the optimum, unless a cut counts paths schedc's routes do not take: then it says so)."""
    from ..api import synthesize
    from ..render.synthesis import synthesis_json, synthesis_text
    result = synthesize(file, collective, over=over, size=size, root=root, output=output,
                        chunks=chunks, within=within, name=name, sets=sets,
                        max_ranks=max_ranks, units=units, force=force, **limits)
    written = None if output is None else str(output)  # (written by the API)
    if as_json:
        click.echo(synthesis_json(result, written), nl=False)
    else:
        if written is None:
            click.echo(result.text, nl=False)
        click.echo(synthesis_text(result, written), nl=False, err=written is None)
    return EXIT_OK


COMMANDS = (synthesize_command,)

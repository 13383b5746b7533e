"""`schedc synthesize`: the schedule that reaches the machine's exact optimum, written as a
`.sched` file (see `schedc.synthesize`)."""

from __future__ import annotations

from pathlib import Path

import click

from ..api.synthesizing import MAX_RANKS, PACKED
from ..render import schema
from .options import EXIT_OK, json_option, limit_options, set_option
from .paths import InputPath, OutputPath


def _chunks(value: str) -> int | None:
    if value == "auto":
        return None
    try:
        return int(value)
    except ValueError:
        raise click.BadParameter(f"a number of chunks or 'auto', not {value!r}") from None


def _percent(value: str) -> float:
    text = value.strip().removesuffix("%")
    try:
        number = float(text)
    except ValueError:
        raise click.BadParameter(f"a percentage such as 1 or 0.5%, not {value!r}") from None
    return number / 100


@click.command("synthesize")
@click.argument("file", type=InputPath())
@click.option("--collective", required=True,
              type=click.Choice(PACKED),
              help="The collective to synthesize.")
@click.option("--over", metavar="EXPR",
              help="Its ranks, an expression of FILE (default: its first collective's).")
@click.option("--size", metavar="EXPR", help="Its buffer (default: FILE's first collective's).")
@click.option("--root", metavar="EXPR",
              help="broadcast, reduce: the root (default: FILE's, else the first rank).")
@click.option("--output", "-o", type=OutputPath(),
              help="Write the .sched file here (atomically); it imports FILE by a relative "
                   "path. Default: print it.")
@click.option("--force", is_flag=True, help="Replace the --output file if it exists.")
@click.option("--chunks", default="auto", show_default=True, metavar="N|auto",
              help="Pipelined chunks (the file's `param chunks`); auto: the fewest within "
                   "--within of the optimum at α = 0.")
@click.option("--within", default="1%", show_default=True, metavar="PCT",
              help="How close to the optimum (at α = 0) --chunks auto and the rounding come.")
@click.option("--name", metavar="NAME", help="The schedule's name (default: synthesized_KIND).")
@click.option("--units", type=int, metavar="N",
              help="Cut each shard into N units for the trees (default: the fewest powers of "
                   "two within --within/4); fewer make smaller MSCCL XML.")
@click.option("--max-ranks", type=int, default=MAX_RANKS, show_default=True, metavar="N",
              help="Refuse more ranks than this before any work.")
@set_option
@limit_options
@json_option(schema.SYNTHESIZE)
def synthesize_command(file: Path, collective: str, over: str | None, size: str | None,
                       root: str | None, output: Path | None, force: bool, chunks: str,
                       within: str, name: str | None, units: int | None, max_ranks: int,
                       sets: tuple[str, ...], limits: dict[str, int], as_json: bool) -> int:
    """Pack trees toward the exact optimum of a collective on FILE's machine (the binding
    cut over all cuts, as `bound` reports it) and write them as a schedule, verified and
    timed by the compiler; --chunks auto comes within --within of what the trees reach at
    α = 0 (the optimum, unless a cut counts paths schedc's routes do not take: then it says so)."""
    from ..api import synthesize
    from ..errors import UsageError
    from ..render.files import write_atomically
    from ..render.synthesis import synthesis_json, synthesis_text
    if output is not None and not force and output.exists() and output.is_file():
        raise UsageError(f"{output} exists; --force replaces it")
    result = synthesize(file, collective, over=over, size=size, root=root, output=output,
                        chunks=_chunks(chunks), within=_percent(within), name=name, sets=sets,
                        max_ranks=max_ranks, units=units, **limits)
    written = None
    if output is not None:
        write_atomically(output, result.text)
        written = str(output)
    if as_json:
        click.echo(synthesis_json(result, written), nl=False)
    else:
        if written is None:
            click.echo(result.text, nl=False)
        click.echo(synthesis_text(result, written), nl=False, err=written is None)
    return EXIT_OK


COMMANDS = (synthesize_command,)

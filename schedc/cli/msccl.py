"""`validate`: an MSCCL XML file against one executor's rules, without importing it."""

from __future__ import annotations

from pathlib import Path

import click

from .options import EXIT_OK
from .paths import InputPath

EXECUTORS = ("msccl-executor-nccl", "msccl")


@click.command()
@click.argument("file", type=InputPath())
@click.option("--executor", type=click.Choice(EXECUTORS), required=True,
              help="Whose rules: Azure/msccl-executor-nccl's or microsoft/msccl's parser.")
@click.option("--max-steps", type=click.IntRange(1, 32768), metavar="N",
              help="The build's MSCCL_MAX_NUM_STEPS (default: 64 for msccl-executor-nccl's "
                   "default build, 256 for msccl).")
def validate(file: Path, executor: str, max_steps: int | None) -> int:
    """Check an MSCCL XML FILE against EXECUTOR's parser and limits: every rule it breaks,
    each at its line and column, with the executor's source line (exit 2), or a summary."""
    from ..api import validate_msccl
    click.echo(validate_msccl(str(file), executor, max_steps))
    return EXIT_OK


COMMANDS = (validate,)

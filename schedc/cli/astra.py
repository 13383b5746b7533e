"""`export astra`: a schedule as an ASTRA-sim custom collective, written into a folder."""

from __future__ import annotations

from pathlib import Path

import click

from ..render import schema
from .options import EXIT_OK, compiling, json_option, no_verify_option


@click.command("astra")
@compiling
@click.option("--schedule", "-s", "name", required=True, metavar="NAME",
              help="The schedule to write.")
@click.option("--output", "-o", "folder", required=True, metavar="DIR",
              type=click.Path(file_okay=False, path_type=Path),
              help="The folder to write the traces and configurations into.")
@click.option("--force", is_flag=True,
              help="Write into DIR even if it holds files (those written are replaced).")
@json_option(schema.ASTRA)
@no_verify_option
def export_astra_command(session, name: str, folder: Path, force: bool, as_json: bool,
                         no_verify: bool) -> int:
    """A schedule of FILE as an ASTRA-sim custom collective, verified first: per-rank Chakra
    traces NAME.<rank>.et of its sends and receives, the workload that calls it
    (workload.<rank>.et), system.json, network.yml and remote_memory.json. Run ASTRA-sim
    from DIR with the command printed."""
    from ..api import export_astra
    from ..export.astra_text import astra_json, astra_text
    astra = export_astra(session, name, verify=not no_verify, output=folder, force=force)
    click.echo(astra_json(astra, str(folder), list(astra.written)) if as_json
               else astra_text(astra, str(folder)), nl=False)
    return EXIT_OK

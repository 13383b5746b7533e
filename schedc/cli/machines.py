"""`schedc machine import` (an NCCL topology file or `nvidia-smi topo -m` output → a `.sched`
machine) and `schedc machine show` (a machine's hosts, devices, links, routes, drawings)."""

from __future__ import annotations

from pathlib import Path

import click

from ..api.machines import ImportOptions, ShowOptions
from ..render import schema
from .derived import api_option
from .options import EXIT_OK, compiling, json_option, wrote
from .paths import InputPath, OutputPath


@click.group("machine")
def machine() -> None:
    """Machines from what users have, and what a machine file says."""


@machine.command("import")
@click.argument("topology", type=InputPath())
@api_option(ImportOptions, "nvidia_smi",
            help="TOPOLOGY is the output of `nvidia-smi topo -m`, not an NCCL topology file.")
@api_option(ImportOptions, "hosts",
            help="The nominal value of the structural param `hosts`: copies of the host.")
@api_option(ImportOptions, "fabric", metavar="rail|single-switch|fat-tree:spines=S,oversub=R",
            help="The network between hosts, which NCCL's file cannot see.")
@api_option(ImportOptions, "nic_speed", metavar="RATE",
            help="The speed of NICs the file gives none for (e.g. 400Gbit/s).")
@api_option(ImportOptions, "nvlinks", metavar="N",
            help="With --sm: N NVLinks per GPU to an NVSwitch, for files without <gpu> (the "
                 "PCI tree alone) or nvidia-smi matrices.")
@api_option(ImportOptions, "sm", metavar="S",
            help="The GPUs' compute capability (80 A100, 90 H100, 100 B200) for --nvlinks.")
@click.option("--output", "-o", type=OutputPath(),
              help="Write the .sched machine here (atomically) instead of printing it.")
def import_command(topology: Path, nvidia_smi: bool, hosts: int, fabric: str,
                   nic_speed: str | None, nvlinks: int | None, sm: int | None,
                   output: Path | None) -> int:
    """An NCCL topology file (NCCL_TOPO_FILE, or NCCL_TOPO_DUMP_FILE's output) as a .sched
    machine, its bandwidths derived as NCCL derives them, each figure's comment citing the
    XML attribute and NCCL's rule."""
    from ..api import import_machine, machine_notes
    text = import_machine(topology, hosts=hosts, fabric=fabric, nic_speed=nic_speed,
                          nvlinks=nvlinks, sm=sm, nvidia_smi=nvidia_smi, output=output)
    if output is None:
        click.echo(text, nl=False)
    else:  # (written by the API)
        wrote(output)
        for note in machine_notes(text):  # (printed, the file's head says them)
            click.echo(f"note: {note}", err=True)
    return EXIT_OK


@machine.command("show")
@compiling
@json_option(schema.MACHINE)
@click.option("--host-svg", type=OutputPath(), help="Draw one host (SVG) into this file.")
@click.option("--fabric-svg", type=OutputPath(), help="Draw the fabric (SVG) into this file.")
@api_option(ShowOptions, "max_routes",
            help="Route from the first GPU to at most this many others, evenly spread (each "
                 "costs a search of the whole fabric).")
def show_command(session, as_json: bool, host_svg: Path | None, fabric_svg: Path | None,
                 max_routes: int) -> int:
    """A machine's hosts, devices by kind, links (class, bandwidth per direction, shared
    resources), the classes of the routes from the first GPU, and where an imported
    machine's figures came from."""
    from ..api import machine_summary
    from ..render.machine import machine_json, machine_text
    summary = machine_summary(session, max_routes, host_svg=host_svg, fabric_svg=fabric_svg)
    for drawn in (host_svg, fabric_svg):  # (drawn by the API)
        if drawn is not None:
            wrote(drawn)
    click.echo(machine_json(summary) if as_json else machine_text(summary), nl=False)
    return EXIT_OK


COMMANDS = (machine,)

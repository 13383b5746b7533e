"""`schedc nccl`: NCCL's own tuning model on the file's machine (its inputs, its table, its
choice for every size) and, with --explain, why at one size."""

from __future__ import annotations

import click

from ..api.nccl import NcclOptions
from ..render import schema
from .derived import api_option
from .options import EXIT_OK, compiling, json_option, no_verify_option


@click.command()
@compiling
@api_option(NcclOptions, "collective", metavar="C",
              help="One of NCCL's functions: allreduce, allgather, reduce_scatter, broadcast, "
                   "reduce (default: all).")
@api_option(NcclOptions, "nodes", metavar="N",
              help="nNodes: as if the machine had N such hosts (default: its own).")
@api_option(NcclOptions, "sm", metavar="SM",
              help="The GPUs' compute capability, like 90 for SM 9.0 (default: the "
                   "machine's `gpu ... sm S`, else 90).")
@api_option(NcclOptions, "channels", metavar="K",
              help="nChannels of the ring and tree graphs (NCCL's limit: 64).")
@click.option("--input", "inputs", multiple=True, metavar="NAME=VALUE",
              help="Override any input by NCCL's name, e.g. ring.bwIntra=20 (repeatable).")
@click.option("--explain", metavar="V=SIZE", multiple=True,
              help="Each candidate's terms at this size, next to schedc's own time "
                   "(repeatable: each size is explained).")
@api_option(NcclOptions, "max_bytes", metavar="SIZE",
            help="The choice bands cover 1 byte to this (bytes, or 16GiB...).")
@json_option(schema.NCCL)
@no_verify_option
def nccl(session, collective: str | None, nodes: int | None, sm: int | None,
         channels: int | None, inputs: tuple[str, ...], explain: tuple[str, ...],
         max_bytes: int | str,
         as_json: bool, no_verify: bool) -> int:
    """NCCL's choice of algorithm and protocol on FILE's machine, by NCCL's own model."""
    from ..api import nccl_model as model_of
    from ..render.nccl import nccl_json, nccl_text
    model = model_of(session, collective=collective, nodes=nodes, sm=sm, channels=channels,
                     inputs=inputs, explain=explain, max_bytes=max_bytes,
                     verify=not no_verify)
    click.echo(nccl_json(model) if as_json else nccl_text(model), nl=False)
    for note in model.notes:  # --fail / --derate: what NCCL's inputs do not see
        click.echo(f"note: {note}", err=True)
    return EXIT_OK


COMMANDS = (nccl,)

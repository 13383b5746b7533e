"""`schedc scale`: closed forms in a structural param (hosts, ranks, chunks), fitted on
compiled instances and checked on others (see `analysis.scale`)."""

from __future__ import annotations

import click

from ..api.analysing import ScaleOptions
from ..render import schema
from .derived import api_option
from .options import EXIT_OK, compiling, json_option, no_verify_option, schedule_option


@click.command("scale")
@compiling
@click.option("--in", "param", required=True, metavar="PARAM",
              help="The structural param (a unitless integer, e.g. hosts) to scale in.")
@api_option(ScaleOptions, "start", help="The smallest value of PARAM the forms are fitted from.")
@click.option("--no-bound", is_flag=True, help="Skip the cut-set and end-host bounds.")
@api_option(ScaleOptions, "at", metavar="N",
            help="Also give the time at PARAM = N: from the form of the piece holding N, else "
                 "compiled at N.")
@click.option("--extrapolate", is_flag=True,
              help="With --at: past the last piece's checked range, evaluate its form "
              "(labelled extrapolated) instead of compiling.")
@schedule_option
@json_option(schema.SCALE)
@no_verify_option
def scale_command(session, param: str, start: int, no_bound: bool, at: tuple[int, ...],
                  extrapolate: bool, schedules, as_json: bool, no_verify: bool) -> int:
    """Each schedule's time as a formula in a structural param, piece by piece, each piece
    proved or checked (fitted exactly on compiled instances, equal to compiles at others),
    with its bounds, the ratio time/bound, the limits as PARAM grows, and a knob's optimum."""
    from ..api import scale
    from ..render.scale import scale_json, scale_text
    results = scale(session, param, schedules, start=start, bounds=not no_bound,
                    verify=not no_verify, at=at, extrapolate=extrapolate)
    program = session.program
    click.echo(scale_json(program, results, session.compiles) if as_json
               else scale_text(program, results), nl=False)
    return EXIT_OK


COMMANDS = (scale_command,)

"""`schedc whatif`: each single failure of a class of items, and what it costs each schedule
(see `analysis.whatif`)."""

from __future__ import annotations

import click

from ..api.changing import WhatIfOptions
from ..render import schema
from .derived import api_option
from .options import EXIT_OK, compiling, json_option, no_verify_option, schedule_option


@click.command("whatif")
@compiling
@api_option(WhatIfOptions, "cls", metavar="CLASS",
              help="What fails, one at a time: the links of a link class (nic, uplink, ...), "
                   "or the devices of a kind (switch) or family (spine).")
@click.option("--worst", is_flag=True, help="Only the worst failure of each schedule and its "
                                            "formula in d, not the whole table.")
@api_option(WhatIfOptions, "max_work",
              help="Refuse before timing when failures × (devices + links + transfers) is "
                   "larger: each failure is the machine copied, routed and timed anew.")
@schedule_option
@json_option(schema.WHATIF)
@no_verify_option
def whatif_command(session, cls: str, worst: bool, max_work: int, schedules, as_json: bool,
                   no_verify: bool) -> int:
    """Fail each item of a class in turn (routes recomputed) and time every schedule on what
    is left; the worst failure, and the time with its item derated by a factor d as a
    formula. Symmetric failures are computed once."""
    from ..api import whatif
    from ..render.whatif import whatif_json, whatif_text
    result = whatif(session, cls, schedules, verify=not no_verify, max_work=max_work)
    path = session.program.path
    click.echo(whatif_json(path, result) if as_json else whatif_text(path, result, worst), nl=False)
    return EXIT_OK


COMMANDS = (whatif_command,)

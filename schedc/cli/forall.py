"""`schedc verify FILE --for-all PARAM [--from N] [--require-proof]`: the options, and the
run, of verification for every value of a structural param."""

from __future__ import annotations

import functools
from pathlib import Path

import click

from ..api.forall import ForAllOptions
from ..render import schema
from .derived import api_option
from .options import EXIT_FAILED, EXIT_OK


def for_all_options(func):
    """--for-all, --from and --require-proof, passed on as one `for_all` argument (what goes
    with what is `VerifyOptions`'s to say)."""
    @click.option("--for-all", "param", metavar="PARAM", default=None,
                  help="Prove it for every value of this structural param (affine schedules; "
                       "others are verified at instances).")
    @api_option(ForAllOptions, "start", metavar="N",
                help="--for-all: from this value on (default: the smallest that compiles).")
    @api_option(ForAllOptions, "require_proof",
                help="--for-all: exit 1 when it is not proved (unknown).")
    @functools.wraps(func)
    def wrapper(*args, param, start, require_proof, **kwargs):
        return func(*args, for_all={"param": param, "start": start,
                                    "require_proof": require_proof}, **kwargs)
    return wrapper


def verify_for_all(file: Path, schedules, sets, as_json: bool, limits, *, param: str,
                   start: int | None, require_proof: bool) -> int:
    from ..api import for_all_holds
    from ..api import verify_for_all as run
    from ..render.forall import for_all_json, for_all_text
    from ..render.text import dump_json
    from ..render.verdict import verdict_json
    results = run(file, param, sets, schedules, start=start, **limits)
    if as_json:
        entries = [{**(verdict_json(r.nominal) if r.nominal else {}), "for_all": for_all_json(r)}
                   for r in results]
        click.echo(dump_json({"schema": schema.VERIFY_FOR_ALL,
                              "files": [{"file": str(file), "schedules": entries}],
                              "errors": []}), nl=False)
    else:
        click.echo("\n".join(for_all_text(r) for r in results))
    return EXIT_OK if for_all_holds(results, require_proof=require_proof) else EXIT_FAILED

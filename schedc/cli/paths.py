"""Path options that know whether they name an input or an output of the run, so that an
output naming an input (through any link) is refused while the command line is parsed,
before any work (`schedc.files` holds the policy)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from ..api import RUN, Run, check_output


def current_run(ctx: click.Context | None) -> Run:
    """The run of this command line: made with the root context, dropped when it closes."""
    run = RUN.get()
    if run is None:
        run = Run()
        token = RUN.set(run)
        if ctx is not None:
            ctx.find_root().call_on_close(lambda: RUN.reset(token))
    return run


class InputPath(click.Path):
    """A file the command reads; noted for the output check (read later, by `read_input`)."""

    def __init__(self, dir_okay: bool = False) -> None:
        super().__init__(dir_okay=dir_okay, path_type=Path)

    def convert(self, value, param, ctx):
        path = super().convert(value, param, ctx)
        try:
            info = os.stat(path)
        except (OSError, ValueError):
            return path  # missing: said when it is read, with the reader's words
        current_run(ctx).add_input(path, (info.st_dev, info.st_ino))
        return path


class OutputPath(click.Path):
    """A file the command writes: checked now against the run's inputs and for what it is
    (a missing folder, a directory, a block device are refused)."""

    def __init__(self) -> None:
        # (a directory passes click, to be refused by `check_output` in the API's words)
        super().__init__(dir_okay=True, path_type=Path)

    def convert(self, value, param, ctx):
        path = super().convert(value, param, ctx)
        current_run(ctx)
        option = param.opts[-1] if param is not None and param.opts else ""
        return check_output(path, option)

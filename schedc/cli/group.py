"""The `schedc` group, whose commands are imported when one is asked for by name.

Building the commands imports the public API (their options are derived from its option
classes) and click's decorators run for ~200 options: about 50 ms of a `schedc --help` that
should cost little more than Python and click (issue 38: ≤ 0.15 s). So the group knows each
command's name, the module that defines it and the first sentence of its help, which is all
that `schedc --help` prints; `schedc time ...` imports `compiling` alone.
`tests/test_start_up_imports.py` checks that each sentence is the command's own (the group's
help equals the one the loaded commands print) and that `--help` imports no other module.
"""

from __future__ import annotations

import importlib
from collections.abc import MutableMapping

import click
from click.utils import make_default_short_help

# name -> (module of schedc.cli defining it in its COMMANDS, the first sentence of its help:
# what click shortens for the group's list)
LAZY: dict[str, tuple[str, str]] = {
    "bound": ("analysing", "How far each schedule of FILE is from the physical limit: cut-set "
              "and end-host lower bounds, the overlapped bound, and what holds each schedule "
              "back."),
    "calibrate": ("measuring", "Fit the machine files' params to nccl-tests LOGs by least "
                  "squares on log time (with NCCL's constants as priors, inside physical "
                  "bounds); show every row's measured and predicted time, the error on fit and "
                  "held-out rows, and checks of the model."),
    "check": ("analysing", "Compile and verify every .sched file in PATHS (files or "
              "directories), print its reports and evaluate its expects."),
    "compare": ("compiling", "All schedules of FILE side by side (the seed's §3 table)."),
    "emit": ("compiling", "Dump one pipeline stage: ast, ir, loads, formula, or the routes "
             "each schedule uses."),
    "eval": ("analysing", "Evaluate and print every `report NAME = EXPR` of FILE, in readable "
             "units."),
    "export": ("exporting", "Write a schedule in another system's format."),
    "machine": ("machines", "Machines from what users have, and what a machine file says."),
    "nccl": ("nccl", "NCCL's choice of algorithm and protocol on FILE's machine, by NCCL's own "
             "model."),
    "predict": ("measuring", "FILE's predicted time against measured rows of nccl-tests LOGs, "
                "without fitting: a table shaped like the log's, in its terms (time, algbw, "
                "busbw), with the resource that bounds each row and a verdict: within the "
                "fit's stated uncertainty or not."),
    "report": ("reporting", "One HTML page about FILE: the comparison table, every formula "
               "typeset, time against each param with the crossovers marked, each schedule "
               "round by round, the bounds, and the file's reports and expects."),
    "scale": ("scaling", "Each schedule's time as a formula in a structural param, piece by "
              "piece, each piece proved or checked (fitted exactly on compiled instances, "
              "equal to compiles at others), with its bounds, the ratio time/bound, the limits "
              "as PARAM grows, and a knob's optimum."),
    "sensitivity": ("analysing", "dT/dp and the elasticity (p/T)·dT/dp of each schedule's "
                    "time, for every param."),
    "solve": ("analysing", "Solve EQUATION for one param, regime by regime: every solution, "
              "and which side is smaller in between (e.g."),
    "sweep": ("analysing", "Each schedule's time over a range of one param, from its compiled "
              "formula; a structural param (a unitless integer such as a host count) is "
              "compiled at each point."),
    "synthesize": ("synthesizing", "Pack trees toward the exact optimum of a collective on "
                   "FILE's machine (the binding cut over all cuts, as `bound` reports it) and "
                   "write them as a schedule, verified and timed by the compiler; --chunks auto "
                   "comes within --within of what the trees reach at α = 0 (the optimum, unless "
                   "a cut counts paths schedc's routes do not take: then it says so)."),
    "time": ("compiling", "Formula, regime, value and traffic of each schedule in FILE."),
    "tune": ("exporting", "The fastest schedule of FILE per size range, from exact crossovers, "
             "as a table for NCCL's example tuner plugin (nccl_tuner.conf)."),
    "verify": ("compiling", "Check that each schedule computes its collective."),
    "whatif": ("whatif", "Fail each item of a class in turn (routes recomputed) and time every "
               "schedule on what is left; the worst failure, and the time with its item "
               "derated by a factor d as a formula."),
}


def _commands_of(module: str) -> tuple[click.Command, ...]:
    """The commands a module of schedc.cli defines (its COMMANDS), imported now."""
    found = importlib.import_module(f"{__package__}.{module}")
    if module == "exporting":  # `export astra` lives in its own module
        from .astra import export_astra_command
        found.export.add_command(export_astra_command)
    return tuple(found.COMMANDS)


class LazyGroup(click.Group):
    """A click group whose commands (LAZY) are imported by name when asked for."""

    def __init__(self, *args, **kwargs) -> None:
        self._loaded: MutableMapping[str, click.Command] = {}
        super().__init__(*args, **kwargs)

    @property
    def commands(self) -> MutableMapping[str, click.Command]:
        """Every command, all imported (for code that walks them; a run asks for one)."""
        for name in LAZY:
            self.get_command(None, name)  # type: ignore[arg-type]
        return self._loaded

    @commands.setter
    def commands(self, value: MutableMapping[str, click.Command]) -> None:
        self._loaded = dict(value)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*LAZY, *self._loaded})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self._loaded and cmd_name in LAZY:
            for command in _commands_of(LAZY[cmd_name][0]):
                self._loaded.setdefault(command.name or "", command)
        return self._loaded.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The list of `schedc --help`, as click writes it (Group.format_commands), from the
        first sentences in LAZY: no command is imported."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = [(name, make_default_short_help(LAZY[name][1], limit) if name in LAZY
                 else self._loaded[name].get_short_help_str(limit)) for name in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

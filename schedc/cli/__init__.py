"""The `schedc` command line: a thin layer over the pipeline.

Commands follow the pipeline: `emit` dumps a stage; `time` and `compare` report formulas;
`verify` checks data flow; `solve`, `sensitivity` and `sweep` analyse times; `bound` compares
them with the physical limit; `eval` prints `report`s; `check` runs a file's expects. Each
command lives in a module of this package by what it does, and gets its `Session` from
`options.compiling`.

Exit codes: 0 ok; 1 a check or verification failed; 2 bad input or usage; 70 a bug in
schedc. Errors in input print `file:line:col: error: ...`, the source line and a caret —
never a traceback.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import sys
import warnings
from typing import NoReturn

import click

from .group import LazyGroup
from .state import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_OK, JSON_REQUESTED, KEPT

EXIT_UNWRITTEN = 120  # as CPython exits when it cannot flush stdout at exit


def _show_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """`--version`, read from the package metadata only when asked (importlib.metadata
    costs about 30 ms, which `--help` and every command would pay otherwise)."""
    if not value or ctx.resilient_parsing:
        return
    import schedc
    click.echo(f"schedc, version {schedc.__version__}")
    ctx.exit()


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=_show_version, help="Show the version and exit.")
def cli() -> None:
    """schedc: compile collective-communication schedules to closed-form times.

    Write a topology and schedules in a .sched file; schedc derives each schedule's time
    T = Σ_rounds (α + max_resources bytes/bandwidth) as a formula in your params.
    """


def main(argv: list[str] | None = None, *, exiting: bool = False) -> None:
    """Run a command, turning every schedc error into a message and exit code 2 (and, when the
    command was given --json, a `schedc.error/1` object on stdout as well). `exiting`: the
    process exits next without teardown (`entry`), so its sessions are not freed."""
    from .progress import progress_bar
    requested = JSON_REQUESTED.set(False)
    collecting = gc.isenabled()
    # No cyclic collection while a command runs: a compile makes few reference cycles (about
    # 50,000 objects for 16.9 M transfers), but each full collection walks every object the
    # libraries' imports made (SymPy's alone are ~10^5) — a third of `compare`'s time.
    # tests/test_gc_control.py checks that memory stays bounded without it.
    gc.disable()
    try:
        # No library's RuntimeWarning (NumPy's overflow in a cast, matplotlib's in a tick
        # computation) reaches the user's terminal: schedc says what matters in its own words,
        # and its own warnings are printed, not raised through `warnings`. SCHEDC_DEBUG shows them.
        with progress_bar(), warnings.catch_warnings():
            if not os.environ.get("SCHEDC_DEBUG"):
                warnings.simplefilter("ignore")
            code = cli.main(args=argv, prog_name="schedc", standalone_mode=False)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.ClickException as exc:
        exc.show()
        code = exc.exit_code
        _json_error(exc.format_message())
    except click.exceptions.Abort:
        click.echo("schedc: aborted", err=True)
        code = EXIT_BAD_INPUT
    except Exception as exc:  # schedc's errors, a lost stdout, or a bug: see _exit_code
        code = _exit_code(exc)
    finally:
        JSON_REQUESTED.reset(requested)
        if not exiting:  # as it was, for a program that runs commands in-process
            KEPT.clear()
            if collecting:
                gc.enable()
    sys.exit(code if isinstance(code, int) else EXIT_OK)


def entry() -> NoReturn:
    """The `schedc` program (`python -m schedc` and the installed script): `main`, then an
    exit without the interpreter's teardown — freeing every module's objects one by one and a
    last collection, ~0.1 s after a command that has finished its work. Output is flushed and
    `atexit` handlers run first; every file a command writes is closed by then. Programs that
    call `main` themselves keep their interpreter: it only raises SystemExit."""
    code = EXIT_OK
    try:
        main(exiting=True)
    except SystemExit as exc:  # (main's code is always an int)
        code = exc.code if isinstance(exc.code, int) else EXIT_OK
    atexit._run_exitfuncs()  # (first: what a handler prints is flushed below)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:  # the reader went away: as `main` treats it
            os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
        except (OSError, ValueError) as exc:  # a full disk, a closed stream: output is lost
            if stream is sys.stdout:
                _say_lost(exc)
                code = code or EXIT_UNWRITTEN
    os._exit(code)


def _say_lost(exc: Exception) -> None:
    with contextlib.suppress(OSError, ValueError):  # (stderr may be gone too)
        print(f"schedc: cannot write the output: {getattr(exc, 'strerror', None) or exc}",
              file=sys.stderr, flush=True)


def _exit_code(exc: Exception) -> int:
    """Say what an exception a command raised means and give the exit code: schedc's errors
    (and input too deep or too big to process) as diagnostics, a pipe closed by its reader as
    success, a lost stdout as such, anything else as a bug in schedc (re-raised under
    SCHEDC_DEBUG). schedc.errors is imported here, not at the top: `--help` imports no stage."""
    from ..errors import SchedcError
    if isinstance(exc, RecursionError):
        exc = SchedcError("the input is nested too deeply to process")
    elif isinstance(exc, MemoryError):
        exc = SchedcError("out of memory; lower --max-transfers or simplify the input")
    if isinstance(exc, SchedcError):
        return _report(exc)
    if isinstance(exc, BrokenPipeError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    if isinstance(exc, OSError):  # writing stdout failed (a full disk): not a bug in schedc
        if exc.filename is not None:
            raise exc  # (an error about a named file is a bug: files go through schedc.files)
        _say_lost(exc)
        return EXIT_UNWRITTEN
    if os.environ.get("SCHEDC_DEBUG"):
        raise exc
    click.echo(f"schedc: internal error: {type(exc).__name__}: {exc}\n"
               "  this is a bug in schedc; please report it with the input "
               "(SCHEDC_DEBUG=1 shows the traceback)", err=True)
    return EXIT_INTERNAL


def _report(error) -> int:
    """The diagnostic on stderr; with --json, the error object on stdout too."""
    click.echo(error.render(), err=True)
    _json_error(error)
    return error.exit_code


def _json_error(error) -> None:
    """With --json, the error (a SchedcError, or a usage error's message) as a schedc.error/1
    object on stdout."""
    if JSON_REQUESTED.get():
        from ..errors import SchedcError
        from ..render.errors import error_json
        if not isinstance(error, SchedcError):
            error = SchedcError(error)
        click.echo(error_json([error]), nl=False)


if __name__ == "__main__":  # pragma: no cover
    entry()

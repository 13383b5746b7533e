"""What other systems read: `export_msccl` (a schedule as an MSCCL XML algorithm, and
`validate_msccl`, a file against an executor's rules), `export_astra` (as an ASTRA-sim custom
collective). NCCL tuner tables are `tuning.py`'s, the report page `reporting.py`'s."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..choices import EXECUTORS, LAYOUTS, NCCL_EXECUTOR, NCCL_PROTOCOLS
from ..limits import MAX_CHANNELS, MAX_SIZE, MAX_STEP_IDS
from ..words import counted
from .compiling import refusal
from .options import Options, byte_size, choice, count

if TYPE_CHECKING:
    from ..export.astra import AstraExport
    from ..session import Session


@dataclass(frozen=True)
class ValidateOptions(Options):
    """`verify FILE.xml --executor E [--max-steps N]`; `export msccl`'s are these too."""

    executor: str | None = choice(None, "--executor", EXECUTORS)
    max_steps: int | None = count(None, "--max-steps", 1, MAX_STEP_IDS)


@dataclass(frozen=True)
class ExportMscclOptions(Options):
    proto: str = choice("Simple", "--proto", NCCL_PROTOCOLS)
    channels: int = count(1, "--channels", 1, MAX_CHANNELS)
    executor: str = choice(NCCL_EXECUTOR, "--executor", EXECUTORS)
    max_steps: int | None = count(None, "--max-steps", 1, MAX_STEP_IDS)
    # bytes, or text with a unit ("192MiB"); max_bytes None: the schedule's own size
    min_bytes: int = byte_size(0, "--min-bytes", 0, MAX_SIZE)
    max_bytes: int | None = byte_size(None, "--max-bytes", 0, MAX_SIZE)
    layout: str = choice("inplace", "layout", LAYOUTS)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_bytes is not None and self.max_bytes < self.min_bytes:
            from ..errors import UsageError
            raise UsageError("--max-bytes is less than --min-bytes")


def export_msccl(session: Session, schedule: str, *, proto: str = ExportMscclOptions.proto,
                 channels: int = ExportMscclOptions.channels,
                 executor: str = ExportMscclOptions.executor,
                 min_bytes: int | str = ExportMscclOptions.min_bytes,
                 max_bytes: int | str | None = ExportMscclOptions.max_bytes, verify: bool = True,
                 max_steps: int | None = ExportMscclOptions.max_steps,
                 layout: str = ExportMscclOptions.layout, output: str | Path | None = None,
                 force: bool = False) -> str:
    """A schedule as an MSCCL XML algorithm (the text), verified first, within `executor`'s
    limits ("msccl-executor-nccl", or "msccl": microsoft/msccl, which also names
    reduce-scatter as msccl-tools does): `proto` the NCCL protocol it runs with, every
    transfer cut into `channels` pieces, for message sizes from `min_bytes` to `max_bytes`
    (bytes, or text with a unit: "192MiB"; by default the schedule's own size at the nominal
    point, so that the file read back says what size it was made for: an executor picks it for
    `minBytes <= nBytes <= maxBytes`, msccl-executor-nccl msccl_lifecycle.cc:335);
    `max_steps` the executor build's MSCCL_MAX_NUM_STEPS (default 64 for
    msccl-executor-nccl, 256 for msccl); `layout` "inplace", "outofplace" or "both".
    `output`: also write it to this file (whole or not at all; an existing file is refused
    before any work unless `force`).

        >>> xml = schedc.export_msccl(session, "ring")
        >>> xml.splitlines()[0]
        '<algo name="ring" ...'
    """
    from ..errors import UsageError
    from ..export.msccl_xml import TooLarge
    from ..export.msccl_xml import export_msccl as write_xml
    # (a size may be text with a unit, "192MiB": the field reads it into an int)
    o = ExportMscclOptions(proto, channels, executor, max_steps,
                           min_bytes, max_bytes, layout)  # type: ignore[arg-type]
    if output is not None:
        from ..files import check_replaced
        check_replaced(output, force)
    name = session.selected((schedule,))[0]
    if o.max_bytes is None:  # the schedule's own size (checked against min_bytes again)
        o = replace(o, max_bytes=_schedule_size(session, name))
    if verify:
        from ..analysis.verify.verdict import verdict
        found = verdict(session, name)
        if not found.ok:
            raise refusal([found])
    def write(at: Session) -> str:
        assert o.max_bytes is not None
        return write_xml(at.schedule(name), name, o.proto, o.channels, o.executor,
                         o.min_bytes, o.max_bytes, o.max_steps, o.layout)
    try:
        text = write(session)
    except TooLarge as refused:  # a size refusal: fewer chunks may fit
        fewer = _fewer_chunks(session, write)
        if fewer is None:
            raise
        raise UsageError(f"{refused.message}; with --set chunks={fewer} (this file's pipelined "
                         f"chunks, {session.structural()['chunks']} now) it fits"
                         if fewer else f"{refused.message}, and no --set chunks fits",
                         refused.span, refused.notes) from None
    if output is not None:
        from ..render.files import write_atomically
        write_atomically(Path(output), text)
    return text


def _fewer_chunks(session: Session, write) -> int | None:
    """For a file whose pipeline depth is the structural param `chunks` (as `synthesize`
    writes): the most chunks below the current count whose XML fits (0: none does; each
    chunk adds steps, so it is found by bisection), or None without such a param."""
    from ..export.msccl_xml import TooLarge
    now = session.structural().get("chunks")
    if now is None or now < 2:
        return None

    def fits(k: int) -> bool:
        try:
            write(session.at({"chunks": k}))
        except TooLarge:
            return False
        return True

    lo, hi = 0, now  # chunks lo fit (0: vacuously), hi do not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def _schedule_size(session: Session, name: str) -> int:
    """The schedule's collective size at the nominal point, in whole bytes (rounded up, so
    that the executor still picks the file for that size), within int64."""
    import math

    from ..model.ir import linear_value
    size = linear_value(session.schedule(name).collective.size, session.program.nominal)
    return min(max(math.ceil(size), 0), MAX_SIZE)


def validate_msccl(path: str, executor: str | None,
                   max_steps: int | None = ValidateOptions.max_steps) -> str:
    """Check an MSCCL XML file against one executor's rules without importing it: a summary
    when it would load, else `ExecutorRulesError` listing every violation at its line and
    column. `max_steps`: the build's MSCCL_MAX_NUM_STEPS (default: the executor's own).

        >>> schedc.validate_msccl("tests/fixtures/hierarchical.xml", "msccl")
        'tests/fixtures/hierarchical.xml: msccl would load it ...'
    """
    from ..errors import UsageError
    from ..msccl.document import check_file
    from ..msccl.rules import ExecutorRulesError
    if executor is None:
        raise UsageError("--max-steps goes with --executor")
    max_steps = ValidateOptions(executor, max_steps).max_steps  # (and the executor's name)
    if Path(path).suffix.lower() != ".xml":
        raise UsageError(f"{path}: --executor checks an MSCCL XML file (FILE.xml) against the "
                         "executor's rules; a .sched file is verified without --executor")
    found, counts = check_file(path, executor, max_steps)
    if found:
        raise ExecutorRulesError(executor, found)
    gpus, tbs, steps = counts
    return (f"{path}: {executor} would load it ({counted(gpus, 'gpu')}, at most "
            f"{counted(tbs, 'thread block')} and {counted(steps, 'step')} in one thread block)")


def export_astra(session: Session, schedule: str, *, prefix: str | None = None,
                 verify: bool = True, output: str | Path | None = None,
                 force: bool = False) -> AstraExport:
    """A schedule as an ASTRA-sim custom collective at the file's nominal point, verified
    first: per-rank Chakra traces of its sends and receives, the workload that calls it and
    the system, network and memory configurations (`.files()` makes them). `output`: also
    write them into this folder (all or none; a folder holding files is refused before any
    work unless `force`, which replaces the files written), `.written` naming them.

        >>> astra = schedc.export_astra(session, "hierarchical")
        >>> astra.ranks, [d.npus for d in astra.network.dimensions]
        (16, [8, 2])
    """
    from ..export.astra import export_astra as astra_files
    if output is not None:
        from ..files import check_output_folder
        check_output_folder(output, force)
    name = session.selected((schedule,))[0]
    if verify:
        from ..analysis.verify.verdict import verdict
        found = verdict(session, name)
        if not found.ok:
            raise refusal([found])
    program = session.program
    program.require_machine(name)
    timing = session.timing(name)
    made = astra_files(session.schedule(name), program.topology, program.alpha,
                       program.nominal, timing.time, prefix, verified=verify)
    if output is None:
        return made
    from ..render.files import write_folder
    return replace(made, written=tuple(write_folder(output, made.files(), force)))

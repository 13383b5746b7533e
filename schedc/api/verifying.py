"""Which verification `schedc verify` runs, and what goes with what: a `.sched` file or a
folder (`verify_files`), one file for every value of a structural param (`verify_for_all`,
`--for-all`), or an MSCCL XML file against an executor's rules (`validate_msccl`,
`--executor`). The options of the three are one frozen dataclass here, so that a combination
that means nothing is refused with the same words by a script and by the command line."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import UsageError
from .exporting import ValidateOptions
from .forall import ForAllOptions
from .options import text


@dataclass(frozen=True)
class VerifyOptions(ValidateOptions, ForAllOptions):
    """`verify`'s options: the executor's (`ValidateOptions`), --for-all's (`ForAllOptions`)
    and what the ordinary verification takes (`schedules`, `sets`, `machine`, `ranks`, and
    `json`: the executor's check prints one line, no JSON). `mode` says which runs."""

    for_all: str | None = text(None, "--for-all")
    schedules: tuple[str, ...] = field(default=())
    sets: tuple[str, ...] = field(default=())
    machine: object | None = None
    ranks: str | None = None
    json: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.executor is not None:
            if self.schedules or self.sets or self.json or self.machine is not None \
                    or self.ranks is not None or self.for_all is not None:
                raise UsageError("--executor checks one MSCCL XML file (FILE.xml) and takes no "
                                 "--schedule, --set, --json, --machine, --ranks or --for-all")
        elif self.max_steps is not None:
            raise UsageError("--max-steps goes with --executor")
        if self.for_all is None:
            if self.start is not None or self.require_proof:
                raise UsageError("--from and --require-proof go with --for-all PARAM")
        elif self.machine is not None or self.ranks is not None:
            raise UsageError("--for-all reads a .sched file; --machine and --ranks are for "
                             "MSCCL XML")

    @property
    def mode(self) -> str:
        """"executor" (`validate_msccl`), "for-all" (`verify_for_all`) or "files"
        (`verify_files`)."""
        if self.executor is not None:
            return "executor"
        return "files" if self.for_all is None else "for-all"

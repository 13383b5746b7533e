"""`schedc verify FILE --for-all PARAM`: verification for every value of a structural param."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .compiling import LoadOptions, load
from .options import Options, count, switch

if TYPE_CHECKING:
    from ..analysis.forall.family import ForAll


@dataclass(frozen=True)
class ForAllOptions(Options):
    # (no lower end here: the smallest valid size is the family's, which `for_all` says)
    start: int | None = count(None, "--from", None)
    require_proof: bool = switch("--require-proof")  # the command's exit code: 1 if unknown


def verify_for_all(path: str | Path, param: str, sets: Iterable[str] = (),
                   schedules: Iterable[str] = (), *, start: int | None = ForAllOptions.start,
                   max_transfers: int | None = LoadOptions.max_transfers,
                   max_rounds: int | None = LoadOptions.max_rounds) -> list[ForAll]:
    """Does each schedule (default: all of the file) compute its collective for every value
    of the structural param `param` from `start` (default: the family's smallest valid
    size) on? One `ForAll` per schedule: `status` "proved", "refuted" (with a counterexample
    in the param and the ordinary verifier's at its smallest instance) or "unknown" (with
    the instances verified instead). Bad input (no such param, not structural, `start`
    below the smallest valid size) raises a positioned error.

        >>> [r.status for r in schedc.verify_for_all("schedules/seed/nvlink_hosts.sched", "hosts")]
        ['proved', 'proved']
    """
    from ..analysis.forall.family import for_all
    from ..errors import UsageError
    start = ForAllOptions(start).start
    if Path(path).is_dir():
        raise UsageError("--for-all needs one FILE, not a directory")
    session = load(path, sets, max_transfers=max_transfers, max_rounds=max_rounds)
    return for_all(session, param, session.selected(schedules), start)


def for_all_holds(results: Iterable[ForAll], *, require_proof: bool = ForAllOptions.require_proof
                  ) -> bool:
    """The verdict of a `verify_for_all` run (the command exits 1 when it is False): no
    schedule refuted, and with `require_proof` every one proved (an "unknown", verified at
    instances only, does not hold then).

        >>> schedc.for_all_holds(schedc.verify_for_all("schedules/seed/nvlink_hosts.sched",
        ...                                            "hosts"), require_proof=True)
        True
    """
    statuses = {r.status for r in results}
    return "refuted" not in statuses and not (require_proof and "unknown" in statuses)


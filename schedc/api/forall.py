"""`schedc verify FILE --for-all PARAM`: verification for every value of a structural param."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from .arguments import optional_whole
from .compiling import load

if TYPE_CHECKING:
    from ..analysis.forall.family import ForAll


def verify_for_all(path: str | Path, param: str, sets: Iterable[str] = (),
                   schedules: Iterable[str] = (), *, start: int | None = None,
                   max_transfers: int | None = None, max_rounds: int | None = None
                   ) -> list[ForAll]:
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
    start = optional_whole(start, "--from", None)  # (the smallest valid one: for_all says)
    if Path(path).is_dir():
        raise UsageError("--for-all needs one FILE, not a directory")
    session = load(path, sets, max_transfers=max_transfers, max_rounds=max_rounds)
    return for_all(session, param, session.selected(schedules), start)

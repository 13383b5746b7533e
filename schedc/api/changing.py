"""What-if, from the API: `whatif`, every single failure of a class of items, each
schedule's time, the worst one, and its time as a formula in a derating factor d
(`schedc.analysis.whatif`). The failures and deratings of one compile are `load`'s `fail`
and `derate`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..limits import MAX_FAILURE_WORK
from .compiling import verified_timings

if TYPE_CHECKING:
    from ..analysis.whatif import WhatIf
    from ..session import Session


def whatif(session: Session, cls: str = "nic", schedules: Iterable[str] = (), *,
           verify: bool = True, max_work: int = MAX_FAILURE_WORK) -> WhatIf:
    """Fail each item of class `cls` (a link class, a device kind or a device family) in
    turn and time the named schedules (default: all) on what is left; symmetric failures
    are timed once. Verified first, on the whole machine, unless `verify=False`. Refused
    before any failure is timed when failures × (devices + links + transfers) pass
    `max_work` (`limits.MAX_FAILURE_WORK`).

        >>> w = schedc.whatif(session, "nic")
        >>> len(w.items), w.symmetry["ring"].orbits
        (16, 8)
    """
    from ..analysis.whatif import whatif as run
    names = tuple(session.selected(tuple(schedules)))
    verified_timings(session, names, verify)
    return run(session, cls, names, max_work)

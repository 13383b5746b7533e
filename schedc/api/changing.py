"""What-if, from the API: `whatif`, every single failure of a class of items, each
schedule's time, the worst one, and its time as a formula in a derating factor d
(`schedc.analysis.whatif`). The failures and deratings of one compile are `load`'s `fail`
and `derate`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..limits import MAX_FAILURE_WORK
from .compiling import verified_timings
from .options import Options, count, text

if TYPE_CHECKING:
    from ..analysis.whatif import WhatIf
    from ..session import Session


@dataclass(frozen=True)
class WhatIfOptions(Options):
    cls: str = text("nic", "--class")  # a link class, a device kind or family
    max_work: int = count(MAX_FAILURE_WORK, "--max-failure-work")


def whatif(session: Session, cls: str = WhatIfOptions.cls, schedules: Iterable[str] = (), *,
           verify: bool = True, max_work: int = WhatIfOptions.max_work) -> WhatIf:
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
    options = WhatIfOptions(cls, max_work)
    names = tuple(session.selected(tuple(schedules)))
    verified_timings(session, names, verify)
    return run(session, options.cls, names, options.max_work)

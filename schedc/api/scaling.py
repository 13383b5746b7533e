"""`scale`: closed forms of each schedule's time in a structural param (hosts, ranks,
chunks), fitted exactly on compiled instances and checked on others (see `analysis.scale`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from .compiling import verified_timings

if TYPE_CHECKING:
    from ..analysis.scale.forms import Scaling
    from ..session import Session


def scale(session: Session, param: str, schedules: Iterable[str] = (), *, start: int = 2,
          bounds: bool = True, verify: bool = True) -> list[Scaling]:
    """Each schedule's time as a formula in the structural `param`, fitted from `param` =
    `start` up and checked on an instance at least 8x larger, with its bounds (unless
    `bounds=False`), the limits as `param` grows, and a knob's optimum. Every instance
    compiled is verified first unless `verify=False`. `Scaling.time_at(n, nominal)`
    evaluates a form at any n without compiling; `session.compiles` counts the instances.

        >>> hosts = schedc.load("schedules/seed/nvlink_hosts.sched")
        >>> [s.name for s in schedc.scale(hosts, "hosts", bounds=False)]
        ['ring', 'hierarchical']
    """
    from ..analysis.scale.forms import Scaler
    names = session.selected(tuple(schedules))
    scaler = Scaler(session, param.strip(), names, start, bounds,
                    lambda at, name: verified_timings(at, [name], verify))
    return [scaler.scale(name) for name in names]

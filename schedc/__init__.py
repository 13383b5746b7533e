"""schedc: a declarative compiler for collective-communication schedules.

The Python API, for notebooks and scripts (the command line uses the same pieces):

    import schedc
    session = schedc.load("schedules/seed/nvlink_2x8.sched", sets=["B_L=300GB/s"])
    schedc.time(session, "ring").time                 # Fraction, seconds at the nominal point
    schedc.verify(session)                            # one Verdict per result schedule
    schedc.solve(session, "time(hierarchical) = time(ring)", "B_L")
    schedc.bound(session)                             # one Bounds per collective

Each function imports its stage when called, so `import schedc` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"
__all__ = ["__version__", "SchedcError", "Session", "bound", "load", "solve", "time", "verify"]

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

    from .analysis.bound.bounds import Bounds
    from .analysis.solve.roots import Solution
    from .analysis.verify.verdict import Verdict
    from .cost.timing import Timing
    from .errors import SchedcError
    from .session import Session


def load(path: str | Path, sets: Iterable[str] = (), *, max_transfers: int | None = None,
         max_rounds: int | None = None, machine: str | Path | None = None,
         ranks: str | None = None) -> Session:
    """Compile a `.sched` file with `NAME=VALUE` overrides (as `--set` takes them), or an
    MSCCL XML algorithm (`.xml`) on the `machine` of a `.sched` file. Raises `SchedcError`
    (with `.render()` for the positioned message) on bad input."""
    from .elaborate.schedule import Limits
    from .session import Session
    limits = Limits(max_transfers or Limits.transfers, max_rounds or Limits.steps)
    return Session.open(path, sets, limits, machine, ranks)


def time(session: Session, schedule: str) -> Timing:
    """A result schedule's formula, regime form and nominal time (not verified: see `verify`)."""
    return session.timing(schedule)


def verify(session: Session, schedules: Iterable[str] = ()) -> list[Verdict]:
    """Does each named result schedule (default: all) compute its collective?"""
    from .analysis.verify.verdict import verdicts
    return verdicts(session, tuple(schedules))


def solve(session: Session, equation: str, param: str, timeout: float = 10.0) -> Solution:
    """Every solution of `equation` (e.g. "time(hierarchical) = time(ring)") for `param`."""
    from .analysis.solve.equations import Equations
    from .errors import SourceFile, Span
    from .language.parser import parse_equation
    relation = parse_equation(SourceFile("equation", equation))
    return Equations(session, timeout).solve(relation, param,
                                             Span(SourceFile("param", param), 1, 1, 1, len(param) + 1))


def bound(session: Session, schedules: Iterable[str] = ()) -> list[Bounds]:
    """Cut-set and end-host bounds of each collective, and each schedule against them."""
    from .analysis.bound.bounds import bound_all
    return bound_all(session, session.selected(tuple(schedules), required=False))


def __getattr__(name: str):
    if name == "Session":
        from .session import Session
        return Session
    if name == "SchedcError":
        from .errors import SchedcError
        return SchedcError
    raise AttributeError(f"module 'schedc' has no attribute {name!r}")

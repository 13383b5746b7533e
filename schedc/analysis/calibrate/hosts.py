"""A log's host count → the machine's structural host param, so that one machine file with
`param hosts = 2` predicts logs measured on 2, 4, ... hosts (`predict --against`).

What a log says: its rank count (the `#  Rank` lines, else nccl-tests' busbw/algbw, which
is 2(n-1)/n for an all-reduce: calibration.py) and its host count (the distinct `on HOST`
of the `#  Rank` lines; a log without them says none). What the machine says: its ranks per
host at its nominal point (the collective's ranks over the hosts they are on). The host
param is the structural param named `hosts` (the convention of every shipped machine), else
the file's only structural param.

    log says 32 ranks, no hosts; machine 8 ranks per host  →  hosts = 4
    log says 4 hosts, 32 ranks;  machine 8 per host        →  hosts = 4
    log says 3 hosts, 32 ranks;  machine 8 per host        →  refused: 32 ranks on 3 hosts
"""

from __future__ import annotations

from dataclasses import dataclass

from ...measure.nccl_tests import Table
from ...session import Session
from .records import COLLECTIVE_BINARIES, CalibrationError, Comparison
from .rows import ranks_from_busbw
from .model import schedules

HOST_PARAM = "hosts"


@dataclass(frozen=True)
class HostPoint:
    """Where a log puts the machine: the host param's value and how it was read."""

    param: str
    hosts: int
    said: str  # e.g. "hosts = 4: the log's 32 ranks (busbw/algbw) at 8 per host"


def host_param(session: Session) -> str | None:
    structural = session.structural()
    if HOST_PARAM in structural:
        return HOST_PARAM
    return next(iter(structural)) if len(structural) == 1 else None


def log_counts(session: Session, schedule: str, table: Table) -> tuple[int | None, str, int | None]:
    """(ranks, whence, hosts) as the log states them; None where it does not."""
    if table.ranks is not None:
        return table.ranks, "its '#  Rank' lines", table.hosts
    kind = session.program.result(schedules(schedule)[0]).collective.kind
    implied = ranks_from_busbw(table, COLLECTIVE_BINARIES.get(kind, ""))
    return (implied[0], "its busbw/algbw", table.hosts) if implied else (None, "", table.hosts)


def host_point(session: Session, schedule: str, table: Table, log: str) -> HostPoint | None:
    """The host param's value for `log`, or None (no host param, or the log states no
    counts: the machine stays as it is, and the usual checks compare the counts)."""
    param = host_param(session)
    if param is None:
        return None
    ranks, whence, hosts = log_counts(session, schedule, table)
    if ranks is None and hosts is None:
        return None
    collective = session.program.result(schedules(schedule)[0]).collective
    devices = session.program.topology.devices
    on = {devices[r].host for r in collective.ranks}
    per_host = len(collective.ranks) // max(len(on), 1)
    if per_host * len(on) != len(collective.ranks):
        raise CalibrationError(f"{log}: the machine's {len(collective.ranks)} ranks are not the "
                               f"same number on each of its {len(on)} hosts, so '{param}' cannot "
                               "be set from the log's counts", collective.span)
    if hosts is not None:
        if ranks is not None and ranks != hosts * per_host:
            raise CalibrationError(f"{ranks} ranks ({whence}) on {hosts} hosts do not fit "
                                   f"the machine, which has {per_host} ranks per host ({hosts} "
                                   f"hosts would be {hosts * per_host} ranks)", table.span)
        return HostPoint(param, hosts, f"{param} = {hosts}: the log's hosts (its '#  Rank' "
                                       "lines)")
    assert ranks is not None
    if ranks % per_host:
        raise CalibrationError(f"{ranks} ranks ({whence}) do not fit the machine, which "
                               f"has {per_host} ranks per host: {ranks} is not a whole number of "
                               "hosts", table.span)
    return HostPoint(param, ranks // per_host, f"{param} = {ranks // per_host}: the log's "
                     f"{ranks} ranks ({whence}) at the machine's {per_host} per host")


def merged(parts: list[Comparison]) -> Comparison:
    """Several logs' comparisons (each at its own host count) as one, in the logs' order."""
    first = parts[0]
    return Comparison(first.schedule, tuple(dict.fromkeys(log for c in parts for log in c.logs)),
                      tuple(p for c in parts for p in c.points),
                      tuple(x for c in parts for x in c.predicted),
                      tuple(x for c in parts for x in c.protocols),
                      tuple(x for c in parts for x in c.latency),
                      tuple(n for c in parts for n in c.notes),
                      tuple(x for c in parts for x in (c.sources or ("model",) * len(c.points))))

"""A log predicted by NCCL's own tuning model, nothing fitted: at each size the algorithm and
protocol NCCL picks and the time its model gives them, lat + n / (1000 · bw) µs
(`ncclTopoGetAlgoTime`, src/graph/tuning.cc:630-655; schedc.nccl, NCCL 2.30.7), on the
machine the file describes. It is the prediction a machine's data sheet alone gives (its
links, hosts and GPU generation) with NCCL's constants, to set beside the calibrated one."""

from __future__ import annotations

from ...measure.nccl_tests import Table
from ...session import Session
from .records import CalibrationError, Comparison, Point, Run, Split
from .rows import check_table, points

# The collectives of the language that NCCL's tuning model times (tuning.cc:288).
FUNCTIONS = ("allreduce", "allgather", "reduce_scatter", "broadcast", "reduce")


def nccl_compare(session: Session, schedule: str, tables: list[tuple[str, Table]], comm,
                 tuning, label: str, place: str = "out",
                 drop_wrong: bool = False) -> Comparison:
    """Each row's time by NCCL's model on `comm` (schedc.nccl's inputs) and `tuning` (its
    latency/bandwidth table); the rows are checked against `schedule`'s collective as
    `predict` checks them."""
    from ...nccl import constants as K
    from ...nccl.choice import terms
    collective = session.program.result(schedule.split(",")[0]).collective
    if collective.kind not in FUNCTIONS:
        raise CalibrationError(f"NCCL's tuning model does not time a {collective.kind} "
                               f"(it times {', '.join(FUNCTIONS)})", collective.span)
    f = K.FUNCTIONS.index(collective.kind)
    pts: list[Point] = []
    for log, table in tables:
        check_table(session, schedule, table, log)
        got, _ = points(Run(session, schedule, log, table), Split(), place, drop_wrong)
        pts += [Point(p.size, p.measured, False, p.log, p.line) for p in got]
    predicted, picks, latency = [], [], []
    for p in pts:
        found = terms(comm, tuning, f, p.size)
        if not found:
            raise CalibrationError(f"NCCL's model has no algorithm for a {collective.kind} "
                                   "on this machine", collective.span)
        best = min(found, key=lambda t: t.time)  # min keeps the first of a tie, as NCCL
        predicted.append(best.time * 1e-6)
        picks.append(best.candidate.name)
        latency.append(best.latency / best.time if best.time > 0 else None)
    return Comparison(label, tuple(dict.fromkeys(log for log, _ in tables)), tuple(pts),
                      tuple(predicted), tuple(picks), tuple(latency))

"""Small sizes from NCCL's own latency model where the fit cannot carry them.

A fit's latencies are those of the rows it saw: its per-call latency and start-ups absorb
whatever the measured machine spends before the first byte (its fabric, its software), at
its host count. On another host count (or another cluster) they do not transfer: the number
of steps a call takes changes with the hosts, and a latency fitted at 2 hosts carried to 8
is an extrapolation with nothing to check it. Below SMALL (1 MiB) a row's time is mostly
latency, so there the prediction is NCCL's own model of the machine at its host count
(schedc.nccl: NCCL's baseLat + hwLat per step, tuning.cc, nothing fitted), labelled `nccl`
row by row; from SMALL up the fitted model's, labelled `model`.
"""

from __future__ import annotations

from .records import Comparison

SMALL = 1 << 20  # 1 MiB: below it the shipped logs' rows are mostly latency


def with_nccl_below(model: Comparison, nccl: Comparison, note: str,
                    limit: int = SMALL) -> Comparison:
    """`model`'s rows, those of size < `limit` replaced by `nccl`'s (the same rows)."""
    if [(p.size, p.log) for p in model.points] != [(p.size, p.log) for p in nccl.points]:
        raise ValueError("the two predictions must be of the same rows")
    small = [p.size < limit for p in model.points]

    def pick(ours: tuple, theirs: tuple) -> tuple:
        return tuple(y if s else x for x, y, s in zip(ours, theirs, small))
    return Comparison(model.schedule, model.logs, model.points,
                      pick(model.predicted, nccl.predicted),
                      pick(model.protocols, tuple(f"nccl {x}" for x in nccl.protocols)),
                      pick(model.latency, nccl.latency),
                      (*model.notes, note),
                      pick(model.sources or ("model",) * len(small), ("nccl",) * len(small)))

"""Refusing a verification while the schedule is still being elaborated.

`dataflow.geometry` counts the pieces the buffer is cut into only once the whole schedule is
IR: for the hierarchical all-reduce of 2,048 hosts × 8 GPUs that is 67 million transfers
(tens of seconds, 2 GiB) before "verifying this needs 16,384 ranks × 16,384 pieces" can be
said. The pieces come from the regions the schedule moves, not from its declaration, but
every boundary seen so far is one of them: `PiecesSeen` watches the round loops as
elaboration makes them and refuses as soon as the boundaries already seen are too many.

What it counts is a lower bound (a sample of each batch: its first `SAMPLE` transfers, and
the parts an all-gather's or reduce-scatter's collective implies), so it refuses only what
`geometry` would refuse; the rest is left to `geometry`, which counts exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import lcm

import numpy as np

from ...errors import LimitError, Span
from ...limits import MAX_CELLS, cells_memory
from ...model.collectives import KINDS
from ...model.ir import Batch, Collective, distinct
from .dataflow import MAX_SCALE, NO_VERIFY_HINT

SAMPLE = 1 << 16  # transfers of a batch looked at: a ring's first rounds touch all its parts


class PiecesSeen:
    """A watch for `ScheduleContext.watch`: the region boundaries of the batches made so far,
    as sorted integers in units of 1/scale of the buffer."""

    def __init__(self, collective: Collective, span: Span | None) -> None:
        p = len(collective.ranks)
        self.ranks, self.span = p, span
        by_parts = KINDS[collective.kind].by_parts
        self.scale = p if by_parts else 1
        self.points = np.arange(self.scale + 1, dtype=np.int64)
        self.most = MAX_CELLS // p  # pieces allowed

    def __call__(self, batches: Sequence[Batch]) -> None:
        # One union per call, not per batch: a `parallel for` of 1,023 small branches shows
        # 1,023 batches, and re-sorting the boundaries seen (~8,000) for each cost a second.
        samples: list[np.ndarray] = []
        for batch in batches:
            if batch.op == "send" or self.scale > MAX_SCALE:
                continue
            scale = lcm(self.scale, batch.den)
            if scale > MAX_SCALE:  # geometry refuses that itself
                self._add(samples)
                self.scale = scale
                return
            if scale != self.scale:
                self._add(samples)
                samples = []
                self.points = self.points * (scale // self.scale)
                self.scale = scale
            off, length = batch.off[:SAMPLE], batch.length[:SAMPLE]
            factor = scale // batch.den
            samples += [off * factor, (off + length) * factor]
        self._add(samples)
        pieces = len(self.points) - 1
        if pieces > self.most:
            raise LimitError(f"verifying this needs {self.ranks:,} ranks × at least {pieces:,} "
                             f"pieces of the buffer (counted in the part elaborated so far); the "
                             f"limit is {MAX_CELLS:,} in all"
                             f"{cells_memory(self.ranks * pieces, MAX_CELLS)}{NO_VERIFY_HINT}",
                             self.span)

    def _add(self, samples: list[np.ndarray]) -> None:
        if samples:
            self.points = distinct(np.concatenate([self.points, *samples]))

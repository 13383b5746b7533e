"""A first look at a schedule for a watch, before the schedule is elaborated whole.

A watch (verification's `early.PiecesSeen`) is shown each round loop's batches and may refuse
the schedule. Shown them as the full elaboration makes them, it refuses the hierarchical
all-reduce of 2,048 hosts × 8 GPUs only after 12.6 million transfers (~1.5 s): it must see
two of the eight rails' rings before the boundaries they cut are too many. So the schedule is
first elaborated as a *preview*, each round loop cut to its first iteration in each branch
(the first round of a ring already moves every one of its parts), and the watch is shown
those; then, unless it refused, the schedule is elaborated whole, watched again.

What the preview makes is a subset of what the full elaboration makes: a round holds
transfers, loops, conditions and lets (no calls or round loops), so the first iteration of a
round loop is the same transfers in both, and what later statements compute never depends on
the rounds made before them. A watch that refuses on a lower bound (as `PiecesSeen` does)
therefore refuses in the preview only what it would refuse in the full elaboration — unless
an error in a later iteration would have stopped that first, which the refusal's note says
it did not look for.

Any other error in the preview (a limit, a bad index) is not reported from it: the full
elaboration reports it, as it would have without a preview. The preview spends at most
PREVIEW_TRANSFERS transfers and the same steps as the full elaboration may; past them it is
abandoned.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import replace

from ..errors import LimitError, SchedcError
from ..limits import Limits
from ..model.ir import Batch
from ..model.values import NeedScalar

PREVIEW_TRANSFERS = 1 << 20  # a preview's transfers (each round loop's first rounds: few)
# Said with a refusal from the preview: what the full elaboration would have reported first
# (an index out of range in a later iteration, say) was never looked at.
FIRST_LOOK = ("refused from a first look at the schedule (each round loop's first iteration); "
              "the rest was not elaborated, so an error there is not reported here: "
              "--no-verify elaborates it all")


class Refused(Exception):
    """A watch's refusal, carried past the elaboration's own error handling (which retries a
    `parallel for` one branch at a time on an ElaborationError) to the caller."""

    def __init__(self, error: LimitError) -> None:
        super().__init__(error.message)
        self.error = error


def passing_refusals(watch: Callable[[Sequence[Batch]], None]) -> Callable[[Sequence[Batch]], None]:
    """The watch, its LimitError raised as `Refused` (so it ends the elaboration at once)."""
    def watching(batches: Sequence[Batch]) -> None:
        try:
            watch(batches)
        except LimitError as error:
            raise Refused(error) from None
    return watching


def preview(elaborate: Callable[[Limits], object], limits: Limits) -> None:
    """Run `elaborate` (a preview elaboration, its watch passing refusals) within `limits` and
    at most PREVIEW_TRANSFERS transfers: a refusal propagates as `Refused`, any other error
    the preview raises is dropped."""
    with suppress(SchedcError, NeedScalar):  # the full elaboration reports it, where it arises
        elaborate(replace(limits, transfers=min(limits.transfers, PREVIEW_TRANSFERS)))

"""Which per-step cost rule do a log's rows prefer? The same fit made under `step cost sum`
(α + V/B per round, lock-step) and `step cost max` (max(α, V/B): the start-up overlapped
with the transfer), and `step cost pipelined chunk Q` where the files declare it, each
judged by its error on the rows it did not fit (issue 34: on a 128-host ring the max fits
at 2.8 % where the sum fits at 7.4 %, and at 2–8 hosts the change helps one log and hurts
another; so it is a model the data choose, not a new default).

The rows prefer the rule of the smaller held-out geomean |error|; the figure of each is
given, so a reader sees by how much. With no held-out rows (every row fit) the fit rows'.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .records import Run

RULES = ("sum", "max")  # and `pipelined`, where the files declare it (its chunk is theirs)


@dataclass(frozen=True)
class StepRuleFit:
    rule: str
    heldout: float | None  # geomean |error| on the held-out rows (None: there are none)
    fit: float | None  # on the fit rows
    file_rule: bool  # the rule the machine files declare (the calibration reported)


def compare_step_rules(runs: list[Run], calibrate) -> tuple[StepRuleFit, ...]:
    """`calibrate(runs)` (a Calibration) under each rule; the files' own rule first. A file
    that declares `step cost pipelined chunk Q` is compared under that rule too (with its own
    Q); the other rules need no chunk."""
    program = runs[0].session.program
    own, chunk = program.step_rule, program.step_chunk
    out = []
    for rule in sorted({*RULES, own}, key=lambda r: (r != own, r)):
        fitted = calibrate([replace(r, session=r.session.with_step_rule(rule, chunk))
                            for r in runs])
        c = fitted.comparison
        out.append(StepRuleFit(rule, c.geomean(False), c.geomean(True), rule == own))
    return tuple(out)


def preferred(fits: tuple[StepRuleFit, ...]) -> str | None:
    """The rule of the smallest held-out error (the fit rows' where none is held out);
    the files' own on a tie."""
    scored = [(f.heldout if f.heldout is not None else f.fit, not f.file_rule, f.rule)
              for f in fits]
    scored = [s for s in scored if s[0] is not None]
    return min(scored)[2] if scored else None

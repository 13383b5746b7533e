"""What older nccl-tests wrote differently, read as today's: the `error` column of
placements before 2.13 and the empty redop of old all-to-all rows (`nccl_tests.parse_text`
calls these; the table's shape is `nccl_tests`'s)."""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .nccl_tests import Measurement, Row, Table

# Before nccl-tests 2.13 (51af557) a placement's last column was `error`: the largest
# difference from the expected result (`%5.0le` of maxDelta, src/common.cu:736 at 8274cb4),
# not a count; the run counted a row wrong only when maxDelta > DeltaMaxValue(type) ×
# (nranks − 1) (src/common.cu:464; DeltaMaxValue at :110: half and bfloat16 1e-2, float
# 1e-5, double 1e-12, every integer type 1e-200).
DELTA_MAX = {"half": 1e-2, "bfloat16": 1e-2, "float": 1e-5, "double": 1e-12}
DELTA_MAX_OTHER = 1e-200
_NUMBER = re.compile(r"^[-+]?[\d.]+([eE][-+]?\d+)?$")


def errors_as_wrong(table: Table) -> Table:
    """An old table's `error` (the largest difference) judged by nccl-tests' rule, to the
    printed precision (one significant digit, so a row within a digit of the limit may go
    the other way): 1 wrong row above DeltaMaxValue(type) × (nranks − 1), else 0. Ranks from
    the `#  Rank` lines, else the GPUs of the one process the header counts, else 2 (the
    strictest tolerance). A `# Out of bounds values : 0 OK` after the table overrides it
    (`none_wrong`)."""
    per_process = table.per_process()
    ranks = table.ranks or (per_process[0] if per_process else 2)

    def judged(row: Row, m: Measurement | None) -> Measurement | None:
        if m is None or m.wrong is None:
            return m
        limit = DELTA_MAX.get(row.type, DELTA_MAX_OTHER) * max(ranks - 1, 1)
        return dataclasses.replace(m, wrong=1.0 if m.wrong > limit else 0.0)

    rows = tuple(dataclasses.replace(r, out_of_place=judged(r, r.out_of_place),
                                     in_place=judged(r, r.in_place)) for r in table.rows)
    return dataclasses.replace(table, rows=rows)


def none_wrong(table: Table) -> Table:
    """An old table of a run whose `# Out of bounds values : 0 OK` line says no row was wrong:
    the run's own count outranks a judgement to one printed digit."""
    def cleared(m: Measurement | None) -> Measurement | None:
        return m if m is None or m.wrong is None else dataclasses.replace(m, wrong=0.0)
    rows = tuple(dataclasses.replace(r, out_of_place=cleared(r.out_of_place),
                                     in_place=cleared(r.in_place)) for r in table.rows)
    return dataclasses.replace(table, rows=rows)


def with_blank_redop(tokens: list[tuple[str, int]], needed: list[str]
                     ) -> list[tuple[str, int]]:
    """Before d313d20 alltoall's op name was "" (src/alltoall.cu:111 at 464f038), printed by
    `%6s` (its print_line_header, src/alltoall.cu:19) as blanks: a row one field short whose
    field at the redop column is already a number gets `none` there."""
    if len(tokens) != len(needed) - 1 or "redop" not in needed:
        return tokens
    k = needed.index("redop")
    if k >= len(tokens) or not _NUMBER.match(tokens[k][0]):
        return tokens
    return [*tokens[:k], ("none", tokens[k][1]), *tokens[k:]]

"""Noise in a log: a row whose out-of-place and in-place times disagree.

nccl-tests times every size twice in a row, out of place then in place (src/common.cu:939-940,
`BenchTime(..., 0)` then `BenchTime(..., 1)`), with the same data, algorithm and protocol. The
two agree closely when the measurement is sound: over the 257 rows with both times in the
logs of ../shared/data/nccl-tests/ (December 2026), the larger over the smaller is 1.008 at the
median and 1.23 at the 95th percentile; the seven rows above 1.5 (1.53 to 5.04× apart) are
all of 512 B or less, where one launch hiccup doubles a time, and include the two rows issue
34 calls "3-4× off their own in-place twin" (2.77 and 3.64 in the 2-host log).
Such a row says more about the run than about the machine, so a fit and its error figures
leave it out, and say so.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: `--help` reads DEFAULT_OUTLIER_FACTOR without the reader
    from .nccl_tests import Row, Table

# The default largest ratio of a row's two times: above the 95th percentile of the shared logs'
# rows (1.23), below every row that issue 34 calls noise (2.77 and more).
DEFAULT_OUTLIER_FACTOR = 1.5


def twin_ratio(row: Row) -> float | None:
    """The larger of a row's out-of-place and in-place times over the smaller (None when the
    row has only one of them)."""
    out, inside = row.out_of_place, row.in_place
    if out is None or inside is None:
        return None
    low, high = sorted((out.time_us, inside.time_us))
    return high / low


def is_outlier(row: Row, factor: float) -> bool:
    """Whether the row's two times differ by more than `factor` (e.g. 1.5: by over 50 %)."""
    ratio = twin_ratio(row)
    return ratio is not None and ratio > factor


def check_factor(factor: float) -> float:
    """The factor as given, if it is one: above 1 (`inf` keeps every row)."""
    if math.isnan(factor) or factor <= 1:
        from ..errors import UsageError
        raise UsageError(f"--outlier-factor {factor:g}: must be above 1 (the larger of a row's "
                         "two times over the smaller; inf keeps every row)")
    return factor


def split_outliers(table: Table, factor: float) -> tuple[Table, tuple[Row, ...]]:
    """The table without its outliers, and the outliers (rows of 0 B are kept: a fit skips
    them anyway)."""
    flagged = tuple(r for r in table.rows if r.size > 0 and is_outlier(r, factor))
    if not flagged:
        return table, ()
    # By identity: `r not in flagged` compared every row with every flagged one field by
    # field (10,000 rows: 13 million comparisons, 2.5 s).
    left_out = {id(r) for r in flagged}
    kept = tuple(r for r in table.rows if id(r) not in left_out)
    return dataclasses.replace(table, rows=kept), flagged


def outlier_note(log: str, rows: tuple[Row, ...], factor: float) -> str:
    """What was left out: `LOG: 2 row(s) whose out-of-place and in-place times differ by more
    than 1.5x left out (--outlier-factor): lines 12 (3.64x), 20 (2.77x)`."""
    lines = ", ".join(f"{r.span.line} ({twin_ratio(r):.2f}x)" for r in rows)
    return (f"{log}: {len(rows)} row(s) whose out-of-place and in-place times differ by more "
            f"than {factor:g}x left out as outliers (--outlier-factor): lines {lines}")

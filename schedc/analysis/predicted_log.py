"""`predict --against LOG` as a table shaped like the log's: per row its size, count, type and
redop, the measured time, algbw and busbw (as the log prints them), the predicted ones, the
resource that bounds the prediction, and a verdict: is the measured number within the fit's
stated uncertainty ("is my number expected?").

The uncertainty is what a fit says of its own held-out rows: per size range, the 90th
percentile of |predicted / measured − 1| (`calibrate --write` states it in the file it
writes; `Band`). A row is `expected` when its |error| is within its range's band, `not
expected` beyond it, `outlier` when its two times disagree (measure.noise: left out of every
figure), and `-` when no band covers it (no held-out row of that range, or no fit given).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..measure.bandwidth import bandwidths
from ..measure.nccl_tests import Row
from ..measure.noise import twin_ratio
from ..session import Session
from .calibrate.calibration import LATENCY_BOUND, SIZE_RANGES, Comparison

PERCENTILE = 90  # the band holds this share of a fit's held-out rows
# The comment line in which `calibrate --write` states a fit's bands (`bands_line`), which
# `predict --fitted` reads back (api.predicting.fitted_bands).
BANDS_LINE = f"# held-out |error|, {PERCENTILE}th percentile by size:"


@dataclass(frozen=True)
class Band:
    """A size range's stated uncertainty: |error| of `PERCENTILE` % of its held-out rows."""

    range: str  # a name of calibration.SIZE_RANGES
    error: float  # |predicted / measured − 1|
    rows: int  # the held-out rows it is the percentile of


@dataclass(frozen=True)
class PredictedRow:
    size: int
    count: int
    type: str
    redop: str | None
    log: str
    line: int
    measured_s: float
    measured_algbw: float  # GB/s, as the log prints it
    measured_busbw: float
    predicted_s: float | None
    predicted_algbw: float | None  # GB/s: size / predicted time
    predicted_busbw: float | None  # × nccl-tests' factor (None: the collective has none)
    error: float | None  # predicted / measured − 1
    protocol: str | None
    bound: str  # "latency", or the link class(es) whose transfers take most of the time
    outlier: float | None  # the twin ratio of an outlier row, else None
    verdict: str  # "expected", "not expected", "outlier" or "-"


@dataclass(frozen=True)
class PredictedLog:
    rows: tuple[PredictedRow, ...]
    bands: tuple[Band, ...]
    outlier_factor: float
    within: str  # where the bands come from, in words


def held_out_bands(c: Comparison) -> tuple[Band, ...]:
    """A fit's bands: per size range with held-out rows, the `PERCENTILE`th |error| of them
    (nearest rank: the smallest |error| that at least that share of rows reach)."""
    bands = []
    for name, lo, hi in SIZE_RANGES:
        errors = sorted(abs(e) for e, p in zip(c.errors, c.points)
                        if not p.fit and lo <= p.size <= hi)
        if errors:
            rank = math.ceil(PERCENTILE / 100 * len(errors))
            bands.append(Band(name, errors[rank - 1], len(errors)))
    return tuple(bands)


def bands_line(bands: tuple[Band, ...]) -> str:
    """`# held-out |error|, 90th percentile by size: <= 64 KiB 12.34% (10 rows); ...`, each
    rounded up to 0.01 %, so that the held-out rows it was the percentile of stay within it
    when read back (a float's last bit, 9.000000000000001 %, is not rounded up)."""
    return BANDS_LINE + ";".join(
        f" {b.range} {math.ceil(round(b.error * 1e4, 6)) / 100:.2f}% ({b.rows} "
        f"row{'s' * (b.rows != 1)})" for b in bands)


def band_for(bands: tuple[Band, ...], size: int) -> Band | None:
    for name, lo, hi in SIZE_RANGES:
        if lo <= size <= hi:
            return next((b for b in bands if b.range == name), None)
    return None


def verdict(error: float | None, band: Band | None) -> str:
    if error is None or band is None:
        return "-"
    return "expected" if abs(error) <= band.error else "not expected"


def predicted_log(session: Session, kept: Comparison, flagged: Comparison | None,
                 rows: dict[tuple[str, int], Row], place: str, bands: tuple[Band, ...],
                 outlier_factor: float, within: str, nccl: bool = False,
                 sessions: dict[str, Session] | None = None) -> PredictedLog:
    """The table: `kept`'s rows and `flagged`'s (the outliers, predicted alike), in the logs'
    order; `rows` are the logs' rows by (log, line); with `nccl` (NCCL's model predicted) no
    link class is named as the bound, only latency or bandwidth. `sessions`: each log's
    machine where it is not `session` (a machine in hosts, at the log's host count)."""
    out = []
    at = sessions or {}
    for c, is_flagged in ((kept, False), (flagged, True)):
        if c is None:
            continue
        bounds = _bounds_by_log(session, at, c, nccl)
        for k, p in enumerate(c.points):
            row = rows[(p.log, p.line)]
            m = row.measurement(place)
            predicted = c.predicted[k]
            collective = _collective(at.get(p.log, session), kept)
            got = bandwidths(collective.kind, len(collective.ranks), p.size, predicted)
            error = c.errors[k]
            out.append(PredictedRow(
                p.size, row.count, row.type, row.redop, p.log, p.line, p.measured, m.algbw,
                m.busbw, predicted, got.algbw if got else None, got.busbw if got else None,
                error, c.protocols[k],
                bounds[k], twin_ratio(row) if is_flagged else None,
                "outlier" if is_flagged else verdict(error, band_for(bands, p.size))))
    order = {log: n for n, log in enumerate(kept.logs)}
    out.sort(key=lambda r: (order.get(r.log, len(order)), r.line))
    return PredictedLog(tuple(out), bands, outlier_factor, within)


def _bounds_by_log(session: Session, sessions: dict[str, Session], c: Comparison,
                   nccl: bool) -> list[str]:
    """`_bounds` of each log's rows on that log's machine."""
    import dataclasses
    out = [""] * len(c.points)
    for log in dict.fromkeys(p.log for p in c.points):
        idx = [k for k, p in enumerate(c.points) if p.log == log]
        part = dataclasses.replace(
            c, points=tuple(c.points[k] for k in idx), predicted=tuple(c.predicted[k] for k in idx),
            protocols=tuple(c.protocols[k] for k in idx), latency=tuple(c.latency[k] for k in idx),
            sources=tuple(c.sources[k] for k in idx) if c.sources else ())
        for k, bound in zip(idx, _bounds(None if nccl else sessions.get(log, session), part)):
            out[k] = bound
    return out


def _collective(session: Session, c: Comparison):
    """The collective predicted: the schedule's, or the file's first (NCCL's model)."""
    name = c.schedule.split(",")[0]
    if name in {r.name for r in session.program.results}:
        return session.program.result(name).collective
    return session.program.results[0].collective


def _bounds(session: Session | None, c: Comparison) -> list[str]:
    """What bounds each row's prediction: `latency` where it is over LATENCY_BOUND of the
    time, else the link class whose terms take the most of the winning schedule's time at
    that size (each round's largest term, before any protocol); `bandwidth` when the winner
    is not a schedule of the file (NCCL's model)."""
    shapes: dict[str, list] = {}
    out = []
    for p, share, winner in zip(c.points, c.latency, c.protocols):
        if share is not None and share > LATENCY_BOUND:
            out.append("latency")
            continue
        name = _winning_schedule(session, c.schedule, winner)
        if session is None or name is None:
            out.append("bandwidth" if share is not None else "-")
            continue
        if name not in shapes:
            shapes[name] = _term_shapes(session, name)
        out.append(_busiest(shapes[name], p.size))
    return out


def _winning_schedule(session: Session | None, schedule: str, winner: str | None) -> str | None:
    if session is None:
        return None
    names = [s.strip() for s in schedule.split(",") if s.strip()]
    if len(names) > 1 and winner and "/" in winner:
        first = winner.split("/")[0]
        return first if first in names else None
    known = {r.name for r in session.program.results}
    return names[0] if names and names[0] in known else None


def _term_shapes(session: Session, name: str) -> list[tuple[int, list[tuple[str, float, float]]]]:
    """Per round class: its count and each term as (link class, a, b), the term's time at
    size S being a·S + b at the params' nominal values."""
    from .calibrate.model import size_symbol
    classes = session.round_classes(name)
    size = size_symbol(session, name)
    nominal = session.program.nominal
    topology = session.program.topology
    shapes = []
    for k in classes:
        terms = []
        for term in k.terms:
            bandwidth = float(term.bandwidth.xreplace(nominal))
            per_byte = sum(float(q) for s, q in term.load if s == size)
            fixed = sum(float(q) * float(1 if s == 1 else nominal[s]) for s, q in term.load
                        if s != size)
            cls = "+".join(sorted({topology.resources[r].cls for r in term.resources}))
            terms.append((cls, per_byte / bandwidth, fixed / bandwidth))
        shapes.append((k.count, terms))
    return shapes


def _busiest(shapes: list[tuple[int, list[tuple[str, float, float]]]], size: int) -> str:
    """The link class whose round terms take the most time at `size`: each round class adds
    its count × its largest term's time to that term's class."""
    total: dict[str, float] = {}
    for count, terms in shapes:
        if not terms:
            continue
        times = np.array([a * size + b for _, a, b in terms])
        k = int(np.argmax(times))
        total[terms[k][0]] = total.get(terms[k][0], 0.0) + count * float(times[k])
    return max(total, key=lambda cls: total[cls]) if total else "-"

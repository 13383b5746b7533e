"""`schedc predict --against LOG`: the log's rows in its own shape and terms (size, count,
type, redop, time in µs, algbw and busbw in GB/s), each beside its prediction, the resource
that bounds it and the verdict "is my number expected?" (analysis.predicted_log); then the error
figures over the rows that are not outliers."""

from __future__ import annotations

import math
from collections import Counter

from ..analysis.predicted_log import PredictedLog, PredictedRow
from ..analysis.calibrate.calibration import Comparison
from ..measure.bandwidth import format_gbps
from . import schema
from .calibration import bounds_json, error_summary, percent
from .text import dump_json, json_number, table

HEADER = ("size", "count", "type", "redop", "time", "algbw", "busbw", "time", "algbw",
          "busbw", "error", "protocol", "bound", "verdict")
UNITS = ("(B)", "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)", "(us)", "(GB/s)", "(GB/s)",
         "", "", "", "")


def format_us(seconds: float | None) -> str:
    """A time in µs as nccl-tests prints it (getFloatStr at width 7, src/util.cu:487)."""
    if seconds is None:
        return "-"
    value = seconds * 1e6
    for spec in (".2f", ".1f", ".0f"):
        text = format(value, spec)
        if len(text) <= 7:
            return text
    return format(value, ".1e")


def _verdict(r: PredictedRow) -> str:
    return f"outlier ({r.outlier:.2f}x)" if r.outlier is not None else r.verdict


def _cells(r: PredictedRow) -> tuple[str, ...]:
    error = "-" if r.error is None else f"{r.error * 100:+.2f}%"
    return (str(r.size), str(r.count), r.type, r.redop or "-", format_us(r.measured_s),
            format_gbps(r.measured_algbw), format_gbps(r.measured_busbw),
            format_us(r.predicted_s), format_gbps(r.predicted_algbw),
            format_gbps(r.predicted_busbw), error, r.protocol or "-", r.bound, _verdict(r))


def _table(rows: list[PredictedRow]) -> list[str]:
    lines = table([HEADER, UNITS, *(_cells(r) for r in rows)], right=range(11),
                  underline=False)
    width = len(lines[0])
    split = lines[0].index("time") + 4  # measured | predicted: above each time group
    second = lines[0].index("time", split) + 4
    above = f"{'measured':>{split}}{'predicted':>{second - split}}"
    return [above.rstrip(), *lines[:2], "-" * width, *lines[2:]]


def predicted_text(t: PredictedLog, c: Comparison, fitted: str | None, how: str | None) -> str:
    at = how or (f"at the params of {fitted}" if fitted else "at the file's params")
    kept = [r for r in t.rows if r.outlier is None]
    out = [f"predict {c.schedule} against {len(t.rows)} measured rows, {at}",
           f"verdict: {t.within}"]
    if t.bands:
        out.append("  " + "; ".join(f"{b.range}: {percent(b.error)}"
                                    + (f" ({b.rows} rows)" if b.rows else "") for b in t.bands))
    for log in dict.fromkeys(r.log for r in t.rows):
        out += ["", f"log: {log}", *(f"  {n[len(log) + 2:]}" for n in c.notes
                                     if n.startswith(f"{log}: ")),
                *_table([r for r in t.rows if r.log == log])]
    counts = Counter(r.verdict for r in t.rows)
    outliers = len(t.rows) - len(kept)
    out += ["", "verdicts: " + ", ".join(f"{n} {'without a band' if name == '-' else name}"
                                         for name, n in counts.items()),
            f"outliers: {outliers} row(s) whose out-of-place and in-place times differ by more "
            f"than {t.outlier_factor:g}x, left out of every figure below (--outlier-factor)",
            *error_summary(c)]
    return "\n".join(out) + "\n"


def _row_json(r: PredictedRow, share: float | None) -> dict:
    number = lambda x: None if x is None else json_number(x, integer=False)  # noqa: E731
    return {"size": r.size, "measured_s": number(r.measured_s), "predicted_s":
            number(r.predicted_s), "error": number(r.error), "protocol": r.protocol,
            "latency_share": number(share), "count": r.count, "type": r.type, "redop": r.redop,
            "log": r.log, "line": r.line, "measured_algbw_GBps": r.measured_algbw,
            "measured_busbw_GBps": r.measured_busbw, "predicted_algbw_GBps": r.predicted_algbw,
            "predicted_busbw_GBps": r.predicted_busbw, "bound": r.bound,
            "outlier": r.outlier is not None, "twin_ratio": r.outlier, "verdict": r.verdict}


def predicted_json(t: PredictedLog, c: Comparison, fitted: str | None) -> str:
    point, error = c.worst
    shares = {(p.log, p.line): s for p, s in zip(c.points, c.latency)}
    sources = {(p.log, p.line): s for p, s in zip(c.points, c.sources or ())}
    return dump_json({
        "schema": schema.PREDICT,
        "fitted": fitted,
        "log": c.logs[0] if len(c.logs) == 1 else list(c.logs),
        "schedule": c.schedule,
        "notes": list(c.notes),
        "rows": [{**_row_json(r, shares.get((r.log, r.line))),
                  "source": sources.get((r.log, r.line), "model")} for r in t.rows],
        "geomean_error": json_number(c.geomean(None), integer=False),
        "worst": {"size": point.size, "error": json_number(error, integer=False)},
        "mean_error": json_number(c.mean(None), integer=False),
        "by_size": [{"range": name, "rows": n, "geomean_error": json_number(g, integer=False)}
                    for name, n, g in c.by_range(None)],
        "by_bound": bounds_json(c, None),
        "outlier_factor": None if math.isinf(t.outlier_factor) else t.outlier_factor,
        "outliers": sum(r.outlier is not None for r in t.rows),
        "within": t.within,
        "bands": [{"range": b.range, "error": b.error, "rows": b.rows} for b in t.bands],
        "verdicts": dict(Counter(r.verdict for r in t.rows)),
    })

"""Text, JSON and `.sched` output of `schedc calibrate` and `schedc predict`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..analysis.calibrate.calibration import Calibration, Comparison, FittedParam
from ..files import write_output_with
from ..units import BYTES, RATE, SECONDS, base_unit, format_bytes, format_quantity, format_seconds
from . import schema
from .text import dump_json, json_number, table


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.2f}%"


def _rows(c: Comparison, with_fit: bool) -> list[str]:
    header: tuple[str, ...] = ("size", "measured", "predicted", "error") + \
        (("row",) if with_fit else ())
    protocols = any(p is not None for p in c.protocols)
    header += ("protocol",) if protocols else ()
    several = len(c.logs) > 1
    header += ("log",) if several else ()
    rows = [header]
    for p, predicted, error, winner in zip(c.points, c.predicted, c.errors, c.protocols):
        row: tuple[str, ...] = (format_bytes(p.size), format_seconds(p.measured),
                                format_seconds(predicted), f"{error * 100:+.1f}%")
        row += (("fit" if p.fit else "held out"),) if with_fit else ()
        row += (winner or "-",) if protocols else ()
        row += (p.log,) if several else ()
        rows.append(row)
    return table(rows, right=(0, 1, 2, 3), indent="  ")


def _worst(c: Comparison, with_fit: bool) -> str:
    point, error = c.worst
    where = f" ({'fit' if point.fit else 'held out'})" if with_fit else ""
    return f"worst row: {error * 100:+.1f}% at {format_bytes(point.size)}{where}"


def _param_line(p: FittedParam) -> tuple[str, ...]:
    note = "" if p.determined else "UNDETERMINED: the fit rows do not fix it"
    return (p.name, format_quantity(p.value, p.dim), f"(from {format_quantity(p.initial, p.dim)})",
            note)


def calibration_text(cal: Calibration, place: str) -> str:
    c = cal.comparison
    fit = sum(p.fit for p in c.points)
    out = [f"calibrate {c.schedule}: {len(cal.params)} params by least squares on log time "
           f"(scipy least_squares), on {fit} of {len(c.points)} rows (every {cal.every}th size "
           f"and the largest, per log); {'out-of' if place == 'out' else 'in'}-place times",
           *[f"  log: {log}" for log in c.logs], "", "fitted params:"]
    out += table([_param_line(p) for p in cal.params], underline=False, indent="  ")
    out += ["", *_rows(c, True), "",
            f"geomean |error|: {_percent(c.geomean(True))} on the {fit} fit rows, "
            f"{_percent(c.geomean(False))} on the {len(c.points) - fit} held-out rows",
            f"mean |error|:    {_percent(c.mean(True))} on the fit rows, "
            f"{_percent(c.mean(False))} on the held-out rows",
            _worst(c, True)]
    if cal.converged:
        out.append(f"converged: {cal.message} ({cal.evaluations} evaluations)")
    else:
        out.append(f"NOT CONVERGED: {cal.message} ({cal.evaluations} evaluations); the values "
                   "above are where the search stopped")
    if cal.undetermined:
        out.append(f"UNDETERMINED: {', '.join(cal.undetermined)}: the fit rows do not determine "
                   "them (a protocol that wins on none of them, or params that only move "
                   "together); fix them with --set or fit fewer")
    return "\n".join(out) + "\n"


def _param_unit(p: FittedParam) -> str:
    return base_unit(p.dim)


def calibration_json(cal: Calibration) -> str:
    c = cal.comparison
    point, error = c.worst
    return dump_json({
        "schema": schema.CALIBRATE,
        "log": c.logs[0] if len(c.logs) == 1 else list(c.logs),
        "schedule": c.schedule,
        "params": {p.name: {"value": json_number(p.value, integer=False), "unit": _param_unit(p)}
                   for p in cal.params},
        "rows": [{"size": p.size, "measured_s": json_number(p.measured, integer=False),
                  "predicted_s": json_number(predicted, integer=False),
                  "error": json_number(e, integer=False), "fit": p.fit}
                 for p, predicted, e in zip(c.points, c.predicted, c.errors)],
        "geomean_error_fit": json_number(c.geomean(True), integer=False),
        "geomean_error_heldout": json_number(c.geomean(False), integer=False),
        "worst": {"size": point.size, "error": json_number(error, integer=False)},
        # Beyond the keys: whether the fit can be trusted at all.
        "converged": cal.converged,
        "undetermined": list(cal.undetermined),
    })


def _literal(p: FittedParam) -> str:
    """A value as `.sched` source, in a readable unit."""
    if p.dim == SECONDS:
        return f"{p.value * 1e6:.6g} us"
    if p.dim == RATE:
        return f"{p.value / 1e9:.6g} GB/s"
    if p.dim == BYTES:
        return f"{p.value:.6g} B"
    unit = base_unit(p.dim)
    return f"{p.value:.6g}" + (f" {unit}" if unit else "")


def calibration_sched(cal: Calibration, command: str) -> str:
    """The fitted params as a `.sched` file a machine file can import."""
    c = cal.comparison
    fit = sum(p.fit for p in c.points)
    lines = [f"# Fitted by: {command}",
             f"# least squares on log time over {fit} of {len(c.points)} rows of "
             f"{', '.join(c.logs)};",
             f"# geomean |error| {_percent(c.geomean(True))} on fit rows, "
             f"{_percent(c.geomean(False))} on held-out rows; {_worst(c, True)}.", ""]
    lines += [f"param {p.name} = {_literal(p)}" for p in cal.params]
    return "\n".join(lines) + "\n"


def comparison_text(c: Comparison) -> str:
    out = [f"predict {c.schedule} against {len(c.points)} measured rows, at the file's params",
           *[f"  log: {log}" for log in c.logs], "", *_rows(c, False), "",
           f"geomean |error|: {_percent(c.geomean(None))} over {len(c.points)} rows; "
           f"mean |error|: {_percent(c.mean(None))}",
           _worst(c, False)]
    return "\n".join(out) + "\n"


def comparison_json(c: Comparison) -> str:
    point, error = c.worst
    return dump_json({
        "schema": schema.PREDICT,
        "log": c.logs[0] if len(c.logs) == 1 else list(c.logs),
        "schedule": c.schedule,
        "rows": [{"size": p.size, "measured_s": json_number(p.measured, integer=False),
                  "predicted_s": json_number(predicted, integer=False),
                  "error": json_number(e, integer=False), "protocol": w}
                 for p, predicted, e, w in zip(c.points, c.predicted, c.errors, c.protocols)],
        "geomean_error": json_number(c.geomean(None), integer=False),
        "worst": {"size": point.size, "error": json_number(error, integer=False)},
    })


def write_whole(path: Path, write: Callable[[str], object]) -> None:
    """`write(temporary path)`, then move the file into place: all of it or nothing, with the
    usual mode under the umask, by `schedc.files`' policy (never over an input of the run)."""
    write_output_with(path, write)

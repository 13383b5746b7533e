"""Text, JSON and `.sched` output of `schedc calibrate` and `schedc predict`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..analysis.predicted_log import bands_line, held_out_bands
from ..analysis.calibrate.calibration import Calibration, Comparison, FittedParam, geomean_abs
from ..files import write_output_with
from ..measure.nccl_tests import Row
from ..measure.noise import twin_ratio
from ..language.quote import comment
from ..units import BYTES, RATE, SECONDS, base_unit, format_bytes, format_quantity, format_seconds
from . import schema
from .text import dump_json, json_number, table


def percent(value: float | None) -> str:
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


def _bound(value: float, dim: tuple) -> str:
    return "-" if value in (0.0, float("inf")) else format_quantity(value, dim)


def _param_line(p: FittedParam, several: bool) -> tuple[str, ...]:
    sigma = "-" if p.sigma is None else f"±{p.sigma * 100:.0f}%"
    prior = "-" if p.prior is None else format_quantity(p.prior, p.dim)
    line: tuple[str, ...] = (p.name, format_quantity(p.value, p.dim), sigma,
                             f"[{_bound(p.lower, p.dim)}, {_bound(p.upper, p.dim)}]", prior)
    line += (p.log or "shared",) if several else ()
    return line + ("; ".join(p.flags).upper() if p.flags else p.held or "ok",)


def _params_table(cal: Calibration) -> list[str]:
    several = len(cal.comparison.logs) > 1
    header = ("param", "value", "±1σ", "bounds", "prior") + (("log",) if several else ()) + \
        ("flag",)
    return table([header, *[_param_line(p, several) for p in cal.params]], indent="  ")


def _ranges(c: Comparison, fit: bool | None) -> str:
    return "; ".join(f"{name}: {percent(g)} ({n} rows)" for name, n, g in c.by_range(fit) if n)


def _bounds(c: Comparison, fit: bool | None) -> str:
    """The error by what bounds each row's predicted time: latency-bound where its latencies
    are over LATENCY_BOUND of it (their share of it is the time at size 0), else
    bandwidth-bound."""
    parts = []
    for name, rows, g in c.by_bound(fit):
        if rows:
            sizes = sorted(p.size for p in rows)
            span = (format_bytes(sizes[0]) if sizes[0] == sizes[-1]
                    else f"{format_bytes(sizes[0])}-{format_bytes(sizes[-1])}")
            what = "without a latency share" if name == "unknown" else f"{name}-bound"
            parts.append(f"{what} {percent(g)} ({len(rows)} rows, {span})")
    return "; ".join(parts)


def bounds_json(c: Comparison, fit: bool | None) -> list[dict]:
    return [{"bound": name, "rows": len(rows), "geomean_error": json_number(g, integer=False)}
            for name, rows, g in c.by_bound(fit)]


def _optimum(cal: Calibration) -> str:
    reached, made = cal.optimum
    return f"optimum: the best cost reached from {reached} of {made} starts"


def calibration_text(cal: Calibration, place: str,
                     outliers: list[tuple[str, Row]] | None = None) -> str:
    """`outliers` (`api.outlier_rows`) are marked below the rows, as left out."""
    c = cal.comparison
    fit = sum(p.fit for p in c.points)
    held = len(c.points) - fit
    loo = cal.split.kind == "leave-one-out"
    what = (f"{len(cal.folds)} fits, each on every row of all logs but one" if loo
            else f"{len(cal.params)} params on {fit} of {len(c.points)} rows")
    at_prior = [p for f in ([cal] + [f for _, f in cal.folds]) for p in f.params if p.held]
    out = [f"calibrate {c.schedule}: {what}, by least squares on log time with priors "
           f"(scipy least_squares, multistart); {'out-of' if place == 'out' else 'in'}-place times",
           f"  split: {cal.split.describe()}", *[f"  log: {log}" for log in c.logs]]
    out += [f"  {n}" for n in cal.notes]
    if loo:
        for log, fold in cal.folds:
            out += ["", f"fitted without {log}:", *_params_table(fold), f"  {_optimum(fold)}"]
            out += [f"  {x}" for x in fold.checks if x.startswith("INADEQUATE")]
    else:
        out += ["", "fitted params (value, relative standard error, physical bounds, prior):"]
        out += _params_table(cal)
    out += ["", *_rows(c, not loo), ""]
    out += [_outlier_line(log, row) for log, row in outliers or ()] + ([""] if outliers else [])
    if loo:
        out.append(f"geomean |error|: {percent(c.geomean(False))} over the {held} rows, each "
                   "predicted from the other logs' fit")
        for log in c.logs:
            sub = [(p, e) for p, e in zip(c.points, c.errors) if p.log == log and not p.fit]
            big = [abs(e) for p, e in sub if p.size >= 2**20]
            out.append(f"  {log}: {percent(geomean_abs([abs(e) for _, e in sub]))} over all rows, "
                       f"{percent(geomean_abs(big))} over rows >= 1 MiB")
    else:
        out.append(f"geomean |error|: {percent(c.geomean(True))} on the {fit} fit rows, "
                   f"{percent(c.geomean(False))} on the {held} held-out rows")
    out.append(f"held out by size: {_ranges(c, False)}")
    if held:
        out.append(f"held out by what bounds the time: {_bounds(c, False)}")
    out += [f"mean |error|:    {percent(c.mean(True))} on the fit rows, "
            f"{percent(c.mean(False))} on the held-out rows", _worst(c, not loo)]
    if not loo:
        out.append(_optimum(cal))
    if cal.converged:
        out.append(f"converged: {cal.message} ({cal.evaluations} evaluations)")
    else:
        out.append(f"NOT CONVERGED: {cal.message} ({cal.evaluations} evaluations); the values "
                   "above are where the search stopped")
    out += [f"STARTS DISAGREE: {s}" for s in cal.starts]
    flagged = [p for f in ([cal] + [f for _, f in cal.folds]) for p in f.flagged]
    if flagged:
        out.append(f"FLAGGED: {', '.join(dict.fromkeys(p.name for p in flagged))}: at a bound, "
                   "undetermined or uncertain (see the table); --write writes nothing without "
                   "--force")
    if at_prior:
        out.append(f"held at NCCL's value (the rows do not determine them; not fitted): "
                   f"{', '.join(dict.fromkeys(p.name for p in at_prior))}")
    out += [f"model check: {x}" for x in cal.checks]
    out += _step_rules_text(cal)
    if not cal.checks and not loo:
        out.append("model check: no inadequacy found (bandwidth ceiling, shares, residual runs)")
    return "\n".join(out) + "\n"


def _outlier_line(log: str, row: Row) -> str:
    """`outlier 4 KiB: 45 µs out of place, 15 µs in place (3.00x), LOG:25; left out`."""
    out, inside = row.out_of_place, row.in_place
    times = (f"{format_seconds(out.time_us * 1e-6)} out of place, "
             f"{format_seconds(inside.time_us * 1e-6)} in place" if out and inside else "")
    return (f"  outlier {format_bytes(row.size)}: {times} ({twin_ratio(row):.2f}x), "
            f"{log}:{row.span.line}; left out")


def _param_unit(p: FittedParam) -> str:
    return base_unit(p.dim)


def _param_json(p: FittedParam) -> dict:
    return {"value": json_number(p.value, integer=False), "unit": _param_unit(p),
            "log": p.log, "role": p.what,
            "lower": json_number(p.lower, integer=False) if p.lower > 0 else None,
            "upper": json_number(p.upper, integer=False) if p.upper < float("inf") else None,
            "prior": json_number(p.prior, integer=False) if p.prior is not None else None,
            "relative_error": json_number(p.sigma, integer=False) if p.sigma is not None
            else None, "initial": json_number(p.initial, integer=False),
            "flags": list(p.flags), "held": p.held or None}


def _params_json(params: tuple[FittedParam, ...]) -> dict:
    return {(p.name if p.log is None else f"{p.name}@{p.log}"): _param_json(p) for p in params}


def calibration_json(cal: Calibration, outliers: list[tuple[str, Row]] | None = None) -> str:
    """`outliers`: the rows left out as outliers (`api.outlier_rows`), listed as such."""
    c = cal.comparison
    point, error = c.worst
    return dump_json({
        "schema": schema.CALIBRATE,
        "log": c.logs[0] if len(c.logs) == 1 else list(c.logs),
        "schedule": c.schedule,
        "params": _params_json(cal.params),
        "rows": [{"size": p.size, "measured_s": json_number(p.measured, integer=False),
                  "predicted_s": json_number(predicted, integer=False),
                  "error": json_number(e, integer=False), "fit": p.fit, "protocol": w,
                  "latency_share": json_number(share, integer=False), "log": p.log,
                  "line": p.line}
                 for p, predicted, e, w, share in zip(c.points, c.predicted, c.errors,
                                                      c.protocols, c.latency)],
        "geomean_error_fit": json_number(c.geomean(True), integer=False),
        "geomean_error_heldout": json_number(c.geomean(False), integer=False),
        "worst": {"size": point.size, "error": json_number(error, integer=False)},
        # Beyond the keys: whether the fit can be trusted at all.
        "converged": cal.converged,
        "undetermined": list(cal.undetermined),
        "held": [p.name for p in cal.params if p.held],
        "mean_error_fit": json_number(c.mean(True), integer=False),
        "mean_error_heldout": json_number(c.mean(False), integer=False),
        "split": {"kind": cal.split.kind, "every": cal.split.every,
                  "size": cal.split.size if cal.split.kind == "size" else
                  (cal.split.own_below or None)},
        "heldout_by_size": [{"range": name, "rows": n,
                             "geomean_error": json_number(g, integer=False)}
                            for name, n, g in c.by_range(False)],
        "heldout_by_bound": bounds_json(c, False),
        "flagged": [p.name for p in cal.flagged],
        "starts_disagree": list(cal.starts),
        "optimum": _optimum_json(cal),
        "checks": list(cal.checks),
        "notes": list(cal.notes),
        "step_rules": [{"rule": f.rule, "heldout_geomean_error": json_number(f.heldout, integer=False),
                        "fit_geomean_error": json_number(f.fit, integer=False),
                        "declared": f.file_rule} for f in cal.step_rules],
        "step_rule_preferred": _preferred(cal),
        "outliers": [{"log": log, "line": row.span.line, "size": row.size, "outlier": True,
                      "twin_ratio": twin_ratio(row)} for log, row in outliers or ()],
        "bands": [{"range": b.range, "error": b.error, "rows": b.rows}
                  for b in held_out_bands(c)],
        "folds": [{"heldout_log": log, "params": _params_json(f.params),
                   "flagged": [p.name for p in f.flagged], "checks": list(f.checks),
                   "optimum": _optimum_json(f)}
                  for log, f in cal.folds],
        "trusted": cal.trusted,
    })


def _optimum_json(cal: Calibration) -> dict | None:
    """How many starts reached the best cost, of how many made (None: several fits)."""
    reached, made = cal.optimum
    return {"reached": reached, "starts": made} if made else None


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
    """The fitted params as a `.sched` library a machine file can import: the shared ones
    (with one log, all); each log's own params as comments, for its machine file."""
    c = cal.comparison
    fit = sum(p.fit for p in c.points)
    # (the command line and the logs' paths through `comment`: a newline in a file name must
    # not end the comment and start a statement of the library)
    lines = [f"# Fitted by: {comment(command)}",
             f"# least squares on log time over {fit} of {len(c.points)} rows of "
             f"{comment(', '.join(c.logs))};",
             f"# geomean |error| {percent(c.geomean(True))} on fit rows, "
             f"{percent(c.geomean(False))} on held-out rows; {_worst(c, True)}.",
             *([bands_line(held_out_bands(c))] if held_out_bands(c) else []), ""]
    for p in cal.params:
        sigma = f"  # ±{p.sigma * 100:.0f}% (1σ); {p.what}" if p.sigma is not None else ""
        if p.held:  # never written as a fitted value
            sigma = f"  # {p.held} (not fitted); {p.what}"
        if p.log is None:
            lines.append(f"param {p.name} = {_literal(p)}{comment(sigma)}")
    own = [p for p in cal.params if p.log is not None]
    if own:
        lines += ["", "# Each log's own params (they belong in its machine file):"]
        lines += [f"#   {comment(p.log or '')}: param {p.name} = {_literal(p)}"
                  + (f"  ({p.held}, not fitted)" if p.held else "") for p in own]
    return "\n".join(lines) + "\n"


def error_summary(c: Comparison) -> list[str]:
    """The errors of a comparison in a few lines: geomean and mean, by size, by what bounds
    the time, and the worst row."""
    return [f"geomean |error|: {percent(c.geomean(None))} over {len(c.points)} rows; "
            f"mean |error|: {percent(c.mean(None))}",
            f"by size: {_ranges(c, None)}",
            f"by what bounds the time: {_bounds(c, None)}",
            _worst(c, False)]


def write_whole(path: Path, write: Callable[[str], object]) -> None:
    """`write(temporary path)`, then move the file into place: all of it or nothing, with the
    usual mode under the umask, by `schedc.files`' policy (never over an input of the run)."""
    write_output_with(path, write)


def _preferred(cal: Calibration) -> str | None:
    from ..analysis.calibrate.step_rules import preferred
    return preferred(cal.step_rules) if cal.step_rules else None


def _step_rules_text(cal: Calibration) -> list[str]:
    """`--step-rules`: each rule's errors, and the one the rows prefer (fitted: a choice by
    these rows, not a proof)."""
    if not cal.step_rules:
        return []
    shown = [f"{f.rule} {percent(f.heldout)} held out ({percent(f.fit)} on fit rows)"
             + (" [declared]" if f.file_rule else "") for f in cal.step_rules]
    return [f"step cost: {'; '.join(shown)}; the rows prefer `step cost {_preferred(cal)}`"]

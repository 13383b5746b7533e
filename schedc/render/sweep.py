"""Text, JSON and CSV for `schedc sweep`: the table (each schedule's time and busbw, and
the fastest), the JSON document and the CSV in pieces of bytes (10^6 points a second:
`floats.py`), and the summary printed when the CSV is written.

Numbers in JSON and CSV are in base units (bytes, seconds); floats as Python's shortest
repr.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..measure.bandwidth import format_gbps
from ..units import base_unit, format_quantity, format_seconds
from . import schema
from .floats import csv_rows
from .text import dump_json_pieces, table

if TYPE_CHECKING:  # (a sweep without formulas imports no SymPy: analysis.solve does)
    from ..analysis.solve.sweep import Sweep
    from ..elaborate.program import Program


def sweep_text(result: Sweep) -> str:
    """The sweep's table: each schedule's time, then its busbw in GB/s (nccl-tests' terms,
    the factor said under the table), and the fastest schedule."""
    names = list(result.times)
    columns = [np.asarray(result.times[n], dtype=float).tolist() for n in names]
    busbw = {n: (None if result.busbw.get(n) is None else
                 np.asarray(result.busbw[n], dtype=float).tolist()) for n in names}
    fastest = _fastest(result).tolist() if names else []
    shown = ([str(int(v)) for v in result.values] if result.compiles else
             [format_quantity(v, result.param.dim) for v in np.asarray(result.values).tolist()])
    header: list[str] = [result.param.name]
    for n in names:
        header += [n] + ([] if busbw[n] is None else [f"{n} busbw"])
    rows = [(*header, "fastest")]
    for k, value in enumerate(shown):
        cells = [value]
        for n, c in zip(names, columns):
            bus = busbw[n]
            cells += [format_seconds(c[k])] + ([] if bus is None else [format_gbps(bus[k])])
        rows.append((*cells, names[fastest[k]] if names else "-"))
    text = "\n".join(table(rows, right=range(len(header)))) + "\n"
    for note in dict.fromkeys(result.factors.values()):
        text += f"busbw in GB/s: {note}\n"
    if result.compiles:
        text += (f"{result.param.name} is structural: compiled at {result.compiles} "
                 f"value{'s' * (result.compiles != 1)}\n")
    return text


def sweep_json(program: Program, result: Sweep) -> list[bytes]:
    """The sweep's JSON document, in pieces of bytes (`dump_json_pieces`)."""
    return dump_json_pieces({
        "schema": schema.SWEEP,
        "file": program.path,
        "param": result.param.name,
        "unit": base_unit(result.param.dim),
        "spacing": result.spacing,
        "values": [int(v) for v in result.values] if result.compiles
                  else np.asarray(result.values, dtype=float),  # finite: sweep checks
        "compiles": result.compiles,
        "schedules": {name: np.asarray(times, dtype=float)
                      for name, times in result.times.items()},
        # (busbw only: algbw is busbw / busbw_factor, and each array costs its share of the
        # 10^6 points a second; a factor per value when the ranks change with the param)
        "busbw_GBps": {name: None if v is None else np.asarray(v, dtype=float)
                       for name, v in result.busbw.items()},
        "busbw_factor": {name: None if f is None else f[0] if len(f) == 1 else list(f)
                         for name, f in result.busbw_factor.items()},
    })


def sweep_csv(result: Sweep) -> Iterator[str | bytes]:
    """The sweep as CSV in base units, a column per schedule, in pieces; floats as Python's
    shortest repr, so a value reads back exactly (`floats.csv_rows`: 10^6 rows in a second)."""
    unit = base_unit(result.param.dim)
    header = io.StringIO()
    csv.writer(header, lineterminator="\n").writerow(
        [f"{result.param.name} ({unit})" if unit else result.param.name,
         *[f"{name} (s)" for name in result.times]])
    yield header.getvalue()
    yield from csv_rows([result.values, *result.times.values()])


def _fastest(result: Sweep) -> np.ndarray:
    """The index of the fastest schedule at each point, the first of equal times (as min()
    picks, and argmin over the stacked columns): a pass a column, not a strided argmin."""
    columns = list(result.times.values())
    best, fastest = np.asarray(columns[0], dtype=float), np.zeros(len(result.values), np.intp)
    for k, column in enumerate(columns[1:], 1):
        faster = column < best
        best = np.where(faster, column, best)
        fastest[faster] = k
    return fastest


def sweep_summary(result: Sweep, path: Path) -> str:
    """What `sweep --csv` prints instead of the table: what it wrote, and where the fastest
    schedule changes over the range."""
    values, names = result.values, list(result.times)
    dim = result.param.dim
    lines = [f"wrote {len(values):,} points of {result.param.name} "
             f"({format_quantity(float(values[0]), dim)} to "
             f"{format_quantity(float(values[-1]), dim)}, {result.spacing}) for "
             f"{len(names)} schedule{'s' * (len(names) != 1)} to {path}"]
    if names:
        best = _fastest(result)
        starts = [0, *(np.flatnonzero(np.diff(best)) + 1).tolist()]
        lines.append("fastest: " + ", ".join(
            f"{names[best[k]]} from {format_quantity(float(values[k]), dim)}" for k in starts))
    return "\n".join(lines) + "\n"

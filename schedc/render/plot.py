"""Plots with matplotlib: times over a param with their crossovers, a schedule's busy map,
the two sides of a solved equation.

matplotlib is imported here only, and this module only by the commands that plot (start-up
time matters for the others). Figures are built on `matplotlib.figure.Figure` with the Agg
canvas, never pyplot, so no display and no global state is involved. Output is
deterministic: a fixed `svg.hashsalt` per figure (which also keeps the ids of several SVGs
in one page apart) and no date in the metadata, so the same input gives the same bytes.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from ..analysis.overview import Busy, Curves, SideCurves
from ..analysis.solve.sweep import Sweep
from ..errors import UsageError
from ..model.topology import Topology
from ..units import SECONDS, Dim, format_quantity
from .files import write_atomically

FORMATS = ("svg", "png")
WIDE = (6.0, 3.6)  # inches; the page scales the SVG to its column (large type for phones)
STYLE = {
    "font.family": "sans-serif",
    "font.size": 11,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "svg.fonttype": "none",  # text stays text: smaller, selectable, the page's own font
    "legend.frameon": False,
}


def _figure(size=WIDE, left: float = 0.8, right: float = 0.15, bottom: float = 0.55,
            top: float = 0.15):
    """A figure with fixed margins in inches (a layout engine would cost a second draw)."""
    import matplotlib
    matplotlib.rcParams.update(STYLE)  # type: ignore[arg-type]  # stubs take literal keys only
    from matplotlib.figure import Figure
    figure = Figure(figsize=size)
    width, height = size
    figure.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height,
                           top=1 - top / height)
    return figure


def svg(figure, prefix: str) -> str:
    """The figure as SVG text without the XML prolog, ready to inline in HTML: every id
    (and every reference to one) starts with `prefix`, so several SVGs in one page keep
    their ids apart (matplotlib numbers `axes_1`, `line2d_1`… afresh in each figure)."""
    import matplotlib
    with matplotlib.rc_context({"svg.hashsalt": f"schedc-{prefix}"}):
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    text = text[text.index("<svg"):]
    return (text.replace(' id="', f' id="{prefix}-').replace('href="#', f'href="#{prefix}-')
            .replace("url(#", f"url(#{prefix}-"))


def save(figure, path: Path) -> None:
    """Write the figure to `path`, as SVG or PNG by its suffix, atomically."""
    kind = path.suffix.lower().lstrip(".")
    if kind not in FORMATS:
        raise UsageError(f"--plot {path}: the file must end in .svg or .png")
    if kind == "svg":
        data = ('<?xml version="1.0" encoding="utf-8"?>\n' + svg(figure, "plot")).encode()
    else:
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=150, metadata={"Software": None})
        data = buffer.getvalue()
    write_atomically(path, data)


def _axes_in(axes, dim: Dim, which: str) -> None:
    """Ticks in readable units; no minor ticks (each is an object to draw: they cost more
    than the rest of a plot)."""
    from matplotlib.ticker import FuncFormatter, NullLocator
    axis = axes.xaxis if which == "x" else axes.yaxis
    axis.set_major_formatter(FuncFormatter(lambda v, _: format_quantity(v, dim) if v > 0 else "0"))
    axis.set_minor_locator(NullLocator())


def _seconds(axes) -> None:
    _axes_in(axes, SECONDS, "y")


# Each schedule its own line style and marker, the earlier ones drawn wider: where two
# schedules take the same time over part of the range (the seed's ring and hierarchical
# against B_L below 50 GB/s, both bound by NVLink), the later line runs inside the earlier,
# and both show.
_STYLES = ("-", (0, (5, 3)), (0, (1, 2)), (0, (6, 2, 1, 2)))
_MARKERS = ("o", "s", "^", "D", "v", "P")


def _lines(axes, values: np.ndarray, times: dict[str, np.ndarray], equal=()) -> None:
    """One line per schedule, each in its own colour, style, width and markers; a schedule
    equal to an earlier one throughout is dashed, so both show."""
    same = {b for _, b, *_ in equal}
    every = max(1, len(values) // 6)
    for k, (name, series) in enumerate(times.items()):
        style = (0, (4, 3)) if name in same else _STYLES[k % len(_STYLES)]
        axes.plot(values, series, label=name, color=f"C{k % 10}",
                  linewidth=max(1.0, 3.0 - 0.7 * k), linestyle=style,
                  marker=_MARKERS[k % len(_MARKERS)], markersize=4,
                  markevery=(k * every // max(1, len(times)) % every, every))


def curves_figure(curves: Curves):
    """Every schedule's time over one param (log axes), crossovers marked and labelled, the
    nominal value a dotted line."""
    figure = _figure()
    axes = figure.add_subplot()
    result, param = curves.sweep, curves.param
    _lines(axes, result.values, result.times, curves.equal)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.axvline(float(param.nominal), color="0.4", linestyle=":", linewidth=1)
    axes.annotate(f"nominal {format_quantity(param.nominal, param.dim)}",
                  (float(param.nominal), 1), xycoords=("data", "axes fraction"),
                  xytext=(3, -3), textcoords="offset points", va="top", fontsize=9, color="0.3")
    lo, hi = np.log(result.values[0]), np.log(result.values[-1])
    for k, c in enumerate(curves.crossovers):
        x = float(c.value)
        axes.plot([x], [c.time], marker="o", markersize=6, color="black", zorder=5)
        left = (np.log(x) - lo) / (hi - lo) > 0.6  # near the right edge: the label goes left
        axes.annotate(f"{c.left} = {c.right}\n{param.name} = {format_quantity(x, param.dim)}",
                      (x, c.time), xytext=(-8 if left else 8, -16 - 26 * (k % 3)),
                      textcoords="offset points", fontsize=9, ha="right" if left else "left",
                      va="top", arrowprops={"arrowstyle": "-", "color": "0.5"})
    _axes_in(axes, param.dim, "x")
    _seconds(axes)
    axes.set_xlabel(param.name)
    axes.legend(loc="upper left", fontsize=9)
    return figure


def sweep_figure(result: Sweep):
    """`schedc sweep --plot`: every schedule's time over the swept param."""
    figure = _figure()
    axes = figure.add_subplot()
    _lines(axes, result.values, result.times)
    if result.spacing == "log":
        axes.set_xscale("log")
    axes.set_yscale("log")
    _axes_in(axes, result.param.dim, "x")
    _seconds(axes)
    axes.set_xlabel(result.param.name)
    axes.legend(fontsize=8)
    return figure


def solve_figure(curves: SideCurves):
    """`schedc solve --plot`: both sides over the solved param, each solution marked."""
    figure = _figure(top=0.35)
    axes = figure.add_subplot()
    param = curves.param
    _lines(axes, curves.values, curves.sides)
    axes.set_xscale("log")
    if all((s > 0).all() for s in curves.sides.values()):
        axes.set_yscale("log")
    axes.axvline(float(param.nominal), color="0.4", linestyle=":", linewidth=1)
    for x, y in curves.roots:
        axes.plot([x], [y], marker="o", markersize=6, color="black", zorder=5)
        axes.annotate(f"{param.name} = {format_quantity(x, param.dim)}", (x, y), xytext=(8, -16),
                      textcoords="offset points", fontsize=9, va="top")
    _axes_in(axes, param.dim, "x")
    _axes_in(axes, curves.dim, "y")
    axes.set_xlabel(param.name)
    axes.set_title(f"{' = '.join(curves.sides)}, for {param.name}", fontsize=10)
    axes.legend(fontsize=9)
    return figure


def busy_figure(busy: Busy, topology: Topology):
    """Rounds across, resources (grouped by class) down; colour: the share of the round the
    resource is busy. A row at 1 in every column is the resource every round waits for."""
    rows = len(busy.resources)
    height = min(5.0, max(2.2, 1.4 + rows * 0.02 + 0.2 * len(busy.classes)))
    figure = _figure((WIDE[0], height), left=1.25, right=0.6, top=0.3)
    axes = figure.add_subplot()
    axes.grid(False)
    image = axes.imshow(busy.fraction.T, aspect="auto", interpolation="nearest", cmap="viridis",
                        vmin=0, vmax=1, origin="upper",
                        extent=(0.5, len(busy.rounds) + 0.5, rows - 0.5, -0.5))
    for _, start, _ in busy.classes:
        if start:
            axes.axhline(start - 0.5, color="white", linewidth=1.5)
    axes.set_yticks([(start + end - 1) / 2 for _, start, end in busy.classes],
                    [f"{cls} ({_members(topology, busy, start, end)})"
                     for cls, start, end in busy.classes])
    axes.tick_params(axis="y", length=0)
    columns = len(busy.rounds)
    ticks = np.unique(np.linspace(1, columns, min(columns, 8)).round().astype(int))
    axes.set_xticks(ticks, [str(int(busy.rounds[t - 1]) + 1) for t in ticks])
    axes.set_xlabel("round" + (" (binned: busy time over elapsed time; busiest of each row)"
                               if busy.binned else ""))
    bar = figure.colorbar(image, ax=axes, fraction=0.05, pad=0.015)
    bar.set_label("busy / round time", fontsize=9)
    axes.set_title(busy.name, loc="left", fontsize=11)
    return figure


def _members(topology: Topology, busy: Busy, start: int, end: int) -> str:
    """How many resources a class has (its rows may be binned)."""
    cls = topology.resources[busy.resources[start]].cls
    return str(sum(1 for r in topology.resources
                   if r.cls == cls and r.effective_bandwidth is not None))

"""`schedc report`: one self-contained HTML page — inline CSS, inline SVG plots, MathML
formulas (SymPy's presentation printer, which browsers render natively) — readable without
JavaScript or a network. The same input gives the same bytes (see `plot`)."""

from __future__ import annotations

from html import escape

import sympy

from .. import __version__
from ..analysis.bound.bounds import Bounds
from ..analysis.overview import Curves, Group, Overview
from ..cost.formula import nominal_value
from ..cost.timing import Timing
from ..elaborate.program import Program
from ..model.ir import linear_value
from ..units import format_bytes, format_quantity, format_seconds
from . import plot
from .analysis import report_text
from .bound import SCHEDULE_HEADER, best_text, binding_text, crossing_rows, cut_rows, schedule_rows
from .document import LEFT, Block, Figure, Formulas, Heading, Math, Table
from .documents import (
    COMPARE_ALIGN,
    COMPARE_HEADER,
    class_bottleneck,
    compare_rows,
    timing_equation,
)
from .writers.html import Figures, element, mathml, table

CSS = """
:root { color-scheme: light; --ink: #1d232b; --muted: #5b6570; --rule: #d9dee4; --band: #f4f6f8; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
       color: var(--ink); background: #fff; }
main { max-width: 62rem; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.5rem; margin: 0.5rem 0; overflow-wrap: anywhere; }
h2 { font-size: 1.2rem; margin: 2rem 0 0.5rem; border-bottom: 1px solid var(--rule); }
h3 { font-size: 1.05rem; margin: 1.2rem 0 0.4rem; }
p, li { max-width: 48rem; }
.muted { color: var(--muted); font-size: 0.9rem; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: 0.4rem 0; font-size: 0.9rem; }
th, td { padding: 0.25rem 0.6rem; border-bottom: 1px solid var(--rule); text-align: left;
         vertical-align: top; }
th { background: var(--band); white-space: nowrap; }
td.num, th.num { text-align: right; white-space: nowrap; }
code { font: 0.85rem/1.4 ui-monospace, "SFMono-Regular", Menlo, monospace; overflow-wrap: anywhere; }
.formula { overflow-x: auto; max-width: 100%; padding: 0.3rem 0; }
math { font-size: 1.1rem; }
figure { margin: 0.8rem 0; }
figure svg { width: 100%; max-width: 46rem; height: auto; display: block; }
figcaption { color: var(--muted); font-size: 0.85rem; }
.pass { color: #17663a; font-weight: 600; }
.fail { color: #a61b1b; font-weight: 600; }
nav { display: flex; flex-wrap: wrap; gap: 0.2rem 0.9rem; }
td.wide { min-width: 16rem; }
"""


def report_html(program: Program, overview: Overview) -> str:
    body = [f"<h1>{escape(program.path)}</h1>",
            f'<p class="muted">schedc {escape(__version__)} report. T = Σ<sub>rounds</sub> (α + '
            "max<sub>resources</sub> bytes / bandwidth), every value at the nominal point "
            "below.</p>",
            '<nav><a href="#compare">schedules</a><a href="#formulas">formulas</a>'
            '<a href="#plots">plots</a><a href="#rounds">rounds</a><a href="#bound">bound</a>'
            '<a href="#checks">checks</a><a href="#machine">machine</a></nav>',
            _params(program)]
    figure = Figures()
    for k, group in enumerate(overview.groups):
        body += _group(program, group, overview, figure, k)
    body += _checks(overview)
    body.append(_machine(program))
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{escape(program.path)}: schedc report</title>\n"
            f"<style>{CSS}</style>\n</head>\n<body>\n<main>\n"
            + "\n".join(body) + "\n</main>\n</body>\n</html>\n")


def _machine(program: Program) -> str:
    from ..analysis.machine import summarize
    from .machine import machine_section
    return machine_section(summarize(program))


def _write(block: Block) -> str:
    """A block without figures, by the HTML writer."""
    return element(block, Figures())


def _params(program: Program) -> str:
    rows = [(p.name, format_quantity(p.nominal, p.dim)) for p in program.params.values()]
    return "<h2 id=\"params\">Params</h2>" + _write(Table(header=("param", "nominal"), rows=tuple(rows), align="lr"))


def _group(program: Program, group: Group, overview: Overview, figure, index: int) -> list[str]:
    c = group.collective
    nominal = program.nominal
    suffix = f"-{index}" if index else ""
    verdicts = {v.name: v for v in overview.verdicts}
    rows = [(*row, _verified(verdicts.get(row[0]))) for row in compare_rows(program, list(group.timings))]
    out = [element(Heading(text=f"{c.kind} of {format_bytes(linear_value(c.size, nominal))} over "
                                f"{len(c.ranks)} ranks", level=2, anchor=f"compare{suffix}"),
                   figure),
           element(Table(header=(*COMPARE_HEADER, "verified"), rows=tuple(rows),
                         align=COMPARE_ALIGN + LEFT), figure),
           f'<h3 id="formulas{suffix}">Formulas</h3>']
    for t in group.timings:
        out += _formulas(program, t, figure)
    out.append(f'<h3 id="plots{suffix}">Time against each param</h3>')
    for curves in group.curves:
        out.append(element(Figure(figure=plot.curves_figure(curves), caption=_curves_caption(curves),
                                  kind="curves"), figure))
        out += _crossovers(curves)
    out.append(f'<h3 id="rounds{suffix}">Round by round: how busy each resource is</h3>')
    out.append('<p class="muted">Rounds across, resources down (grouped by class; each '
               "direction of a link is a resource). A cell is the share of the round's time "
               "(α + its slowest resource) that the resource is busy: the resource the round "
               "waits for is at 1 less α's share, an idle one at 0.</p>")
    for busy in group.busy:
        out.append(element(Figure(figure=plot.busy_figure(busy, program.topology),
                                  caption=f"{busy.name}: busy fraction per round and resource.",
                                  kind="busy"), figure))
    out += _bound(program, group.bounds, suffix)
    return out


def _verified(verdict) -> str:
    if verdict is None:
        return "-"
    if not verdict.ok:
        return "FAILS (reported with --no-verify)"
    return "yes" if verdict.method == "exact" else f"yes (fingerprints, < 2^-{verdict.false_pass_bits})"


def _formulas(program: Program, t: Timing, figure: Figures) -> list[str]:
    classes = [(str(k.count), format_seconds(nominal_value(k.time, t.nominal)), Math.of(k.time),
                *class_bottleneck(k, program.topology)) for k in t.cost.classes]
    blocks = (Heading(text=t.name), Formulas(equations=(timing_equation(t),)),
              Table(header=("rounds", "each", "round class", "bottleneck", "resources"),
                    rows=tuple(classes), align="rrlll", wide=(4,)))
    return [element(block, figure) for block in blocks]


def _curves_caption(curves: Curves) -> str:
    p = curves.param
    text = (f"Time of each schedule against {p.name} (log axes), the other params "
            "at their nominal values; the dotted line is the nominal value")
    if curves.crossovers:
        text += "; dots mark where two schedules take equal time (found by solve)"
    return text + "."


def _crossovers(curves: Curves) -> list[str]:
    p = curves.param
    items = []
    for c in curves.crossovers:
        formula = "" if c.expr is None else \
            f" = <math>{sympy.mathml(c.expr, printer='presentation')}</math>"
        items.append(f"<li>{escape(c.left)} = {escape(c.right)} at {escape(p.name)} = "
                     f"{escape(format_quantity(float(c.value), p.dim))}{formula}, "
                     f"both {escape(format_seconds(c.time))}</li>")
    for a, b, lo, hi in curves.equal:
        items.append(f"<li>{escape(a)} and {escape(b)} take the same time "
                     f"{escape(_where(p, lo, hi))} (there the dashed curve lies on the other)</li>")
    items += [f"<li>{escape(n)}</li>" for n in curves.notes]
    if not items:
        items.append(f"<li>no crossover in {escape(p.name)}: the order of the schedules does "
                     "not change</li>")
    return ["<ul>" + "".join(items) + "</ul>"]


def _where(p, lo: sympy.Expr, hi: sympy.Expr) -> str:
    def at(x: sympy.Expr) -> str:
        return format_quantity(float(x), p.dim)

    if lo == 0 and hi.is_infinite:
        return f"for every {p.name}"
    if lo == 0:
        return f"for {p.name} ≤ {at(hi)}"
    if hi.is_infinite:
        return f"for {p.name} ≥ {at(lo)}"
    return f"for {at(lo)} ≤ {p.name} ≤ {at(hi)}"


def _bound(program: Program, b: Bounds, suffix: str) -> list[str]:
    topology, nominal = program.topology, program.nominal
    out = [f'<h3 id="bound{suffix}">How far from the physical limit</h3>']
    if not b.cuts:
        return out + ["<p>No cut: fewer than two ranks to split.</p>"]
    out.append(_write(Table(header=("cut", "bandwidth", "must cross", "bound"),
                            rows=tuple(cut_rows(b, nominal)), wide=(0,))))
    if b.binding is not None:
        out.append(f"<p>Binding cut: {escape(binding_text(b, topology))}.</p>")
    if b.end_host is not None:
        out.append(f"<p>End-host bound: {escape(format_seconds(b.end_host.value))}</p>"
                   + mathml(b.end_host.bound, "<mi>T</mi>", "≥"))
    out.append(f"<p><strong>{escape(best_text(b))}</strong></p>")
    if b.schedules:
        out.append(_write(Table(header=SCHEDULE_HEADER,
                                rows=tuple(schedule_rows(b, topology, nominal)), align="lrrrl",
                                wide=(4,))))
        crossing = crossing_rows(b, nominal)
        if crossing:
            assert b.binding is not None  # crossing rows exist only with a binding cut
            out.append(f"<p>Across the binding cut {escape(b.binding.cut.name)}:</p>")
            out.append(_write(Table(header=("schedule", "moves", "of the minimum", "over"),
                                    rows=tuple((n, m, f.strip("()"), o)
                                               for n, m, f, o in crossing))))
    return out


def _checks(overview: Overview) -> list[str]:
    check = overview.check
    out = ['<h2 id="checks">The file\'s reports and expects</h2>']
    if not check.reports and not check.outcomes:
        return out + ["<p>This file has no <code>report</code> or <code>expect</code> "
                      "statements.</p>"]
    if check.reports:
        out.append(_write(Table(header=("report", "value"), align="lr",
                                rows=tuple((r.name, report_text(r)) for r in check.reports))))
    if check.outcomes:
        rows = []
        for o in check.outcomes:
            verdict = '<span class="pass">pass</span>' if o.passed else '<span class="fail">FAIL</span>'
            found = o.found + (f" vs {o.expected}" if o.computed_right or not o.passed else "")
            rows.append((str(o.span.line), verdict, f"<code>expect {escape(o.text)}</code>",
                         escape(found + (f"; {o.note}" if o.note else ""))))
        out.append(table(("line", "", "expect", "found"), rows, numeric=(0,), raw=(1, 2, 3),
                          wide=(2,)))
    return out

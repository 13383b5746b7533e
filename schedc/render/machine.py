"""`schedc machine show`: a machine's summary as text, as JSON (schedc.machine/1), and as SVG
drawings of one host and of the fabric (also on `schedc report`'s page)."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from html import escape

from ..analysis.machine import LinkRow, MachineSummary
from ..hardware.rules import DEFAULT_SM
from ..units import format_rate
from ..words import counted
from . import schema
from .text import dump_json, json_number, table


def _rate(value: Fraction | None) -> str:
    return "-" if value is None else format_rate(value)


def machine_text(summary: MachineSummary) -> str:
    kinds = Counter(kind for _, kind, _ in summary.devices)
    per_host = Counter(kind for _, kind, host in summary.devices
                       if summary.hosts and host == summary.hosts[0])
    lines = [f"machine: {summary.path}",
             f"hosts: {len(summary.hosts) or 'none declared'}",
             "devices: " + ", ".join(counted(n, k) for k, n in sorted(kinds.items()))]
    if per_host:
        lines.append(f"per host ({summary.hosts[0]}): " +
                     ", ".join(counted(n, k) for k, n in sorted(per_host.items())))
    if summary.gpu_sms:
        # (the default is assumed only when no GPU declares one: else `schedc nccl` refuses)
        none = f"; `schedc nccl` assumes sm {DEFAULT_SM} unless --sm" \
            if len(summary.gpu_sms) == 1 else ""
        lines.append("GPU compute capability: " + ", ".join(
            f"sm {sm} ({counted(n, 'GPU')})" if sm is not None
            else f"not declared ({counted(n, 'GPU')}{none})"
            for sm, n in summary.gpu_sms))
    lines += ["", "links by class (per direction):"]
    rows: list[tuple[str, ...]] = [("class", "links", "bandwidth", "each way", "shared")]
    for (cls, expr, fwd, back, shared), count in _link_classes(summary.links).items():
        each = _rate(fwd) if fwd == back else f"{_rate(fwd)} / {_rate(back)}"
        rows.append((cls, str(count), expr, each, ", ".join(shared) or "-"))
    lines += table(rows, right=(1,), indent="  ") if len(rows) > 1 else ["  none"]
    if summary.routes:
        routed, of = summary.routed
        to = "" if routed == of else f" to {routed:,} of the {of:,} others, evenly spread " \
            "(--max-routes)"
        lines += ["", f"routes from the first GPU{to} (link classes along each path):"]
        rows = [("scope", "path", "GPU pairs", "share")]
        rows += [(r.scope, " → ".join(r.classes), str(r.pairs), str(r.share))
                 for r in summary.routes]
        lines += table(rows, right=(2, 3), indent="  ")
    if summary.derived_from:
        lines += ["", "figures (imported):"]
        for name, (value, source, rule) in summary.derived_from.items():
            lines += [f"  {name} = {value}", f"    from: {source}", f"    rule: {rule}"]
    return "\n".join(lines) + "\n"


def _link_classes(links: tuple[LinkRow, ...]) -> dict[tuple, int]:
    found: Counter = Counter()
    for link in links:
        back = link.forward if link.one_way else link.backward
        found[(link.cls, link.bandwidth, link.forward, back, link.shared)] += 1
    return dict(found)


def machine_json(summary: MachineSummary) -> str:
    document = {
        "schema": schema.MACHINE, "path": summary.path, "hosts": list(summary.hosts),
        "devices": [{"name": n, "kind": k, "host": h} for n, k, h in summary.devices],
        "links": [{"a": link.a, "b": link.b, "class": link.cls, "bandwidth": link.bandwidth,
                   "bandwidth_Bps": {"a_to_b": json_number(link.forward),
                                     "b_to_a": None if link.one_way else json_number(link.backward)},
                   "shared": list(link.shared)} for link in summary.links],
        "routes": [{"scope": r.scope, "classes": list(r.classes), "pairs": r.pairs,
                    "share": str(r.share)} for r in summary.routes],
        "routed": {"gpus": summary.routed[0], "of": summary.routed[1]},
        "derived_from": {name: {"value": v, "from": s, "rule": r}
                         for name, (v, s, r) in summary.derived_from.items()},
        "gpu_sm": [{"sm": sm, "gpus": n} for sm, n in summary.gpu_sms],
    }
    return dump_json(document)


# ---- drawings

MAX_DRAWN = 24  # devices per row of a drawing
COLOURS = {"gpu": "#76b900", "nic": "#1f77b4", "switch": "#888888"}
LINK_COLOURS = {"nvlink": "#76b900", "pci": "#1f77b4", "net": "#d62728", "sys": "#9467bd",
                "c2c": "#ff7f0e", "loc": "#8c564b"}


def _svg(width: int, height: int, body: list[str], title: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">'
            f'<title>{escape(title)}</title>' + "".join(body) + "</svg>")


def host_svg(summary: MachineSummary) -> str:
    """One host: its devices in rows by kind (switches, NICs, GPUs), its links as lines."""
    host = summary.hosts[0] if summary.hosts else None
    names = [n for n, _, h in summary.devices if h == host]
    kinds = {n: k for n, k, _ in summary.devices}
    rows = [[n for n in names if kinds[n] == kind] for kind in ("switch", "nic", "gpu")]
    rows = [r[:MAX_DRAWN] for r in rows if r]  # a drawing, not a listing: the first ones
    width = max(160, 90 * max((len(r) for r in rows), default=1) + 20)
    height = 70 * len(rows) + 40
    where: dict[str, tuple[float, float]] = {}
    for y, row in enumerate(rows):
        step = (width - 20) / len(row)
        for x, name in enumerate(row):
            where[name] = (10 + step * x + step / 2, 40 + 70 * y)
    body = _lines(summary, where, host)
    for name, (px, py) in where.items():
        short = name.split(".", 1)[-1]
        body.append(f'<rect x="{px - 38:.0f}" y="{py - 12:.0f}" width="76" height="24" rx="4" '
                    f'fill="{COLOURS.get(kinds[name], "#ccc")}"/><text x="{px:.0f}" y="{py + 4:.0f}" '
                    f'text-anchor="middle" fill="white">{escape(short)}</text>')
    body.append(f'<text x="10" y="16">{escape(host or "the machine")}: one host</text>')
    return _svg(width, height, body, f"{host or 'machine'}: devices and links")


def _fabric_rows(summary: MachineSummary, outside: list[str], hosts: list[str]
                 ) -> list[list[str]]:
    """The fabric in rows by distance from the hosts: the hosts at the bottom, the switches
    they link to (rails, leaves) above, those only the switches reach (spines) above them,
    so that no link runs along a row through the boxes."""
    host_of = {n: h for n, _, h in summary.devices}
    level = dict.fromkeys(hosts, 0)
    neighbours: dict[str, set[str]] = {}
    for link in summary.links:
        a, b = host_of.get(link.a) or link.a, host_of.get(link.b) or link.b
        neighbours.setdefault(a, set()).add(b)
        neighbours.setdefault(b, set()).add(a)
    frontier = list(hosts)
    while frontier:
        nxt = [d for n in frontier for d in sorted(neighbours.get(n, ())) if d not in level]
        for d in nxt:
            level.setdefault(d, level[frontier[0]] + 1)
        frontier = list(dict.fromkeys(nxt))
    top = max((level.get(n, 1) for n in outside), default=1)
    rows = [[n for n in outside if level.get(n, 1) == k] for k in range(top, 0, -1)]
    return [row for row in rows if row] + [hosts]


def fabric_svg(summary: MachineSummary) -> str:
    """The fabric: every device outside the hosts, in rows by distance from the hosts, and
    each host as one box."""
    outside = [n for n, _, h in summary.devices if h is None][:MAX_DRAWN]
    hosts = list(summary.hosts)[:MAX_DRAWN]
    rows = _fabric_rows(summary, outside, hosts)
    width = max(200, 90 * max(*(len(r) for r in rows), 1) + 20)
    where: dict[str, tuple[float, float]] = {}
    for y, row in enumerate(rows):
        step = (width - 20) / max(1, len(row))
        for x, name in enumerate(row):
            where[name] = (10 + step * x + step / 2, 40 + 90 * y)
    host_of = {n: h for n, _, h in summary.devices}
    seen, body = set(), []
    for link in summary.links:
        a, b = host_of.get(link.a) or link.a, host_of.get(link.b) or link.b
        if a == b or (a, b) in seen or a not in where or b not in where:
            continue
        seen.add((a, b))
        (x1, y1), (x2, y2) = where[a], where[b]
        colour = LINK_COLOURS.get(link.cls, "#999")
        if y1 == y2:  # two boxes of one row: an arc above them, not a line through the row
            body.append(f'<path d="M{x1:.0f},{y1 - 12:.0f} Q{(x1 + x2) / 2:.0f},{y1 - 45:.0f} '
                        f'{x2:.0f},{y2 - 12:.0f}" fill="none" stroke="{colour}" '
                        'stroke-width="1"/>')
        else:
            body.append(f'<line x1="{x1:.0f}" y1="{y1:.0f}" x2="{x2:.0f}" y2="{y2:.0f}" '
                        f'stroke="{colour}" stroke-width="1"/>')
    for name, (px, py) in where.items():
        fill = "#444" if name in summary.hosts else COLOURS["switch"]
        body.append(f'<rect x="{px - 38:.0f}" y="{py - 12:.0f}" width="76" height="24" rx="4" '
                    f'fill="{fill}"/><text x="{px:.0f}" y="{py + 4:.0f}" text-anchor="middle" '
                    f'fill="white">{escape(name)}</text>')
    body.append('<text x="10" y="16">the fabric: hosts and the switches between them</text>')
    return _svg(width, 90 * len(rows) + 20, body, "the fabric")


def _lines(summary: MachineSummary, where: dict, host: str | None) -> list[str]:
    out = []
    for link in summary.links:
        if link.a in where and link.b in where:
            (x1, y1), (x2, y2) = where[link.a], where[link.b]
            out.append(f'<line x1="{x1:.0f}" y1="{y1:.0f}" x2="{x2:.0f}" y2="{y2:.0f}" '
                       f'stroke="{LINK_COLOURS.get(link.cls, "#999")}" stroke-width="1.5">'
                       f'<title>{escape(link.a)} – {escape(link.b)}: {escape(link.cls)}, '
                       f'{escape(_rate(link.forward))}</title></line>')
    return out


def machine_section(summary: MachineSummary) -> str:
    """`schedc report`'s section: the drawings of one host and of the fabric."""
    kinds = Counter(kind for _, kind, _ in summary.devices)
    words = ", ".join(counted(n, k) for k, n in sorted(kinds.items()))
    return (f'<h2 id="machine">Machine</h2><p>{len(summary.hosts) or "no"} hosts; {escape(words)} '
            f"(<code>schedc machine show</code> lists every link).</p>"
            f'<figure>{host_svg(summary)}</figure><figure>{fabric_svg(summary)}</figure>')

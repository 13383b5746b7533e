"""An imported host (`schedc.hardware.HostModel`) → a readable `.sched` machine: `hosts` copies
of the host as a structural param, a cross-host fabric, and a comment per figure naming the
attribute it came from and NCCL's rule (`schedc machine show` reads them back as
`derived_from`: the lines `#   from:` and `#   rule:` above a param)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..hardware import rules
from ..hardware.rules import decimal
from ..hardware.system import Figure, HostModel, Wire
from ..language.quote import comment

FABRICS = ("rail", "single-switch", "fat-tree")


@dataclass(frozen=True)
class Fabric:
    kind: str = "rail"  # rail | single-switch | fat-tree
    spines: int = 2
    oversub: Fraction = Fraction(1)


def _param_base(wire_cls: str, figure: Figure) -> str:
    if wire_cls == "pci":
        rate = next((r for s, r in rules.PCI_GEN if f"speed {r} " in figure.rule), 60)
        width = figure.source.split('"')[1] if figure.source.startswith("link_width") else "16"
        return f"B_pcie{rules.PCI_GENERATION.get(rate, 3)}_x{width if width != '0' else '16'}"
    if wire_cls == "nvlink":
        return f"B_nvlink_{decimal(figure.gbps).replace('.', '_')}"
    return {"c2c": "B_c2c", "sys": "B_sys", "loc": "B_loc"}.get(wire_cls, "B_" + wire_cls)


@dataclass
class _Params:
    """Distinct figures → params, in first-use order, with every source that gave each."""

    names: dict[tuple, str]
    figures: dict[str, tuple[Figure, list[str], str]]

    def name(self, base: str, figure: Figure, title: str) -> str:
        key = (base, figure.gbps, figure.rule)
        if key not in self.names:
            name, n = base, 1
            while name in self.figures:
                n += 1
                name = f"{base}_{n}"
            self.names[key] = name
            self.figures[name] = (figure, [], title)
        name = self.names[key]
        self.figures[name][1].append(figure.source)
        return name

    def lines(self) -> list[str]:
        out = []
        for name, (figure, sources, title) in self.figures.items():
            more = f", and {len(sources) - 1} more like it" if len(sources) > 1 else ""
            out += [f"# {title}: {decimal(figure.gbps)} GB/s per direction.",
                    f"#   from: {comment(sources[0])}{more}", f"#   rule: {comment(figure.rule)}",
                    f"param {name} = {decimal(figure.gbps)} GB/s", ""]
        return out


TITLES = {"pci": "PCIe link", "nvlink": "NVLink", "c2c": "C2C (GPU to CPU)",
          "sys": "between CPUs (SYS)", "loc": "NIC on the CPU (local)"}


def machine_sched(host: HostModel, hosts: int, fabric: Fabric, command: str) -> str:
    """The .sched text of `hosts` copies of `host` joined by `fabric`."""
    params = _Params({}, {})
    body = _host_body(host, params)
    ports = sorted(host.ports, key=lambda p: (host.members("n").index(p.nic), p.dev))
    port_params = [params.name(f"B_net_{decimal(p.figure.gbps * 8).replace('.', '_')}g",
                               p.figure, "NIC port (NET)") for p in ports]
    gpus = len(host.members("g"))
    # Every text from the input (a path, a name in the file, the command line) goes through
    # `comment`: a newline in a <net name> must not end the comment and start a statement.
    head = [f"# Imported by `{comment(command)}`", f"# from {comment(host.path)} "
            f"({comment(host.form)}).", "#",
            "# Every bandwidth is a param below, derived as NCCL derives it (NVIDIA/nccl "
            "5067397c,", "# src/graph/topo.cc and topo.h), per direction; its comment names "
            "the attribute it came", "# from and the rule.", "#"]
    for note in host.notes:
        head += _wrapped(f"Note: {note}.")
    head += _wrapped(f"Fabric: {_fabric_words(fabric, len(ports))}")
    head += ["", "param alpha = 1 us       # per-round start-up (assumed: no file gives it)",
             f"param hosts = {hosts}          # structural: `--set hosts=16` compiles 16 hosts"]
    if fabric.kind == "fat-tree":
        head.append(f"param oversub = {decimal(fabric.oversub)}      # leaf uplink "
                    "oversubscription (NIC bandwidth : uplink bandwidth)")
        head.append(f"let spines = {fabric.spines}")
    head.append("")
    out = head + params.lines()
    if fabric.kind == "fat-tree":
        counts = {name: port_params.count(name) for name in port_params}
        total = " + ".join(name if n == 1 else f"{n} * {name}" for name, n in counts.items()) \
            or "0 GB/s"
        out += ["# One leaf's uplink to one spine, per direction: the host's NIC ports' "
                "bandwidth / (spines × oversub).", f"let B_up = ({total}) / (spines * oversub)",
                ""]
    out += ["topology {", "  host node[hosts] {", *body, "  }"]
    out += _fabric_lines(host, fabric, ports, port_params)
    out += ["}", "", "# Host-major ranks: node[0].g[0..], node[1].g[0..], ...",
            f"let ranks = [node[h].g[i] for h in 0..hosts-1 for i in 0..{gpus - 1}]",
            "let groups = [node[h].g for h in 0..hosts-1]", ""]
    return "\n".join(out)


def _host_body(host: HostModel, params: _Params) -> list[str]:
    lines = []
    for family, kind in (("g", "gpu"), ("n", "nic"), ("cpu", "switch"), ("pci", "switch")):
        count = len(host.members(family))
        if count:
            sm = f" sm {host.sm}" if kind == "gpu" and host.sm is not None else ""
            lines.append(f"    {kind} {family}[{count}]{sm}")
    if host.members("nvswitch"):
        lines.append("    switch nvswitch")
    merged = _merge_directions(host.wires)
    for wire, both in merged:
        name = params.name(_param_base(wire.cls, wire.figure), wire.figure, TITLES[wire.cls])
        arrow = "<->" if both else "->"
        where = f"line {wire.span.line}" if wire.span is not None else "assumed"
        lines.append(f"    link {host.name(wire.a)} {arrow} {host.name(wire.b)} bw {name} "
                     f"class {wire.cls}    # {comment(host.parts[wire.a].label)} ({where})")
    lines += _routes(host)
    return lines


def _merge_directions(wires: tuple[Wire, ...]) -> list[tuple[Wire, bool]]:
    """One-way NVLinks between GPUs (each GPU's file lists its own) joined into `<->` when
    both directions are there with the same figure."""
    out: list[tuple[Wire, bool]] = []
    used: set[int] = set()
    for i, wire in enumerate(wires):
        if i in used:
            continue
        if wire.both:
            out.append((wire, True))
            continue
        back = next((j for j, w in enumerate(wires) if j not in used and j != i and not w.both
                     and (w.a, w.b) == (wire.b, wire.a) and w.figure.gbps == wire.figure.gbps), None)
        if back is not None:
            used.add(back)
        out.append((wire, back is not None))
    return out


def _routes(host: HostModel) -> list[str]:
    """GPU pairs pinned to NVLink: NCCL prefers the path of the best type (paths.cc:98), and
    a PCI route through a shared switch is as short as the one through the NVSwitch."""
    if not host.members("nvswitch"):
        return []
    linked = sorted(host.name(w.a) for w in host.wires if w.cls == "nvlink"
                    and host.parts[w.b].family == "nvswitch")
    gpus = host.members("g")
    lines = ["    # GPU to GPU over NVLink, never PCI: " + rules.ROUTE_RULE]
    if len(linked) == len(gpus):
        last = len(gpus) - 1
        lines.append(f"    route g[i] <-> g[j] via nvswitch for i in 0..{last} for j in 0..{last} "
                     "if i < j")
    else:
        for i, a in enumerate(linked):
            lines += [f"    route {a} <-> {b} via nvswitch" for b in linked[i + 1:]]
    return lines


def _fabric_words(fabric: Fabric, ports: int) -> str:
    if fabric.kind == "rail":
        return (f"rail: NIC port k of every host on rail switch k ({ports} rail{'s' if ports != 1 else ''}); the rails "
                "meet at a spine that is never a bottleneck (not in the file: --fabric).")
    if fabric.kind == "single-switch":
        return "single-switch: every NIC port on one switch (not in the file: --fabric)."
    return (f"fat-tree: a leaf switch per host, {fabric.spines} spines, every leaf with an "
            "uplink to every spine carrying the host's NIC bandwidth / (spines × oversub) "
            "(not in the file: --fabric).")


def _fabric_lines(host: HostModel, fabric: Fabric, ports: list, names: list[str]) -> list[str]:
    each = "for h in 0..hosts-1"
    if fabric.kind == "rail":
        lines = [f"  switch rail[{max(1, len(ports))}]", "  switch spine"]
        lines += [f"  link node[h].{host.name(p.nic)} <-> rail[{k}] bw {names[k]} class net {each}"
                  f"    # {comment(p.name)}" for k, p in enumerate(ports)]
        if ports:
            lines.append(f"  link rail[k] <-> spine for k in 0..{len(ports) - 1}    # no "
                         "bandwidth: never a bottleneck")
        return lines
    if fabric.kind == "single-switch":
        return ["  switch fabric"] + [
            f"  link node[h].{host.name(p.nic)} <-> fabric bw {names[k]} class net {each}"
            f"    # {comment(p.name)}" for k, p in enumerate(ports)]
    lines = ["  switch leaf[hosts]", "  switch spine[spines]"]
    lines += [f"  link node[h].{host.name(p.nic)} <-> leaf[h] bw {names[k]} class net {each}"
              f"    # {comment(p.name)}" for k, p in enumerate(ports)]
    lines.append("  link leaf[h] <-> spine[s] bw B_up class uplink for h in 0..hosts-1 "
                 "for s in 0..spines-1")
    return lines


def _wrapped(text: str, width: int = 96) -> list[str]:
    lines, line = [], "#"
    for word in comment(text).split(" "):  # (escaped first: no line break left to split at)
        if not word:
            continue
        if len(line) + 1 + len(word) > width and line != "#":
            lines.append(line)
            line = "#  "
        line += " " + word
    return lines + [line]

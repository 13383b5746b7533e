"""`nvidia-smi topo -m` output → `HostModel`, with a stated assumption per path type.

The matrix names, for every pair of GPUs and NICs, how they connect (the legend nvidia-smi
prints): X self; NV# a bonded set of # NVLinks; PIX at most one PCIe bridge; PXB several
bridges, no host bridge; PHB a PCIe host bridge (the CPU); NODE between host bridges of one
NUMA node; SYS across the SMP interconnect between NUMA nodes. It gives no link speeds, so:

- NV#: every GPU pair NV#k with k × (GPUs − 1) more links than a GPU has (12 on sm 80, 18 on
  sm 90 and 100) is an NVSwitch system, k NVLinks per GPU to one NVSwitch; otherwise k links
  join the pair directly. Per link, NCCL's figure for the GPU's sm (`--sm`, required).
- PIX and PXB: the devices share one PCIe switch (a PXB path's several bridges are one switch
  here); PHB and NODE: the same CPU; SYS: different CPUs, joined by an SMP link.
- PCIe links: x16 at the generation of the GPU (Gen5 from sm 90, else Gen4), by NCCL's rule;
  the SMP link SKL_QPI_BW (10 GB/s, topo.h:28); NICs at `--nic-speed` (required with NICs).
"""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

from ..errors import ParseError, SourceFile, Span
from ..files import read_source
from . import rules
from .nccl_topo import Assumptions
from .system import Figure, HostModel, Part, Port, Wire

PATHS = ("X", "PIX", "PXB", "PHB", "NODE", "SYS")
MAX_NVLINKS = {60: 4, 70: 6, 80: 12, 86: 4, 90: 18, 100: 18}
ASSUMED = "assumed for nvidia-smi topo -m, which gives no speeds (schedc.hardware.smi)"


def _max_links(sm: int) -> int:
    return next((n for floor, n in sorted(MAX_NVLINKS.items(), reverse=True) if sm >= floor), 4)


def read_nvidia_smi(path: str | Path, assume: Assumptions) -> HostModel:
    source = read_source(path, "nvidia-smi topo -m output", ParseError)
    # On a terminal, nvidia-smi underlines the header with ANSI escapes; a capture keeps them.
    lines = [_ANSI.sub("", line) for line in source.lines()]
    head = next((i for i, line in enumerate(lines) if re.match(r"\s*GPU0\b", line)), None)
    if head is None:
        hidden = SourceFile(source.path, source.text, quoted=False)  # (not smi's: not shown)
        raise ParseError("no header row naming GPU0: not the output of `nvidia-smi topo -m`",
                         Span(hidden, 1, 1, 1, 2))
    # The last device's cell may run into the affinity titles with single spaces
    # (`mlx5_1 CPU Affinity NUMA Affinity`): a device is a cell's first word.
    names = [w for w in (c.split()[0] for c in _cells(lines[head])) if _DEVICE.fullmatch(w)]
    if not any(n.startswith("GPU") for n in names):
        raise ParseError("no GPU columns in the header row: `nvidia-smi topo -m` separates its "
                         "columns by tabs (or runs of two or more spaces)",
                         Span(source, head + 1, 1, head + 1, len(lines[head]) + 1))
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice is not None:
        raise ParseError(f"the header names {twice} twice", Span(source, head + 1, 1, head + 1, 2))
    rows: dict[str, tuple[int, list[str]]] = {}
    for number in range(head + 1, len(lines)):
        cells = _cells(lines[number])
        if not cells or cells[0] not in names:
            if cells and cells[0].startswith("Legend"):
                break
            if cells and _DEVICE.fullmatch(cells[0]) and len(cells) > len(names) // 2:
                raise ParseError(f"a row for {cells[0]}, which the header does not name",
                                 Span(source, number + 1, 1, number + 1, len(cells[0]) + 1))
            continue
        rows[cells[0]] = (number + 1, cells[1:])
    header = Span(source, head + 1, 1, head + 1, 2)
    missing = [n for n in names if n not in rows]
    if missing:
        raise ParseError(f"no row for {missing[0]}, which the header names", header)
    legend = _nic_legend(lines)
    return _Builder(source, assume, names, rows, legend).build()


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_DEVICE = re.compile(r"GPU\d+|NIC\d+|mlx\d+_\d+|[a-z]+\d*_\d+")


def _cells(line: str) -> list[str]:
    parts = re.split(r"\t|\s{2,}", line)  # tabs, or runs of spaces where a paste lost them
    return [p.strip() for p in parts if p.strip()]


def _nic_legend(lines: list[str]) -> dict[str, str]:
    return {m.group(1): m.group(2) for line in lines
            if (m := re.match(r"\s*(NIC\d+):\s*(\S+)", line))}


class _Builder:
    def __init__(self, source: SourceFile, assume: Assumptions, names: list[str],
                 rows: dict[str, tuple[int, list[str]]], legend: dict[str, str]) -> None:
        self.source, self.assume, self.names, self.rows, self.legend = \
            source, assume, names, rows, legend
        self.gpus = [n for n in names if n.startswith("GPU")]
        self.nics = [n for n in names if not n.startswith("GPU")]
        self.column = {n: k for k, n in enumerate(names)}  # (names.index per cell was N^3)
        self.numas: dict[str, str | None] = {}

    def relation(self, a: str, b: str) -> str:
        line, cells = self.rows[a] if a in self.rows else self.rows[b]
        other = b if a in self.rows else a
        at = self.column[other]
        value = cells[at] if at < len(cells) else ""
        if value not in PATHS and not _NV.fullmatch(value):
            col = self.source.line(line).find(value) + 1 if value else 1
            raise ParseError(f"unknown path type \"{value}\" between {a} and {b} (one of X, "
                             "NV#, PIX, PXB, PHB, NODE, SYS)",
                             Span(self.source, line, max(col, 1), line, max(col, 1) + max(1, len(value))))
        return value

    def build(self) -> HostModel:
        if self.assume.sm is None:
            raise ParseError("nvidia-smi does not say the GPUs' compute capability: pass --sm "
                             "(80 A100, 90 H100, 100 B200) for the NVLink bandwidth",
                             Span(self.source, 1, 1, 1, 2))
        if self.nics and self.assume.nic_gbps is None:
            raise ParseError(f"the matrix has {len(self.nics)} NICs and no speeds: pass "
                             "--nic-speed (e.g. 400Gbit/s)", Span(self.source, 1, 1, 1, 2))
        devices = self.gpus + self.nics
        switch_of = _groups(devices, lambda a, b: self.relation(a, b) in ("PIX", "PXB"))
        cpu_of = _groups(devices, lambda a, b: self.relation(a, b) in ("PIX", "PXB", "PHB", "NODE")
                         or self._numa(a) is not None and self._numa(a) == self._numa(b))
        parts: list[Part] = []
        index = {}
        for i, g in enumerate(self.gpus):
            index[g] = len(parts)
            parts.append(Part("g", "gpu", g, self._span(g), (i,)))
        for i, n in enumerate(self.nics):
            index[n] = len(parts)
            parts.append(Part("n", "nic", self.legend.get(n, n), self._span(n), (i,)))
        cpus = sorted(set(cpu_of.values()))
        cpu_part = {}
        for c in cpus:
            cpu_part[c] = len(parts)
            parts.append(Part("cpu", "switch", f"CPU of {devices[c]}", None, (c,)))
        gen, rate = (5, 240) if self.assume.sm >= 90 else (4, 120)
        pci = Figure(rules.pci_bandwidth(16, rate), f"PCIe Gen{gen} x16 ({ASSUMED})",
                     f"{rules.PCI_RULE}; speed {rate} (×100 Mbit/s per lane)")
        wires = self._pci_wires(devices, switch_of, cpu_of, parts, index, cpu_part, pci)
        sys = Figure(Fraction(10), f"SKL_QPI_BW ({ASSUMED}: nvidia-smi names no CPU model)",
                     rules.SYS_RULE)
        for i, a in enumerate(cpus):
            wires += [Wire(cpu_part[a], cpu_part[b], "sys", sys, None) for b in cpus[i + 1:]]
        notes = [ASSUMED + ": PIX and PXB share one PCIe switch, PHB and NODE one CPU, SYS "
                 "crosses between CPUs"]
        wires += self._nvlinks(parts, index, notes)
        sm = self.assume.sm if self.assume.sm in rules.KNOWN_SMS else None  # (the language's)
        if sm is None:
            notes.append(f"--sm {self.assume.sm} is not a compute capability NCCL runs on: no sm "
                         "is written for the GPUs")
        ports = [Port(index[n], self.legend.get(n, n), k, Figure(
            self.assume.nic_gbps or Fraction(0), f"--nic-speed {self.assume.nic_speed_text}",
            "as given on the command line"), self._span(n)) for k, n in enumerate(self.nics)]
        return HostModel(self.source.path, "nvidia-smi topo -m", tuple(parts), tuple(wires),
                         tuple(ports), tuple(notes), sm)

    def _pci_wires(self, devices: list[str], switch_of: dict, cpu_of: dict, parts: list[Part],
                   index: dict, cpu_part: dict, pci: Figure) -> list[Wire]:
        """Each device to its PCIe switch (a part added per group of PIX/PXB devices), or to
        its CPU when it shares a switch with none; each switch to its CPU."""
        wires: list[Wire] = []
        switches = {}
        grouped: dict[int, list[str]] = {}
        for d in devices:
            grouped.setdefault(switch_of[d], []).append(d)
        for d in devices:
            group = switch_of[d]
            members = grouped[group]
            if len(members) == 1:
                wires.append(Wire(index[d], cpu_part[cpu_of[d]], "pci", pci, self._span(d)))
                continue
            if group not in switches:
                switches[group] = len(parts)
                parts.append(Part("pci", "switch", f"PCIe switch of {', '.join(members)}", None,
                                  (group,)))
                wires.append(Wire(switches[group], cpu_part[cpu_of[d]], "pci", pci, None))
            wires.append(Wire(index[d], switches[group], "pci", pci, self._span(d)))
        return wires

    def _nvlinks(self, parts: list[Part], index: dict, notes: list[str]) -> list[Wire]:
        sm = self.assume.sm or 0
        per_link = rules.nvlink_per_link(sm)
        counts = {}
        for i, a in enumerate(self.gpus):
            for b in self.gpus[i + 1:]:
                value = self.relation(a, b)
                if value.startswith("NV"):
                    counts[(a, b)] = int(value[2:])
        pairs = len(self.gpus) * (len(self.gpus) - 1) // 2
        values = set(counts.values())
        if pairs and len(counts) == pairs and len(values) == 1 and \
                values.pop() * (len(self.gpus) - 1) > _max_links(sm):
            k = next(iter(counts.values()))
            switch = len(parts)
            parts.append(Part("nvswitch", "switch", "NVSwitch (assumed)", None, ()))
            notes.append(f"every GPU pair is NV{k}, more links than a GPU of sm {sm} has "
                         f"({_max_links(sm)}) if they were direct: an NVSwitch, {k} NVLinks per GPU")
            return [Wire(index[g], switch, "nvlink", Figure(
                k * per_link, f"NV{k} between every pair of GPUs (line {self.rows[g][0]}), sm "
                f"{sm} ({rules.decimal(per_link)} GB/s per link)", rules.NVLINK_RULE), self._span(g))
                for g in self.gpus]
        return [Wire(index[a], index[b], "nvlink", Figure(
            k * per_link, f"NV{k} between {a} and {b} (line {self.rows[a][0]}), sm {sm} "
            f"({rules.decimal(per_link)} GB/s per link)", rules.NVLINK_RULE), self._span(a))
            for (a, b), k in counts.items()]

    def _numa(self, name: str) -> str | None:
        """A GPU's NUMA Affinity column (GPU pairs joined by NVLink show no PCI path); read
        once per device (it is asked per pair: a million times for 1,000 GPUs)."""
        if name not in self.numas:
            self.numas[name] = self._read_numa(name)
        return self.numas[name]

    def _read_numa(self, name: str) -> str | None:
        if name not in self.rows or not name.startswith("GPU"):
            return None
        cells = self.rows[name][1]
        at = len(self.names) + 1  # after the device columns and CPU Affinity
        value = cells[at] if at < len(cells) else ""
        return value if re.fullmatch(r"\d+", value) else None

    def _span(self, name: str) -> Span | None:
        line = self.rows.get(name, (None,))[0]
        return None if line is None else Span(self.source, line, 1, line, 1 + len(name))


_NV = re.compile(r"NV\d+")


def _groups(devices: list[str], joined) -> dict[str, int]:
    """Connected components of `joined`, each named by its first device's index: one test
    per pair (the matrix's cells, read once), members moved between lists when groups join."""
    group = {d: i for i, d in enumerate(devices)}
    members = {i: [d] for i, d in enumerate(devices)}
    for i, a in enumerate(devices):
        for b in devices[i + 1:]:
            if joined(a, b) and group[a] != group[b]:  # (every cell read: each is checked)
                old, new = max(group[a], group[b]), min(group[a], group[b])
                moved = members.pop(old)
                for d in moved:
                    group[d] = new
                members[new] += moved
    return group

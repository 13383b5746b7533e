"""What reading an NCCL topology file keeps (nccl_topo.py reads the system, the PCI tree
and the GPUs over it): the parts, wires and NIC ports found so far, the attributes as NCCL's
reader takes them (xml.h), and the NICs with their <net> ports (topo.cc).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from ..errors import ParseError, SourceFile, Span
from ..xmltree import Element
from . import rules
from .system import Figure, Part, Port, Wire


@dataclass(frozen=True)
class Assumptions:
    """What the file may not say, given on the command line."""

    nic_gbps: Fraction | None = None  # --nic-speed, for NICs whose <net speed> is not given
    nic_speed_text: str = ""
    nvlinks: int | None = None  # --nvlinks and --sm: GPUs known only by their PCI class
    sm: int | None = None


def bus_id(text: str) -> int | None:
    """busIdToInt64 (src/graph/xml.h): the hex digits of `dddd:bb:dd.f`, ':' and '.' skipped."""
    digits = "".join(c for c in text.strip() if c not in ":.")
    try:
        return int(digits, 16)
    except ValueError:
        return None


@dataclass
class Reading:
    """The state of one file's reading, its attributes and its NICs."""

    source: SourceFile
    assume: Assumptions
    parts: list[Part] = field(default_factory=list)
    wires: list[Wire] = field(default_factory=list)
    ports: list[Port] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    gpus: dict[int, int] = field(default_factory=dict)  # bus id → part
    gpu_elements: list[tuple[int, Element, int]] = field(default_factory=list)  # part, <gpu>, cpu
    pcilinks: list[tuple[int, Element]] = field(default_factory=list)  # switch, <pcilink>
    nvswitch: int | None = None
    full: bool = False
    sms: dict[int, int] = field(default_factory=dict)  # GPU part → its <gpu sm> (or --sm)

    def _part(self, family: str, kind: str, label: str, span: Span | None, order: tuple) -> int:
        self.parts.append(Part(family, kind, label, span, order))
        return len(self.parts) - 1

    def _nets(self, nic: Element, index: int) -> None:
        for net in (c for c in nic.children if c.name == "net"):
            if "dev" not in net.attrs or net.attrs.get("net", "1").strip() == "0":
                continue  # not a network device of NCCL's (topo.cc:497, 500)
            dev = self._integer(net, "dev")
            name = net.attrs.get("name", f"net{dev}")
            if "speed" not in net.attrs and self.assume.nic_gbps is not None:
                self.ports.append(Port(index, name, dev, Figure(
                    self.assume.nic_gbps, f"--nic-speed {self.assume.nic_speed_text} (<net "
                    f"name=\"{name}\"> at line {net.span.line} gives no speed)",
                    "as given on the command line"), net.span))
                continue
            if "speed" not in net.attrs:
                raise ParseError(f"<net name=\"{name}\"> gives no speed: pass --nic-speed",
                                 net.span, ("NCCL asks the network plugin at run time; from "
                                            "the file alone it would take 10000 Mbit/s "
                                            "(topo.cc:416-417)",))
            mbps = self._integer(net, "speed", 0)
            fallback = " (speed <= 0: NCCL's 10000)" if mbps <= 0 else ""
            self.ports.append(Port(index, name, dev, Figure(
                rules.net_bandwidth(mbps), f"speed=\"{net.attrs.get('speed', '')}\" of <net "
                f"name=\"{name}\" dev=\"{dev}\"> (line {net.span.line}){fallback}",
                rules.NET_RULE), net.span))
        ports = [p.dev for p in self.ports if p.nic == index]
        part = self.parts[index]  # (orders of one type: a class-only NIC's is (1, bus id))
        self.parts[index] = Part(part.family, part.kind, part.label, part.span,
                                 (0, min(ports)) if ports else (1, bus_id(part.label) or 0))

    def _class_only_nic(self, element: Element, index: int, busid: str) -> None:
        if self.assume.nic_gbps is None:
            raise ParseError(f"<pci busid=\"{busid}\" class=\"{element.attrs.get('class')}\"> is "
                             "a NIC known only by its class: its speed is not in the file",
                             element.span, ("pass --nic-speed (e.g. --nic-speed 200Gbit/s); "
                                            "NCCL asks the network plugin at run time",))
        self.ports.append(Port(index, f"nic {busid}", len(self.ports), Figure(
            self.assume.nic_gbps, f"--nic-speed {self.assume.nic_speed_text} (the file knows "
            f"<pci busid=\"{busid}\"> only by its class, line {element.span.line})",
            "as given on the command line"), element.span))
        part = self.parts[index]
        self.parts[index] = Part(part.family, part.kind, part.label, part.span, (1, bus_id(busid)))

    def _nic_under_cpu(self, nic: Element, cpu: int) -> None:
        index = self._part("n", "nic", f"NIC under cpu {self.parts[cpu].label}", nic.span, ())
        self._nets(nic, index)
        if not any(p.nic == index for p in self.ports):
            self.parts.pop()
            return
        self.wires.append(Wire(index, cpu, "loc", Figure(
            rules.LOC_BW, f"a <nic> directly under <cpu {self.parts[cpu].label}> (line "
            f"{nic.span.line})", rules.NIC_UNDER_CPU_RULE), nic.span))

    def _text(self, element: Element, key: str) -> str:
        value = element.attrs.get(key)
        if value is None:
            raise ParseError(f"<{element.name}> has no '{key}' attribute (NCCL's reader "
                             "requires it)", element.span)
        return value

    def _integer(self, element: Element, key: str, default: int | None = None,
                 low: int | None = None) -> int:
        value = element.attrs.get(key)
        if value is None:
            if default is not None:
                return default
            self._text(element, key)  # (raises: no such attribute)
        text = (value or "").strip()
        try:  # strtol(str, NULL, 0) (xml.h:115): 0x.. hex, else decimal here
            number = int(text, 16 if text.lower().startswith("0x") else 10)
        except ValueError:
            raise ParseError(f"{key}=\"{value}\" of <{element.name}> is not an integer",
                             element.span) from None
        if low is not None and number < low or abs(number) > 10**12:
            raise ParseError(f"{key}=\"{value}\" of <{element.name}> must be at least {low}"
                             if low is not None and number < low else
                             f"{key}=\"{value}\" of <{element.name}> is out of range", element.span)
        return number

"""One host as an imported file describes it: devices, links with their bandwidths, the NICs'
network ports, and per figure where it came from (the file's attribute) and NCCL's rule."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from fractions import Fraction

from ..errors import Span


@dataclass(frozen=True)
class Figure:
    """A bandwidth in GB/s per direction: from `source` (the attributes read) by `rule`."""

    gbps: Fraction
    source: str
    rule: str


@dataclass(frozen=True)
class Part:
    """A device of the host: `family` is its name in the .sched file (g, n, cpu, pci,
    nvswitch); `kind` schedc's (gpu, nic, switch)."""

    family: str
    kind: str
    label: str  # a bus id, a NUMA id, a NIC's ports: what the file calls it
    span: Span | None = field(compare=False, repr=False)
    order: tuple = ()  # how members of a family are numbered


@dataclass(frozen=True)
class Wire:
    """A link between two parts; `both`: the same figure each way (else a -> b only)."""

    a: int
    b: int
    cls: str  # pci | nvlink | c2c | sys | loc
    figure: Figure
    span: Span | None = field(compare=False, repr=False)
    both: bool = True


@dataclass(frozen=True)
class Port:
    """A network port of a NIC (an NCCL <net>): what the cross-host fabric attaches to."""

    nic: int  # index of the NIC's Part
    name: str
    dev: int
    figure: Figure
    span: Span | None = field(compare=False, repr=False)


@dataclass(frozen=True)
class HostModel:
    path: str
    form: str  # "full dump" | "PCI tree only" | "nvidia-smi topo -m"
    parts: tuple[Part, ...]
    wires: tuple[Wire, ...]
    ports: tuple[Port, ...]
    notes: tuple[str, ...]  # assumptions and quirks met, for the file's header
    sm: int | None = None  # every GPU's compute capability, when the file (or --sm) gives one

    def members(self, family: str) -> list[int]:
        """The parts of a family in their numbering order."""
        return list(self._families.get(family, ()))

    def name(self, index: int) -> str:
        """A part's name in the .sched file: `g[3]`, `nvswitch`."""
        return self._names[index]

    # Computed once per host (a name per link end: 79,800 direct NVLinks of a 400-GPU
    # nvidia-smi matrix took 2 min when each sorted every part again).
    @cached_property
    def _families(self) -> dict[str, tuple[int, ...]]:
        found: dict[str, list[int]] = {}
        for i, p in enumerate(self.parts):
            found.setdefault(p.family, []).append(i)
        return {f: tuple(sorted(found[f], key=lambda i: self.parts[i].order)) for f in found}

    @cached_property
    def _names(self) -> dict[int, str]:
        return {i: family if family == "nvswitch" else f"{family}[{k}]"
                for family, members in self._families.items() for k, i in enumerate(members)}

"""An NCCL topology file (NCCL_TOPO_FILE, or what NCCL_TOPO_DUMP_FILE writes) → `HostModel`.

Read as NCCL reads it (src/graph/xml.cc for the file, topo.cc for what it means): a <system
version="1"> of <cpu>s (NUMA nodes), each holding a tree of <pci> devices known by their class
code (kvDictPciClass: bridges and switches, GPUs, NICs, NVSwitches) and <nic>s; in a full dump,
a GPU's <pci> holds <gpu dev sm rank> with <nvlink target count tclass> and <c2c bw count>,
and a NIC's holds <nic><net name dev speed ...>. Elements NCCL ignores (xml.cc:241) are ignored.
Bandwidths follow `rules`. Quirks of real files are read as NCCL reads them: comments,
link_speed="" (the fallback rate), link_width="0" (16 lanes), an NVLink whose target is its
own GPU (NCCL links the GPU to itself: nothing to model), NICs under a <cpu>, GPUs without a
<gpu> child (the PCI tree alone: NVLink unknown unless assumed with `nvlinks`/`sm`).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from ..errors import ParseError, decode_source
from ..files import read_input
from ..xmltree import Element, descendants, foreign_kind, parse, start_of
from . import rules
from .nccl_reading import Assumptions as Assumptions
from .nccl_reading import Reading, bus_id
from .rules import KNOWN_SMS
from .system import Figure, HostModel, Wire


def read_nccl_topology(path: str | Path, assume: Assumptions = Assumptions()) -> HostModel:
    data = read_input(path, "an NCCL topology file")
    source = decode_source(str(path), data, ParseError)
    roots = parse(source, data)
    if not roots or roots[0].name != "system":
        where = roots[0].span if roots else start_of(source)
        hint = foreign_kind(roots[0]) if roots else None
        what = f"<{roots[0].name}>" if roots else "no element"
        raise ParseError(f"not an NCCL topology file: {what} where NCCL's reader expects "
                         "<system version=\"1\"> (src/graph/xml.cc:419)", where,
                         (hint.replace("this is", "the file is", 1),) if hint else ())
    _within_nccls_limit(roots[0])
    return _Reader(source, assume).system(roots[0])


MAX_ELEMENTS = 256  # NCCL_TOPO_XML_MAX_NODES (topo.h:211), the size of NCCL's XML (topo.cc:1773)
MAX_NVLINKS_PER_GPU = 18  # H100 and B200 have 18 NVLinks, the most of any GPU NCCL knows


def _within_nccls_limit(root: Element) -> None:
    """NCCL refuses a topology of more than 256 elements ("XML parser is limited to 256
    nodes", xml.cc:201); so does schedc, at the first element past it."""
    for seen, element in enumerate(descendants(root), start=1):
        if seen > MAX_ELEMENTS:
            raise ParseError(f"more than {MAX_ELEMENTS} elements: NCCL's reader is limited to "
                             f"{MAX_ELEMENTS} (NCCL_TOPO_XML_MAX_NODES, src/graph/topo.h:211; "
                             "xml.cc:201)", element.span)


@dataclass
class _Reader(Reading):
    """The system, its <cpu>s, the PCI tree, GPUs and their NVLinks (the state, the
    attributes and the NICs are `Reading`'s)."""

    def system(self, root: Element) -> HostModel:
        version = root.attrs.get("version")
        if version != "1":
            rccl = version == "2" or any(e.name == "xgmi" for e in descendants(root))
            raise ParseError(f"<system version=\"{version}\">: NCCL reads version 1 only "
                             "(NCCL_TOPO_XML_VERSION, xml.h:50; xml.cc:393)" + (
                                 "; this looks like RCCL's (AMD) dump, version 2 with <xgmi> "
                                 "links (ROCm/rccl src/graph/xml.h:47 at 0cbce2a), which schedc does not import"
                                 if rccl else ""), root.span)
        cpus = [c for c in root.children if c.name == "cpu"]
        if not cpus:
            raise ParseError("<system> has no <cpu>: NCCL's topology hangs every device under a "
                             "<cpu> (xml.cc:402)", root.span)
        hashes = {c.attrs["host_hash"] for c in cpus if "host_hash" in c.attrs}
        if len(hashes) > 1:
            raise ParseError(f"{len(hashes)} hosts (host_hash) in one file: import one host's "
                             "file; --hosts and --fabric make the cluster", root.span)
        cpu_parts = []
        for cpu in sorted(cpus, key=lambda c: self._integer(c, "numaid", -1)):
            cpu_parts.append(self._part("cpu", "switch", f"numaid {cpu.attrs.get('numaid')}",
                                        cpu.span, (self._integer(cpu, "numaid", -1),)))
        self._inter_cpu(cpus, cpu_parts)
        for cpu_element, index in zip(sorted(cpus, key=lambda c: self._integer(c, "numaid", -1)),
                                      cpu_parts):
            for child in cpu_element.children:
                if child.name == "pci":
                    self._pci(child, index, index)
                elif child.name == "nic":
                    self._nic_under_cpu(child, index)
        for gpu, element, cpu_part in self.gpu_elements:
            self._gpu_links(gpu, element, cpu_part)
        self._pci_links()
        if not self.gpus:
            raise ParseError("no GPU in the file (no <pci> of class 0x03...)", root.span)
        if not self.full and self.assume.nvlinks is not None:
            self._assumed_nvlinks()
        if not self.full:
            if not self.gpu_elements:
                self.notes.append("GPUs are numbered by PCI bus id: the file gives no <gpu dev>")
        elif self.assume.nvlinks is not None:
            self.notes.append("--nvlinks and --sm are not used: the file gives the NVLinks")
        bare = [self.parts[g].label for g in self.gpus.values()
                if g not in {e[0] for e in self.gpu_elements
                             if "sm" in e[1].attrs or e[1].children}]
        if self.full and bare:
            self.notes.append(f"{len(bare)} GPU(s) without a <gpu> child ({', '.join(bare)}): "
                              "no NVLink is known for them, so they meet the others over PCI")
        if not self.full and self.assume.nvlinks is None:
            self.notes.append("GPUs are known only by their PCI class (no <gpu> with an sm or "
                              "NVLinks): "
                              "their NVLinks are not in the file, so GPUs meet over PCI only; "
                              "--nvlinks N --sm S assumes N NVLinks per GPU to an NVSwitch")
        sm = self._compute_capability()
        return HostModel(self.source.path, "full dump" if self.full else "PCI tree only",
                         tuple(self.parts), tuple(self.wires), tuple(self.ports),
                         tuple(self.notes), sm)

    def _compute_capability(self) -> int | None:
        """The GPUs' sm, written as `gpu g[N] sm S` when every GPU has the same one that NCCL
        runs on (else, when any GPU gives one, a note says why none is written)."""
        sms = {self.sms.get(g, self.assume.sm) for g in self.gpus.values()}
        if len(sms) == 1 and None not in sms:
            (sm,) = sms
            if sm in KNOWN_SMS:
                return sm
            self.notes.append(f"sm=\"{sm}\" is not a compute capability NCCL runs on: no sm "
                              "is written for the GPUs")
        elif len(known := sorted(s for s in sms if s is not None)) > 1:
            self.notes.append(f"the GPUs are of several compute capabilities "
                              f"({', '.join(map(str, known))}): no sm is written; "
                              "`schedc nccl --sm S` takes one")
        elif known:
            self.notes.append(f"only some GPUs give their sm ({known[0]}): no sm is written; "
                              "--sm gives the others'")
        return None

    # ---- devices

    def _pci(self, element: Element, parent: int, cpu: int) -> None:
        busid = self._text(element, "busid")
        if bus_id(busid) is None:
            raise ParseError(f"busid=\"{busid}\" is not a PCI bus id (dddd:bb:dd.f)", element.span)
        nic = next((c for c in element.children if c.name == "nic"), None)
        code = element.attrs.get("class")
        if code is None and nic is None:
            raise ParseError(f"<pci busid=\"{busid}\"> has no class attribute: NCCL fills it "
                             "from the running machine (sysfs); schedc needs it in the file",
                             element.span)
        kind = "nic" if nic is not None else rules.pci_class(code or "")
        beside = next((c for c in element.children if c.name == "pci"), None)
        if nic is not None and beside is not None:  # (a <pci> renamed <nic>, say)
            raise ParseError(f"<pci busid=\"{busid}\"> holds a <nic>, which makes it a NIC to "
                             "NCCL (ncclTopoAddPci), and <pci> devices too, which NCCL then "
                             f"drops (line {beside.span.line}); a NIC's <pci> holds only its "
                             "<nic>", nic.span)
        if kind is None:
            raise ParseError(f"unknown PCI class \"{code}\" (known: 0x0604.. bridge, 0x0801.. "
                             "CX8 data direct, 0x068000 NVSwitch, 0x068001 CPU, 0x03.. GPU, "
                             "0x02.. NIC)", element.span,
                             (f"NCCL treats a class it does not know as a PCI bridge "
                              f"({rules.PCI_CLASS_RULE}); schedc refuses it, so a typo does "
                              "not become a switch",))
        if kind in ("nvswitch", "cpu"):
            self.notes.append(f"<pci busid=\"{busid}\" class=\"{code}\"> (line "
                              f"{element.span.line}): NCCL makes no node of an NVSwitch or CPU "
                              "PCI device (topo.cc:671-684); NVLinks name them instead")
            return
        figure = self._pci_figure(element, busid)
        if kind == "gpu":
            index = self._gpu(element, busid, cpu)
        elif kind == "nic":
            index = self._part("n", "nic", busid, element.span, (1, bus_id(busid)))
            if nic is not None:
                self._nets(nic, index)
            else:
                self._class_only_nic(element, index, busid)
        else:
            index = self._part("pci", "switch", busid, element.span, (len(self.parts),))
            for child in element.children:
                if child.name == "pci":
                    self._pci(child, index, cpu)
                elif child.name == "pcilink":
                    self.pcilinks.append((index, child))
        self.wires.append(Wire(index, parent, "pci", figure, element.span))

    def _pci_figure(self, element: Element, busid: str) -> Figure:
        width = self._integer(element, "link_width", low=0)
        speed = self._text(element, "link_speed")
        rate = rules.pci_lane_rate(speed)
        if rate is None and speed.strip():
            raise ParseError(f"unknown PCI link speed \"{speed}\" (NCCL's kvDictPciGen knows "
                             f"{', '.join(repr(s) for s, _ in rules.PCI_GEN)})", element.span,
                             ("NCCL would fall back to 8 GT/s (topo.cc:556); give the speed "
                              "sysfs reports, or link_speed=\"\" for NCCL's fallback",))
        used = rate if rate is not None else rules.PCI_GEN_FALLBACK
        how = f"speed {used} (×100 Mbit/s per lane)" + \
            (" by kvDictPciGen's fallback for link_speed=\"\" (topo.cc:556)" if rate is None else "")
        source = (f"link_width=\"{width}\" link_speed=\"{speed}\" of <pci busid=\"{busid}\"> "
                  f"(line {element.span.line})")
        return Figure(rules.pci_bandwidth(width, used), source,
                      f"{rules.PCI_RULE}; {how}")

    def _gpu(self, element: Element, busid: str, cpu: int) -> int:
        children = [c for c in element.children if c.name == "gpu"]
        gpu = children[0] if children else None
        dev = self._integer(gpu, "dev", -1) if gpu is not None else -1
        order = (0, dev) if dev >= 0 else (1, bus_id(busid))
        index = self._part("g", "gpu", busid, element.span, order)
        self.gpus[bus_id(busid) or 0] = index
        if gpu is not None:
            # NVLinks are known when the <gpu> says how it links (or at least its sm); a bare
            # <gpu dev="0"/> is completed by NCCL at run time, like a GPU without <gpu>.
            if "sm" in gpu.attrs or any(c.name in ("nvlink", "c2c") for c in gpu.children):
                self.full = True
            self.gpu_elements.append((index, gpu, cpu))
            if len(children) > 1:
                self.notes.append(f"<pci busid=\"{busid}\"> holds {len(children)} <gpu>s "
                                  "(MIG or MLOPart partitions): one GPU is modelled")
        return index

    def _gpu_links(self, gpu: int, element: Element, cpu: int) -> None:
        links = [c for c in element.children if c.name in ("nvlink", "c2c")]
        if "sm" not in element.attrs and not links:
            return  # a bare <gpu>: nothing about its links (the note on NVLinks says so)
        if "sm" not in element.attrs and self.assume.sm is None:
            raise ParseError("<gpu> has NVLinks but no sm attribute: NCCL reads the compute "
                             "capability from the GPU at run time; pass --sm", element.span)
        sm = self._integer(element, "sm") if "sm" in element.attrs else self.assume.sm or 0
        self.sms[gpu] = sm
        per_link = rules.nvlink_per_link(sm)
        to_switch: list[tuple[int, Element]] = []
        to_gpu: dict[int, list[tuple[int, Element]]] = {}
        for link in (c for c in element.children if c.name == "nvlink"):
            count = self._integer(link, "count", low=1)
            if count > MAX_NVLINKS_PER_GPU:
                raise ParseError(f"count=\"{count}\" of <nvlink>: no GPU has more than "
                                 f"{MAX_NVLINKS_PER_GPU} NVLinks", link.span)
            tclass = link.attrs.get("tclass")
            target = self._text(link, "target")
            kind = rules.pci_class(tclass) if tclass is not None else "nvswitch"
            if tclass is None:
                self.notes.append(f"<nvlink> at line {link.span.line} has no tclass: an "
                                  "NVSwitch, as NCCL assumes when it cannot tell (xml.cc:1046)")
            if kind == "nvswitch":
                to_switch.append((count, link))
            elif kind == "gpu":
                number = bus_id(target)
                other = self.gpus.get(number if number is not None else -1)
                if other == gpu:
                    self.notes.append(f"<nvlink target=\"{target}\"> at line {link.span.line} "
                                      "names its own GPU (a VM hiding the peer): NCCL links the "
                                      "GPU to itself, which carries nothing; left out")
                elif other is None:
                    self.notes.append(f"<nvlink target=\"{target}\"> at line {link.span.line}: "
                                      "no GPU of the file has that bus id (NCCL adds no link)")
                else:  # several <nvlink>s to one GPU add up (ncclTopoConnectNodes, topo.cc:181)
                    to_gpu.setdefault(other, []).append((count, link))
            elif kind == "cpu":
                self.wires.append(Wire(gpu, cpu, "nvlink", self._nvlink_figure(
                    count, sm, per_link, [link]), link.span))
            else:
                raise ParseError(f"<nvlink tclass=\"{tclass}\">: NCCL links GPUs to GPUs, "
                                 "NVSwitches and CPUs only", link.span)
        for other, joined in to_gpu.items():
            self.wires.append(Wire(gpu, other, "nvlink", self._nvlink_figure(
                sum(c for c, _ in joined), sm, per_link, [e for _, e in joined]),
                joined[0][1].span, both=False))
        if to_switch:
            count = sum(c for c, _ in to_switch)
            if self.nvswitch is None:
                self.nvswitch = self._part("nvswitch", "switch", "NVSwitch", to_switch[0][1].span, ())
            self.wires.append(Wire(gpu, self.nvswitch, "nvlink", self._nvlink_figure(
                count, sm, per_link, [e for _, e in to_switch]), to_switch[0][1].span))
        for c2c in (c for c in element.children if c.name == "c2c"):
            bw, count = self._integer(c2c, "bw", low=1), self._integer(c2c, "count", low=1)
            self.wires.append(Wire(gpu, cpu, "c2c", Figure(
                Fraction(bw * count, 1000), f"bw=\"{bw}\" count=\"{count}\" of <c2c> (line "
                f"{c2c.span.line})", rules.C2C_RULE), c2c.span))

    def _nvlink_figure(self, count: int, sm: int, per_link: Fraction, links: list[Element]) -> Figure:
        counts = " + ".join(f"count=\"{e.attrs.get('count')}\"" for e in links)
        lines = ", ".join(str(e.span.line) for e in links)
        return Figure(count * per_link, f"{counts} of <nvlink> (line{'s' if len(links) > 1 else ''} "
                      f"{lines}), sm=\"{sm}\" ({rules.decimal(per_link)} GB/s per link)", rules.NVLINK_RULE)

    def _assumed_nvlinks(self) -> None:
        sm, count = self.assume.sm or 0, self.assume.nvlinks or 0
        per_link = rules.nvlink_per_link(sm)
        self.nvswitch = self._part("nvswitch", "switch", "NVSwitch (assumed)", None, ())
        for gpu in self.gpus.values():
            self.wires.append(Wire(gpu, self.nvswitch, "nvlink", Figure(
                count * per_link, f"--nvlinks {count} --sm {sm} (assumed: the file gives no "
                f"<gpu>), {rules.decimal(per_link)} GB/s per link", rules.NVLINK_RULE), None))
        self.notes.append(f"assumed (--nvlinks {count} --sm {sm}): every GPU has {count} "
                          "NVLinks to one NVSwitch")

    def _pci_links(self) -> None:
        """<pcilink target> between PCIe switches (BCM switches' internal links): LOC_BW,
        as ncclTopoAddPciLinks (topo.cc:891); a target that is no switch of the file adds
        nothing, as in NCCL."""
        switches = {bus_id(p.label): i for i, p in enumerate(self.parts) if p.family == "pci"}
        done: set[tuple[int, int]] = set()
        for index, link in self.pcilinks:
            other = switches.get(bus_id(self._text(link, "target")))
            if other is None or other == index or (min(index, other), max(index, other)) in done:
                continue
            done.add((min(index, other), max(index, other)))
            self.wires.append(Wire(index, other, "loc", Figure(
                rules.LOC_BW, f"<pcilink target=\"{link.attrs['target']}\"> (line "
                f"{link.span.line})", "a <pcilink> joins PCIe switches at LOC_BW, 5000 GB/s "
                "(topo.cc:891; topo.h:17)"), link.span))

    def _inter_cpu(self, cpus: list[Element], parts: list[int]) -> None:
        ordered = sorted(cpus, key=lambda c: self._integer(c, "numaid", -1))
        for i, (cpu, a) in enumerate(zip(ordered, parts)):
            for b in parts[i + 1:]:
                family = self._integer(cpu, "familyid", -1)
                model = self._integer(cpu, "modelid", -1)
                bw, name = rules.inter_cpu(cpu.attrs.get("arch", ""), cpu.attrs.get("vendor", ""),
                                           family, model)
                source = (f"arch=\"{cpu.attrs.get('arch', '')}\" vendor=\"{cpu.attrs.get('vendor', '')}\" "
                          f"familyid=\"{cpu.attrs.get('familyid', '')}\" modelid="
                          f"\"{cpu.attrs.get('modelid', '')}\" of <cpu> (line {cpu.span.line})")
                self.wires.append(Wire(a, b, "sys", Figure(bw, source, f"{name}; {rules.SYS_RULE}"),
                                       cpu.span))


"""Machines from what users have: `import_machine` (an NCCL topology file or an `nvidia-smi
topo -m` matrix → a `.sched` machine) and `machine_summary` (what `machine show` reports)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UsageError
from ..limits import MAX_ROUTES
from .options import Options, count, rules, switch, text

if TYPE_CHECKING:
    from ..analysis.machine import MachineSummary
    from ..export.sched_machine import Fabric
    from ..hardware.system import HostModel
    from ..session import Session

MAX_HOSTS = 4096  # a structural param: more hosts is another compile, refused past this
NVLINKS = (1, 72)  # the range of `nvlinks`: NVLinks per GPU to an NVSwitch
SMS = (10, 200)  # the range of `sm`: a compute capability, 80 for A100, 90 for H100


@dataclass(frozen=True)
class ImportOptions(Options):
    """`machine import`'s options (`fabric` and `nic_speed` are read by `parse_fabric` and
    `parse_rate`)."""

    hosts: int = count(1, "--hosts", 1, MAX_HOSTS)
    fabric: str = text("rail", "--fabric")
    nic_speed: str | None = text(None, "--nic-speed")
    nvlinks: int | None = count(None, "--nvlinks", *NVLINKS)
    sm: int | None = count(None, "--sm", *SMS)
    nvidia_smi: bool = switch("--nvidia-smi")

    def __post_init__(self) -> None:
        super().__post_init__()
        if (self.nvlinks is not None and self.sm is None) or \
                (self.sm is not None and self.nvlinks is None and not self.nvidia_smi):
            raise UsageError("--nvlinks and --sm go together (N NVLinks of the per-link "
                             "bandwidth of compute capability S)")

    def command(self, path: str | Path) -> str:
        """The command line that imports `path` so, as the file's comments cite it."""
        words = ["schedc machine import", *(["--nvidia-smi"] if self.nvidia_smi else []),
                 Path(path).name]
        for name, (spec, rule) in rules(type(self)).items():
            value = getattr(self, name)
            if name != "nvidia_smi" and value != spec.default:
                words.append(f"{rule.flag} {value}")
        return " ".join(words)


@dataclass(frozen=True)
class ShowOptions(Options):
    max_routes: int = count(MAX_ROUTES, "--max-routes")


def parse_fabric(text: str) -> Fabric:
    """`rail`, `single-switch` or `fat-tree:spines=S,oversub=R` (both optional: 2 and 1)."""
    from ..export.sched_machine import FABRICS, Fabric
    kind, _, options = text.partition(":")
    if kind not in FABRICS:
        raise UsageError(f"--fabric {text}: one of rail, single-switch, "
                         "fat-tree:spines=S,oversub=R")
    if options and kind != "fat-tree":
        raise UsageError(f"--fabric {text}: only fat-tree takes options")
    values = {"spines": "2", "oversub": "1"}
    for item in filter(None, options.split(",")):
        key, _, value = item.partition("=")
        if key not in values or not value:
            raise UsageError(f"--fabric {text}: '{item}' is not spines=S or oversub=R")
        values[key] = value
    try:
        spines, oversub = int(values["spines"]), Fraction(values["oversub"])
    except (ValueError, ZeroDivisionError):
        raise UsageError(f"--fabric {text}: spines is a whole number and oversub a number "
                         "(2, 1.5)") from None
    if not 1 <= spines <= 1024 or oversub <= 0:
        raise UsageError(f"--fabric {text}: spines must be 1 to 1024 and oversub above 0")
    return Fabric(kind, spines, oversub)


def parse_rate(text: str, option: str) -> Fraction:
    """`400Gbit/s`, `50 GB/s` → GB/s, with schedc's units (Gbit/s = 1.25e8 B/s)."""
    from ..units import unit
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z/]+)\s*", text)
    if match is None:
        raise UsageError(f"{option} {text}: a rate with its unit, e.g. 400Gbit/s or 50GB/s")
    try:
        factor, dim = unit(match.group(2))
    except KeyError:
        raise UsageError(f"{option} {text}: unknown unit '{match.group(2)}'") from None
    rate = Fraction(match.group(1)) * factor
    if rate <= 0 or str(dim) != str(unit("B/s")[1]):
        raise UsageError(f"{option} {text}: a positive rate (bytes or bits per second)")
    return rate / 10**9


def import_machine(path: str | Path, *, hosts: int = ImportOptions.hosts,
                   fabric: str = ImportOptions.fabric,
                   nic_speed: str | None = ImportOptions.nic_speed,
                   nvlinks: int | None = ImportOptions.nvlinks, sm: int | None = ImportOptions.sm,
                   nvidia_smi: bool = ImportOptions.nvidia_smi,
                   output: str | Path | None = None) -> str:
    """The `.sched` text of a machine read from an NCCL topology file (or, with `nvidia_smi`,
    from `nvidia-smi topo -m` output): `hosts` copies as the structural param `hosts`, joined
    by `fabric`; every figure commented with its attribute and NCCL's rule, and the file's
    head with the command line that makes it again (and its notes: `machine_notes`).
    `output`: also write it to this file, whole or not at all.

        >>> text = schedc.import_machine("tests/fixtures/topo/ndv4-topo.xml", hosts=2,
        ...                              nic_speed="200Gbit/s", nvlinks=12, sm=80)
        >>> [line for line in text.splitlines() if line.startswith("param B_nvlink")]
        ['param B_nvlink_240 = 240 GB/s']
    """
    from ..export.sched_machine import machine_sched
    from ..hardware.nccl_topo import Assumptions
    options = ImportOptions(hosts, fabric, nic_speed, nvlinks, sm, nvidia_smi)
    hosts, nvlinks, sm = options.hosts, options.nvlinks, options.sm
    if output is not None:
        from ..files import check_output
        check_output(output)
    speed = parse_rate(nic_speed, "--nic-speed") if nic_speed is not None else None
    assume = Assumptions(speed, nic_speed or "", nvlinks, sm)
    shape = parse_fabric(fabric)
    if nvidia_smi:
        from ..hardware.smi import read_nvidia_smi
        host = read_nvidia_smi(path, assume)
    else:
        from ..hardware.nccl_topo import read_nccl_topology
        host = read_nccl_topology(path, assume)
    _check_devices(host, hosts, shape)
    text = machine_sched(host, hosts, shape, options.command(path))
    if output is not None:
        from ..render.files import write_atomically
        write_atomically(Path(output), text)
    return text


def machine_notes(text: str) -> list[str]:
    """The notes at the head of an imported machine's text (its "# Note: ..." paragraphs:
    no NVLink found, a rate assumed), one line each, which `machine import -o` prints on
    stderr as it writes the file.

        >>> schedc.machine_notes("# Note: no NVLink\\n#   in this file\\nparam x = 1\\n")
        ['no NVLink in this file']
    """
    notes: list[str] = []
    in_note = False
    for line in text.splitlines():
        if line.startswith("# Note: "):
            notes.append(line[len("# Note: "):])
            in_note = True
        elif in_note and line.startswith("#   "):
            notes[-1] += " " + line[4:]
        else:
            in_note = False
    return notes


def _check_devices(host: HostModel, hosts: int, shape: Fabric) -> None:
    """Refuse, before the file is written, a machine no command could compile: its hosts'
    devices and the fabric's switches past MAX_DEVICES (what `topology` would refuse later,
    said here at the option that makes them)."""
    from ..limits import MAX_DEVICES
    ports = len(host.ports)
    fabric = {"rail": max(1, ports) + 1, "single-switch": 1}.get(shape.kind, hosts + shape.spines)
    total = hosts * len(host.parts) + fabric
    if total > MAX_DEVICES:
        raise UsageError(f"--hosts {hosts}: the machine would have {total:,} devices "
                         f"({len(host.parts)} per host, {fabric:,} in the {shape.kind} fabric); "
                         f"the limit is {MAX_DEVICES:,}: at most "
                         f"{(MAX_DEVICES - fabric) // max(1, len(host.parts)):,} such hosts")


def machine_summary(session: Session, max_routes: int = ShowOptions.max_routes, *,
                    host_svg: str | Path | None = None,
                    fabric_svg: str | Path | None = None) -> MachineSummary:
    """Hosts, devices, links, route classes and (imported machines) where figures came from.
    The routes go from the first GPU to every other, or to `max_routes` of them evenly
    spread (default `limits.MAX_ROUTES`; `summary.routed` says how many). `host_svg`,
    `fabric_svg`: also draw one host, or the fabric, into these SVG files (checked before
    any work, each written whole).

        >>> summary = schedc.machine_summary(session)  # the seed's 2 × 8 machine
        >>> summary.hosts, len(summary.devices)  # 16 GPUs, 2 NVSwitches, 8 rails, a spine
        (('node[0]', 'node[1]'), 27)
        >>> [(r.classes, r.share) for r in summary.routes if r.scope == "inside a host"]
        [(('nvlink', 'nvlink'), Fraction(1, 1))]
    """
    from ..analysis.machine import summarize
    from ..errors import UsageError
    program = session.program
    if not program.topology.devices:
        raise UsageError(f"{program.path} declares no machine (no topology block, none "
                         "imported): nothing to show")
    max_routes = ShowOptions(max_routes).max_routes
    from ..files import check_output
    drawings = [(Path(check_output(p)), draw) for p, draw in
                ((host_svg, "host_svg"), (fabric_svg, "fabric_svg")) if p is not None]
    summary = summarize(program, max_routes)
    if drawings:
        from ..render import machine as drawn
        from ..render.files import write_atomically
        for path, draw in drawings:
            write_atomically(path, getattr(drawn, draw)(summary))
    return summary

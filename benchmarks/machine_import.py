"""`schedc machine import` as a whole process (the issue asks <= 1 s), on each topology file of
tests/fixtures/topo and on a generated 32-GPU full dump (4 CPUs, 32 PCIe switches: near NCCL's limit of 256
elements), with
`schedc --version` as the floor (interpreter start-up and click). Min and median of --repeat
runs (5 by default)."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from processes import ROOT, arguments, chosen, recorded, run_once, schedc, summary

TOPO = ROOT / "tests" / "fixtures" / "topo"
OPTIONS = {"ndv4-topo.xml": ["--nic-speed", "200Gbit/s"],
           "p4d-24xl-topo.xml": ["--nic-speed", "100Gbit/s"],
           "ndv5-topo.xml": ["--nic-speed", "400Gbit/s"],
           "rtp-llm-topo.xml": ["--nic-speed", "400Gbit/s"]}


def big_dump(path: Path, cpus: int = 4, per_cpu: int = 8) -> None:
    """A full dump of cpus × per_cpu GPUs, each with its NIC behind a PCIe switch: 229
    elements by default, near NCCL's limit of 256 (NCCL_TOPO_XML_MAX_NODES)."""
    lines = ['<system version="1">']
    for c in range(cpus):
        lines.append(f'<cpu numaid="{c}" arch="x86_64" vendor="GenuineIntel" familyid="6" '
                     'modelid="143">')
        for s in range(per_cpu):
            g = c * per_cpu + s
            lines += [f'<pci busid="{g:04x}:10:00.0" class="0x060400" link_speed="32.0 GT/s PCIe" '
                      'link_width="16">',
                      f'<pci busid="{g:04x}:11:00.0" class="0x030200" link_speed="32.0 GT/s PCIe" '
                      f'link_width="16"><gpu dev="{g}" sm="90" rank="{g}" gdr="1">'
                      '<nvlink target="fffffff:ff:ff.0" count="18" tclass="0x068000"/></gpu></pci>',
                      f'<pci busid="{g:04x}:12:00.0" class="0x020700" link_speed="32.0 GT/s PCIe" '
                      f'link_width="16"><nic><net name="mlx5_{g}" dev="{g}" speed="400000"/></nic>'
                      '</pci></pci>']
        lines.append("</cpu>")
    path.write_text("\n".join(lines + ["</system>"]) + "\n", encoding="utf-8")


def main() -> None:
    options = arguments(__doc__, "files").parse_args()
    with recorded(options.results, "machine_import.py"), tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "dump-32gpu.xml"
        big_dump(big)
        cases = [("schedc --version", schedc("--version"))]
        for path in sorted(TOPO.glob("*.xml")) + [big]:
            if path.name == "g5.48xl-topo.xml":
                continue  # refused (no PCI classes): tests/test_machine_import.py
            cases.append((f"import {path.name}", schedc(
                "machine", "import", str(path), "--hosts", "4", *OPTIONS.get(path.name, []),
                "-o", str(Path(tmp) / "out.sched"))))
        cases.append(("import --nvidia-smi", schedc(
            "machine", "import", "--nvidia-smi", str(TOPO / "dgx-a100-like-nvidia-smi.txt"),
            "--sm", "80", "--nic-speed", "200Gbit/s", "-o", str(Path(tmp) / "out.sched"))))
        for name, command in cases:
            if not chosen(name, options.only):
                continue
            low, mid, peak = summary([run_once(command) for _ in range(options.repeat)])
            print(f"{name:<42} min {low:.3f} s  median {mid:.3f} s  peak {peak / 2**20:.0f} MiB")
            sys.stdout.flush()


if __name__ == "__main__":
    main()

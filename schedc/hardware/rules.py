"""NCCL's rules for a topology's bandwidths, each with the line of NCCL that states it.

Read from NVIDIA/nccl at commit 5067397c2676d5aed50042fc39e5c8ee96eb0027 (src/graph/topo.cc,
topo.h, xml.h, xml.cc, paths.cc). NCCL's figures are GB/s (10^9 B/s) per direction; every
figure here is exact (a Fraction), as NCCL's float arithmetic is on these inputs.
"""

from __future__ import annotations

from fractions import Fraction

# Compute capabilities of the GPUs NCCL runs on (CUDA's list), each read by NCCL's tuning
# (compCapIndex, NCCL 2.30.7 src/graph/tuning.cc:263-266): what a GPU's `sm` may be
# (`gpu g[8] sm 80`, `--sm 80`).
KNOWN_SMS = (60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 103, 110, 120, 121)
# What `schedc nccl` assumes when neither the machine file nor --sm gives one (H100).
DEFAULT_SM = 90


def not_a_known_sm(shown: str) -> str:
    """Why `shown` (`--sm 81`, `sm 8.0`) is refused: it is none of KNOWN_SMS."""
    return (f"{shown}: not a compute capability NCCL runs on (known: "
            f"{', '.join(map(str, KNOWN_SMS))}; SM 9.0 is 90)")

NCCL = "NCCL 5067397c"
PCI_CLASS_RULE = "kvDictPciClass, src/graph/topo.cc:538, matched by prefix (kvConvertToInt, xml.h:428)"

# kvDictPciClass (topo.cc:538-544), matched by prefix as kvConvertToInt does (xml.h:428):
# a class is known when it starts with one of these. NCCL falls back to PCI (a bridge) for any
# other class; schedc refuses it instead, so that a typo does not become a switch.
PCI_CLASSES = (("0x060400", "bridge"), ("0x080100", "bridge"),  # CX8 data direct: PCI
               ("0x068000", "nvswitch"), ("0x068001", "cpu"), ("0x03", "gpu"), ("0x02", "nic"))

# kvDictPciGen (topo.cc:545-556): per-lane rate in units of 100 Mbit/s, matched by prefix;
# a speed matching none (an empty link_speed="" included) falls back to 60 (topo.cc:556).
PCI_GEN = (("2.5 GT/s", 15), ("5 GT/s", 30), ("8 GT/s", 60), ("16 GT/s", 120), ("32 GT/s", 240),
           ("2.5 GT/s PCIe", 15), ("5.0 GT/s PCIe", 30), ("8.0 GT/s PCIe", 60),
           ("16.0 GT/s PCIe", 120), ("32.0 GT/s PCIe", 240), ("64.0 GT/s PCIe", 480))
PCI_GEN_FALLBACK = 60
PCI_GENERATION = {15: 1, 30: 2, 60: 3, 120: 4, 240: 5, 480: 6}
PCI_RULE = "bw = link_width × speed / 80 GB/s (topo.cc:657; link_width 0 → 16, topo.cc:655)"

# topo.h:19-24 and ncclTopoNVLinkBw (topo.h:274): GB/s per NVLink, by compute capability.
NVLINK_BW = ((100, Fraction("40.1")), (90, Fraction("20.6")), (86, Fraction(12)),
             (80, Fraction(20)), (70, Fraction(20)), (60, Fraction(18)))
NVLINK_RULE = ("bw = count × per-link bw for the GPU's sm (topo.cc:856 to an NVSwitch, "
               "topo.cc:842 to a GPU; SM*_NVLINK_BW, topo.h:19-24, ncclTopoNVLinkBw topo.h:274)")

NET_RULE = "bw = speed (Mbit/s) / 8000 GB/s (topo.cc:418; speed <= 0 → 10000, topo.cc:417)"
NET_FALLBACK_MBPS = 10000
C2C_RULE = "bw = bw (MB/s) × count / 1000 GB/s (topo.cc:923)"

LOC_BW = Fraction(5000)  # topo.h:17
LOC_RULE = "LOC_BW = 5000 GB/s (topo.h:17)"
NIC_UNDER_CPU_RULE = "a <nic> under a <cpu> joins it at LOC_BW, 5000 GB/s (topo.cc:769; topo.h:17)"

# ncclTopoGetInterCpuBw (topo.cc:60-83) with the CPU model of topo.cc:748-756; topo.h:26-34.
SYS_RULE = "ncclTopoGetInterCpuBw (topo.cc:60) by arch, vendor and model (topo.cc:748); topo.h:26-34"

ROUTE_RULE = ("NCCL takes the path of the best type first (NVLink before PCI), then the higher "
              "bandwidth, then fewer hops (src/graph/paths.cc:98)")


def pci_class(value: str) -> str | None:
    """What NCCL makes of a PCI class code (bridge, nvswitch, cpu, gpu, nic); None: unknown."""
    return next((kind for prefix, kind in PCI_CLASSES if value.startswith(prefix)), None)


def pci_lane_rate(speed: str) -> int | None:
    """kvDictPciGen's value for a link_speed (100 Mbit/s per lane); None: matches no entry."""
    return next((rate for prefix, rate in PCI_GEN if speed.startswith(prefix)), None)


def pci_bandwidth(width: int, rate: int) -> Fraction:
    return Fraction((width or 16) * rate, 80)


def nvlink_per_link(sm: int) -> Fraction:
    """ncclTopoNVLinkBw: the first entry whose capability the GPU's sm reaches (86 exactly);
    below 60, SM80's figure (topo.h:281)."""
    for floor, bw in NVLINK_BW:
        if (sm == 86) if floor == 86 else sm >= floor:
            return bw
    return Fraction(20)


def net_bandwidth(mbps: int) -> Fraction:
    return Fraction(mbps if mbps > 0 else NET_FALLBACK_MBPS, 8000)


def inter_cpu(arch: str, vendor: str, family: int | None, model: int | None) -> tuple[Fraction, str]:
    """The SYS link between two CPUs of a host (GB/s) and the constant's name."""
    if arch.startswith("ppc64"):
        return Fraction(32), "P9_BW"
    if arch.startswith("arm64"):
        return Fraction(6), "ARM_BW"
    if arch.startswith("x86_64"):
        if vendor.startswith("GenuineIntel"):
            if family == 6 and model is not None and model >= 0xCF:
                return Fraction(40), "ERP_QPI_BW"
            if family == 6 and model is not None and model >= 0x8F:
                return Fraction(22), "SRP_QPI_BW"
            if family == 6 and model is not None and model >= 0x55:
                return Fraction(10), "SKL_QPI_BW"
            return Fraction(6), "BDW_QPI_BW"
        if vendor.startswith("AuthenticAMD"):
            return Fraction(16), "AMD_BW"
        if vendor.startswith("CentaurHauls") or vendor.startswith("  Shanghai  "):
            return (Fraction(9), "YONGFENG_ZPI_BW") if (family, model) == (7, 0x5B) \
                else (Fraction(6), "ZPI_BW")
    return LOC_BW, "LOC_BW"


def decimal(value: Fraction) -> str:
    """An exact decimal for a fraction whose denominator is 2^a·5^b (all of NCCL's figures);
    others to 30 digits."""
    whole, rest = divmod(value.numerator, value.denominator)
    digits = ""
    while rest and len(digits) < 30:
        rest *= 10
        digit, rest = divmod(rest, value.denominator)
        digits += str(digit)
    return f"{whole}.{digits}" if digits else str(whole)

"""What a fitted param means, and so its physical range and prior.

A param is recognised by where the machine file uses it: as a protocol's `eff` (its share
of a link's bandwidth), as a protocol's `alpha` (its start-up per round), as a link's
`latency` (the per-hop latency of a link class, NCCL's `hwLat` idea), as a protocol's
`launch` (its latency once per call, NCCL's `baseLat`), or as a link's
bandwidth (a rate: fixed from the data sheet unless named with `--fit`). Each role has hard
bounds (what the hardware allows) and a prior (NCCL's own value, a soft pull that keeps a
param the rows barely see at a sensible value instead of letting it run off).

NCCL's constants are from NVIDIA/nccl at commit 5067397c2676d5aed50042fc39e5c8ee96eb0027:
- src/graph/tuning.cc:151 baseLatencies[RING] = {LL 6.6, LL128 14.0, Simple 8.4} µs per call;
- src/graph/tuning.cc:159 hwLatencies[NVLINK][RING] = {LL 0.6, LL128 1.9, Simple 3.4} µs per
  step, tuning.cc:171 hwLatencies[NET][RING] = {2.7, 4.0, 14.0} µs;
- tuning.cc:327 ring LL: busBw × .5 (LL sends a 4-byte flag with every 4 data bytes,
  `ncclLLFifoLine`, devcomm.h), tuning.cc:329 ring LL128: busBw × 0.92 ("120.0/128.0");
- src/graph/topo.h:21-22 SM80_NVLINK_BW 20.0, SM90_NVLINK_BW 20.6 GB/s per NVLink of
  25 GB/s: Simple gets about 0.8 of a link.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...choices import NCCL_PROTOCOLS
from ...elaborate.program import Param
from ...session import Session
from ...units import BYTES, DIMENSIONLESS, RATE, SECONDS

US = 1e-6
# Simple's share of a link: NCCL's effective NVLink rate over the line rate (topo.h:21-22).
SIMPLE_EFF = 20.0 / 25.0
# Per protocol: (prior share of a link, hard upper bound, prior start-up per round in s).
PROTOCOL_PRIORS = {
    "LL": (0.5 * SIMPLE_EFF, 0.5, 0.6 * US),  # tuning.cc:327, devcomm.h; tuning.cc:159
    "LL128": (0.92 * SIMPLE_EFF, 120 / 128, 1.9 * US),  # tuning.cc:329; tuning.cc:159
    "Simple": (SIMPLE_EFF, 1.0, 3.4 * US),  # topo.h:21-22; tuning.cc:159
}
# Simple's share of a link of a class (`protocol Simple class C eff e`), by what the class is:
# NCCL rates a network port at its line rate (src/graph/topo.cc ncclTopoAddNet: `net->net.bw
# = mbps / 8000.0`, no factor): 1; an NVLink at 20/25 (topo.h:21-22, as SIMPLE_EFF); a PCIe
# link at PCI_BW = 12 GB/s for a Gen3 x16 slot (topo.h:25) of 8 GT/s × 16 × 128/130 / 8 =
# 15.75 GB/s: 0.762. LL and LL128 get NCCL's ratios of it (SHARE_OF_SIMPLE).
CLASS_KINDS = {"nvlink": ("nvlink", "nvls", "nvswitch", "c2c"),
               "pcie": ("pcie", "pci"),
               "nic": ("nic", "net", "ib", "infiniband", "efa", "rdma", "roce", "ethernet")}
CLASS_SIMPLE_EFF = {"nvlink": SIMPLE_EFF, "pcie": 12.0 / 15.75, "nic": 1.0}
PROTOCOL_ORDER = NCCL_PROTOCOLS  # LL, LL128, Simple: start-ups rise, shares of a link rise
NET_HOP_PRIOR = 2.7 * US  # tuning.cc:171, NET ring LL: the hop latency itself
# Per protocol, once per call: baseLatencies[RING] = {LL 6.6, LL128 14.0, Simple 8.4} µs
# (tuning.cc:151); not ordered (NCCL's own LL128 is above Simple's).
LAUNCH_PRIORS = {"LL": 6.6 * US, "LL128": 14.0 * US, "Simple": 8.4 * US}
LAUNCH_BOUNDS = (0.01 * US, 200 * US)
# NCCL's bandwidth of LL and LL128 is Simple's times these (tuning.cc:327, :329).
SHARE_OF_SIMPLE = {"LL": 0.5, "LL128": 0.92}
# Priors are soft: a log-space standard deviation (a share within ×/÷ 1.5 at one σ, a
# latency within ×/÷ 3): the data decide wherever they can.
EFF_SIGMA = math.log(1.5)
LATENCY_SIGMA = math.log(3.0)
CHUNK_BOUNDS = (4096.0, 2.0**36)  # bytes: NCCL's smallest chunk .. 64 GiB
MIN_EFF = 0.01
STARTUP_BOUNDS = (0.01 * US, 100 * US)  # a round's start-up: 10 ns .. 100 µs
HOP_BOUNDS = (0.001 * US, 200 * US)


@dataclass(frozen=True)
class Role:
    """A param's meaning: `kind` is "eff", "startup", "latency", "chunk", "rate" or
    "other"."""

    kind: str
    what: str  # said in the output, e.g. "LL's share of a link"
    lower: float
    upper: float
    prior: float | None  # None: no prior (the data alone)
    sigma: float  # log-space
    protocol: str | None = None
    # A share NCCL sets relative to Simple's (tuning.cc:327 LL × .5, :329 LL128 × 0.92): the
    # param of Simple's share in the same file, and the ratio; its prior is then that ratio
    # of the fitted Simple share (and `prior` only when Simple's is not fitted).
    anchor: str | None = None
    ratio: float = 1.0
    cls: str | None = None  # a share of the links of this class only (`class C eff`)


def roles(session: Session, params: list[Param]) -> list[Role]:
    program = session.program
    effs = {str(p.eff): p.name for p in program.protocols}
    simple = next((str(p.eff) for p in program.protocols if p.name == "Simple"), None)
    alphas = {str(p.alpha): p.name for p in program.protocols}
    launches = {str(p.launch) for p in program.protocols}
    latencies = {str(r.latency): r.cls for r in program.topology.resources
                 if r.latency is not None}
    by_class = {str(e): (p.name, c) for p in program.protocols for c, e in p.class_eff}
    out = []
    for param in params:
        name = param.name
        if name in by_class and name not in effs and param.dim == DIMENSIONLESS:
            out.append(class_share_role(program.protocols, *by_class[name]))
        elif name in effs and param.dim == DIMENSIONLESS:
            protocol = effs[name]
            prior, upper, _ = PROTOCOL_PRIORS.get(protocol, (SIMPLE_EFF, 1.0, 0.0))
            ratio = SHARE_OF_SIMPLE.get(protocol)
            anchor = simple if ratio is not None and simple != name else None
            out.append(Role("eff", f"{protocol}'s share of a link's bandwidth", MIN_EFF, upper,
                            prior, EFF_SIGMA, protocol, anchor, ratio or 1.0))
        elif name in alphas and param.dim == SECONDS:
            protocol = alphas[name]
            start = PROTOCOL_PRIORS.get(protocol, (0, 0, 3.4 * US))[2]
            out.append(Role("startup", f"{protocol}'s start-up per round", *STARTUP_BOUNDS,
                            start, LATENCY_SIGMA, protocol))
        elif name in launches and param.dim == SECONDS:
            users = [p.name for p in program.protocols if str(p.launch) == name]
            protocol = users[0] if len(users) == 1 else "Simple"  # shared: Simple's prior
            whose = f"{protocol}'s" if len(users) == 1 else "every protocol's"
            out.append(Role("launch", f"{whose} latency per call", *LAUNCH_BOUNDS,
                            LAUNCH_PRIORS.get(protocol, 8.4 * US), LATENCY_SIGMA, protocol))
        elif name in latencies and param.dim == SECONDS:
            cls = latencies[name]
            out.append(Role("latency", f"latency of a {cls} link, per hop", *HOP_BOUNDS,
                            NET_HOP_PRIOR, LATENCY_SIGMA))
        elif param.symbol == program.step_chunk and param.dim == BYTES:
            # `step cost pipelined chunk Q`: the file's value is its prior (NCCL's loop size
            # as the file derives it), as loose as a latency's
            out.append(Role("chunk", "a pipeline's chunk (`step cost pipelined`)",
                            *CHUNK_BOUNDS, float(param.nominal), LATENCY_SIGMA))
        elif param.dim == RATE:
            out.append(Role("rate", "a link rate", 1.0, math.inf, None, 0.0))
        else:
            out.append(Role("other", "", 0.0, math.inf, None, 0.0))
    return out


def class_kind(cls: str) -> str | None:
    """What a link class is, by its name (CLASS_KINDS): 'nvlink', 'pcie', 'nic' or None."""
    return next((k for k, names in CLASS_KINDS.items() if cls.lower() in names), None)


def class_share_role(protocols, protocol: str, cls: str) -> Role:
    """The role of protocol P's share of class C's links: prior NCCL's figure for such a
    link (CLASS_SIMPLE_EFF; a class of no known kind: the protocol's own prior), LL's and
    LL128's anchored to Simple's share of the same class at NCCL's ratio."""
    prior, upper, _ = PROTOCOL_PRIORS.get(protocol, (SIMPLE_EFF, 1.0, 0.0))
    kind = class_kind(cls)
    ratio = SHARE_OF_SIMPLE.get(protocol)
    if kind is not None:
        prior = min(CLASS_SIMPLE_EFF[kind] * (ratio or 1.0), upper)
    simple = next((p for p in protocols if p.name == "Simple"), None)
    anchor = (str(dict(simple.class_eff)[cls]) if ratio is not None and simple is not None
              and cls in dict(simple.class_eff) else None)
    return Role("eff", f"{protocol}'s share of a {cls} link's bandwidth", MIN_EFF, upper,
                prior, EFF_SIGMA, protocol, anchor, ratio or 1.0, cls)


# `--fit latencies` and `--fit shares`: every param of those roles that the time depends on
# (a param of that name, if a file has one, is meant instead). The shares of a link transfer
# between machines better than the latencies (docs/calibration.md, "What transfers"), so a
# new machine is fitted as `--fit latencies` with the shares of a library it imports.
GROUPS = {"latencies": (("launch", "startup", "latency"),
                         "latency per call, start-up per round or latency per hop"),
          "shares": (("eff",), "protocol's share of a link")}


def group_members(session: Session, group: str, candidates: list[Param]) -> list[str]:
    """The names among `candidates` whose role is one of `group`'s."""
    kinds = GROUPS[group][0]
    return [p.name for p, role in zip(candidates, roles(session, candidates)) if role.kind in kinds]


def orderings(session: Session, names: list[str]) -> list[tuple[str, str]]:
    """Pairs (a, b) of fitted params with a <= b: LL's start-up <= LL128's <= Simple's, and
    shares the same way (LL's smaller than LL128's, smaller than Simple's), so that a fit
    cannot swap the protocols' labels."""
    by_protocol = {p.name: p for p in session.program.protocols}
    chain = [by_protocol[n] for n in PROTOCOL_ORDER if n in by_protocol]
    pairs = []
    for a, b in zip(chain, chain[1:]):
        for field in ("alpha", "eff"):
            x, y = str(getattr(a, field)), str(getattr(b, field))
            if x in names and y in names and x != y:
                pairs.append((x, y))
    return pairs

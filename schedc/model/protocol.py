"""Protocols: the ways NCCL can run one schedule (LL, LL128, Simple), each with its own
start-up and its own share of every link's bandwidth (NVIDIA/nccl src/graph/tuning.cc).

With protocols declared, a schedule's time is the minimum over them of
Σ_rounds (α_p + max_e V[r,e] / (eff_p · B_e)), plus the protocol's `launch` (once per call,
NCCL's baseLat; 0 unless given): α_p replaces the file's per-round start-up.
A round that uses a link of a class with its own start-up (`class nic alpha 14 us`) starts up
in the largest of those; a class with a cap (`class nvlink cap 141 GB/s`, NCCL's llMaxBw)
runs at min(eff_p · B_e, cap) on its links, and a class with its own share (`class nic eff
e_nic`) runs at that share instead of eff_p.

The physical ranges, checked where a protocol is declared (elaborate/loader.py):
- eff in (0, 1]: the share of a link's bandwidth that carries the protocol's payload. A
  protocol runs on the link, never faster than it: NCCL's LL sends a 4-byte flag with every
  4 bytes of data (`union ncclLLFifoLine` in src/include/devcomm.h), 1/2; LL128 one flag word
  in each 128-byte line (`NCCL_LL128_DATAELEMS = NCCL_LL128_LINEELEMS - 1`), 15/16; Simple all.
- alpha and every class's alpha >= 0: a start-up is time spent before the first byte moves
  (NCCL's baseLat and hwLat tables in its tuning code are such latencies, in µs, and baseLat
  holds 0 for Tree/Simple, so 0 is allowed); a negative one would end a round before it starts.
- cap > 0: a rate.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import Span
from .scalars import Scalar, largest, smallest

MAX_EFF = 1  # a protocol's share of a link's bandwidth is at most all of it (see above)



@dataclass(frozen=True)
class Protocol:
    name: str
    alpha: Scalar  # seconds, per round
    eff: Scalar  # share of each link's bandwidth (dimensionless)
    class_alpha: tuple[tuple[str, Scalar], ...] = ()  # per link class: the round's start-up
    class_cap: tuple[tuple[str, Scalar], ...] = ()  # per link class: a rate cap, bytes/s
    span: Span | None = field(default=None, compare=False, repr=False)
    launch: Scalar = 0  # seconds, once per call (NCCL's baseLat)
    class_eff: tuple[tuple[str, Scalar], ...] = ()  # per link class: its own share

    def startup(self, classes: set[str]) -> Scalar:
        """The start-up of a round that uses links of `classes`."""
        own = [a for c, a in self.class_alpha if c in classes]
        return largest(self.alpha, *own) if own else self.alpha

    def share(self, classes: set[str]) -> Scalar:
        """The share of a link's bandwidth this protocol gets on links of `classes`: each
        class's own (`class C eff`), else `eff`; the smallest when a term spans classes."""
        own = dict(self.class_eff)
        shares = list(dict.fromkeys(own.get(c, self.eff) for c in sorted(classes)))
        return self.eff if not shares else shares[0] if len(shares) == 1 else smallest(*shares)

    def rate(self, bandwidth: Scalar, classes: set[str]) -> Scalar:
        """The rate this protocol gets from links of `classes` with bandwidth B."""
        caps = [cap for c, cap in self.class_cap if c in classes]
        scaled = self.share(classes) * bandwidth
        return smallest(scaled, *caps) if caps else scaled

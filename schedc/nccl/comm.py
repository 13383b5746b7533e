"""What NCCL's tuning model reads, by NCCL's names: the communicator's fields and, per
algorithm, its topology graph's (`struct ncclTopoGraph`, src/include/graph.h:172-190).

Each value is kept with how it was found (`derived_from`): from the machine file, from a
flag, or NCCL's default. `GRAPH_OF` is which graph each algorithm reads
(src/init.cc:980-981: PAT reads the tree's, NVLS-tree the NVLS one).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from .constants import ALGORITHMS

GRAPHS = ("tree", "ring", "collnet_direct", "collnet_chain", "nvls")
GRAPH_OF = {"tree": "tree", "ring": "ring", "collnet_direct": "collnet_direct",
            "collnet_chain": "collnet_chain", "nvls": "nvls", "nvls_tree": "nvls", "pat": "tree"}
GRAPH_FIELDS = ("nChannels", "bwIntra", "bwInter", "typeIntra", "typeInter", "latencyInter",
                "sameChannels")
# Communicator fields, in the order they are shown.
COMM_FIELDS = ("nNodes", "nRanks", "localRanks", "minCompCap", "maxCompCap", "cpuArch",
               "cpuVendor", "netDeviceType", "nChannels", "maxTreePattern", "collnetEnable",
               "collNetChainSupport", "collNetSupport", "nvlsSupport", "nvlsChannels",
               "nvsCount")


@dataclass(frozen=True)
class Value:
    value: Any  # int, float (GB/s, µs) or a name (a path type, a CPU)
    derived_from: str


@dataclass(frozen=True)
class Graph:
    nChannels: int
    bwIntra: float  # GB/s per channel
    bwInter: float
    typeIntra: str  # a path type name: NVL, PIX, ... (constants.PATH_TYPES)
    typeInter: str
    latencyInter: float = 0.0  # µs
    sameChannels: int = 1


@dataclass(frozen=True)
class Comm:
    """The inputs: `values` maps each name (`nNodes`, `ring.bwIntra`, ...) to its Value."""

    values: dict[str, Value] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Any:
        return self.values[name].value

    def graph(self, algorithm: str) -> Graph:
        g = GRAPH_OF[algorithm]
        v = {f: self.values[f"{g}.{f}"].value for f in GRAPH_FIELDS}
        return Graph(v["nChannels"], v["bwIntra"], v["bwInter"], v["typeIntra"], v["typeInter"],
                     v["latencyInter"], v["sameChannels"])

    def names(self) -> list[str]:
        return [*COMM_FIELDS, *(f"{g}.{f}" for g in GRAPHS for f in GRAPH_FIELDS)]

    def with_value(self, name: str, value: object, derived_from: str) -> Comm:
        return replace(self, values={**self.values, name: Value(value, derived_from)})


assert set(GRAPH_OF) == set(ALGORITHMS)


def given(values: dict[str, object], source: str) -> Comm:
    """A Comm of plain values, each `derived_from` the same source (tests, a log's inputs)."""
    return Comm({k: Value(v, source) for k, v in values.items()})

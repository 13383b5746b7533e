"""A schedc machine → the inputs of NCCL's tuning model (`comm.Comm`), each with how it was
found.

NCCL finds its graphs by a search over the machine (src/graph/search.cc, ncclTopoCompute);
schedc does not rerun that search. It derives what the search settles on in the plain case,
from the rates schedc's own routing gives, and says so in every `derived_from`:

- per GPU, `intra`: the rate each GPU sends at when every GPU of a host sends to the next
  one at once (a ring inside the host), the slowest resource on the routes deciding;
  `inter`: the same with every GPU sending to its counterpart on the next host, and the
  host's total `inter × localRanks` (a one-host machine: the bandwidth of its links out);
- the ring graph: the speed s from NCCL's speed array (search.cc:1051-1066, by SM and by
  whether there is a network) with s at most a GPU's rate that gives the most channels × s
  within the ring's capacity (min of intra and the host's inter), at most
  ringGraph->maxChannels = MAXCHANNELS/2 channels (init.cc:1177), then NCCL's channel
  duplication (search.cc:1036-1049);
- the tree graph: the ring's channel count (init.cc:1183-1185) at the fastest speed those
  channels fit, intra capacity × localRanks/(localRanks-1) (search.cc:1168);
- NVLS on SM 90 and later when every GPU of a host reaches the others over `nvlink`
  links through a switch: NVLS_NCHANNELS (transport/nvls.cc:155-213) channels;
- link types: NVL when every link of the intra-host route is of class `nvlink`, else PIX
  for one switch between the GPUs and PXB for more; towards the network PIX when the GPU
  reaches the host's edge through at most one switch, else PXB.

What a schedc machine does not say (the CPU, CollNet/SHARP) takes NCCL's default, named.
"""

from __future__ import annotations

from dataclasses import dataclass

from fractions import Fraction

from ..errors import TopologyError
from ..model.topology import Topology
from . import constants as K
from .comm import GRAPH_FIELDS, GRAPHS, Comm, Value

SPEEDS_INTRA = {0: (40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0),
                90: (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0),
                100: (90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0)}
SPEEDS_INTER = {0: (48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0,
                    4.0, 3.0, 2.4, 1.2, 0.24, 0.12),
                90: (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0,
                     3.0, 2.4, 1.2, 0.24, 0.12),
                100: (96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                      15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12)}
LOC_BW = 5000.0  # src/graph/topo.h:17
SEARCH = "search.cc:1051-1066 speed arrays"


def derive(topology: Topology, ranks: tuple[int, ...], nominal: dict, sm: int,
           sm_from: str, nodes: int | None = None) -> Comm:
    """The inputs for the machine's ranks; `nodes`: as if it had that many such hosts (the
    per-GPU rates stay the machine's). By phase: the rates the graphs search within, the
    scalar inputs, the ring and tree graphs, then NVLS and CollNet."""
    hosts = _hosts(topology, ranks)
    local, machine_nodes = len(hosts[0]), len(hosts)
    n_nodes = machine_nodes if nodes is None else nodes
    bw = _bandwidths(topology, nominal, hosts)
    type_intra = _type_intra(topology, hosts[0]) if local > 1 else "LOC"
    type_inter = _type_inter(topology, hosts[0][0])
    values = _scalars(topology, ranks, hosts, sm, sm_from, nodes, n_nodes)
    ring_n = _ring_and_tree(values, bw, sm, local, n_nodes, type_intra, type_inter)
    values["nChannels"] = Value(ring_n, "min(ring, tree nChannels) (init.cc:1459)")
    _nvls_and_collnet(values, bw, sm, local, n_nodes, type_intra)
    assert all(f"{g}.{f}" in values for g in GRAPHS for f in GRAPH_FIELDS)
    return Comm(values)


@dataclass(frozen=True)
class _Bandwidths:
    """GB/s per GPU: inside a host (`intra`), to the next host (`inter`; `inter_total` for a
    host's GPUs at once), and the best single GPU-to-network path (`single`)."""

    intra: float
    inter: float
    inter_total: float
    single: float


def _bandwidths(topology: Topology, nominal: dict, hosts: list) -> _Bandwidths:
    local, machine_nodes = len(hosts[0]), len(hosts)
    rate = _Rates(topology, nominal)
    intra = rate.concurrent([(h[i], h[(i + 1) % local]) for h in hosts for i in range(local)]) \
        if local > 1 else LOC_BW
    if machine_nodes > 1:
        inter = rate.concurrent([(hosts[k][i], hosts[(k + 1) % machine_nodes][i])
                                 for k in range(machine_nodes) for i in range(local)])
        inter_total = inter * local  # every GPU to its counterpart on the next host at once
        # A channel crosses the network once per host: its bw is bounded by the best single
        # GPU-to-network path (getMaxBw, search.cc:20-28 and :50), not by a GPU's share of a
        # NIC all GPUs use at once; the channels together share inter_total.
        single = max(rate.concurrent([(hosts[0][i], hosts[1][i])]) for i in range(local))
    else:
        inter_total = rate.leaving(topology, hosts[0])  # a one-host machine: its links out
        inter = inter_total / local if inter_total else 0.0
        single = inter
    return _Bandwidths(intra, inter, inter_total, single)


def _scalars(topology: Topology, ranks: tuple[int, ...], hosts: list, sm: int, sm_from: str,
             nodes: int | None, n_nodes: int) -> dict[str, Value]:
    """The inputs that are not a graph's: counts, the GPU generation, what is assumed."""
    local, machine_nodes = len(hosts[0]), len(hosts)
    where = f"{len(ranks)} ranks on {machine_nodes} host{'s' if machine_nodes > 1 else ''}"
    if any(topology.devices[r].host is None for r in ranks):
        where += " (a GPU in no host is a node of its own, as schedc counts hosts)"
    return {
        "nNodes": Value(n_nodes, f"the hosts of the {where}" if nodes is None else "--nodes"),
        "nRanks": Value(n_nodes * local, f"the {where}" if nodes is None else
                        "nNodes × localRanks"),
        "localRanks": Value(local, "GPUs per host (the same on every host)"),
        "minCompCap": Value(sm, sm_from), "maxCompCap": Value(sm, sm_from + "; one GPU model"),
        "cpuArch": Value("x86", "NCCL's most common case: a schedc machine declares no CPU"),
        "cpuVendor": Value("INTEL", "assumed, as cpuArch (AMD: netOverhead 2 µs, LL rows)"),
        "netDeviceType": Value("HOST", "NCCL's default network device (no offload)"),
        "maxTreePattern": Value(1, "BALANCED_TREE, the tree search's pattern (init.cc:1182)")
        if local > 1 else Value(3, "TREE: one GPU per node takes all NIC traffic (graph.h:166)"),
        "collnetEnable": Value(0, "NCCL_COLLNET_ENABLE unset: 0 (no CollNet/SHARP plugin)"),
        "collNetChainSupport": Value(0, "no CollNet"),
        "collNetSupport": Value(0, "no CollNet (ncclGetCollNetSupport)"),
        "nvsCount": Value(_nvswitches(topology, hosts[0]),
                          "switches joined to the host's GPUs by `nvlink` links"),
    }


def _ring_and_tree(values: dict[str, Value], bw: _Bandwidths, sm: int, local: int,
                   n_nodes: int, type_intra: str, type_inter: str) -> int:
    """The ring and tree graphs' inputs, as NCCL's search finds them; their channel count."""
    intra, inter, inter_total, single = bw.intra, bw.inter, bw.inter_total, bw.single
    speeds = _speeds(sm, n_nodes > 1)
    ring_cap = intra if n_nodes == 1 else min(intra, inter_total)
    per_channel = intra if n_nodes == 1 else min(intra, single)
    ring_s, ring_n = _best(speeds, per_channel, ring_cap, K.MAXCHANNELS // 2, intra)
    ring_s, ring_n, dup = _dup(ring_s, ring_n, sm, K.MAXCHANNELS // 2)
    tree_cap = intra * local / (local - 1) if local > 1 else intra
    tree_cap = tree_cap if n_nodes == 1 else min(tree_cap, inter_total)
    tree_s = _fastest_fit(speeds, per_channel, tree_cap, ring_n)
    rates = f"intra {intra:g}" + (f", inter {inter:g}" if n_nodes > 1 else "") + " GB/s per GPU" \
        + (f" (one path alone {single:g})" if n_nodes > 1 and single != inter else "")
    graph_from = {
        "ring": (f"speed arrays (search.cc:1051-1066) descended as search.cc:1170-1246 does: "
                 f"nChannels × bw within {ring_cap:g} GB/s, bw ≤ {per_channel:g}; {rates}"
                 + (f"; {dup}" if dup else "")),
        "tree": f"the ring's channels (init.cc:1183-1185), fastest bw within {tree_cap:g} GB/s",
    }
    for name, s, n in (("ring", ring_s, ring_n), ("tree", tree_s, ring_n)):
        how = graph_from[name]
        values.update({f"{name}.nChannels": Value(n, how), f"{name}.bwIntra": Value(s, how),
                       f"{name}.bwInter": Value(s, how),
                       f"{name}.typeIntra": Value(type_intra, _TYPE_INTRA),
                       f"{name}.typeInter": Value(type_inter if n_nodes > 1 else "LOC",
                                                  _TYPE_INTER if n_nodes > 1 else
                                                  "one host: no network path"),
                       f"{name}.latencyInter": Value(0.0, "no extra network latency (the "
                                                     "graph's default)"),
                       f"{name}.sameChannels": Value(1, "the search's first try "
                                                     "(search.cc:1106)")})
    return ring_n


def _nvls_and_collnet(values: dict[str, Value], bw: _Bandwidths, sm: int, local: int,
                      n_nodes: int, type_intra: str) -> None:
    """NVLS's inputs (SM ≥ 90, GPUs on an NVSwitch over nvlink) and CollNet's (never)."""
    intra, inter, inter_total = bw.intra, bw.inter, bw.inter_total
    speeds = _speeds(sm, n_nodes > 1)
    nvls = sm >= 90 and local > 1 and type_intra == "NVL" and values["nvsCount"].value > 0
    values["nvlsSupport"] = Value(int(nvls), "SM ≥ 90 and the host's GPUs on an NVSwitch over "
                                  "nvlink" if nvls else "needs SM ≥ 90 and GPUs on an NVSwitch")
    nvls_n = 0 if not nvls else (32 if n_nodes > 1 else 24) if sm >= 100 else 16
    values["nvlsChannels"] = Value(nvls_n, "NVLS_NCHANNELS_SM90/SM100 (transport/nvls.cc:155-213)"
                                   if nvls else "no NVLS")
    nvls_s = _fastest_fit(_speeds(sm, False), intra, intra, nvls_n) if nvls else 0.0
    nvls_inter = _fastest_fit(speeds, inter, inter_total, nvls_n) if nvls and n_nodes > 1 \
        else nvls_s
    how = (f"{nvls_n} channels at the fastest speed within {intra:g} GB/s" if nvls else "no NVLS")
    for f, v in zip(GRAPH_FIELDS, (nvls_n, nvls_s, nvls_inter, type_intra,
                                    values["ring.typeInter"].value, 0.0, 1), strict=True):
        values[f"nvls.{f}"] = Value(v, how)
    for g in ("collnet_direct", "collnet_chain"):
        for f, v in zip(GRAPH_FIELDS, (0, 0.0, 0.0, type_intra, values["ring.typeInter"].value,
                                        0.0, 1), strict=True):
            values[f"{g}.{f}"] = Value(v, "no CollNet: the graph is not searched "
                                       "(init.cc:1202-1207)")


_TYPE_INTRA = "the links between two GPUs of a host: NVL if all `nvlink`, else PIX/PXB"
_TYPE_INTER = "a GPU's way to the host's edge: PIX through at most one switch, else PXB"


def _hosts(topology: Topology, ranks: tuple[int, ...]) -> list[list[int]]:
    devices = topology.devices
    gpus = [r for r in ranks if devices[r].kind == "gpu"]
    if not gpus:
        raise TopologyError("NCCL's model needs GPUs: the machine's ranks have none")
    if len(gpus) != len(ranks):
        bad = next(devices[r].name for r in ranks if devices[r].kind != "gpu")
        raise TopologyError(f"NCCL's ranks are GPUs; {bad} is not one")
    by_host: dict[int, list[int]] = {}
    for r in gpus:
        host = devices[r].host
        by_host.setdefault(host if host is not None else -1 - r, []).append(r)
    hosts = list(by_host.values())
    sizes = sorted({len(h) for h in hosts})
    if len(sizes) > 1:
        counts = ", ".join(f"{len(h)} on {_host_name(topology, h[0])}" for h in hosts)
        raise TopologyError("NCCL's tuning model assumes the same number of GPUs on every "
                            f"host (localRanks); the ranks have {counts}")
    return hosts


def _host_name(topology: Topology, gpu: int) -> str:
    host = topology.devices[gpu].host
    return topology.host_names[host] if host is not None else topology.devices[gpu].name


class _Rates:
    def __init__(self, topology: Topology, nominal: dict) -> None:
        self.topology, self.nominal = topology, nominal

    def bandwidth(self, r: int) -> float | None:
        bw = self.topology.resources[r].effective_bandwidth
        return None if bw is None else float(bw.xreplace(self.nominal)) / 1e9  # GB/s

    def concurrent(self, pairs: list[tuple[int, int]]) -> float:
        """GB/s each pair gets when all send at once at one rate."""
        load: dict[int, Fraction] = {}
        for s, d in pairs:
            for r, share in self.topology.route_resources(s, d, None):
                load[r] = load.get(r, Fraction(0)) + share
        limits = [bw / float(n) for r, n in load.items() if (bw := self.bandwidth(r))]
        return min(limits) if limits else LOC_BW

    def leaving(self, topology: Topology, host: list[int]) -> float:
        """GB/s of the links from the host's devices to devices outside it."""
        h = topology.devices[host[0]].host
        total = 0.0
        for hop in topology.hops:
            if topology.devices[hop.src].host == h and topology.devices[hop.dst].host != h:
                total += sum(b for r in hop.resources if (b := self.bandwidth(r)) or 0)
        return total


def _type_intra(topology: Topology, host: list[int]) -> str:
    route = topology.route(host[0], host[1], None)
    classes = {topology.resources[r].cls for hop, _ in route.shares
               for r in topology.hops[hop].resources}
    if classes == {"nvlink"}:
        return "NVL"
    return "PIX" if len(route.steps) <= 2 else "PXB"


def _type_inter(topology: Topology, gpu: int) -> str:
    """Hops from the GPU to the first device outside its host, along its links."""
    h = topology.devices[gpu].host
    if h is None:
        return "PIX"
    frontier, seen, depth = {gpu}, {gpu}, 0
    while frontier:
        depth += 1
        nxt = {hop.dst for hop in topology.hops if hop.src in frontier} - seen
        if any(topology.devices[d].host != h for d in nxt):
            return "PIX" if depth <= 2 else "PXB"
        seen |= nxt
        frontier = {d for d in nxt if topology.devices[d].forwards}
    return "PIX"


def _nvswitches(topology: Topology, host: list[int]) -> int:
    gpus = set(host)
    return len({hop.dst for hop in topology.hops if hop.src in gpus and
                topology.devices[hop.dst].kind == "switch" and
                {topology.resources[r].cls for r in hop.resources} == {"nvlink"}})


def _speeds(sm: int, inter: bool) -> tuple[float, ...]:
    table = SPEEDS_INTER if inter else SPEEDS_INTRA
    return table[100 if sm >= 100 else 90 if sm >= 90 else 0]


def _best(speeds: tuple[float, ...], per_channel: float, cap: float, most: int, total: float
          ) -> tuple[float, int]:
    """(speed, channels) as the search's first pass descends the speeds (search.cc:1170-1246):
    from the fastest within `per_channel` (maxBw, :1170), as many channels at each speed as
    the links allow (`cap`: what the channels share), the best speed × channels kept (the
    faster on a tie); it stops once that reaches `total` (the GPU's own link total, totalBw,
    :1198), or when the next speed is at most .49 of the best one found (:1245)."""
    best: tuple[float, int] | None = None
    usable = [s for s in speeds if s <= per_channel] or [speeds[-1]]
    for k, s in enumerate(usable):
        n = min(most, int(cap // s))
        if n >= 1 and (best is None or s * n > best[0] * best[1]):
            best = (s, n)
        if best is not None and (best[0] * best[1] >= total or (
                k + 1 < len(usable) and usable[k + 1] / best[0] <= .49)):
            break
    return best or (usable[-1], 1)


def _fastest_fit(speeds: tuple[float, ...], per_channel: float, cap: float, n: int) -> float:
    fits = [s for s in speeds if s <= per_channel and s * n <= cap]
    return fits[0] if fits else speeds[-1]


def _dup(s: float, n: int, sm: int, most: int) -> tuple[float, int, str]:
    """ncclTopoDupChannels (search.cc:1036-1049)."""
    if s < 25.0 or (sm > 80 and s < 50.0 and n > 4):
        return s, n, ""
    dup = min(n * 2, most)
    split = -(-dup // n)
    return s / split, dup, f"channels duplicated {n} → {dup} (search.cc:1036-1049)"

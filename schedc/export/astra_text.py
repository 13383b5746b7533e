"""What `export astra` prints about the files it wrote: the traces, the network ASTRA-sim
is given, and the times to expect, as text and as JSON (the files themselves are
`schedc.export.astra`'s)."""

from __future__ import annotations

from ..render.schema import ASTRA
from ..render.text import dump_json, json_number
from .astra import AstraExport


def astra_text(astra: AstraExport, folder: str) -> str:
    """What `export astra` prints: the files, the network, and the times to expect."""
    net = astra.network
    lines = [f"wrote {folder}: {astra.ranks} traces {astra.prefix}.<rank>.et "
             f"({astra.node_count:,} send and receive nodes), {astra.ranks} workload traces, "
             "system.json, network.yml, remote_memory.json",
             f"network: {' × '.join(str(d.npus) for d in net.dimensions)} NPUs, FullyConnected "
             "per dimension: " + "; ".join(f"{float(d.bandwidth) / 1e9:g} GB/s, "
                                          f"{float(d.latency) * 1e6:g} us"
                                          for d in net.dimensions)]
    if not astra.verified:
        lines.append("note: not verified (--no-verify): the traces may not compute the "
                     "collective")
    if net.mismatched:
        lines.append(f"note: {net.mismatched} of the schedule's {net.pairs} rank pairs are "
                     "charged the slowest pair of their ASTRA-sim dimension (ASTRA-sim gives "
                     f"one bandwidth per dimension); e.g. {net.example}")
    schedc_s = float(astra.schedc_s)
    lines += [f"schedc's time: {schedc_s * 1e6:.7g} us",
              f"on this network, round by round: {astra.rounds_s * 1e6:.7g} us (ASTRA-sim "
              "truncates each message to whole ns and starts a rank's next round when its own "
              "transfers are done)"]
    if schedc_s > astra.rounds_s * (1 + 1e-9):
        lines.append(f"note: schedc's time is {schedc_s / astra.rounds_s - 1:.1%} longer: "
                     "transfers of a round share a resource, and ASTRA-sim's congestion-unaware "
                     "network has no contention")
    lines.append(f"run: cd {folder} && {astra.command()}")
    return "\n".join(lines) + "\n"


def astra_json(astra: AstraExport, folder: str, names: list[str]) -> str:
    net = astra.network
    return dump_json({
        "schema": ASTRA, "folder": folder, "files": names, "verified": astra.verified,
        "ranks": astra.ranks,
        "nodes": astra.node_count, "collective": astra.kind,
        "collective_bytes": astra.collective_bytes,
        "network": {"dimensions": [{"npus": d.npus, "topology": "FullyConnected",
                                    "bandwidth_Bps": json_number(d.bandwidth),
                                    "latency_s": json_number(d.latency)}
                                   for d in net.dimensions],
                    "pairs": net.pairs, "mismatched_pairs": net.mismatched},
        "schedc_time_s": json_number(astra.schedc_s), "round_by_round_s": astra.rounds_s,
        "command": astra.command()})

"""The turn-4 repros' generated inputs (../shared/repros/turn4: the rail machine of r06 and
r19, r07's nvidia-smi matrix), written once for the tests (test_turn4_repros.py, and
conftest.py's `rail_machine`) and the benchmarks (benchmarks/limits.py, whatif.py): plain
text, no imports, so a benchmark script loads it without pytest or schedc."""

from __future__ import annotations

ONE_TRANSFER = "round { copy all from node[0].g[0] to node[1].g[0] }"


def rail_machine(hosts: int, schedule: str = ONE_TRANSFER) -> str:
    """The rail machine as the text of a file: `hosts` × 8 GPUs on an NVSwitch, a NIC link
    per GPU to its rail, rails to a spine, and one schedule `s` whose body is `schedule`."""
    return f"""param alpha = 1 us
param B_L = 450 GB/s
param B_N = 400 Gbit/s
param V = 64 MiB
topology {{
  host node[{hosts}] {{
    gpu g[8]
    switch nvs
    link g[i] <-> nvs bw B_L class nvlink for i in 0..7
  }}
  switch rail[8]
  switch spine
  link node[h].g[i] <-> rail[i] bw B_N class nic for h in 0..{hosts - 1} for i in 0..7
  link rail[i] <-> spine class uplink bw B_N for i in 0..7
}}
let ranks = [node[h].g[i] for h in 0..{hosts - 1} for i in 0..7]
allreduce V over ranks
schedule s {{
  {schedule}
}}
"""


def gather_round(hosts: int) -> str:
    """Every GPU sends to the GPU of its rail on node[0]: every NIC carries a transfer, so
    each NIC's failure changes a route."""
    return (f"round {{ for h in 1..{hosts - 1}: for i in 0..7: "
            f"copy part(h of {hosts}) from node[h].g[i] to node[0].g[i] }}")


def smi(gpus: int) -> str:
    """An `nvidia-smi topo -m` matrix of `gpus` GPUs, all NV18 to each other (r07)."""
    head = "\t" + "\t".join(f"GPU{g}" for g in range(gpus)) + \
        "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID"
    rows = [f"GPU{g}\t" + "\t".join(" X " if h == g else "NV18" for h in range(gpus))
            + "\t0-47\t0\t\tN/A" for g in range(gpus)]
    return head + "\n" + "\n".join(rows) + "\n\nLegend:\n\n  X    = Self\n"

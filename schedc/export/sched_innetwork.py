"""An all-reduce through switches that reduce in the network, as a `.sched` file.

The groups of ranks and their switches are written as lists of device names; one loop of
rounds runs every chunk through the stages of `analysis.synthesize.innetwork.Reducing`, chunk j
in stage t in round j + t, so the stages of different chunks overlap (as NCCL's NVLS and
NVLS-tree pipelines do).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..language.quote import string
from .sched_schedule import check_names, comment

_ONE_GROUP = [
    "      # Stage 0: every rank reduces the chunk into the switch, which sums it;",
    "      # stage 1: the switch sends the sum to every rank (multicast).",
    "      if t == 0: for i in 0..k-1: reduce d from G[0][i] to S[0]",
    "      if t == 1: for i in 0..k-1: copy d from S[0] to G[0][i]",
]

_GROUPS = [
    "      # Stage 0: every rank reduces the chunk into its group's switch, which sums it;",
    "      # stage 1: rank i of each group takes part i of its group's sum.",
    "      if t == 0: for h in 0..H-1: for i in 0..k-1: reduce d from G[h][i] to S[h]",
    "      if t == 1: for h in 0..H-1: for i in 0..k-1: copy part(i of k) of d from S[h] to G[h][i]",
    "      # Stages 2 .. H: the ranks i of all groups reduce-scatter part i in a ring;",
    "      # stages H + 1 .. 2H - 1: they all-gather it back round the ring.",
    "      if t >= 2 and t <= H: for h in 0..H-1: for i in 0..k-1 {",
    "        reduce part((h - (t - 2)) % H of H) of part(i of k) of d from G[h][i] to G[(h + 1) % H][i]",
    "      }",
    "      if t >= H + 1 and t <= 2 * H - 1: for h in 0..H-1: for i in 0..k-1 {",
    "        copy part((h + 1 - (t - H - 1)) % H of H) of part(i of k) of d from G[h][i] to G[(h + 1) % H][i]",
    "      }",
    "      # Stage 2H: rank i gives part i of the whole sum back to its switch;",
    "      # stage 2H + 1: the switch sends the sum to every rank of its group (multicast).",
    "      if t == 2 * H: for h in 0..H-1: for i in 0..k-1: copy part(i of k) of d from G[h][i] to S[h]",
    "      if t == 2 * H + 1: for h in 0..H-1: for i in 0..k-1: copy d from S[h] to G[h][i]",
]


def in_network_text(*, machine: str, size: str, over: str, name: str, chunks: int,
                    groups: Sequence[Sequence[str]], switches: Sequence[str],
                    positions: Sequence[Sequence[int]], header: Sequence[str]) -> str:
    """The whole file; `groups[h]` are the device names of the ranks that reduce into the
    switch named `switches[h]` (each checked to be a name of the language), `positions[h]`
    their places in the collective's ranks."""
    check_names((*switches, *(d for g in groups for d in g)), "write a group with")
    group = f"{name}_ranks"
    lists = _as_loops(group, switches, positions) or _as_lists(groups, switches)
    several = len(groups) > 1
    return "\n".join([
        *(comment(h) for h in header),
        "",
        f"import {string(machine, 'the machine file')}",
        "",
        f"param chunks = {chunks}   # structural: the buffer goes in `chunks` pipelined chunks",
        "",
        f"let {group} = {over}",
        f"allreduce {size} over {group}",
        "",
        f"# The ranks by the switch that reduces for them: {name}_groups[h] into "
        f"{name}_switches[h].",
        f"let {name}_groups = {lists[0]}",
        f"let {name}_switches = {lists[1]}",
        "",
        "# Pipelined: chunk j goes through stage t in round j + t "
        f"({'2H + 2' if several else '2'} stages).",
        f"schedule {name} {{",
        f"  let G = {name}_groups",
        f"  let S = {name}_switches",
        "  let H = len(G)",
        "  let k = len(G[0])",
        f"  for s in 0..chunks + {'2 * H' if several else '0'} round {{",
        f"    for t in 0..{'2 * H + 1' if several else '1'} {{",
        "      let j = s - t",
        "      if j >= 0 and j < chunks {",
        "        let d = part(j of chunks)",
        *("  " + line for line in (_GROUPS if several else _ONE_GROUP)),
        "      }",
        "    }",
        "  }",
        "}",
        "",
    ])


def _as_lists(groups: Sequence[Sequence[str]], switches: Sequence[str]) -> tuple[str, str]:
    return ("[" + ",\n    ".join(f"[{', '.join(g)}]" for g in groups) + "]",
            f"[{', '.join(switches)}]")


def _as_loops(ranks: str, switches: Sequence[str],
              positions: Sequence[Sequence[int]]) -> tuple[str, str] | None:
    """The groups as a comprehension over the ranks when they are in host-major order (group
    h, member i at h·k + i) and the switches' names differ only in one index h, so the file
    follows the machine when its host count is a param; None otherwise."""
    k = len(positions[0])
    if any(p != h * k + i for h, group in enumerate(positions) for i, p in enumerate(group)):
        return None
    first = switches[0]
    for at in (m.start() for m in re.finditer(r"\[0\]", first)):
        template = first[:at] + "[{h}]" + first[at + 3:]
        if all(s == template.format(h=h) for h, s in enumerate(switches)):
            hosts = f"len({ranks}) // {k} - 1"
            return (f"[[{ranks}[h * {k} + i] for i in 0..{k - 1}] for h in 0..{hosts}]",
                    f"[{template.format(h='h')} for h in 0..{hosts}]")
    return None

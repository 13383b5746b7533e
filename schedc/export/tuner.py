"""The fastest schedule per size range as NCCL's example tuner plugin reads it
(NVIDIA/nccl `plugins/tuner/example/plugin.c`, `nccl_tuner.conf`); the same table as text and
as JSON is `schedc.render.tuner`.

The CSV: `collective,minBytes,maxBytes,algorithm,protocol,channels,nNodes,nRanks`, one line
per range; `#` lines are comments. The plugin applies the first line whose collective
matches and whose range holds the size, both ends included, and whose nNodes and nRanks
match (-1: any). It silently reads an unknown name as allreduce, ring or simple, so only
its own names are written. Its size is NCCL's nBytes: count × type size for all-reduce,
broadcast and reduce, and nRanks × that for all-gather and reduce-scatter — schedc's V in
every case. Ranges are whole bytes: a crossover at x gives the sizes up to ⌊x⌋ to the schedule
faster below it and from ⌊x⌋ + 1 to the one faster above.

Only pairs NCCL accepts are written (`refused_pair`, NCCL's rules at v2.30.7-1), and every
size band gets a row: the fastest of the schedules that stand for an NCCL algorithm.
The channels column: 0 keeps NCCL's own channel count (src/enqueue.cc:2178, `nMaxChannels
== 0`); -1 keeps the example plugin's default, which is 1 channel (plugin.c:361, :406-408).
"""

from __future__ import annotations

from ..analysis.solve.crossovers import Envelope
from ..choices import TUNER_COLLECTIVES
from ..language.syntax import NcclName
from ..nccl.constants import ALGORITHMS, PROTOCOLS, SIMPLE  # a tuner table names them as NCCL does
from ..render.tuner import tuner_rows

COLLECTIVES = TUNER_COLLECTIVES  # (schedc.choices: the names `tune --collective` takes)


ONLY_RING = ("broadcast", "reduce")
GATHERS = ("allgather", "reduce_scatter")


def refused_pair(kind: str, algorithm: str, protocol: str, one_gpu_per_node: bool) -> str | None:
    """Why NCCL ignores the pair for the collective (None: it accepts it). NCCL gives such a
    pair no bandwidth, so a tuner plugin's choice of it is dropped (src/graph/tuning.cc
    :294-304, :501-512 at v2.30.7-1; src/enqueue.cc:1998-2011)."""
    if kind in ONLY_RING and algorithm != "ring":
        return f"{kind} runs on rings only (tuning.cc:294)"
    if kind in GATHERS and algorithm not in ("ring", "pat", "nvls", "collnet_direct"):
        return f"{kind} has ring, pat, nvls and collnet_direct only (tuning.cc:295-297)"
    if kind == "allreduce" and algorithm == "pat":
        return "PAT is for all-gather and reduce-scatter (tuning.cc:298)"
    if algorithm in ("nvls", "nvls_tree", "pat", "collnet_direct", "collnet_chain") and \
            protocol != PROTOCOLS[SIMPLE]:
        return f"{algorithm} runs with the simple protocol only (tuning.cc:301-303, :338-339)"
    if algorithm == "pat" and not one_gpu_per_node:
        return "PAT needs one GPU per node (tuning.cc:220)"
    return None


def tuner_csv(envelope: Envelope, kind: str, nccl: dict[str, NcclName | None], channels: int,
              nodes: int, ranks: int, source: str, header: bool = True,
              rows: list[tuple[int, int, str, str]] | None = None,
              notes: list[str] | None = None) -> str:
    """One table's lines (`header`: with the comment lines that open the file; the tables
    of further node counts follow without them, as the plugin matches nNodes per line)."""
    lines = [f"# NCCL tuner table written by schedc tune from {source}",
             "# Format: collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,"
             "nRanks",
             f"# the fastest schedule standing for an NCCL algorithm per size range, from exact "
             f"crossovers in {envelope.param.name} (see `schedc tune` text output)",
             "# channels 0: NCCL keeps its own count; -1 would give the example plugin's "
             "default, 1 channel"] \
        if header else []
    for k, (lo, hi, algorithm, protocol) in enumerate(tuner_rows(envelope, nccl) if rows is None
                                                       else rows):
        if notes:
            lines.append(f"# {notes[k]}")
        lines.append(f"{COLLECTIVES[kind]},{lo},{hi},{algorithm},{protocol},{channels},{nodes},"
                     f"{ranks}")
    return "".join(line + "\n" for line in lines)


def against_csv(rows, kind: str, channels: int, nodes: int, ranks: int, source: str,
                margin: str) -> str:
    """`tune --against-nccl`'s table: a row only where schedc's model beats NCCL's pick by
    more than the margin, each after a comment saying by how much."""
    lines = [f"# NCCL tuner table written by schedc tune --against-nccl from {source}",
             "# Format: collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,"
             "nRanks",
             f"# only the sizes where schedc's model says a pair beats NCCL's own pick (NCCL "
             f"2.30.7's model, `schedc nccl`) by more than {margin}; elsewhere NCCL decides"]
    for r in rows:
        algorithm, protocol = r.pair.split("/")
        lines.append(f"# {r.schedule} ({r.pair}) beats {r.nccl_schedule} ({r.nccl_pick}, "
                     f"NCCL's pick) by up to {r.gain:.1%}")
        lines.append(f"{COLLECTIVES[kind]},{r.min_bytes},{r.max_bytes},{algorithm},{protocol},"
                     f"{channels},{nodes},{ranks}")
    return "".join(line + "\n" for line in lines)

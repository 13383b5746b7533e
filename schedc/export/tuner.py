"""The fastest schedule per size range as NCCL's example tuner plugin reads it
(NVIDIA/nccl `plugins/tuner/example/plugin.c`, `nccl_tuner.conf`), as text and as JSON.

The CSV: `collective,minBytes,maxBytes,algorithm,protocol,channels,nNodes,nRanks`, one line
per range; `#` lines are comments. The plugin applies the first line whose collective
matches and whose range holds the size, both ends included, and whose nNodes and nRanks
match (-1: any). It silently reads an unknown name as allreduce, ring or simple, so only
its own names are written. Its size is NCCL's nBytes: count × type size for all-reduce,
broadcast and reduce, and nRanks × that for all-gather and reduce-scatter — schedc's V in
every case. Ranges are whole bytes: a crossover at x gives the sizes up to ⌊x⌋ to the schedule
faster below it and from ⌊x⌋ + 1 to the one faster above.
"""

from __future__ import annotations

import math

import sympy

from ..analysis.solve.crossovers import Envelope
from ..cost.regimes import key
from ..language.syntax import NcclName
from ..render.schema import TUNE
from ..render.text import dump_json, json_number, table
from ..units import format_bytes

COLLECTIVES = {"allreduce": "allreduce", "allgather": "allgather",
               "reduce_scatter": "reducescatter", "broadcast": "broadcast", "reduce": "reduce"}
ALGORITHMS = ("tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat")
PROTOCOLS = ("ll", "ll128", "simple")


def byte_ranges(envelope: Envelope) -> list[tuple[int, int, str]]:
    """Each stretch as whole bytes (min, max, schedule), empty ones dropped."""
    out = []
    first = math.ceil(envelope.lo)
    for k, stretch in enumerate(envelope.stretches):
        last = math.floor(envelope.hi) if k == len(envelope.stretches) - 1 else \
            int(sympy.floor(stretch.hi))
        if last >= first:
            out.append((first, last, stretch.fastest))
        first = max(first, last + 1)
    return out


def _rows(envelope: Envelope, nccl: dict[str, NcclName | None]) -> list[tuple[int, int, str, str]]:
    """(min, max, algorithm, protocol) of the ranges whose schedule stands for an NCCL
    algorithm; neighbours with the same choice joined."""
    rows: list[tuple[int, int, str, str]] = []
    for lo, hi, name in byte_ranges(envelope):
        choice = nccl.get(name)
        if choice is None:
            continue
        if rows and rows[-1][1] == lo - 1 and rows[-1][2:] == (choice.algorithm, choice.protocol):
            rows[-1] = (rows[-1][0], hi, *rows[-1][2:])
        else:
            rows.append((lo, hi, choice.algorithm, choice.protocol))
    return rows


def tuner_csv(envelope: Envelope, kind: str, nccl: dict[str, NcclName | None], channels: int,
              nodes: int, ranks: int, source: str, header: bool = True) -> str:
    """One table's lines (`header`: with the comment lines that open the file; the tables
    of further node counts follow without them, as the plugin matches nNodes per line)."""
    lines = [f"# NCCL tuner table written by schedc tune from {source}",
             "# Format: collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,"
             "nRanks",
             f"# the fastest schedule per size range, from exact crossovers in "
             f"{envelope.param.name} (see `schedc tune` text output for the schedules)"] \
        if header else []
    for lo, hi, algorithm, protocol in _rows(envelope, nccl):
        lines.append(f"{COLLECTIVES[kind]},{lo},{hi},{algorithm},{protocol},{channels},{nodes},"
                     f"{ranks}")
    return "".join(line + "\n" for line in lines)


def tune_text(envelope: Envelope, kind: str, nccl: dict[str, NcclName | None], names: list[str],
              nodes: int, ranks: int) -> str:
    head = (f"tune {kind} over {envelope.param.name} from {format_bytes(envelope.lo)} to "
            f"{format_bytes(envelope.hi)} (nRanks {ranks}, nNodes "
            f"{'any' if nodes < 0 else nodes})")
    rows = [("min bytes", "max bytes", "fastest", "NCCL")]
    for lo, hi, name in byte_ranges(envelope):
        choice = nccl.get(name)
        rows.append((f"{lo:,}", f"{hi:,}", name,
                     f"{choice.algorithm}/{choice.protocol}" if choice else "none: not in the table"))
    lines = [head, "", *table(rows, right=(0, 1), indent="  ")]
    if envelope.crossovers:
        lines += ["", "crossovers:"]
        for c in envelope.crossovers:
            lines.append(f"  {envelope.param.name} = {format_bytes(float(key(c.at)))}: "
                         f"time({c.left}) = time({c.right})")
    winners = {name for _, _, name in byte_ranges(envelope)}
    never = [n for n in names if n not in winners]
    unmapped = [n for n in names if nccl.get(n) is None]
    notes = ([f"never fastest in the range: {', '.join(never)}"] if never else []) + \
        ([f"standing for no NCCL algorithm (`schedule NAME as ALGO/PROTO`), so not in the "
          f"table: {', '.join(unmapped)}"] if unmapped else [])
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def tune_json(tables: list[dict], source: str, per_nodes: str | None) -> str:
    """One table (`tune_table`) as the document itself; with --nodes (`per_nodes`: the
    structural param), every node count's table under `tables`."""
    if per_nodes is None:
        (only,) = tables
        return dump_json({"schema": TUNE, "file": source, **only})
    return dump_json({"schema": TUNE, "file": source, "nodes_param": per_nodes, "tables": tables})


def tune_table(envelope: Envelope, kind: str, nccl: dict[str, NcclName | None], names: list[str],
               channels: int, nodes: int, ranks: int) -> dict:
    return {
        "collective": kind,
        "param": envelope.param.name,
        "lo": json_number(envelope.lo),
        "hi": json_number(envelope.hi),
        "nodes": nodes,
        "ranks": ranks,
        "schedules": [{"name": n, "nccl": None if (known := nccl.get(n)) is None else
                       {"algorithm": known.algorithm, "protocol": known.protocol}}
                      for n in names],
        "ranges": [{"min_bytes": lo, "max_bytes": hi, "fastest": name}
                   for lo, hi, name in byte_ranges(envelope)],
        "crossovers": [{"value": json_number(c.at, integer=False), "exact": str(c.at),
                        "left": c.left, "right": c.right} for c in envelope.crossovers],
        "rows": [{"collective": COLLECTIVES[kind], "min_bytes": lo, "max_bytes": hi,
                  "algorithm": a, "protocol": p, "channels": channels, "nNodes": nodes,
                  "nRanks": ranks} for lo, hi, a, p in _rows(envelope, nccl)],
    }

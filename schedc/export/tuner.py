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

Only pairs NCCL accepts are written (`refused_pair`, NCCL's rules at v2.30.7-1), and every
size band gets a row: the fastest of the schedules that stand for an NCCL algorithm.
The channels column: 0 keeps NCCL's own channel count (src/enqueue.cc:2178, `nMaxChannels
== 0`); -1 keeps the example plugin's default, which is 1 channel (plugin.c:361, :406-408).
"""

from __future__ import annotations

import math

import sympy

from ..analysis.solve.crossovers import Envelope
from ..choices import TUNER_COLLECTIVES
from ..cost.regimes import key
from ..language.syntax import NcclName
from ..nccl.constants import ALGORITHMS, PROTOCOLS  # a tuner table names them as NCCL does
from ..render.schema import TUNE
from ..render.text import dump_json, json_number, table
from ..units import format_bytes

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
            protocol != "simple":
        return f"{algorithm} runs with the simple protocol only (tuning.cc:301-303, :338-339)"
    if algorithm == "pat" and not one_gpu_per_node:
        return "PAT needs one GPU per node (tuning.cc:220)"
    return None


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
    for k, (lo, hi, algorithm, protocol) in enumerate(_rows(envelope, nccl) if rows is None
                                                       else rows):
        if notes:
            lines.append(f"# {notes[k]}")
        lines.append(f"{COLLECTIVES[kind]},{lo},{hi},{algorithm},{protocol},{channels},{nodes},"
                     f"{ranks}")
    return "".join(line + "\n" for line in lines)


def tune_text(envelope: Envelope, kind: str, nccl: dict[str, NcclName | None], names: list[str],
              nodes: int, ranks: int, labelled: Envelope | None = None) -> str:
    head = (f"tune {kind} over {envelope.param.name} from {format_bytes(envelope.lo)} to "
            f"{format_bytes(envelope.hi)} (nRanks {ranks}, nNodes "
            f"{'any' if nodes < 0 else nodes})")
    rows = [("min bytes", "max bytes", "fastest", "NCCL")]
    for lo, hi, name in byte_ranges(envelope):
        choice = nccl.get(name)
        rows.append((f"{lo:,}", f"{hi:,}", name,
                     f"{choice.algorithm}/{choice.protocol}" if choice else "none: not in the table"))
    lines = [head, "", *table(rows, right=(0, 1), indent="  ")]
    if labelled is not None and labelled is not envelope:
        written = [("min bytes", "max bytes", "row")]
        written += [(f"{lo:,}", f"{hi:,}", f"{a}/{p}") for lo, hi, a, p in _rows(labelled, nccl)]
        lines += ["", "the table's rows (the fastest schedule standing for an NCCL algorithm):",
                  *table(written, right=(0, 1), indent="  ")]
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
               channels: int, nodes: int, ranks: int, labelled: Envelope | None = None) -> dict:
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
                  "nRanks": ranks} for lo, hi, a, p in _rows(labelled or envelope, nccl)],
    }


def parse_margin(text: str) -> float:
    """`5%` or `0.05` → 0.05."""
    from ..errors import UsageError
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise UsageError(f"--margin expects a share like 5%, got {text!r}") from None
    if not 0 <= value < 10:
        raise UsageError(f"--margin {text}: between 0% and 1000%")
    return value


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


def against_text(rows, notes, kind: str, margin: str) -> str:
    head = (f"tune {kind} --against-nccl: where schedc's model beats NCCL's own pick by more "
            f"than {margin}")
    out = [("min bytes", "max bytes", "row", "NCCL's pick", "faster by (up to)")]
    out += [(f"{r.min_bytes:,}", f"{r.max_bytes:,}", f"{r.schedule} ({r.pair})",
             f"{r.nccl_pick} ({r.nccl_schedule})", f"{r.gain:.1%}") for r in rows]
    lines = [head, ""] + (table(out, right=(0, 1, 4), indent="  ") if rows else
                          ["  nowhere: NCCL's own pick is within the margin at every size"])
    if notes:
        lines += ["", "not compared:"] + [f"  {n}" for n in notes]
    return "\n".join(lines) + "\n"

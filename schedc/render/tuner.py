"""`tune` as text and JSON: the fastest schedule per size range, the table's rows (the
fastest of the schedules standing for an NCCL algorithm, `tuner_rows`, which the tuner CSV
of `schedc.export.tuner` writes too) and the crossovers; `tune --against-nccl`'s rows."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..analysis.solve.crossovers import byte_ranges
from ..choices import TUNER_COLLECTIVES as COLLECTIVES
from ..cost.regimes import key
from ..units import format_bytes
from .schema import TUNE, TUNE_AGAINST
from .text import dump_json, json_number, table

if TYPE_CHECKING:
    from ..analysis.solve.crossovers import Envelope
    from ..language.syntax import NcclName


def tuner_rows(envelope: Envelope, nccl: dict[str, NcclName | None]
               ) -> list[tuple[int, int, str, str]]:
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


def tune_text(envelope: Envelope, kind: str, nccl: dict[str, NcclName | None], names: list[str],
              nodes: int, ranks: int, labelled: Envelope | None = None) -> str:
    head = (f"tune {kind} over {envelope.param.name} from {format_bytes(envelope.lo)} to "
            f"{format_bytes(envelope.hi)} (nRanks {ranks}, nNodes "
            f"{'any' if nodes < 0 else nodes})")
    rows = [("min bytes", "max bytes", "fastest", "NCCL")]
    for lo, hi, name in byte_ranges(envelope):
        choice = nccl.get(name)
        rows.append((f"{lo:,}", f"{hi:,}", name,
                     f"{choice.algorithm}/{choice.protocol}" if choice else
                     "none: not in the table"))
    lines = [head, "", *table(rows, right=(0, 1), indent="  ")]
    if labelled is not None and labelled is not envelope:
        written = [("min bytes", "max bytes", "row")]
        written += [(f"{lo:,}", f"{hi:,}", f"{a}/{p}")
                    for lo, hi, a, p in tuner_rows(labelled, nccl)]
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
                  "nRanks": ranks} for lo, hi, a, p in tuner_rows(labelled or envelope, nccl)],
    }


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


def against_json(rows, notes, kind: str, margin: str, source: str) -> str:
    """`tune --against-nccl --json`: the rows of `against_text`, and the ranges not compared."""
    return dump_json({"schema": TUNE_AGAINST, "file": source, "collective": kind,
                      "margin": margin,
                      "rows": [{"min_bytes": r.min_bytes, "max_bytes": r.max_bytes,
                                "schedule": r.schedule, "pair": r.pair,
                                "nccl_pick": r.nccl_pick, "nccl_schedule": r.nccl_schedule,
                                "gain": json_number(r.gain, integer=False)} for r in rows],
                      "not_compared": list(notes)})

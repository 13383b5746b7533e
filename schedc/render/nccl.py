"""`schedc nccl` as text and as JSON (schedc.nccl/1): NCCL's inputs with where each came
from, its latency/bandwidth table, its choice per size band, and `--explain`'s terms."""

from __future__ import annotations

import math

import numpy as np

from ..nccl import constants as K
from ..units import format_seconds
from .schema import NCCL
from .text import dump_json, table


def _float32(x: float) -> str:
    """A float of NCCL's, by its shortest float32 digits (2.4, not 2.4000000953674316)."""
    with np.errstate(over="ignore"):  # (beyond FLT_MAX: inf, as NCCL's float holds it)
        return str(np.float32(x))


FLT_DIG = 6  # decimal digits a float32 keeps through any rounding (C's <float.h> FLT_DIG)


def _f(x: float) -> str:
    """A float of NCCL's as text, to float32's precision: NCCL sums and scales in float, so
    23.3 comes out as 23.300001 and 41.6 as 41.600002, noise below FLT_DIG digits that means
    nothing: printed 23.3 and 41.6 (391.46667 as 391.467)."""
    with np.errstate(over="ignore"):
        value = float(np.float32(x))
    return f"{value:.{FLT_DIG}g}" if math.isfinite(value) and abs(value) < 1e6 else _float32(x)


def _json_float(x: float) -> float | None:
    """A float of NCCL's for JSON, every float32 digit (a program reads it back exactly);
    null where it is not finite (JSON has no infinity)."""
    value = float(_float32(x))
    return value if math.isfinite(value) else None


def time_formula(comm, band) -> str:
    """The chosen pair's time in the band: lat + n / (1000 · bw) µs, n in bytes."""
    if band.choice is None:
        return "none"
    if comm["nRanks"] == 1:
        return "0"
    text = f"{_f(band.latency)} µs + n / ({_f(band.bandwidth)} GB/s)"
    a, p = band.choice.algorithm, band.choice.protocol
    if a == K.TREE and band.collective == K.ALLREDUCE:
        text += f", bw × treeCorrectionFactor[{K.PROTOCOLS[p]}][log2(n/64)] (tuning.cc:623-642)"
    if a == K.RING and p == K.SIMPLE and band.collective == K.ALLREDUCE and comm["nNodes"] > 1:
        text += (f", lat × {1.9 if comm['minCompCap'] < 80 else 1.4} from n = "
                 f"{64 * comm['nChannels'] * comm['nRanks']} (tuning.cc:647-650)")
    return text


def _header(model) -> str:
    return (f"NCCL {K.VERSION}'s tuning model (NVIDIA/nccl {K.TAG}, {K.COMMIT[:12]}: "
            f"src/graph/tuning.cc, src/enqueue.cc) on {model.source}")


def nccl_text(model) -> str:
    """The answer first (each --explain size's winner and why, then the choice for every
    size), what it rests on after (the boundaries in nNodes, the table, the inputs)."""
    lines = [_header(model)]
    for e in model.explained:
        lines += [""] + explain_lines(e)
    lines += [""] + _choice_lines(model)
    lines += _boundary_lines(model)
    lines += [""] + _table_lines(model)
    comm = model.comm
    lines += ["", "inputs (NCCL's names; --input NAME=VALUE overrides one):"]
    rows: list[tuple[str, ...]] = [("name", "value", "derived from")]
    rows += [(name, str(comm[name]), comm.values[name].derived_from) for name in comm.names()]
    lines += table(rows, indent="  ")
    return "\n".join(lines) + "\n"


def _table_lines(model) -> list[str]:
    t = model.table
    lines = ["table (latency µs / bandwidth GB/s, as NCCL_DEBUG_SUBSYS=TUNING prints it; "
             "-: not used):"]
    rows: list[tuple[str, ...]] = [("collective", "algorithm", *K.NCCL_PROTO_NAMES)]
    for c in model.collectives:
        f = K.FUNCTIONS.index(c)
        for a, name in enumerate(K.NCCL_ALGO_NAMES):
            cells = [f"{t.latency[f][a][p]:.1f}/{t.bandwidth[f][a][p]:.1f}"
                     if t.bandwidth[f][a][p] else "-" for p in range(3)]
            if any(cell != "-" for cell in cells):
                rows.append((c, name, *cells))
    return lines + table(rows, indent="  ")


def _choice_lines(model) -> list[str]:
    comm = model.comm
    lines = [f"choice (NCCL's pick for every size from 1 B to {model.max_bytes:,} B, both "
             "ends included; n in bytes):"]
    ties = False
    for c in model.collectives:
        rows: list[tuple[str, ...]] = [("collective", "min bytes", "max bytes", "algo/proto",
                                        "time")]
        for group in _runs(model.bands[c]):
            if len(group) == 1:
                (b,) = group
                rows.append((c, f"{b.min_bytes:,}", f"{b.max_bytes:,}",
                             b.choice.name if b.choice else "none", time_formula(comm, b)))
            else:
                ties = True
                names = " / ".join(dict.fromkeys(b.choice.name for b in group if b.choice))
                rows.append((c, f"{group[0].min_bytes:,}", f"{group[-1].max_bytes:,}", names,
                             f"alternating in {len(group)} bands: the times tie within float "
                             "rounding"))
        lines += table(rows, right=(1, 2), indent="  ")
    if ties:
        lines.append("  (NCCL compares float times: near a crossover the rounding of n and of "
                     "n/bw decides byte by byte; --json lists every band)")
    return lines


def _boundary_lines(model) -> list[str]:
    found = [(c, b) for c in model.collectives for b in model.formulas.get(c, ())]
    if not found:
        return []
    lines = ["", "boundaries as formulas in nNodes, for nNodes ≥ 3 with localRanks and the "
             "graphs as above (the last byte of the lower pair is the formula's floor; "
             "each checked byte by byte at the counts shown):"]
    rows = [("collective", "below", "above", "last byte below", "checked at nNodes")]
    rows += [(c, b.below, b.above, sympy_text(b.formula), ", ".join(map(str, b.checked_at)))
             for c, b in found]
    return lines + table(rows, indent="  ")


def explain_lines(e) -> list[str]:
    lines = [f"why, for {e.collective} of {e.size:,} bytes (NCCL's time = latency + "
             "n / (1000 · bw) µs; the least wins, the first on a tie):"]
    rows: list[tuple[str, ...]] = [("algo/proto", "latency µs", "bw GB/s", "n / bw µs", "time µs",
                                    "adjusted")]
    for term in e.terms:
        transfer = term.time - term.latency
        mark = " <- NCCL" if term.candidate.name == e.winner else ""
        rows.append((term.candidate.name + mark, _f(term.latency), _f(term.bandwidth),
                     f"{transfer:.3f}", f"{term.time:.3f}", term.factor or "-"))
    lines += table(rows, right=(1, 2, 3, 4), indent="  ")
    if e.own:
        lines += ["", "  schedc's own time of the schedules that stand for NCCL's algorithms "
                  "(`schedule NAME as ALGO/PROTO`):"]
        rows = [("schedule", "as", "schedc", "NCCL's model of the pair")]
        by_pair = {t.candidate.name: t.time for t in e.terms}
        for o in e.own:
            theirs = by_pair.get(o.pair)
            rows.append((o.schedule, o.pair, format_seconds(o.time),
                         f"{theirs:.3f} µs" if theirs is not None else "not a candidate"))
        lines += table(rows, right=(2, 3), indent="  ")
    if e.unlabelled:
        lines.append(f"  no schedule of the file stands for: {', '.join(e.unlabelled)} "
                     "(label one with `schedule NAME as ALGO/PROTO`)")
    return lines


def sympy_text(expr) -> str:
    """A boundary formula as text (log2i(nNodes) is ⌊log2 nNodes⌋, NCCL's log2i)."""
    return str(expr)


def _runs(bands) -> list[list]:
    """Bands with each run of consecutive short ones (under 256 B each: two candidates whose
    float times tie) grouped, for the text."""
    out: list[list] = []
    for b in bands:
        short = b.max_bytes - b.min_bytes < 256
        if short and out and out[-1][-1].max_bytes - out[-1][-1].min_bytes < 256:
            out[-1].append(b)
        else:
            out.append([b])
    return out


def _finite(x: float | None) -> float | None:
    return x if x is None or math.isfinite(x) else None


def nccl_json(model) -> str:
    comm, t = model.comm, model.table
    doc: dict = {
        "schema": NCCL, "file": model.source,
        "nccl": {"version": K.VERSION, "tag": K.TAG, "commit": K.COMMIT},
        "inputs": [{"name": n, "value": comm[n], "derived_from": comm.values[n].derived_from}
                   for n in comm.names()],
        "table": [{"collective": c, "algo": K.ALGORITHMS[a], "proto": K.PROTOCOLS[p],
                   "latency_us": _json_float(t.latency[f][a][p]),
                   "bandwidth_GBps": _json_float(t.bandwidth[f][a][p]),
                   "enabled": t.bandwidth[f][a][p] != 0}
                  for c in model.collectives for f in [K.FUNCTIONS.index(c)]
                  for a in range(len(K.ALGORITHMS)) for p in range(3)],
        "max_bytes": model.max_bytes,
        "choices": [{"collective": c, "min_bytes": b.min_bytes, "max_bytes": b.max_bytes,
                     "algo": K.ALGORITHMS[b.choice.algorithm] if b.choice else None,
                     "proto": K.PROTOCOLS[b.choice.protocol] if b.choice else None,
                     "time_formula": time_formula(comm, b)}
                    for c in model.collectives for b in model.bands[c]],
    }
    doc["boundary_formulas"] = [
        {"collective": c, "below": b.below, "above": b.above, "nodes": "nNodes >= 3",
         "last_byte_below": sympy_text(b.formula), "checked_at_nodes": list(b.checked_at)}
        for c in model.collectives for b in model.formulas.get(c, ())]
    if model.explained:
        doc["explain"] = [{
            "collective": e.collective, "bytes": e.size,
            "winner": e.winner,
            "terms": [{"algo": K.ALGORITHMS[x.candidate.algorithm],
                       "proto": K.PROTOCOLS[x.candidate.protocol],
                       "latency_us": _json_float(x.latency),
                       "bandwidth_GBps": _json_float(x.bandwidth),
                       "transfer_us": _finite(x.time - x.latency), "time_us": _finite(x.time),
                       "adjusted": x.factor or None} for x in e.terms],
            "schedc": [{"schedule": o.schedule, "as": o.pair, "time_s": _finite(o.time)} for o in e.own],
            "unlabelled": list(e.unlabelled)} for e in model.explained]
    return dump_json(doc)

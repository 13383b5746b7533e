"""Verdicts and their counterexamples, as text and as JSON (schema `schedc.verify/1`)."""

from __future__ import annotations

from ..analysis.verify.counterexample import Conflict, Write, WrongResult
from ..analysis.verify.routes import NoRoute
from ..analysis.verify.verdict import Verdict
from ..model.ir import BufferLayout, Region
from ..model.region_text import buffer_text
from ..words import counted
from .text import listing


def verdict_text(v: Verdict) -> str:
    coll = v.schedule.collective
    head = f"{v.name}: {coll.kind} over {len(coll.ranks)} ranks: "
    if v.failure is not None:
        return "\n".join([head + "FAILS", *(f"  {line}" for line in failure_lines(v.failure, coll.layout))])
    how = "exact multisets" if v.method == "exact" else (
        f"fingerprints; a wrong result passes with probability < 2^-{v.false_pass_bits}")
    return head + (f"verified ({counted(len(v.schedule.rounds), 'round')}, "
                   f"{counted(v.schedule.transfer_count, 'transfer')}; {how})")


def verdict_json(v: Verdict) -> dict:
    coll = v.schedule.collective
    bits = v.false_pass_bits
    return {
        "name": v.name,
        "collective": coll.kind,
        "ranks": len(coll.ranks),
        "ok": v.ok,
        "method": v.method,
        "false_pass_log2": None if bits is None else -bits,
        "rounds": len(v.schedule.rounds),
        "transfers": v.schedule.transfer_count,
        "segments": v.segments,
        "counterexample": None if v.failure is None else failure_json(v.failure),
    }


def not_reporting(failures: list[Verdict]) -> str:
    """Why a command refuses to report on schedules that do not compute their collective."""
    return "\n".join(f"schedc: not reporting on '{v.name}': it does not compute its collective "
                     f"(--no-verify reports on it anyway)\n{verdict_text(v)}" for v in failures)


# ---- counterexamples --------------------------------------------------------------------------


def failure_lines(failure: WrongResult | Conflict | NoRoute,
                  layout: BufferLayout | None = None) -> list[str]:
    if isinstance(failure, NoRoute):
        region = f" {buffer_text(failure.region, layout)}" if failure.region else ""
        origin = f" ({failure.origin})" if failure.origin else ""
        return [f"{failure.reason}: the machine cannot carry this transfer",
                f"  round {failure.round}: {failure.op}{region} from {failure.src} to "
                f"{failure.dst}   at {failure.span}{origin}",
                *(f"  note: {note}" for note in failure.notes)]
    if isinstance(failure, Conflict):
        return [f"round {failure.round} writes {failure.rank}'s "
                f"{buffer_text(failure.region, layout)} with {counted(len(failure.writes), 'transfer')}, "
                "and a copy among them: which value wins is undefined",
                *(f"    {_write_text(w, layout)}" for w in failure.writes)]
    held = sum(n for _, n in failure.holds)
    want = sum(n for _, n in failure.expected)
    should = "every rank's data once" if failure.everyone else _listing(failure.expected)
    lines = [f"{failure.rank} ends with the wrong {buffer_text(failure.region, layout)} "
             "of the buffer",
             f"  holds        {_count(held)}: {_listing(failure.holds)}",
             f"  should hold  {_count(want)}: {should}"]
    for label, entries in (("missing", failure.missing), ("duplicated", failure.duplicated),
                           ("unexpected", failure.unexpected)):
        if entries:
            lines.append(f"  {label:<12} {_listing(entries)}")
    if failure.writes:
        lines.append("  last written by")
        lines += [f"    {_write_text(w, layout)}" for w in failure.writes]
    else:
        lines.append("  never written: it still holds what it held at the start")
    return lines


def failure_json(failure: WrongResult | Conflict | NoRoute) -> dict:
    if isinstance(failure, NoRoute):
        found = {"kind": "no_route", "round": failure.round, "op": failure.op, "src": failure.src,
                 "dst": failure.dst,
                 "region": None if failure.region is None else _fractions(failure.region),
                 "at": str(failure.span), "reason": failure.reason, "notes": list(failure.notes)}
        if failure.origin:
            found["origin"] = failure.origin
        return found
    if isinstance(failure, Conflict):
        return {"kind": "conflict", "round": failure.round, "rank": failure.rank,
                "region": _fractions(failure.region),
                "writes": [_write_json(w) for w in failure.writes]}
    return {"kind": "wrong_result", "rank": failure.rank, "region": _fractions(failure.region),
            "holds": _entries(failure.holds), "expected": _entries(failure.expected),
            "missing": _entries(failure.missing), "duplicated": _entries(failure.duplicated),
            "unexpected": _entries(failure.unexpected),
            "last_writes": [_write_json(w) for w in failure.writes]}


def _write_text(w: Write, layout: BufferLayout | None = None) -> str:
    into = f" into {buffer_text(w.into, layout)}" if w.into else ""
    origin = f" ({w.origin})" if w.origin else ""
    return (f"round {w.round}: {w.op} {buffer_text(w.region, layout)} from {w.src} "
            f"to {w.dst}{into}   at {w.span}{origin}")


def _write_json(w: Write) -> dict:
    found = {"round": w.round, "op": w.op, "src": w.src, "dst": w.dst,
             "region": _fractions(w.region),
             "into": _fractions(w.into) if w.into else None, "at": str(w.span)}
    if w.origin:
        found["origin"] = w.origin
    return found


def _listing(entries: tuple[tuple[str, int], ...]) -> str:
    return listing([name if n == 1 else f"{name} ×{n}" for name, n in entries], 8) or "nothing"


def _count(n: int) -> str:
    return f"{n} contribution{'s' * (n != 1)}"


def _fractions(region: Region) -> list[str]:
    return [str(region[0]), str(region[1])]


def _entries(entries: tuple[tuple[str, int], ...]) -> list[dict]:
    return [{"contribution": name, "count": n} for name, n in entries]

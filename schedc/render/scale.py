"""Text and JSON for what a structural param gives: the integer search of `solve --for hosts`
and the closed forms of `schedc scale`."""

from __future__ import annotations

from ..analysis.scale.forms import Piece, Scaling
from ..analysis.scale.pieces import BoundPiece
from ..analysis.solve.instances import IntegerSearch
from ..elaborate.program import Program
from ..units import format_quantity, format_seconds
from ..words import counted
from . import schema
from .text import dump_json, json_number


def _side(search: IntegerSearch, which: str) -> str:
    return {"left": search.left, "right": search.right}.get(which, "equal")


def search_text(program: Program, equation: str, found: IntegerSearch) -> str:
    lo, hi = found.searched
    name = found.param
    out = [f"solve {equation}  for {name} (structural: searched the integers {lo}..{hi}, "
           f"compiled at {len(found.points)} values)"]
    out += [f"  {name} = {n} does not compile: {why}" for n, why in found.skipped]
    if found.stopped:
        out.append(f"  {found.stopped}")
    out.append("")
    roots = found.roots
    out += _crossings(found, name, lo, hi)
    out.append(f"{name:>8}  {'left':>12}  {'right':>12}")
    shown = sorted({found.points[0].n, found.points[-1].n,
                    *(n for c in found.changes for n in (c.lo, c.hi)), *roots})
    by_n = {p.n: p for p in found.points}
    for n in shown:
        p = by_n[n]
        out.append(f"{n:>8}  {format_quantity(p.left, p.dim):>12}  "
                   f"{format_quantity(p.right, p.dim):>12}")
    return "\n".join(out) + "\n"


def _crossings(found: IntegerSearch, name: str, lo: int, hi: int) -> list[str]:
    """The headline: where the smaller side crosses from one side to the other (what the
    question asks), then the exact ties, which at hosts = 1 are often two schedules being
    the same one and no crossing at all."""
    sided = [p for p in found.points if p.smaller != "equal"]
    crossings = [(p, q) for p, q in zip(sided, sided[1:]) if p.smaller != q.smaller]
    roots = found.roots
    out = []
    if crossings:
        out.append(f"the smaller side crosses {counted(len(crossings), 'time')} in {lo}..{hi}:")
        out += [f"  between {name} = {p.n} and {q.n}: {_side(found, p.smaller)} -> "
                f"{_side(found, q.smaller)}" for p, q in crossings]
    elif sided:
        ties = ", but at the ties below" if roots else ""
        out.append(f"no crossover in {lo}..{hi}: {_side(found, sided[0].smaller)} is smaller "
                   f"throughout{ties}")
    else:
        out.append(f"no crossover in {lo}..{hi}: the sides are equal throughout")
    if roots:
        out.append(f"{counted(len(roots), 'solution')} (the sides equal): "
                   + ", ".join(f"{name} = {n}" for n in roots))
    return out


def search_json(program: Program, equation: str, found: IntegerSearch) -> str:
    return dump_json({
        "schema": schema.SOLVE_INTEGERS,
        "file": program.path,
        "equation": equation,
        "param": found.param,
        "searched": list(found.searched),
        "compiles": len(found.points),
        "stopped": found.stopped,
        "skipped": [{"value": n, "reason": why} for n, why in found.skipped],
        "roots": list(found.roots),
        "changes": [{"lo": c.lo, "hi": c.hi, "before": c.before, "after": c.after}
                    for c in found.changes],
        "points": [{"value": p.n, "left": json_number(p.left, integer=False),
                    "right": json_number(p.right, integer=False)} for p in found.points],
    })


# ---- scale ------------------------------------------------------------------------------------


def _points(points: tuple[int, ...]) -> str:
    """2–9 for a run of consecutive integers, else 2, 4, 8."""
    if len(points) > 2 and list(points) == list(range(points[0], points[-1] + 1)):
        return f"{points[0]}–{points[-1]}"
    return ", ".join(str(p) for p in points)


def _range(piece: Piece, name: str) -> str:
    kind = f"{name} = 2^k, " if piece.family.name == "powers of two" else ""
    if piece.family.step > 1:
        kind = f"{name} = {piece.family.offset} mod {piece.family.step}, "
    if piece.valid_to is None:
        return f"for {kind}{name} >= {piece.valid_from}"
    if piece.valid_to == piece.valid_from:
        return f"for {kind}{name} = {piece.valid_from}"
    return f"for {kind}{piece.valid_from} <= {name} <= {piece.valid_to}"


def _status(piece: Piece, name: str) -> str:
    """'proved (argument)' or 'checked (fitted on ..., checked on ...)' and, for the last
    checked piece, that beyond its range the form is an extrapolation."""
    if piece.status == "proved":
        return f"proved: {piece.argument}"
    where = (f"fitted on {_points(piece.fit_points)}, checked on {_points(piece.check_points)}"
             if piece.fit_points else f"compiled at {_points(piece.check_points)}")
    tail = f"; beyond {piece.valid_to}: extrapolated" if piece.last else ""
    return f"checked ({where}{tail})"


def _times(piece: Piece, name: str) -> str:
    return ", ".join(f"{format_seconds(t)} at {name} = {n}" for n, t in piece.times)


def _scale_text(scale, name: str) -> str:
    return {f"{name}**2": f"{name}²", f"{name}*log({name})/log(2)": f"{name}·log2({name})",
            f"log({name})/log(2)": f"log2({name})"}.get(str(scale), str(scale))


def _asymptote(piece: Piece) -> str:
    return " + ".join(str(k * scale * m) for m, k, scale in piece.asymptote)


def _asymptote_value(piece: Piece, program: Program, name: str) -> str:
    """Each leading term at the nominal point: '13.28 µs·hosts + 8.0531 ms'."""
    nominal = {s: v for s, v in program.nominal.items() if str(s) != name}
    parts = []
    for monomial, k, scale in piece.asymptote:
        shown = format_seconds(float((k * monomial).xreplace(nominal)))
        parts.append(shown if scale == 1 else f"{shown}·{_scale_text(scale, name)}")
    return " + ".join(parts)


_BOUND_KINDS = (("bound", "best"), ("cut-set", "cut"), ("end-host", "end_host"))


def _bound_range(b: BoundPiece, name: str) -> str:
    if b.hi is None:
        return f"for {name} >= {b.lo}"
    return f"for {name} = {b.lo}" if b.hi == b.lo else f"for {b.lo} <= {name} <= {b.hi}"


def _bound_lines(piece: Piece, name: str) -> list[str]:
    """The bounds of a piece: one form each, or (proved, changing inside the piece) one per
    range; then time/bound and its limit, labelled by how sure it is."""
    out = []
    split = len(piece.bound_pieces) > 1
    for kind, field in _BOUND_KINDS:
        if kind not in piece.bounds:
            continue
        forms = [(b, getattr(b, field)) for b in piece.bound_pieces]
        if split and len({str(form) for _, form in forms}) > 1:
            out.append(f"    {kind:<9} " + "; ".join(
                f"{_bound_range(b, name)}: {form}" for b, form in forms if form is not None))
            continue
        form = piece.bounds[kind]
        shown = form if form is not None else "no closed form in this basis"
        out.append(f"    {kind:<9} {shown}")
    if piece.bounds_status == "proved":
        out.append(f"      proved: {piece.bound_argument}")
    if piece.ratio is not None:
        # Proved only when the time and the bound both are; else the limit is extrapolated.
        sure = "proved" if piece.status == "proved" and piece.bounds_status == "proved" \
            else "extrapolated"
        where = f" ({_bound_range(piece.bound_pieces[-1], name)})" if split else ""
        tail = (f"  -> {piece.ratio_limit} ({sure})" if piece.ratio_limit is not None else "")
        out.append(f"    time/bound{where} {piece.ratio}{tail}")
    return out


def scale_text(program: Program, results: list[Scaling]) -> str:
    out = []
    for result in results:
        name = result.param
        out.append(f"{result.name}: time in {name}")
        for piece in result.pieces:
            if piece.regime is None:
                out.append(f"  {_range(piece, name)}: no closed form in this basis; times: "
                           f"{_times(piece, name)}")
                continue
            out.append(f"  {_range(piece, name)}  {_status(piece, name)}")
            out.append(f"    time      {piece.regime}")
            if piece.conditions:
                out.append(f"      while   {', '.join(piece.conditions)}")
            if piece.formula is not None and piece.formula != piece.regime:
                out.append(f"    formula   {piece.formula}")
            if piece.ends is not None and not piece.last:
                out.append(f"    ends      {piece.ends}")
            out += [f"    note      {note}" for note in piece.notes]
            if piece.limit is not None:
                label = "" if piece.status == "proved" else " (extrapolated)"
                out.append(f"    as {name} -> oo{label}: {piece.limit}")
                if piece.asymptote:
                    out.append(f"      ~ {_asymptote(piece)}")
                    out.append(f"      = {_asymptote_value(piece, program, name)}")
            out += _bound_lines(piece, name)
            if piece.optimum is not None:
                o = piece.optimum
                # More digits than format_seconds: neighbours of an optimum differ little.
                around = ", ".join(f"{float(t) * 1e3:.9g} ms at {n}" for n, t in o.neighbours)
                out.append(f"    optimum   d(time)/d{name} = 0 at {name}* = {o.stationary} "
                           f"= {float(o.value):.6g}")
                out.append(f"      best integer {name} = {o.best}: {format_seconds(o.best_time)} "
                           f"(compiled: {around})")
        compiled = {n for piece in result.pieces for n in piece.checked_at}
        for found in result.at:
            how = {"formula": "from the form" + ("; also compiled there" if found.n in compiled
                                                 else ", not compiled"),
                   "compiled": "compiled: no form is checked or proved there",
                   "extrapolated": "EXTRAPOLATED from the last form, beyond its checked range"}
            out.append(f"  at {name} = {found.n}: {format_seconds(found.time)}  "
                       f"({how[found.method]})")
            if found.bound:
                out.append(f"    bound {format_seconds(found.bound)} (proved), time/bound "
                           f"{float(found.time / found.bound):.4g}")
        out += [f"  note: {note}" for note in result.notes]
        out.append("")
    return "\n".join(out)


def _text(expr) -> str | None:
    return None if expr is None else str(expr)


def _piece_json(result: Scaling, piece: Piece) -> dict:
    text = _text
    o = piece.optimum
    return {
        "name": result.name,
        "param": result.param,
        "status": piece.status,
        "argument": piece.argument,
        "valid_from": piece.valid_from,
        "valid_to": piece.valid_to,
        "checked_at": list(piece.checked_at),
        "ends": None if piece.last else piece.ends,
        "extrapolated_beyond": piece.valid_to if piece.last and piece.status != "proved"
        else None,
        "formula": text(piece.formula),
        "regime_formula": text(piece.regime),
        "regime_conditions": list(piece.conditions),
        "fit_points": list(piece.fit_points),
        "check_points": list(piece.check_points),
        "limit": text(piece.limit),
        "limit_extrapolated": piece.limit is not None and piece.status != "proved",
        "asymptote": _asymptote(piece) or None,
        "family": piece.family.label,
        "bounds": {kind: text(form) for kind, form in piece.bounds.items()},
        "bounds_status": piece.bounds_status if piece.bounds else None,
        "bounds_argument": piece.bound_argument,
        "bound_pieces": [{"valid_from": b.lo, "valid_to": b.hi, "bound": str(b.best),
                          "cut-set": str(b.cut), "end-host": text(b.end_host)}
                         for b in piece.bound_pieces],
        "ratio": text(piece.ratio),
        "ratio_limit": text(piece.ratio_limit),
        "optimum": None if o is None else {
            "stationary": str(o.stationary), "value": json_number(o.value, integer=False),
            "best": o.best, "best_time_s": json_number(o.best_time, integer=False)},
        "times": [{"value": n, "time_s": json_number(t, integer=False)} for n, t in piece.times],
        "notes": list(piece.notes),
    }


def _at_json(found) -> dict:
    """One `--at` value; with the bound and time/bound where the bounds are proved."""
    entry = {"n": found.n, "time_s": json_number(found.time, integer=False),
             "method": found.method}
    if found.bound:
        entry["bound_s"] = json_number(found.bound, integer=False)
        entry["ratio"] = json_number(found.time / found.bound, integer=False)
    return entry


def scale_json(program: Program, results: list[Scaling], compiles: int) -> str:
    return dump_json({
        "schema": schema.SCALE,
        "file": program.path,
        "compiles": compiles,
        "at": {r.name: [_at_json(a) for a in r.at] for r in results if r.at},
        "schedules": [_piece_json(r, p) for r in results for p in r.pieces],
        "notes": {r.name: list(r.notes) for r in results if r.notes},
    })

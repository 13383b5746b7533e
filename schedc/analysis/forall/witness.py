"""A failure of the data flow as a counterexample in n: its smallest n, the lexicographically
first failing point as affine functions of n (ranks by their devices), and the values of n
where that very point fails, in words."""

from __future__ import annotations

import re
from dataclasses import dataclass

import islpy as isl

from ...errors import Span
from .affine import PARAM, Cons, Lin, ge


@dataclass(frozen=True)
class Bad:
    """A failure at every n of `where` (isl text of a set of n), first at `smallest`."""

    kind: str  # missing | duplicate | conflict | obligation
    smallest: int
    where: str
    witness: dict[str, str]  # what fails, each an affine expression of n (isl text)
    message: str = ""
    span: Span | None = None
    formula: str = ""  # what fails, in n


def _by_coordinates(flow, found: isl.Set, names: tuple[str, ...]) -> tuple[isl.Set, tuple[str, ...]]:
    """A set with flat rank dims (r, rp, cr) given by coordinates in the device family."""
    d = len(flow.order.path)
    found = found.flatten()
    if not flow.flat or d == 1:
        return found, names
    out: list[str] = []
    cons: list[Cons] = []
    for name in names:
        if name not in ("r", "rp", "cr"):
            out.append(name)
            continue
        coords = [f"{name}_{m}" for m in range(d)]
        out += coords
        flat = Lin()
        for c, s, lo, hi in zip(coords, flow.order.strides, flow.order.lows, flow.order.highs):
            flat = flat + (Lin.var(c) - lo).scale(s)
            cons += [ge(Lin.var(c), lo), ge(hi, Lin.var(c))]
        cons.append(Cons(Lin.var(name) - flat, True))
    return found.apply(flow._map(names, tuple(out), cons)), tuple(out)


def failure(flow, kind: str, found: isl.Set, names, message: str = "", span=None) -> Bad:
    """The failures `found` (a set over `names`) of `flow` as a counterexample."""
    found, names = _by_coordinates(flow, found, names)
    smallest = smallest_n(found.params())
    at = found.intersect_params(isl.Set(f"[{PARAM}] -> {{ : {PARAM} >= {smallest} }}"))
    by_formula: dict[str, tuple] = {}  # pieces with the same expressions, joined

    def piece(where: isl.Set, ma) -> None:
        joined = by_formula.get(str(ma))
        by_formula[str(ma)] = (where if joined is None else joined[0].union(where), ma)
    at.lexmin().lexmin_pw_multi_aff().foreach_piece(piece)
    pieces = list(by_formula.values())
    # The piece of the first point that holds at most of the next values of n (a
    # formula for a family, rather than for one size).
    where, ma = max(pieces, key=lambda piece: sum(
        not piece[0].intersect_params(_equal(n)).is_empty()
        for n in range(smallest, smallest + 17)))
    # Every n where this very point (as a function of n) fails, not only its piece's.
    where = isl.Set.from_multi_aff(ma).intersect(found).params().coalesce()
    witness = {names[k]: _shown(flow, _aff_text(ma.get_aff(k)))
               for k in range(ma.dim(isl.dim_type.out))}
    return Bad(kind, smallest, _shown(flow, params_text(where.params())), witness, message, span,
               _formula(flow, kind, witness, message))

def _shown(flow, text: str) -> str:
    """An expression or a condition in n (numbers, n, operators) with the param's own name."""
    return re.sub(rf"\b{PARAM}\b", flow.shown, text)


def _device(flow, witness: dict[str, str], group: str) -> str:
    d = len(flow.order.path)
    primed = group.endswith("p")
    if flow.flat:
        keys = [group] if d == 1 else [f"{group}_{m}" for m in range(d)]
    else:  # the dims by coordinates: r0 r1, r0p r1p, cr0 cr1
        keys = [f"{group[:-1]}{m}p" if primed else f"{group}{m}" for m in range(d)]
    return ".".join(f"{part}[{witness[k]}]" for part, k in zip(flow.order.path, keys))

def _piece(flow, witness: dict[str, str], suffix: str = "") -> str:
    parts = [f"part({witness[x + suffix]} of {_shown(flow, k.text())})"
             for x, k in zip(flow.cells, flow.levels)]
    return " of ".join(reversed(parts)) if parts else "the whole buffer"

def _formula(flow, kind: str, w: dict[str, str], message: str) -> str:
    if "u" in w:  # an all-gather's labels: a rank's data, or its uninitialised buffer
        what = ("the uninitialised buffer of " if w["u"] == "1" else "the data of ") + \
            _device(flow, w, "cr")
        verb = "misses" if kind == "missing" else "holds"
        more = " more than once" if kind == "duplicate" else ""
        return f"{_device(flow, w, 'r')} {verb} {what}{more} on {_piece(flow, w)} after the last round"
    if kind == "unexpected":
        return (f"{_device(flow, w, 'r')} holds the contribution of {_device(flow, w, 'cr')}, "
                f"which it should not, on {_piece(flow, w)} after the last round")
    if kind == "missing":
        return (f"{_device(flow, w, 'r')} misses the contribution of {_device(flow, w, 'cr')} "
                f"to {_piece(flow, w)} after the last round")
    if any(k.startswith("cr") for k in w):
        return (f"{_device(flow, w, 'r')} holds the contribution of {_device(flow, w, 'cr')} "
                f"more than once on {_piece(flow, w)} after the last round")
    when = f"round {w['t']}" if "t" in w else f"round {w['tp']}-1"
    ends = [f"from {_device(flow, w, 'r')}"] if "t" in w else []
    ends += [f"to {_device(flow, w, 'rp')}"] if "tp" in w or "t" in w and len(w) > len(flow.point) else []
    piece = _piece(flow, w) if "x0" in w or not flow.cells else _piece(flow, w, "p")
    return f"in {when}, {message}: {' '.join(ends)} on {piece}"


def _equal(n: int) -> isl.Set:
    return isl.Set(f"[{PARAM}] -> {{ : {PARAM} = {n} }}")


def smallest_n(params: isl.Set) -> int:
    as_set = params.move_dims(isl.dim_type.set, 0, isl.dim_type.param, 0, 1)
    point = as_set.lexmin().sample_point()
    return int(point.get_coordinate_val(isl.dim_type.set, 0).to_python())


def params_text(params: isl.Set) -> str:
    """The values of n a set holds at, as isl prints them, `n > k` written `n >= k+1`."""
    text = str(params.coalesce())
    inner = text[text.index("{") + 1:text.rindex("}")].strip().lstrip(":").strip()
    inner = re.sub(rf"\b{PARAM} > (-?\d+)", lambda m: f"{PARAM} >= {int(m.group(1)) + 1}", inner)
    return inner or f"{PARAM} >= 0"


def _aff_text(aff: isl.Aff) -> str:
    if aff.dim(isl.dim_type.div):
        text = str(aff)
        return text[text.index("[", text.index("{")) + 1:text.rindex("]")].strip("()")
    a = int(aff.get_coefficient_val(isl.dim_type.param, 0).to_python())
    b = int(aff.get_constant_val().to_python())
    if not a:
        return str(b)
    term = PARAM if a == 1 else f"-{PARAM}" if a == -1 else f"{a}*{PARAM}"
    return term if not b else f"{term}{'+' if b > 0 else '-'}{abs(b)}"

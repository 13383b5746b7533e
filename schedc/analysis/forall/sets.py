"""Presburger sets in the param n as isl text, and the facts about a symbolic schedule the
data-flow check reads before it builds any relation: the elaboration's obligations, the cell
levels its regions cut, and the rounds where its statements start, in an order that holds
for every n."""

from __future__ import annotations

import islpy as isl

from .affine import PARAM, Cons, Lin, Outside
from .model import Family


def set_text(names: tuple[str, ...], cons: tuple[Cons, ...], start: int,
             known: tuple[str, ...] = ()) -> str:
    """`[n] -> { [names] : exists (others : cons) }` where the other variables are existential."""
    used = sorted({v for c in cons for v in c.lin.names} - set(names) - set(known) - {PARAM})
    body = " and ".join([f"{PARAM} >= {start}", *(c.isl() for c in cons)])
    if used:
        body = f"exists ({', '.join(used)} : {body})"
    return f"[{PARAM}] -> {{ [{', '.join(names)}] : {body} }}"


def failed_obligation(sym, start: int):
    """The first of the elaboration's obligations that fails for some n >= start, with the
    points where it fails (an isl set), or None: each must hold on its whole domain."""
    domains: dict = {}
    for ob in dict.fromkeys(sym.obligations):  # (each once, in order)
        if ob.domain not in domains:
            domains[ob.domain] = isl.Set(set_text(ob.domain.vars, ob.domain.cons, start))
        left = domains[ob.domain]
        for case in ob.cases:
            left = left.subtract(isl.Set(set_text(ob.domain.vars, ob.domain.cons + case, start)))
        if not left.is_empty():
            return ob, left
    return None


def ordered(times: set[Lin], start: int) -> list[Lin] | None:
    """`times` (affine in n) in an order that holds for every n >= start, or None."""
    def before(a: Lin, b: Lin) -> bool:
        d = b - a
        slope = dict(d.terms).get(PARAM, 0)
        return d.names <= {PARAM} and slope >= 0 and slope * start + d.const >= 0
    out: list[Lin] = []
    for t in sorted(times, key=lambda lin: (dict(lin.terms).get(PARAM, 0), lin.const)):
        if out and not before(out[-1], t):
            return None
        out.append(t)
    return out


def levels(families: list[Family]) -> tuple[Lin, ...]:
    """The cell levels: every transfer's chain of part counts is a prefix of the longest."""
    longest: tuple[Lin, ...] = ()
    for f in families:
        if len(f.counts) > len(longest):
            longest = f.counts
    for f in families:
        if f.counts != longest[:len(f.counts)]:
            raise Outside("the regions cut the buffer in parts that do not nest (part counts "
                          "that are not one chain)", f.span)
    return longest

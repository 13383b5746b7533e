"""NCCL's boundaries as formulas in nNodes, where its model allows.

For nNodes ≥ 3 NCCL's model reads the same constants whatever the node count (tuning.cc:267:
the N4 column; :306: the graphs' bwInter), so with localRanks and the graphs fixed:

- each latency is a + b·nNodes + c·⌊log2 nNodes⌋ (tuning.cc:384-435: the ring's steps are
  linear in nRanks = nNodes·localRanks, the trees' and PAT's in log2i(nNodes));
- each bandwidth's inverse is p + q/nNodes (tuning.cc:376-382: the ring's and NVLS's
  algorithm-bandwidth ratio nRanks/nsteps; the others' are constant);

so where the fastest changes from A to B, at lat_A + n/bw_A = lat_B + n/bw_B, the boundary is
n = 1000·(lat_B - lat_A) / (1/bw_A - 1/bw_B), a formula in nNodes. The coefficients are read
off NCCL's own table at nNodes = 4, 8 and 16, as the fraction each stands for (the model run in doubles, without NCCL's float rounding); a formula
is kept only if it reproduces the table at
nNodes = 5, 6 and 32 and the boundary computed byte by byte at nNodes = 4 and 8 (within 2
bytes: NCCL compares float times), and only while the boundary stays in the size band of the
tree correction factor and on the side of the ring's plateau it has at those counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import sympy

from . import constants as K
from .choice import Band, bands
from .comm import Comm
from .tuning import Table, log2i, real_arithmetic, tune_model

NODES = sympy.Symbol("nNodes", positive=True, integer=True)
LOG2_NODES = sympy.Symbol("log2i(nNodes)", nonnegative=True, integer=True)  # ⌊log2 nNodes⌋


def at_nodes(formula: sympy.Expr, n: int) -> float:
    """A boundary formula's value at nNodes = n."""
    return float(formula.xreplace({NODES: sympy.Integer(n), LOG2_NODES: sympy.Integer(log2i(n))}))
FIT_AT, CHECK_AT = (4, 8, 16), (5, 6, 32)


@dataclass(frozen=True)
class Boundary:
    collective: int
    below: str  # the pair below the boundary
    above: str
    formula: sympy.Expr  # the last byte of `below`'s side, before flooring
    checked_at: tuple[int, ...]


def _at(comm: Comm, n: int) -> tuple[Comm, Table]:
    c = comm.with_value("nNodes", n, "formula").with_value("nRanks", n * comm["localRanks"],
                                                           "formula")
    return c, tune_model(c)


def _real_table(comm: Comm, n: int) -> Table:
    with real_arithmetic():
        return _at(comm, n)[1]


def _q(x: Fraction) -> sympy.Rational:
    return sympy.Rational(x.numerator, x.denominator)


def _decimal(x: float) -> Fraction:
    """A double of the model as the fraction it stands for (tuning.cc's decimals, and ratios
    of channel and rank counts)."""
    return Fraction(x).limit_denominator(10**6)


def _forms(comm: Comm, f: int, a: int, p: int, real: dict[int, Table]):
    """(latency form, inverse bandwidth form) in NODES, or None if the table does not follow
    them at the check points."""
    lat = {n: _decimal(real[n].latency[f][a][p]) for n in real}
    bw = {n: _decimal(real[n].bandwidth[f][a][p]) for n in real}
    if any(bw[n] == 0 for n in bw):
        return None
    x, y, z = FIT_AT  # 4, 8, 16: log2 2, 3, 4; L = a + b·N + c·log2 N
    b = ((lat[z] - lat[y]) - (lat[y] - lat[x])) / ((z - y) - (y - x))
    c = (lat[y] - lat[x]) - b * (y - x)
    a_ = lat[x] - b * x - c * log2i(x)
    q = (1 / bw[x] - 1 / bw[y]) / (Fraction(1, x) - Fraction(1, y))
    p_ = 1 / bw[x] - q / x
    for n in CHECK_AT + FIT_AT:
        if a_ + b * n + c * log2i(n) != lat[n] or p_ + q / n != 1 / bw[n]:
            return None
    return (_q(a_) + _q(b) * NODES + _q(c) * LOG2_NODES, _q(p_) + _q(q) / NODES)


def boundaries(comm: Comm, table: Table, f: int, found: list[Band]) -> list[Boundary]:
    """A formula for each boundary between two long bands (not a float tie), where the model
    allows."""
    out: list[Boundary] = []
    samples: dict[int, list[Band]] = {}
    real = {n: _real_table(comm, n) for n in FIT_AT + CHECK_AT}
    for lo, hi in zip(found, found[1:]):
        if lo.choice is None or hi.choice is None or lo.choice == hi.choice:
            continue
        if lo.max_bytes - lo.min_bytes < 256 or hi.max_bytes - hi.min_bytes < 256:
            continue
        forms = [_forms(comm, f, c.algorithm, c.protocol, real) for c in (lo.choice, hi.choice)]
        if None in forms:
            continue
        n0 = lo.max_bytes
        (la, ia), (lb, ib) = [(lat * _plateau(comm, f, c, n0), inv / _factor(f, c, n0))
                              for (lat, inv), c in zip(forms, (lo.choice, hi.choice),
                                                       strict=True)]
        if ia == ib:
            continue
        formula = sympy.factor_terms(sympy.together(1000 * (lb - la) / (ia - ib)))
        for n in FIT_AT[:2]:
            if n not in samples:
                samples[n] = bands(*_at(comm, n), f, found[-1].max_bytes)
        tree = f == K.ALLREDUCE and K.TREE in (lo.choice.algorithm, hi.choice.algorithm)
        checked = []
        for n, found_n in samples.items():
            edge = [a.max_bytes for a, b in zip(found_n, found_n[1:])
                    if a.choice == lo.choice and b.choice == hi.choice and
                    (not tree or log2i(a.max_bytes >> 6) == log2i(n0 >> 6))]
            value = at_nodes(formula, n)
            if any(abs(e - value) <= 2 for e in edge):
                checked.append(n)
        if len(checked) == len(samples):
            out.append(Boundary(f, lo.choice.name, hi.choice.name, formula, tuple(checked)))
    return out


def _factor(f: int, c, n: int) -> sympy.Rational:
    """The tree correction factor at n (tuning.cc:639-642); 1 elsewhere. NVLS-tree's (:643-646,
    Blackwell on x86 only) is not folded in: such a boundary fails its checks instead."""
    k = log2i(n >> 6)
    if c.algorithm == K.TREE and f == K.ALLREDUCE and 0 <= k < 23:
        return sympy.Rational(str(K.TREE_CORRECTION_FACTOR[c.protocol][k]))
    return sympy.Integer(1)


def _plateau(comm: Comm, f: int, c, n: int) -> sympy.Rational:
    """The ring's plateau (tuning.cc:647-650) on the side the boundary has at the fit counts."""
    if c.algorithm == K.RING and c.protocol == K.SIMPLE and f == K.ALLREDUCE and \
            n // (comm["nChannels"] * FIT_AT[0] * comm["localRanks"]) >= 64:
        return sympy.Rational(19, 10) if comm["minCompCap"] < 80 else sympy.Rational(7, 5)
    return sympy.Integer(1)

"""NCCL's tuning model on a file's machine, beside schedc's own: the compute capability it
runs with, why it picks what it picks at one size next to schedc's times of the schedules
that stand for its algorithms (`nccl --explain`), and where schedc's model says another
pair beats NCCL's pick by more than a margin (`tune --against-nccl`: a scan of the size
range, each end bisected to the byte). Results are dataclasses; the API applies its
policies (verification) around them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..hardware.rules import DEFAULT_SM

if TYPE_CHECKING:
    from ..model.topology import Device, Topology
    from ..session import Session


@dataclass(frozen=True)
class OwnTime:
    schedule: str  # a schedule of the file labelled `as ALGO/PROTO`
    pair: str  # "ring/simple"
    time: float  # seconds, schedc's model, at the explained size


@dataclass(frozen=True)
class Explanation:
    collective: str
    size: int  # bytes (NCCL's nBytes)
    terms: tuple  # schedc.nccl.choice.Terms, NCCL's order
    winner: str | None
    own: tuple[OwnTime, ...]
    unlabelled: tuple[str, ...]  # NCCL's candidate algorithms no schedule stands for


def compute_capability(topology: Topology, ranks: tuple[int, ...],
                        sm: int | None) -> tuple[int, str]:
    """`--sm`, else what the ranks' GPUs declare (`gpu g[8] sm 80`), else the default; and
    where it came from. One GPU model: NCCL's model here takes one sm for minCompCap and
    maxCompCap alike."""
    from ..errors import UsageError
    from ..nccl.inputs import check_sm
    if sm is not None:
        return check_sm(sm), "--sm"
    first: dict[int | None, Device] = {}  # each sm declared (None: none) → its first GPU
    for r in ranks:
        first.setdefault(topology.devices[r].sm, topology.devices[r])
    declared = sorted(sm for sm in first if sm is not None)
    if not declared:  # (no ranks at all: derive says that NCCL's model needs GPUs)
        return DEFAULT_SM, (f"--sm's default {DEFAULT_SM}: the machine declares no sm for its "
                            "GPUs (`gpu g[8] sm 80`)")
    if None in first:
        bare = first[None]
        raise UsageError(f"some ranks' GPUs declare their sm and others do not ({bare.name}, "
                         f"declared at {bare.span}): declare it for every GPU, or pass --sm")
    if len(declared) > 1:
        where = ", ".join(f"sm {sm} at {first[sm].span}" for sm in declared)
        raise UsageError(f"the ranks' GPUs are of {len(declared)} models ({where}); schedc's "
                         "NCCL model takes one: pass --sm")
    return declared[0], f"the machine: sm {declared[0]} at {first[declared[0]].span}"


def explain(session: Session, comm, table, collective: str, size: int,
            timings_of: Callable[[list[str]], list]) -> Explanation:
    """Each candidate's terms at `size` bytes, NCCL's winner (the first of equal times, as
    its loop keeps it), and schedc's own time of the schedules labelled `as ALGO/PROTO` for
    `collective` (`timings_of`: their timings, verified as the caller's policy says)."""
    from ..nccl import constants as K
    from ..nccl.choice import terms
    f = K.FUNCTIONS.index(collective)
    found = terms(comm, table, f, size)
    winner = min(found, key=lambda t: t.time) if found else None  # min keeps the first tie
    program = session.program
    labelled = [r for r in program.results if r.collective.kind == collective and
                getattr(r.definition, "nccl", None) is not None]
    own = []
    if labelled:
        timings = timings_of([r.name for r in labelled])
        for r, timing in zip(labelled, timings, strict=True):
            label = r.definition.nccl
            assert label is not None
            own.append(OwnTime(r.name, f"{label.algorithm}/{label.protocol}",
                               time_at(program, r, timing, size)))
    pairs = {o.pair for o in own}
    algorithms = {p.split("/")[0] for p in pairs}
    unlabelled = tuple(dict.fromkeys(K.ALGORITHMS[t.candidate.algorithm] for t in found
                                     if K.ALGORITHMS[t.candidate.algorithm] not in algorithms))
    return Explanation(collective, size, tuple(found),
                       winner.candidate.name if winner else None, tuple(own), unlabelled)


def time_at(program, result, timing, size: int) -> float:
    """schedc's time of the schedule with its collective's size param at `size` bytes."""
    import sympy
    values = dict(program.nominal)
    form = result.collective.size
    if len(form) == 1 and form[0][1] == 1 and form[0][0] != 1:
        values[form[0][0]] = sympy.Integer(size)
    return float(timing.cost.formula.xreplace(values))


@dataclass(frozen=True)
class Against:
    """A size range where a schedule standing for another NCCL pair beats, in schedc's
    model, the schedule standing for NCCL's own pick by more than the margin."""

    min_bytes: int
    max_bytes: int
    schedule: str
    pair: str  # what the row sets
    nccl_pick: str  # NCCL's own choice there
    nccl_schedule: str  # the schedule standing for NCCL's pick
    gain: float  # NCCL's pick's schedc time / the schedule's - 1, the most over the range


def against(session: Session, table, bands: tuple, collective: str, margin: float
            ) -> tuple[tuple[Against, ...], tuple[str, ...]]:
    """The `tune --against-nccl` rows for one tuned table (`schedc.api.TunedTable`), and notes
    on the ranges that could not be compared. NCCL's pick is timed by the schedule labelled
    with its pair or, failing one, with its algorithm (schedc's time of a schedule does not
    depend on its label's protocol); a range where no schedule stands for the algorithm NCCL
    picks is noted, not compared. Range ends are found by bisection to the byte on schedc's
    formulas. `bands`: NCCL's choice bands for `collective` on the file's machine."""
    from .solve.crossovers import byte_ranges
    labelled = byte_ranges(table.labelled)
    pair = {n: f"{c.algorithm}/{c.protocol}" for n, c in table.nccl.items() if c is not None}
    stand_for: dict[str, str] = {}
    for name, p in pair.items():
        stand_for.setdefault(p, name)
    times = _time_functions(session, table)
    rows: list[Against] = []
    notes: list[tuple[tuple[int, int], str]] = []
    for lo, hi, name in labelled:
        for band in bands:
            a, b = max(lo, band.min_bytes), min(hi, band.max_bytes)
            if a > b or band.choice is None or band.choice.name == pair[name]:
                continue
            theirs = stand_for.get(band.choice.name) or next(
                (n for p, n in stand_for.items()
                 if p.split("/")[0] == band.choice.name.split("/")[0]), None)
            if theirs is None:
                note = (f"NCCL picks {band.choice.name}; no schedule stands for "
                        f"{band.choice.name.split('/')[0]}, so schedc cannot compare")
                if notes and notes[-1][1] == note and notes[-1][0][1] == a - 1:
                    notes[-1] = ((notes[-1][0][0], b), note)
                else:
                    notes.append(((a, b), note))
                continue
            if theirs == name:
                continue
            gain = lambda v, t=theirs, s=name: times[t](v) / times[s](v) - 1  # noqa: E731
            for x, y in _above(gain, margin, a, b):
                rows.append(Against(x, y, name, pair[name], band.choice.name, theirs,
                                    max(gain(x), gain(y))))
    return tuple(rows), tuple(f"{lo:,}-{hi:,} B: {text}" for (lo, hi), text in notes)


def _time_functions(session: Session, table) -> dict:
    import sympy
    x = table.envelope.param.symbol
    others = {s: v for s, v in session.program.nominal.items() if s != x}
    out = {}
    for name in table.names:
        formula = session.timing(name).cost.formula.xreplace(others)
        f = sympy.lambdify(x, formula, modules=[{"Max": max, "Min": min}, "math"])
        out[name] = lambda v, f=f: float(f(v))
    return out


def _above(gain, margin: float, lo: int, hi: int) -> list[tuple[int, int]]:
    """The byte ranges of [lo, hi] where gain(v) > margin: sign changes found on 65 points
    spaced evenly in log size, each end then bisected to the byte."""
    import math
    points = sorted({lo, hi, *(round(math.exp(math.log(lo) + k / 64 * (math.log(hi) -
                                                                       math.log(lo))))
                               for k in range(65))})
    points = [p for p in points if lo <= p <= hi]
    out: list[tuple[int, int]] = []
    start = lo if gain(lo) > margin else None
    for p, q in zip(points, points[1:]):
        inside_p, inside_q = gain(p) > margin, gain(q) > margin
        if inside_p != inside_q:
            while q - p > 1:  # the last byte on p's side
                m = (p + q) // 2
                if (gain(m) > margin) == inside_p:
                    p = m
                else:
                    q = m
            if inside_p:
                assert start is not None
                out.append((start, p))
                start = None
            else:
                start = q
    if start is not None:
        out.append((start, hi))
    return out

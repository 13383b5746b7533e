"""`synthesize --collective allreduce` on a machine whose switches reduce in the network.

Each rank then sends V and receives V (`analysis.synthesize.innetwork`), below what reduce-
scatter then all-gather must move, and the bound is all-reduce's own cut over all cuts
(`analysis.bound.in_network`): V enters every set of devices that holds some but not all
ranks, and, where the switches sit in hosts, 2(H - 1)·V crosses the hosts' own links. The
written schedule is compiled at a few chunk counts: its bandwidth term gives the pipeline's
steady state and fill (`Pipeline`), its time at the file's α the fastest count; every
figure is the compiler's, from the text written.
"""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Callable

from ..analysis.synthesize.result import Synthesis
from ..errors import LimitError
from ..limits import MAX_CHUNKS
from ..render.synthesis_header import in_network_header


def in_network_synthesis(program, coll, finder, reducing, trees_value: Fraction, *, source: Path,
                         machine: str, over: str, size: str, name: str, chunks: int | None,
                         within: float, compiled: Callable) -> Synthesis | None:
    """The in-network schedule, unless its many-chunk limit is above `trees_value` (reduce-
    scatter's optimum plus all-gather's, what trees reach); None then, or when no cut
    bounds the ranks. `compiled(text)` compiles and verifies a text: (α = 0 term, timing)."""
    from ..analysis.bound.in_network import host_ends, in_network
    from ..analysis.bound.optimum import side_names
    from ..analysis.synthesize.innetwork import Pipeline
    from ..export.sched_innetwork import in_network_text

    cut = in_network(finder, coll, program.nominal)
    if cut is None:
        return None
    ends = host_ends(finder, coll, program.nominal)
    if ends is not None and ends.value > cut.value:  # the hosts' own links bind
        bound, formula = ends.value, ends.bound
        why: tuple[str, ...] = (f"the {ends.hosts} hosts' own links, 2(H-1)·V in all "
                                "(end-host bound over hosts)",)
    else:
        bound, formula, why = cut.value, cut.time, side_names(finder, (cut,))
    names = [d.name for d in program.topology.devices]
    place = {r: k for k, r in enumerate(coll.ranks)}
    stages = reducing.stages

    def text(k: int, header: list[str], machine_path: str) -> str:
        return in_network_text(machine=machine_path, size=size, over=over, name=name, chunks=k,
                               groups=[[names[r] for r in g] for g in reducing.groups],
                               switches=[names[s] for s in reducing.switches],
                               positions=[[place[r] for r in g] for g in reducing.groups],
                               header=header)

    runs: dict = {}

    def at(k: int):  # (α = 0 term, timing) of the text at k chunks, compiled once
        if k not in runs:
            runs[k] = compiled(text(k, [], str(source.resolve())))
        return runs[k]

    pipeline = Pipeline.of(stages, at(stages)[0], at(2 * stages)[0])
    if pipeline.steady > trees_value:
        return None  # trees do better: they are written
    goal = max(bound, pipeline.steady)
    if chunks is None:
        chunks = pipeline.chunks_within(goal, within)
        if chunks > MAX_CHUNKS:
            raise LimitError(f"{chunks:,} chunks would be needed to come within {within:.2%} "
                             f"of the optimum, more than {MAX_CHUNKS:,}: give --chunks or a "
                             "larger --within")
    bandwidth, timing = at(chunks)
    fastest = _fastest(lambda k: at(k)[1].time, stages, chunks)
    result = Synthesis(text="", name=name, kind="allreduce", chunks=chunks, alpha_chunks=fastest,
                       optimum=bound, optimum_formula=formula, optimum_cuts=why,
                       bandwidth_time=bandwidth, time=timing.time, formula=timing.cost.formula,
                       rounds=timing.cost.rounds, trees=0, units=1, depth=stages,
                       reached=float(bound / pipeline.steady), iterations=0,
                       method="in-network")
    return replace(result, text=text(chunks, in_network_header(result, source.name, len(reducing.switches)), machine))


def _fastest(time: Callable[[int], Fraction], stages: int, written: int) -> int:
    """The chunk count fastest at the file's α. For K ≥ stages - 1 the time is
    c + a·K + b/K (a start-up per round, the fill's bytes over K), so three compiled times
    give a, b and K = √(b/a); the count is then moved down the compiled times to a local
    minimum (protocols that switch with the chunk's size bend the curve a little)."""
    ks = [max(stages - 1, 1) * m for m in (1, 2, 4)]
    t = [time(k) for k in ks]
    # T(K) = c + a·K + b/K: eliminate c between pairs of the three points.
    d1 = (t[1] - t[0], Fraction(ks[1] - ks[0]), Fraction(1, ks[1]) - Fraction(1, ks[0]))
    d2 = (t[2] - t[1], Fraction(ks[2] - ks[1]), Fraction(1, ks[2]) - Fraction(1, ks[1]))
    det = d1[1] * d2[2] - d2[1] * d1[2]
    a = (d1[0] * d2[2] - d2[0] * d1[2]) / det
    b = (d1[1] * d2[0] - d2[1] * d1[0]) / det
    if a <= 0:
        return written  # no start-up per round: more chunks never hurt
    best = min(MAX_CHUNKS, max(1, round(math.sqrt(max(float(b), 0.0) / float(a)))))
    for _ in range(16):
        step = min((k for k in (best - 1, best + 1) if 1 <= k <= MAX_CHUNKS), key=time)
        if time(step) >= time(best):
            break
        best = step
    return best

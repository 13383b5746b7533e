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

from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Callable

from ..analysis.synthesize.result import Synthesis
from ..render.synthesis_header import in_network_header


def in_network_synthesis(program, coll, finder, reducing, trees_value: Fraction, *, source: Path,
                         machine: str, over: str, size: str, name: str, chunks: int | None,
                         within: float, compiled: Callable) -> Synthesis | None:
    """The in-network schedule, unless its many-chunk limit is above `trees_value` (reduce-
    scatter's optimum plus all-gather's, what trees reach); None then, or when no cut
    bounds the ranks. `compiled(text)` compiles and verifies a text: (α = 0 term, timing)."""
    from ..analysis.bound.in_network import host_ends, in_network
    from ..analysis.bound.optimum import side_names
    from ..analysis.synthesize.innetwork import Pipeline, fastest_count, first_count
    from ..analysis.synthesize.plan import within_limit
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

    first = first_count(stages)  # the counts fastest_count compiles first, too
    pipeline = Pipeline.of(stages, at(first)[0], at(2 * first)[0])
    if pipeline.steady > trees_value:
        return None  # trees do better: they are written
    goal = max(bound, pipeline.steady)
    if chunks is None:
        chunks = within_limit(pipeline.chunks_within(goal, within), within)
    bandwidth, timing = at(chunks)
    fastest = fastest_count(lambda k: at(k)[1].time, stages, chunks)
    result = Synthesis(text="", name=name, kind="allreduce", chunks=chunks, alpha_chunks=fastest,
                       optimum=bound, optimum_formula=formula, optimum_cuts=why,
                       bandwidth_time=bandwidth, time=timing.time, formula=timing.cost.formula,
                       rounds=timing.cost.rounds, trees=0, units=1, depth=stages,
                       reached=float(bound / pipeline.steady), iterations=0,
                       method="in-network")
    return replace(result, text=text(chunks, in_network_header(result, source.name, len(reducing.switches)), machine))

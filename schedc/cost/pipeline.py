"""`step cost pipelined chunk Q`: a call of S bytes runs as C = max(1, S/Q) chunks, and the
schedule's rounds are the stages every chunk passes through (fill plus bottleneck):

    T = launch + Σ_r s_r + (C − 1) · P,    s_r = α_r + max_e V[r,e] / (C · B_e),
    P = max( max_r s_r ,  max_e Σ_r V[r,e] / (C · B_e) )

The first chunk fills the pipeline, each stage in turn (the lock-step sum, per chunk); every
further chunk leaves it one period P later. The period is the slowest stage (its start-up
included) or the busiest link (all the stages that share it share its bandwidth), whichever
is longer. For C = 1 (S ≤ Q) this is the sum rule exactly, so a size below one chunk costs
what `step cost sum` says.

Why this form (NVIDIA/nccl v2.26.2): `calcCollChunking` (src/enqueue.cc) splits a call into
nLoops = ceil(S / loopSize) loops of loopSize = nChannels · nHeads · chunkSize bytes
(NVLS-tree: 16 · 8 · 32–128 KiB, so 4–16 MiB), and each loop's chunk goes through the
algorithm's steps. The NVLS-tree kernel (src/device/all_reduce.h, RunWorkColl<...,
NCCL_ALGO_NVLS_TREE, NCCL_PROTO_SIMPLE>, line 521) gives each stage its own warps (scatter
into the switch; reduce and send up the tree; receive down the tree and broadcast; gather
from the switch), each group looping over every chunk, joined by
FIFOs of NCCL_STEPS slots (src/device/prims_simple.h waits on the peer's step counter, not
on the whole call): stages work on different chunks at once, so their start-ups overlap one
another while the links they share carry their bytes in turn. A ring's stages all use the
same links, so while the links bind the rule gives the sum rule's time (nothing overlaps),
and while a start-up binds each further chunk costs one stage more. C is continuous (S/Q),
not NCCL's ceil: the formula stays linear in S past Q, and at NCCL's power-of-two sizes and
loop sizes the two agree.
"""

from __future__ import annotations

from dataclasses import replace

import sympy

from ..model.protocol import Protocol
from ..model.topology import Topology
from .formula import (
    Cost, ProtocolTime, RoundClass, Term, _note, cost, nominal_value, resolve, step_time)
from .lower import Loads, merged
from .protocols import classes_loaded
from .regimes import at_least


def pipelined(base: Cost, loads: Loads, topology: Topology, alpha: sympy.Expr, nominal: dict,
              protocols: tuple[Protocol, ...], chunk: sympy.Expr, size: sympy.Expr,
              apart: frozenset[str] = frozenset()) -> Cost:
    """`base` (the sum rule's cost of `loads`, with `protocols` if any) as a pipeline of
    chunks of `chunk` bytes of a call of `size` bytes (see the module's docstring)."""
    chunks = sympy.Max(1, size / chunk)
    whole = next(iter(cost(merged(loads), topology, sympy.Integer(0), nominal, False,
                           apart).classes), None)
    times = [_time(base, loads, topology, alpha, p, chunks, whole)
             for p in (protocols or (None,))]
    values = [nominal_value(t, nominal) for t in times]
    best = min(range(len(times)), key=lambda k: values[k])  # a tie: the first declared
    conditions: dict[str, sympy.Expr] = {}
    regime = resolve(times[best], nominal, conditions)
    for k, other in enumerate(times):
        if k != best:
            _note(at_least(resolve(other, nominal, {}), regime), conditions)
    formula = times[0] if len(times) == 1 else sympy.Min(*times, evaluate=False)
    if not protocols:
        return replace(base, formula=formula, regime_formula=regime,
                       conditions=tuple(conditions.values()), chunk=chunk, chunks=chunks)
    return replace(base, formula=formula, regime_formula=regime,
                   conditions=tuple(conditions.values()), chunk=chunk, chunks=chunks,
                   protocol=protocols[best].name,
                   protocol_times=tuple(ProtocolTime(p.name, t, v)
                                        for p, t, v in zip(protocols, times, values)))


def _time(base: Cost, loads: Loads, topology: Topology, alpha: sympy.Expr,
          protocol: Protocol | None, chunks: sympy.Expr, whole: RoundClass | None) -> sympy.Expr:
    """launch + Σ_r s_r + (C − 1)·P under one protocol (None: the file's α and the links'
    own bandwidths)."""
    stages = []
    total = sympy.Integer(0) if protocol is None else protocol.launch  # then the fill
    for c in base.classes:
        startup = c.startup
        if protocol is not None:
            startup = c.startup - alpha + protocol.startup(classes_loaded(loads, topology, c.first))
        stage = step_time(startup, [_rate(t, topology, protocol) / chunks for t in c.terms],
                          False)
        total += c.count * stage
        stages.append(stage)
    if whole is not None and whole.terms:
        stages.append(sympy.Max(*[_rate(t, topology, protocol) / chunks for t in whole.terms],
                                evaluate=False))
    if not stages:
        return total
    period = stages[0] if len(stages) == 1 else sympy.Max(*stages, evaluate=False)
    return total + (chunks - 1) * period


def _rate(term: Term, topology: Topology, protocol: Protocol | None) -> sympy.Expr:
    """A term's time under the protocol's rate of its links (as `cost.protocols` does)."""
    if protocol is None:
        return term.expr
    return term.expr * term.bandwidth / protocol.rate(
        term.bandwidth, {topology.resources[r].cls for r in term.resources})

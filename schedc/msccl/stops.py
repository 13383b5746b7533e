"""microsoft/msccl's `ra` step: the thread block stops there.

microsoft/msccl's parser accepts `type="ra"` (src/graph/topo.cc:1021-1024 at b23e9cd5dd63:
`transferType = MSCCL_RES_ADD`, both buffers bounds-checked) and stores it as transfer type
8 (src/include/msccl.h:31). Its kernel has no branch for that type: the interpreter tries
each type it knows and ends with `else return;` (src/collectives/device/
msccl_interpreter.h:151-196), so the thread block returns at the `ra`: neither it nor any
later step of the thread block runs, and the flags those steps would set
(`mscclFlags[bid].flag`, :198-201) are never set. msccl-executor-nccl does not know the type
and refuses the file (src/misc/msccl/msccl_parser.cc:541 at c6f6b36d1a4c).

The `return` leaves the whole interpreter, and the steps run inside its loop over slices of
the buffer (`for gridOffset ...`, :105, slices of one protocol step's bytes, `chunkSize`,
:79): at the `ra` the thread block has run its earlier steps on the first slice only. So
schedc's reading — the steps before it run, the rest do not — is the kernel's only while
each MSCCL chunk fits one slice (V / nchunksperloop ≤ chunkSize); with a larger buffer the
thread block stops after its first slice and its peers wait forever for the rest, which the
warning says. What would wait for a step that never runs is an error (the executor would hang:
a dependency, a receive of what it never sends) and so is a receive that never runs (what
is sent to it is never taken in); anything else is read with a warning.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ElaborationError
from .document import RECEIVES, SENDS, Algo, ReadWarning, where

WHY = ("microsoft/msccl's kernel has no branch for MSCCL_RES_ADD and the thread block "
       "returns there (src/collectives/device/msccl_interpreter.h:195-196 at b23e9cd5dd63)")


def stop_at_ra(algo: Algo) -> Algo:
    """The algorithm as microsoft/msccl's kernel runs it: each thread block up to its first
    `ra` step."""
    stops = {(gpu.id, tb.id): next(s.index for s in tb.steps if s.type == "ra")
             for gpu in algo.gpus for tb in gpu.tbs if any(s.type == "ra" for s in tb.steps)}
    if not stops:
        return algo
    for gpu in algo.gpus:
        for tb in gpu.tbs:
            end = stops.get((gpu.id, tb.id), len(tb.steps))
            for step in tb.steps[end:]:
                if step.type in SENDS:
                    raise ElaborationError(
                        f"{where(gpu.id, tb.id, step.index)}: this '{step.type}' never runs: its "
                        f"thread block ends at its 'ra' (step {end}: {WHY}), so gpu {tb.send} "
                        "waits forever for what it sends", step.span)
                if step.type in RECEIVES:
                    raise ElaborationError(
                        f"{where(gpu.id, tb.id, step.index)}: this '{step.type}' never runs: its "
                        f"thread block ends at its 'ra' (step {end}: {WHY}), so what gpu "
                        f"{tb.recv} sends it is never taken in", step.span)
            for step in tb.steps[:end]:
                waited = stops.get((gpu.id, step.depid))
                if step.depid >= 0 and waited is not None and step.deps >= waited:
                    raise ElaborationError(
                        f"{where(gpu.id, tb.id, step.index)}: waits for tb {step.depid}, step "
                        f"{step.deps}, which never runs: that thread block ends at its 'ra' "
                        f"(step {waited}: {WHY}), so this step waits forever", step.span)
    gpus = tuple(replace(gpu, tbs=tuple(
        replace(tb, steps=tb.steps[:stops.get((gpu.id, tb.id), len(tb.steps))])
        for tb in gpu.tbs)) for gpu in algo.gpus)
    (g, t), s = next(iter(stops.items()))
    step = algo.gpus[g].tbs[t].steps[s]
    others = f" (and {len(stops) - 1} more thread blocks)" if len(stops) > 1 else ""
    dropped = len(algo.gpus[g].tbs[t].steps) - s
    warning = ReadWarning(
        f"{where(g, t, s)}: 'ra' ends its thread block{others}: {WHY}; read so: this step "
        + (f"and the {dropped - 1} after it do not run" if dropped > 1 else "does not run")
        + "; and since the return leaves the kernel's loop over slices of the buffer "
        "(msccl_interpreter.h:105), only a buffer whose chunks fit one slice (one protocol "
        "step's bytes, :79) runs so: a larger one stops after its first slice, and its peers "
        "wait forever",
        step.span)
    return replace(algo, gpus=gpus, warnings=(*algo.warnings, warning))

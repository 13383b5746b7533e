"""Where an MSCCL algorithm's buffers live, and what the collective asks of them.

schedc's IR has one buffer per rank; an MSCCL algorithm has three (input, output, scratch)
plus, here, a private *temporary* per receiving step: where its chunk waits when it arrives
before the step has started (the connection's buffer), and where a step reduces without
writing locally (`rrs`, or `rrc`/`rrcs` whose source and destination differ). They are laid out side
by side as one buffer of `chunks` equal chunks: out of place `[input | output | scratch |
temporaries]`; in place the input and output are one buffer, as the executor passes them
(an in-place all-gather's input is the rank's own slice of the output; an in-place
reduce-scatter's output is the rank's slice of the input), then scratch and temporaries.

Chunk counts follow the executor (msccl_parser.cc, msccl-tools collectives.py): with C =
nchunksperloop and p = ngpus, the input has C chunks (all-gather: C/p) and the output C
(reduce-scatter: C/p); a chunk is V/C bytes, V being schedc's size of the collective (the
per-rank buffer of an all-reduce, the gathered buffer of an all-gather, the whole input of a
reduce-scatter or all-to-all), which is why the executor's `sizeMultiplier` is ngpus for the
last three. Postconditions (msccl-tools `check`): all-reduce `o[c] = Σ_q i_q[c]`; all-gather
`o[i·c' + k] = i_i[k]`; reduce-scatter `o_r[k] = Σ_q i_q[r·c' + k]`; all-to-all
`o_r[i·c' + k] = i_i[r·c' + k]`, with c' = C/p; msccl-tools' custom `alltonext-forward`
`o_r[k] = i_{r-1}[k]` for r ≥ 1 (`alltonext-backwards`: `i_{r+1}`, r ≤ p-2; see `custom`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ElaborationError, LimitError
from ..limits import MAX_LAYOUT_CELLS
from ..model.collectives import NEIGHBOUR_STEPS
from ..model.ir import BufferLayout
from .document import RECEIVES, Algo, Step


@dataclass(frozen=True)
class Layout:
    algo: Algo
    inplace: bool
    c_in: int  # input chunks per rank
    c_out: int
    main: int  # input + output chunks (in place: the one shared buffer)
    scratch: int
    temps: dict[tuple[int, int, int], int]  # (gpu, tb, step) → its temporary's first chunk
    chunks: int

    def position(self, gpu: int, buffer: str, offset: int) -> int:
        """The chunk of the laid-out buffer that `buffer[offset]` of `gpu` is."""
        if buffer == "s":
            return self.main + offset
        if not self.inplace:
            return offset if buffer == "i" else self.c_in + offset
        kind = self.algo.collective
        if buffer == "i":
            return offset + (gpu * self.c_in if kind == "allgather" else 0)
        return offset + (gpu * self.c_out if kind == "reduce_scatter" else 0)

    def input_position(self, gpu: int, k: int) -> int:
        return self.position(gpu, "i", k)

    def output_position(self, gpu: int, k: int) -> int:
        return self.position(gpu, "o", k)


    def through_temporary(self, step: Step, gpu: int) -> bool:
        """Whether a receiving step reduces in its temporary (`rrs`; `rrc`, `rrcs` whose
        source is not their destination), rather than into its destination."""
        if step.type == "rrs":
            return True
        return step.type in ("rrc", "rrcs") and \
            self.position(gpu, step.srcbuf, step.srcoff) != self.position(gpu, step.dstbuf,
                                                                           step.dstoff)


def lay_out(algo: Algo, inplace: bool) -> Layout:
    p, c = algo.ngpus, algo.nchunksperloop
    kind = algo.collective
    if kind in ("allgather", "reduce_scatter", "alltoall") and c % p:
        raise ElaborationError(f"algo: nchunksperloop={c} is not a multiple of ngpus={p}, as "
                               f"{algo.coll} needs (each rank's part is nchunksperloop/ngpus "
                               "chunks)", algo.span)
    c_in = c // p if kind == "allgather" else c
    c_out = c // p if kind == "reduce_scatter" else c
    declared_i = max(g.i_chunks for g in algo.gpus)
    declared_o = max(g.o_chunks for g in algo.gpus)
    if inplace:
        main = max(c_in, c_out, declared_i, declared_o)
        if kind == "allgather":
            main = max(main, (p - 1) * c_in + declared_i)
        if kind == "reduce_scatter":
            main = max(main, (p - 1) * c_out + declared_o)
    else:
        c_in, c_out = max(c_in, declared_i), max(c_out, declared_o)
        main = c_in + c_out
    scratch = max(g.s_chunks for g in algo.gpus)
    temps: dict[tuple[int, int, int], int] = {}
    widest = 0
    for gpu in algo.gpus:
        used = 0
        for tb in gpu.tbs:
            for step in tb.steps:
                if step.type in RECEIVES:
                    temps[(gpu.id, tb.id, step.index)] = main + scratch + used
                    used += step.cnt
        widest = max(widest, used)
    chunks = main + scratch + widest
    if algo.ngpus * chunks > MAX_LAYOUT_CELLS:  # refused before the tables are made
        raise LimitError(f"algo: {algo.ngpus:,} gpus × {chunks:,} chunks of buffer are more than "
                         f"the {MAX_LAYOUT_CELLS:,} that verification handles", algo.span)
    return Layout(algo, inplace, c_in, c_out, main, scratch, temps, chunks)


def buffer_layout(layout: Layout) -> BufferLayout:
    """The start state and postcondition per (rank, chunk), for the verifier."""
    algo = layout.algo
    p, n, kind = algo.ngpus, layout.chunks, algo.collective
    c_in = algo.nchunksperloop // p if kind == "allgather" else algo.nchunksperloop
    c_out = algo.nchunksperloop // p if kind == "reduce_scatter" else algo.nchunksperloop
    part = algo.nchunksperloop // p
    start = np.arange(p)[:, None] + p + np.zeros((p, n), dtype=np.int64)
    required = np.zeros((p, n), dtype=bool)
    owner = np.zeros((p, n), dtype=np.int64)
    shift = np.zeros((p, n), dtype=np.int64)
    for r in range(p):
        for k in range(c_in):
            start[r, layout.input_position(r, k)] = r
        for k in range(c_out):
            here = layout.output_position(r, k)
            step = NEIGHBOUR_STEPS.get(kind)
            if step is not None:  # msccl-tools' alltonext: rank r - step's input, if it exists
                if 0 <= r - step < p:
                    required[r, here] = True
                    owner[r, here] = r - step
                    shift[r, here] = layout.input_position(r - step, k) - here
                continue
            required[r, here] = True
            if kind == "allreduce":
                source, whose = k, 0
            elif kind == "reduce_scatter":
                source, whose = r * part + k, 0
            elif kind == "allgather":
                whose, source = divmod(k, part)
            else:  # alltoall
                whose, source = k // part, r * part + k % part
            owner[r, here] = whose
            shift[r, here] = layout.input_position(whose, source) - here
    return BufferLayout(n, start, required, owner, shift, _names(layout))


def _names(layout: Layout) -> tuple[str, ...]:
    """Per chunk, what it is: `i[3]`, `o[0]`, `s[2]`, `t[0]` (a step's temporary; which
    step's, differs from rank to rank)."""
    if layout.inplace:
        shared = "o" if layout.algo.collective == "allgather" else "i"
        names = [f"{shared}[{k}]" for k in range(layout.main)]
    else:
        names = [f"i[{k}]" for k in range(layout.c_in)] + [f"o[{k}]" for k in range(layout.c_out)]
    names += [f"s[{k}]" for k in range(layout.scratch)]
    names += [f"t[{k}]" for k in range(layout.chunks - len(names))]
    return tuple(names)

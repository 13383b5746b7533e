"""A schedule → MSCCL XML, for the executors (Azure/msccl-executor-nccl `msccl_parser.cc`
and microsoft/msccl `src/graph/topo.cc`, `mscclGetAlgoFromXMLAndSetAlgo`).

Buffers. schedc's collectives are in place, one buffer per rank, so the XML is in place
(`inplace="1" outofplace="0"`): an all-reduce, reduce-scatter and all-to-all work on `i`
(C = nchunksperloop chunks), an all-gather on `o` (its input is the rank's slice of it, as
the executor passes an in-place all-gather's input). C is the least common multiple of the
schedule's region denominators (× ngpus's part where the collective needs it), times
`--channels`: each transfer is cut into that many pieces, one per channel.

Thread blocks. Per gpu, one thread block per (peer, channel) sends and another receives;
the k-th transfer from a to b within a round goes on channel k (× pieces), so a thread block
has at most one step per round and steps are in round order. A transfer is an `s` on the
sender and an `r` (copy) or `rrc` (reduce, into the landing chunks) on the receiver.

Dependencies (depid/deps, one per step; the others as `nop` steps before it, as msccl-tools
writes them) make the rounds hold in the executor, which runs thread blocks independently:
a send waits for the receives that last wrote what it reads (read after write); a receive
waits for the sends that read its chunks since they were last written (write after read) and
for that last write (write after write; reductions into one place in one round are chained);
a send in round k > 1 also waits for a step of its gpu in round k − 1, so that schedc's reader
puts it back in round k. When a gpu has no step in round k − 1 there is nothing to wait
for: such a send may run earlier on import (the data flow is the same).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from math import lcm

import numpy as np

from ..errors import UsageError
from ..model.ir import Schedule, Series, joined

PROTOCOLS = ("Simple", "LL", "LL128")
KINDS = {"allreduce": "allreduce", "allgather": "allgather", "alltoall": "alltoall",
         "reduce_scatter": "reducescatter"}
EXECUTORS = ("msccl-executor-nccl", "msccl")  # msccl writes reduce_scatter as `reduce_scatter`
MAX_STEPS = 256  # MSCCL_MAX_NUM_STEPS, per thread block
MAX_PER_CHANNEL = 32  # MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL: senders (receivers) per channel
MAX_CHANNELS = 32  # MAXCHANNELS
MAX_BYTES = 2**63 - 1


@dataclass(eq=False)
class _Step:
    type: str  # s | r | rrc | nop
    offset: int
    cnt: int
    round: int
    deps: list[_Step] = field(default_factory=list)
    tb: _Block | None = None
    index: int = -1
    needed: bool = False  # some step depends on it

    @property
    def owner(self) -> _Block:
        assert self.tb is not None, "a step joins its thread block as it is made (add)"
        return self.tb


@dataclass(eq=False)
class _Block:
    gpu: int
    send: int
    recv: int
    chan: int
    steps: list[_Step] = field(default_factory=list)
    id: int = -1


def export_msccl(schedule: Schedule, name: str | None = None, proto: str = "Simple",
                 channels: int = 1, executor: str = EXECUTORS[0], min_bytes: int = 0,
                 max_bytes: int = MAX_BYTES) -> str:
    coll = schedule.collective
    if coll.kind not in KINDS:
        raise UsageError(f"'{schedule.name}' is a {coll.kind}; MSCCL XML is written for "
                         f"{', '.join(KINDS)}")
    if coll.layout is not None:
        raise UsageError(f"'{schedule.name}' is already an MSCCL algorithm")
    p = len(coll.ranks)
    slot = {device: k for k, device in enumerate(coll.ranks)}
    batches = [b for r in schedule.rounds for b in r.batches]
    if any(b.op == "send" for b in batches):
        raise UsageError(f"'{schedule.name}' has `send` transfers, which move no data of the "
                         "collective; MSCCL XML cannot say them")
    busiest = _busiest_pair(schedule)
    if busiest > MAX_STEPS:  # refused before the work, which grows with rounds × transfers
        raise UsageError(f"a thread block would have at least {busiest} steps (a gpu sends to "
                         f"the same peer in {busiest} rounds); the executors allow {MAX_STEPS}")
    chunks = lcm(*(b.den for b in batches), p if coll.kind != "allreduce" else 1) * channels
    blocks: dict[tuple, _Block] = {}
    last_write: dict[tuple[int, int], _Step] = {}
    reads: dict[tuple[int, int], list[_Step]] = defaultdict(list)
    by_round: dict[tuple[int, int], list[_Step]] = defaultdict(list)  # (gpu, round) → steps

    def block(gpu: int, send: int, recv: int, chan: int) -> _Block:
        key = (gpu, send, recv, chan)
        if key not in blocks:
            blocks[key] = _Block(gpu, send, recv, chan)
        return blocks[key]

    def add(b: _Block, step: _Step) -> _Step:
        step.tb = b
        b.steps.append(step)
        by_round[(b.gpu, step.round)].append(step)
        return step

    for number, rnd in enumerate(schedule.rounds, 1):
        pieces = _pieces(schedule, rnd, slot, chunks, channels)
        sends = []
        for piece in pieces:  # every read of a round comes before its writes
            step = add(block(piece.src, piece.dst, -1, piece.chan),
                       _Step("s", piece.start, piece.length, number))
            for c in range(piece.start, piece.start + piece.length):
                if (piece.src, c) in last_write:
                    step.deps.append(last_write[(piece.src, c)])
                reads[(piece.src, c)].append(step)
            sends.append(step)
        for piece in pieces:
            step = add(block(piece.dst, -1, piece.src, piece.chan),
                       _Step("rrc" if piece.op == "reduce" else "r", piece.land, piece.length,
                             number))
            for c in range(piece.land, piece.land + piece.length):
                step.deps += reads.pop((piece.dst, c), [])
                if (piece.dst, c) in last_write:
                    step.deps.append(last_write[(piece.dst, c)])
                last_write[(piece.dst, c)] = step
        for step in sends:  # hold each send in its round
            earlier = by_round.get((step.owner.gpu, number - 1), [])
            if number > 1 and earlier and not any(d.round == number - 1 for d in step.deps) \
                    and not _follows_round(step, number - 1):
                step.deps.append(next((s for s in earlier if s.type == "s"), earlier[0]))
    return _write(schedule, name or schedule.name, proto, chunks, executor, min_bytes, max_bytes,
                  p, blocks)


def _busiest_pair(schedule: Schedule) -> int:
    """The most rounds in which one gpu sends to one peer: every such round gives the pair's
    thread block on each channel a step at least."""
    rounds = max(len(schedule.rounds), 1)
    devices = 1 + max((int(max(b.src.max(initial=0), b.dst.max(initial=0)))
                       for b in schedule.rounds.batches()), default=0)
    keys, first = [], 0
    for part in schedule.rounds.parts:
        if isinstance(part, Series):
            for j, b in enumerate(part.batches):
                at = first + part.round_of(j)
                keys.append((b.src * devices + b.dst) * rounds + at)
        else:
            keys += [(b.src * devices + b.dst) * rounds + first + k
                     for k, rnd in enumerate(part) for b in rnd.batches]
        first += len(part)
    pairs = np.unique(joined(keys)) // rounds  # each (pair, round) once
    return int(np.unique(pairs, return_counts=True)[1].max(initial=0))


@dataclass(frozen=True)
class _Piece:
    op: str
    src: int  # ranks
    dst: int
    start: int  # chunks
    land: int
    length: int
    chan: int


def _pieces(schedule: Schedule, rnd, slot: dict[int, int], chunks: int,
            channels: int) -> list[_Piece]:
    """A round's transfers in chunks, cut into one piece per channel; the k-th transfer
    between one pair in the round takes the k-th group of channels."""
    pieces = []
    count: dict[tuple[int, int], int] = defaultdict(int)
    for b in rnd.batches:
        scale = chunks // b.den
        for k in range(len(b)):
            src, dst = slot.get(int(b.src[k])), slot.get(int(b.dst[k]))
            if src is None or dst is None or src == dst:
                raise UsageError(f"'{schedule.name}' moves data to or from a device outside "
                                 "its collective, or within one: MSCCL XML cannot say it")
            length = int(b.length[k]) * scale // channels
            start = int(b.off[k]) * scale
            land = start if b.into_off is None else int(b.into_off[k]) * scale
            base = count[(src, dst)]
            count[(src, dst)] += 1
            pieces += [_Piece(b.op, src, dst, start + j * length, land + j * length, length,
                              base * channels + j) for j in range(channels)]
    return pieces


def _follows_round(step: _Step, number: int) -> bool:
    steps = step.owner.steps
    at = steps.index(step)
    return at > 0 and steps[at - 1].round == number


def _write(schedule: Schedule, name: str, proto: str, chunks: int, executor: str,
           min_bytes: int, max_bytes: int, p: int, blocks: dict[tuple, _Block]) -> str:
    kind = schedule.collective.kind
    per_gpu: dict[int, list[_Block]] = defaultdict(list)
    for key in sorted(blocks):
        per_gpu[key[0]].append(blocks[key])
    nchannels = 1 + max((b.chan for b in blocks.values()), default=0)
    if nchannels > MAX_CHANNELS:
        raise UsageError(f"the XML needs {nchannels} channels; the executors allow "
                         f"{MAX_CHANNELS} (a round moves that many transfers between one pair)")
    for gpu, tbs in per_gpu.items():
        tbs.sort(key=lambda b: (b.send, b.recv, b.chan))  # as msccl-tools orders them
        for index, b in enumerate(tbs):
            b.id = index
        for chan in {b.chan for b in tbs}:
            for what in ("send", "recv"):
                if sum(getattr(b, what) >= 0 and b.chan == chan for b in tbs) > MAX_PER_CHANNEL:
                    raise UsageError(f"gpu {gpu} would need more than {MAX_PER_CHANNEL} thread "
                                     f"blocks that {what} on channel {chan}")
    for b in blocks.values():  # dependencies beyond the first become nops before the step
        steps = []
        for step in b.steps:
            deps = _distinct(d for d in step.deps if d.tb is not b)
            for extra in deps[1:]:
                steps.append(_Step("nop", -1, 0, step.round, [extra], b))
            step.deps = deps[:1]
            steps.append(step)
        for index, step in enumerate(steps):
            step.index = index
            for d in step.deps:
                d.needed = True
        b.steps = steps
        if len(steps) > MAX_STEPS:
            raise UsageError(f"a thread block of gpu {b.gpu} would have {len(steps)} steps; the "
                             f"executors allow {MAX_STEPS}")
    buffer = "o" if kind == "allgather" else "i"
    coll = "reduce_scatter" if kind == "reduce_scatter" and executor == "msccl" else KINDS[kind]
    i_chunks = chunks // p if kind == "allgather" else chunks
    o_chunks = {"allgather": chunks, "reduce_scatter": chunks // p}.get(kind, 0)
    lines = [f'<algo name="{_escape(name)}" proto="{proto}" nchannels="{nchannels}" '
             f'nchunksperloop="{chunks}" ngpus="{p}" coll="{coll}" inplace="1" outofplace="0" '
             f'minBytes="{min_bytes}" maxBytes="{max_bytes}">']
    for gpu in range(p):
        lines.append(f'  <gpu id="{gpu}" i_chunks="{i_chunks}" o_chunks="{o_chunks}" '
                     's_chunks="0">')
        for b in per_gpu.get(gpu, []):
            lines.append(f'    <tb id="{b.id}" send="{b.send}" recv="{b.recv}" chan="{b.chan}">')
            for s in b.steps:
                dep = s.deps[0] if s.deps else None
                where = (buffer, s.offset) if s.type != "nop" else ("i", -1)
                lines.append(
                    f'      <step s="{s.index}" type="{s.type}" srcbuf="{where[0]}" '
                    f'srcoff="{where[1]}" dstbuf="{where[0]}" dstoff="{where[1]}" cnt="{s.cnt}" '
                    f'depid="{dep.owner.id if dep else -1}" deps="{dep.index if dep else -1}" '
                    f'hasdep="{int(s.needed)}"/>')
            lines.append("    </tb>")
        lines.append("  </gpu>")
    lines.append("</algo>")
    return "\n".join(lines) + "\n"


def _distinct(steps) -> list[_Step]:
    seen: dict[int, _Step] = {}
    for s in steps:
        seen.setdefault(id(s), s)
    return sorted(seen.values(), key=lambda s: (s.round, s.owner.gpu, s.owner.send, s.owner.recv,
                                                       s.owner.chan))


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")

"""A schedule → MSCCL XML within one executor's limits (Azure/msccl-executor-nccl
`msccl_parser.cc`, microsoft/msccl `src/graph/topo.cc`; the limits and their source lines are
in `schedc.msccl.rules`).

Buffers. schedc's collectives are in place, one buffer per rank. In place
(`inplace="1" outofplace="0"`) an all-reduce, reduce-scatter and all-to-all work on `i`
(C = nchunksperloop chunks), an all-gather on `o` (its input is the rank's slice of it, as
the executor passes an in-place all-gather's input). Out of place (`outofplace="1"`) each
rank reads its input `i` and writes its output `o` (see `msccl_steps`); `both` writes the
out-of-place steps for either use, which stay right when the executor aliases the buffers,
since every dependency is on the logical chunk. C is the least common multiple of the
schedule's region denominators (× ngpus's part where the collective needs it), times
`--channels`: each transfer is cut into that many pieces, one per channel.

Thread blocks. Per gpu, one thread block per (peer, channel) sends and another receives;
steps are in round order. A transfer is an `s` on the sender and an `r` (copy) or `rrc`
(reduce) on the receiver.

Limits. The steps of a thread block (nops included) must be fewer than the executor's
MSCCL_MAX_NUM_STEPS: when they are not, the rounds are spread over more channels (round r on
the (r mod s)-th group), the fewest groups that fit. Thread blocks that others wait for get
the lowest ids (dependencies store the id as int8_t). Every other limit that no layout can
meet is an error before anything is written, naming the limit and the smallest change.
"""

from __future__ import annotations

from collections import defaultdict
from math import ceil, lcm

import numpy as np

from ..errors import UsageError
from ..limits import MAX_SIZE
from ..model.ir import Schedule, Series, joined
from ..msccl.executors import (
    MAX_CHANNELS,
    MAX_DEPENDED_TB,
    MAX_NODES,
    MAX_OFFSET,
    MAX_PER_CHANNEL,
    MAX_STEPS,
    MAX_THREAD_BLOCKS,
    MSCCL,
    NCCL,
)
from ..words import counted
from .msccl_steps import BAND, Block, Places, Shape, build, with_nops

KINDS = {"allreduce": "allreduce", "allgather": "allgather", "alltoall": "alltoall",
         "reduce_scatter": "reducescatter"}
TB_SOURCE = {NCCL: "msccl_struct.h:18", MSCCL: "src/include/msccl.h:8"}
STEPS_SOURCE = {NCCL: "MSCCL_MAX_NUM_STEPS of its default build, makefiles/common.mk:19",
                MSCCL: "MSCCL_MAX_NUM_STEPS, src/include/msccl.h:6"}


class TooLarge(UsageError):
    """A refusal of the XML's size (chunks, channels, steps, elements): a schedule cut into
    fewer pieces may fit (`schedc.api.export_msccl` then names a chunk count that does)."""


class FewerChannels(TooLarge):
    """A limit that more channels only make worse: fewer may fit."""


def export_msccl(schedule: Schedule, name: str | None = None, proto: str = "Simple",
                 channels: int = 1, executor: str = NCCL, min_bytes: int = 0,
                 max_bytes: int = MAX_SIZE, max_steps: int | None = None,
                 layout: str = "inplace") -> str:
    try:
        return _export(schedule, name, proto, channels, executor, min_bytes, max_bytes,
                       max_steps, layout)
    except FewerChannels as refusal:
        for fewer in range(channels - 1, 0, -1):  # the most channels that fit, if any
            try:
                _export(schedule, name, proto, fewer, executor, min_bytes, max_bytes,
                        max_steps, layout)
            except UsageError:
                continue
            raise TooLarge(f"{refusal.message}: --channels {fewer} fits") from None
        raise TooLarge(refusal.message + ("" if channels == 1 else
                                            ", and no smaller --channels fits")) from None


def _writable(schedule: Schedule, executor: str, max_steps: int | None) -> int:
    """Refuse what MSCCL XML cannot say (another collective, an MSCCL algorithm already,
    `send` transfers) and a step limit the executor does not allow; the step limit."""
    coll = schedule.collective
    if coll.kind not in KINDS:
        raise UsageError(f"'{schedule.name}' is a {coll.kind}; MSCCL XML is written for "
                         f"{', '.join(KINDS)}")
    if coll.layout is not None:
        raise UsageError(f"'{schedule.name}' is already an MSCCL algorithm")
    limit = max_steps or MAX_STEPS[executor]
    if executor == MSCCL and limit > MAX_STEPS[MSCCL]:
        raise UsageError(f"--max-steps {limit}: microsoft/msccl allows at most 256 "
                         "(static_assert in src/include/msccl.h:17)")
    if any(b.op == "send" for r in schedule.rounds for b in r.batches):
        raise UsageError(f"'{schedule.name}' has `send` transfers, which move no data of the "
                         "collective; MSCCL XML cannot say them")
    return limit


def _export(schedule: Schedule, name: str | None, proto: str, channels: int, executor: str,
            min_bytes: int, max_bytes: int, max_steps: int | None, layout: str) -> str:
    coll = schedule.collective
    limit = _writable(schedule, executor, max_steps)
    p = len(coll.ranks)
    batches = [b for r in schedule.rounds for b in r.batches]
    chunks = lcm(*(b.den for b in batches), p if coll.kind != "allreduce" else 1) * channels
    if chunks - 1 > MAX_OFFSET:
        raise TooLarge(f"the XML needs {chunks:,} chunks per loop; step offsets are int16_t "
                         f"(msccl_struct.h:44), at most {MAX_OFFSET + 1:,} chunks"
                         + (f": try --channels {channels * (MAX_OFFSET + 1) // chunks}"
                            if channels * (MAX_OFFSET + 1) // chunks >= 1 and channels > 1 else ""))
    # Every (sender, receiver, round) once, sorted: the limits below are counted from it
    # before any step is built (one sort of the 2 M transfers of a 1,024-rank ring).
    keys, devices, most = _pair_rounds(schedule)
    width = most * channels
    pairs = keys // max(len(schedule.rounds), 1)  # sorted too: a pair's rounds adjacent
    banded = _most_peers(pairs, devices) > MAX_PER_CHANNEL
    bands = ceil((p - 1) / BAND) if banded else 1
    groups = MAX_CHANNELS // (width * bands)
    if groups < 1:
        fits = MAX_CHANNELS // (width // channels * bands)
        raise TooLarge(f"the XML needs {width * bands} channels ({width // channels} "
                         f"transfers between one pair in one round × --channels {channels}"
                         + (f" × {bands} bands of 32 peers" if banded else "")
                         + f"); NCCL has {MAX_CHANNELS} (MAXCHANNELS)"
                         + (f": the most that fits is --channels {fits}" if fits else ""))
    busiest = _busiest_pair(pairs)
    if ceil(busiest / groups) > limit:  # refused before the work, which grows with rounds
        raise TooLarge(_too_many_steps(ceil(busiest / groups), busiest, groups, limit,
                                         executor, f"a gpu sends to the same peer in {busiest} "
                                         f"rounds, over at most {groups} groups of channels"))
    device, least = _least_elements(pairs, devices, channels, p)
    if least >= MAX_NODES:  # (the same refusal as _thread_blocks', before the work)
        gpu = coll.ranks.index(device) if device in coll.ranks else device  # (its rank)
        raise FewerChannels(f"gpu {gpu}'s part of the XML would have at least {least} elements "
                            f"with the algo and every gpu; the executors' parser keeps "
                            f"{MAX_NODES - 1} (MAX_NODES, msccl_parser.h:23)")
    kind = coll.kind
    outofplace = layout != "inplace"
    best = None
    for spread in range(max(1, ceil(busiest / limit)), groups + 1):
        places = Places(kind, p, chunks, outofplace)
        blocks = build(schedule, chunks, Shape(channels, spread, width, banded), places)
        most = with_nops(blocks)
        if most <= limit:
            break
        best = most if best is None else min(best, most)
    else:
        raise TooLarge(_too_many_steps(best or 0, busiest, groups, limit, executor,
                                         "with the rounds spread over every number of channel "
                                         "groups that fits, dependencies' nops included"))
    per_gpu = _thread_blocks(blocks, executor, p)
    return _write(name or schedule.name, proto, chunks, executor, min_bytes, max_bytes, p, kind,
                  per_gpu, layout, places.scratch)


def _too_many_steps(steps: int, busiest: int, groups: int, limit: int, executor: str,
                    why: str) -> str:
    other = "" if executor == MSCCL or steps > MAX_STEPS[MSCCL] else \
        " or --executor msccl (256 steps)"
    fix = f"--max-steps {steps} or more (a build with MSCCL_MAX_NUM_STEPS={steps} or more)" \
        if executor == NCCL else "fewer rounds between one pair"
    return (f"a thread block would have at least {steps} steps ({why}); {executor} allows "
            f"{limit} ({STEPS_SOURCE[executor] if limit == MAX_STEPS[executor] else '--max-steps'})"
            f"; the smallest change that could fit: {fix}{other}")


def _thread_blocks(blocks: dict[tuple, Block], executor: str, p: int) -> dict[int, list[Block]]:
    """Each gpu's thread blocks in id order (as msccl-tools orders them, those that others
    wait for first when an id would not fit int8_t), checked against the executor's limits."""
    per_gpu: dict[int, list[Block]] = defaultdict(list)
    for key in sorted(blocks):
        per_gpu[key[0]].append(blocks[key])
    nchannels = 1 + max((b.chan for b in blocks.values()), default=0)
    if nchannels > MAX_CHANNELS:
        raise TooLarge(f"the XML needs {nchannels} channels; NCCL has {MAX_CHANNELS}")
    for gpu, tbs in per_gpu.items():
        tbs.sort(key=lambda b: (b.send, b.recv, b.chan))
        needed = [b for b in tbs if any(s.needed for s in b.steps)]
        if any(k > MAX_DEPENDED_TB for k, b in enumerate(tbs) if b in needed):
            tbs.sort(key=lambda b: (b not in needed, b.send, b.recv, b.chan))
        if len(needed) > MAX_DEPENDED_TB + 1:
            raise FewerChannels(f"gpu {gpu}: {counted(len(needed), 'thread block')} have "
                                "steps that others wait for; a dependency names its thread block by an "
                                f"int8_t (msccl_struct.h:58), so at most {MAX_DEPENDED_TB + 1} "
                                "can be")
        if len(tbs) > MAX_THREAD_BLOCKS[executor]:
            hint = " (--executor msccl-executor-nccl allows 1,024)" \
                if executor == MSCCL and len(tbs) <= MAX_THREAD_BLOCKS[NCCL] else ""
            raise FewerChannels(f"gpu {gpu} would have {counted(len(tbs), 'thread block')}; "
                                f"{executor} allows {MAX_THREAD_BLOCKS[executor]} "
                                f"(MSCCL_MAX_NUM_THREAD_BLOCKS, {TB_SOURCE[executor]}){hint}")
        for index, b in enumerate(tbs):
            b.id = index
        for what in ("send", "recv"):
            count: dict[int, int] = defaultdict(int)
            for b in tbs:
                if getattr(b, what) >= 0:
                    count[b.chan] += 1
            if count and max(count.values()) > MAX_PER_CHANNEL:
                chan = max(count, key=lambda c: count[c])
                raise TooLarge(f"gpu {gpu} would need {counted(count[chan], 'thread block')} "
                                 f"that {what} on channel {chan}; at most {MAX_PER_CHANNEL}")
        nodes = 1 + p + len(tbs) + sum(len(b.steps) for b in tbs)
        if nodes >= MAX_NODES:
            raise FewerChannels(f"gpu {gpu}'s part of the XML has {nodes} elements with the "
                                f"algo and every gpu; the executors' parser keeps "
                                f"{MAX_NODES - 1} (MAX_NODES, msccl_parser.h:23)")
    return per_gpu


def _runs(pairs: np.ndarray) -> np.ndarray:
    """The lengths of the runs of equal values in a sorted array."""
    starts = np.flatnonzero(np.concatenate([[True], pairs[1:] != pairs[:-1]]))
    return np.diff(np.append(starts, len(pairs)))


def _most_peers(pairs: np.ndarray, devices: int) -> int:
    """The most peers one gpu sends to, or receives from (`pairs`: src · devices + dst of
    each (pair, round), sorted)."""
    if not len(pairs):
        return 0
    once = pairs[np.concatenate([[True], pairs[1:] != pairs[:-1]])]
    return max(int(np.bincount(once // devices).max()), int(np.bincount(once % devices).max()))


def _busiest_pair(pairs: np.ndarray) -> int:
    """The most rounds in which one gpu sends to one peer: every such round gives the pair's
    thread block on each channel of its group a step at least."""
    return int(_runs(pairs).max(initial=0))


def _least_elements(pairs: np.ndarray, devices: int, channels: int,
                    p: int) -> tuple[int, int]:
    """(a gpu, a lower bound on its elements in the XML), the largest such bound: the algo,
    every gpu, and per round in which it sends to (or receives from) a peer a step on each
    channel, besides a thread block. Known from the rounds before any step is built, so the
    parser's MAX_NODES refuses a 1,024-rank ring in a second, not after 2.6 GB of XML.
    (Counted by bincount, not a sort: the lowest gpu of the most, as np.unique's argmax.)"""
    if not len(pairs):
        return 0, 1 + p
    counts = (np.bincount(pairs // devices, minlength=devices)
              + np.bincount(pairs % devices, minlength=devices))
    k = int(counts.argmax())
    return k, 1 + p + 1 + int(counts[k]) * channels


def _pair_rounds(schedule: Schedule) -> tuple[np.ndarray, int, int]:
    """Every (sender, receiver, round) of the schedule once, as (src · devices + dst) ·
    rounds + round; `devices`; and the most transfers from one gpu to one peer within one
    round (at least 1)."""
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
    ordered = np.sort(joined(keys))
    runs = _runs(ordered)
    return ordered[np.cumsum(runs) - runs], devices, max(1, int(runs.max(initial=0)))


def _write(name: str, proto: str, chunks: int, executor: str, min_bytes: int, max_bytes: int,
           p: int, kind: str, per_gpu: dict[int, list[Block]], layout: str,
           scratch: bool) -> str:
    nchannels = 1 + max((b.chan for tbs in per_gpu.values() for b in tbs), default=0)
    coll = "reduce_scatter" if kind == "reduce_scatter" and executor == MSCCL else KINDS[kind]
    i_chunks = chunks // p if kind == "allgather" else chunks
    if layout == "inplace":
        o_chunks = {"allgather": chunks, "reduce_scatter": chunks // p}.get(kind, 0)
    else:
        o_chunks = chunks // p if kind == "reduce_scatter" else chunks
    s_chunks = chunks if scratch else 0
    inplace, outofplace = {"inplace": (1, 0), "outofplace": (0, 1), "both": (1, 1)}[layout]
    lines = [f'<algo name="{_escape(name)}" proto="{proto}" nchannels="{nchannels}" '
             f'nchunksperloop="{chunks}" ngpus="{p}" coll="{coll}" inplace="{inplace}" '
             f'outofplace="{outofplace}" minBytes="{min_bytes}" maxBytes="{max_bytes}">']
    for gpu in range(p):
        lines.append(f'  <gpu id="{gpu}" i_chunks="{i_chunks}" o_chunks="{o_chunks}" '
                     f's_chunks="{s_chunks}">')
        for b in per_gpu.get(gpu, []):
            lines.append(f'    <tb id="{b.id}" send="{b.send}" recv="{b.recv}" chan="{b.chan}">')
            for s in b.steps:
                dep = s.deps[0] if s.deps else None
                lines.append(
                    f'      <step s="{s.index}" type="{s.type}" srcbuf="{s.src[0]}" '
                    f'srcoff="{s.src[1]}" dstbuf="{s.dst[0]}" dstoff="{s.dst[1]}" cnt="{s.cnt}" '
                    f'depid="{dep.owner.id if dep else -1}" deps="{dep.index if dep else -1}" '
                    f'hasdep="{int(s.needed)}"/>')
            lines.append("    </tb>")
        lines.append("  </gpu>")
    lines.append("</algo>")
    return "\n".join(lines) + "\n"


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")

"""A schedule's rounds → MSCCL thread blocks and steps, for one choice of channels.

Channels. The k-th transfer from a to b within a round is cut into `pieces` (one per
channel); with `spread` s > 1, round r uses the (r mod s)-th group of channels, so that each
(peer, channel) thread block has a step in every s-th round only (fewer steps per thread
block, more thread blocks); with `banded`, a pair a → b also takes a band of channels by
its distance (b − a) mod p, 32 distances a band, so that no channel has more than 32 thread
blocks sending or receiving on one gpu. A transfer of 72 chunks or more is cut into steps
of at most 71 (`cnt` < MSCCL_MAX_COUNT).

Places. In place, every chunk is `i[c]` (all-gather: `o[c]`). Out of place, a rank reads a
chunk from the input (`i`, at its place there) until the schedule first writes it, and from
where that write put it after: the output `o` (reduce-scatter: `o` for the rank's own part,
scratch `s` for the others); what the schedule never writes of a rank's output is copied
from its input at the start (`cpy`, in a thread block of its own). Dependencies are kept
per logical chunk, whatever buffer it is in.

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

from ..errors import UsageError
from ..model.ir import Schedule

MAX_CNT = 71  # cnt < MSCCL_MAX_COUNT = 72 (msccl_struct.h:19, msccl_parser.cc:577)
BAND = 32  # MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL (msccl_struct.h:17)

Place = tuple[str, int]  # (buffer, offset of the run's first chunk)


@dataclass(eq=False)
class Step:
    type: str  # s | r | rrc | cpy | nop
    src: Place
    dst: Place
    cnt: int
    round: int
    deps: list[Step] = field(default_factory=list)
    tb: Block | None = None
    index: int = -1
    needed: bool = False  # some step depends on it

    @property
    def owner(self) -> Block:
        assert self.tb is not None, "a step joins its thread block as it is made (add)"
        return self.tb


@dataclass(eq=False)
class Block:
    gpu: int
    send: int
    recv: int
    chan: int
    steps: list[Step] = field(default_factory=list)
    id: int = -1


@dataclass(frozen=True)
class Shape:
    """How transfers map onto channels: `pieces` per transfer, `spread` groups of rounds,
    `width` channels per group (the most transfers between one pair in one round × pieces),
    and distance bands."""

    pieces: int
    spread: int
    width: int
    banded: bool

    def channel(self, rnd: int, src: int, dst: int, k: int, j: int, p: int) -> int:
        band = ((dst - src) % p - 1) // BAND if self.banded else 0
        return (band * self.spread + rnd % self.spread) * self.width + k * self.pieces + j


@dataclass(frozen=True)
class _Run:
    op: str
    src: int
    dst: int
    start: int  # logical chunks of schedc's buffer
    land: int
    length: int
    chan: int
    read: Place  # where the sender reads
    local: Place  # where the receiver's own operand is (rrc)
    write: Place  # where the receiver writes


class Places:
    """Where each rank's logical chunk is, in place or out of place (see the module)."""

    def __init__(self, kind: str, p: int, chunks: int, outofplace: bool) -> None:
        self.kind, self.p, self.chunks, self.outofplace = kind, p, chunks, outofplace
        self.part = chunks // p
        self.written: set[tuple[int, int]] = set()
        self.scratch = False

    def current(self, rank: int, c: int) -> Place:
        if not self.outofplace:
            return ("o" if self.kind == "allgather" else "i", c)
        if (rank, c) in self.written:
            return self.target(rank, c)
        if self.kind == "allgather":
            mine = rank * self.part <= c < (rank + 1) * self.part
            return ("i", c - rank * self.part) if mine else ("o", c)
        return ("i", c)

    def target(self, rank: int, c: int) -> Place:
        if not self.outofplace:
            return self.current(rank, c)
        if self.kind == "reduce_scatter":
            if rank * self.part <= c < (rank + 1) * self.part:
                return ("o", c - rank * self.part)
            self.scratch = True
            return ("s", c)
        return ("o", c)

    def outputs(self, rank: int) -> range:
        if self.kind == "reduce_scatter":
            return range(rank * self.part, (rank + 1) * self.part)
        return range(self.chunks)


def build(schedule: Schedule, chunks: int, shape: Shape, places: Places) -> dict[tuple, Block]:
    """The thread blocks, keyed (gpu, send, recv, chan), their steps with dependencies (not
    yet as nops)."""
    coll = schedule.collective
    p = len(coll.ranks)
    slot = {device: k for k, device in enumerate(coll.ranks)}
    blocks: dict[tuple, Block] = {}
    last_write: dict[tuple[int, int], Step] = {}
    reads: dict[tuple[int, int], list[Step]] = defaultdict(list)
    by_round: dict[tuple[int, int], list[Step]] = defaultdict(list)  # (gpu, round) → steps

    def block(gpu: int, send: int, recv: int, chan: int) -> Block:
        key = (gpu, send, recv, chan)
        if key not in blocks:
            blocks[key] = Block(gpu, send, recv, chan)
        return blocks[key]

    def add(b: Block, step: Step) -> Step:
        step.tb = b
        b.steps.append(step)
        by_round[(b.gpu, step.round)].append(step)
        return step

    if places.outofplace:
        _copies_first(schedule, slot, chunks, places, add, block)
    for number, rnd in enumerate(schedule.rounds, 1):
        runs = _runs(schedule, rnd, number - 1, slot, chunks, shape, places, p)
        sends = []
        for run in runs:  # every read of a round comes before its writes
            step = add(block(run.src, run.dst, -1, run.chan),
                       Step("s", run.read, run.read, run.length, number))
            for c in range(run.start, run.start + run.length):
                if (run.src, c) in last_write:
                    step.deps.append(last_write[(run.src, c)])
                reads[(run.src, c)].append(step)
            sends.append(step)
        for run in runs:
            kind = "rrc" if run.op == "reduce" else "r"
            step = add(block(run.dst, -1, run.src, run.chan),
                       Step(kind, run.local if kind == "rrc" else run.write, run.write,
                            run.length, number))
            for c in range(run.land, run.land + run.length):
                step.deps += reads.pop((run.dst, c), [])
                if (run.dst, c) in last_write:
                    step.deps.append(last_write[(run.dst, c)])
                last_write[(run.dst, c)] = step
        for step in sends:  # hold each send in its round
            earlier = by_round.get((step.owner.gpu, number - 1), [])
            if number > 1 and earlier and not any(d.round == number - 1 for d in step.deps) \
                    and not _follows_round(step, number - 1):
                step.deps.append(next((s for s in earlier if s.type == "s"), earlier[0]))
    return blocks


def _copies_first(schedule: Schedule, slot: dict[int, int], chunks: int, places: Places,
                  add, block) -> None:
    """Out of place: the output chunks the schedule never writes, copied from the input."""
    written: set[tuple[int, int]] = set()
    for b in schedule.rounds.batches():
        scale = chunks // b.den
        for k in range(len(b)):
            dst = slot.get(int(b.dst[k]))
            if dst is None:  # outside the collective: `_runs` refuses it, saying so
                continue
            land = int(b.off[k] if b.into_off is None else b.into_off[k]) * scale
            written.update((dst, c) for c in range(land, land + int(b.length[k]) * scale))
    for rank in range(len(slot)):
        missing = [c for c in places.outputs(rank) if (rank, c) not in written]
        for first, length in _contiguous(missing):
            for at in range(0, length, MAX_CNT):
                c, n = first + at, min(MAX_CNT, length - at)
                add(block(rank, -1, -1, 0), Step("cpy", places.current(rank, c),
                                                 places.target(rank, c), n, 0))


def _contiguous(values: list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for v in values:
        if runs and runs[-1][0] + runs[-1][1] == v:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((v, 1))
    return runs


def _runs(schedule: Schedule, rnd, number: int, slot: dict[int, int], chunks: int, shape: Shape,
          places: Places, p: int) -> list[_Run]:
    """A round's transfers in chunks: one piece per channel, each cut where a buffer changes
    (out of place) and into steps of at most MAX_CNT chunks."""
    pieces = []
    count: dict[tuple[int, int], int] = defaultdict(int)
    for b in rnd.batches:
        scale = chunks // b.den
        for k in range(len(b)):
            src, dst = slot.get(int(b.src[k])), slot.get(int(b.dst[k]))
            if src is None or dst is None or src == dst:
                raise UsageError(f"'{schedule.name}' moves data to or from a device outside "
                                 "its collective, or within one: MSCCL XML cannot say it")
            length = int(b.length[k]) * scale // shape.pieces
            start = int(b.off[k]) * scale
            land = start if b.into_off is None else int(b.into_off[k]) * scale
            base = count[(src, dst)]
            count[(src, dst)] += 1
            pieces += [(b.op, src, dst, start + j * length, land + j * length, length,
                        shape.channel(number, src, dst, base, j, p)) for j in range(shape.pieces)]
    if not places.outofplace:
        return _runs_in_place(pieces, places)
    reading = [[places.current(src, start + c) for c in range(length)]
               for _, src, _, start, _, length, _ in pieces]
    runs = []
    for (op, src, dst, start, land, length, chan), read in zip(pieces, reading):
        local = [places.current(dst, land + c) for c in range(length)]
        write = [places.target(dst, land + c) for c in range(length)]
        places.written.update((dst, land + c) for c in range(length))
        first = 0
        for c in range(1, length + 1):
            if c == length or c - first == MAX_CNT or any(
                    seq[c][0] != seq[first][0] or seq[c][1] - seq[first][1] != c - first
                    for seq in (read, local, write)):
                runs.append(_Run(op, src, dst, start + first, land + first, c - first, chan,
                                 read[first], local[first], write[first]))
                first = c
    return runs


def _runs_in_place(pieces: list[tuple], places: Places) -> list[_Run]:
    """`_runs`'s steps in place, without looking at each chunk: every buffer is read and
    written where the chunk's own index says (`Places.current`), so reads, operands and
    writes are contiguous and a piece is cut only every MAX_CNT chunks."""
    runs = []
    for op, src, dst, start, land, length, chan in pieces:
        for first in range(0, length, MAX_CNT):
            runs.append(_Run(op, src, dst, start + first, land + first,
                             min(MAX_CNT, length - first), chan,
                             places.current(src, start + first), places.current(dst, land + first),
                             places.target(dst, land + first)))
    return runs


def _follows_round(step: Step, number: int) -> bool:
    steps = step.owner.steps
    at = steps.index(step)
    return at > 0 and steps[at - 1].round == number


def with_nops(blocks: dict[tuple, Block]) -> int:
    """Every dependency beyond a step's first becomes a nop before it; steps are numbered and
    the steps others wait for marked. The most steps of one thread block."""
    most = 0
    for b in blocks.values():
        steps = []
        for step in b.steps:
            deps = _distinct(d for d in step.deps if d.tb is not b)
            for extra in deps[1:]:
                steps.append(Step("nop", ("i", -1), ("i", -1), 0, step.round, [extra], b))
            step.deps = deps[:1]
            steps.append(step)
        for index, step in enumerate(steps):
            step.index = index
            for d in step.deps:
                d.needed = True
        b.steps = steps
        most = max(most, len(steps))
    return most


def _distinct(steps) -> list[Step]:
    seen: dict[int, Step] = {}
    for s in steps:
        seen.setdefault(id(s), s)
    return sorted(seen.values(), key=lambda s: (s.round, s.owner.gpu, s.owner.send, s.owner.recv,
                                                       s.owner.chan))

"""IR → verdict: does a schedule compute its collective?

The state. The buffer is cut into *segments* at every region boundary the schedule and the
collective use (so every transfer moves whole segments). For every rank and segment the
state is the multiset of *contributions* the rank holds there: rank q's data, or the
uninitialised contents of a rank's buffer, each from some position of the buffer (a `copy
... into` moves data to another position). `copy` replaces what the destination holds;
`reduce` adds to it, so a contribution reduced twice is held twice.

Order within a round. A round is a simultaneous exchange: every transfer reads its source
as it was when the round began, and the writes land when it ends. Reductions into one place
add up in any order; a `copy` into a place that another transfer of the same round also
writes is an error, since which value wins is undefined. A rank may therefore send a region
it receives in the same round (recursive doubling does): the language defines what it sends.

What each collective holds at the start and must hold at the end: the table in
`model.collectives`, whose rule gives the start state and postcondition per cell.

Representation. Per (rank, segment) cell: the total multiplicity (exact, saturating at 2^32),
the displacement of the data (exact; a cell mixing data of different positions is marked
*mixed*, which no postcondition accepts and no transfer can undo except by overwriting) and
a payload, the sum of one row per contribution: the row is a unit vector (exact count
vectors, for small groups) or two random 64-bit numbers, added with wraparound (fingerprints,
for large groups). Equal multisets always give equal payloads, so a failure is never
spurious. A wrong cell whose total multiplicity is right (at most p) passes the fingerprint
check with probability at most 2^-2(64 - floor(log2 p)) — 2^-108 for 1,024 ranks. Work is on
arrays, never per transfer in Python (`state`: rounds that do not depend on each other are
applied together); a symmetric schedule runs one column per orbit (`columns`), and when
that fails, every column runs again; a failing cell is then replayed exactly
(`counterexample.replay`) to explain it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from ... import progress
from ...model.ir import Schedule, random_words
from ...model.symmetry import device_shift
from ...model.topology import Topology
from ...session import Session
from . import repeats
from .columns import reduce_columns
from .counterexample import Conflict, WrongResult, conflict_at, explain
from .dataflow import (
    Items,
    Spec,
    Steps,
    collective_spec,
    step_chunks,
    step_rounds,
)
from .early import PiecesSeen
from .routes import NoRoute, missing_route
from .segments import check_declared, geometry
from .state import MIXED, State, apply_steps

EXACT_NUMBERS = 2**22  # exact count vectors while the state holds at most this many numbers


@dataclass(frozen=True)
class Verdict:
    schedule: Schedule
    method: str  # "exact" | "fingerprint"
    segments: int
    failure: WrongResult | Conflict | NoRoute | None

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def name(self) -> str:
        return self.schedule.name

    @property
    def false_pass_bits(self) -> int | None:
        """-log2 of the chance that a wrong result passed (None when exact)."""
        if self.method != "fingerprint":
            return None
        return 2 * (64 - (len(self.schedule.collective.ranks).bit_length() - 1))


def verdict(session: Session, name: str) -> Verdict:
    """The verdict on one result schedule, computed once per session."""
    topology = session.program.topology
    devices = [d.name for d in topology.devices]

    def compute() -> Verdict:
        check_verifiable(session, (name,))
        schedule = session.schedule(name)
        # A transfer the machine cannot carry is the cause, whatever the data flow would say.
        missing = missing_route(schedule, topology) if session.program.has_machine else None
        if missing is not None:
            return Verdict(schedule, "exact", 0, missing)
        return verify_schedule(schedule, devices,
                               hints=host_hints(topology, schedule.collective.ranks))
    return session.memo("verdict", name, compute)


def check_verifiable(session: Session, names: tuple[str, ...] = ()) -> None:
    """Refuse, before they are compiled, the named result schedules (all by default) whose
    verification their collectives' declarations show too big (`segments.check_declared`):
    a command that verifies before it reports calls this first. Each is then elaborated
    under `early.PiecesSeen`, which refuses as soon as the regions made so far cut the buffer
    into too many pieces (before lowering and timing, and before the rest is elaborated)."""
    for name in session.selected(names, required=False):
        result = session.program.result(name)
        if result.definition is not None:  # (None: an MSCCL algorithm, its IR read whole)
            check_declared(result.collective, result.definition.span)
            session.schedule(name, watch=PiecesSeen(result.collective, result.definition.span))


def host_hints(topology: Topology, ranks: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """The machine's shift of the ranks' hosts to the next host, as a renaming to try when
    looking for a schedule's symmetry (`columns`); none when the hosts differ."""
    hosts = sorted({d.host for d in (topology.devices[r] for r in ranks) if d.host is not None})
    shift = device_shift(topology, hosts) if len(hosts) > 1 else None
    return () if shift is None else (shift,)


def verdicts(session: Session, names: tuple[str, ...] = ()) -> list[Verdict]:
    """The verdicts on the named result schedules (all of them by default), in order."""
    return [verdict(session, name) for name in session.selected(names, required=False)]


def verify_schedule(schedule: Schedule, names: list[str], method: str = "auto",
                    seed: int | None = None, symmetry: bool = True,
                    hints: tuple[np.ndarray, ...] = ()) -> Verdict:
    """Verify one schedule's IR; `names` are the machine's devices, for counterexamples.
    `method`: "auto", "exact" or "fingerprint"; `seed` fixes the fingerprints' random numbers
    (by default they are fresh for every run); `symmetry`: run one column per orbit when the
    schedule is symmetric (`analysis.columns`, which also tries the renamings `hints`), else
    every column."""
    ran = step_rounds(schedule)
    geo = geometry(schedule, len(names), ran)
    p, segments = geo.ranks, geo.segments
    # One row per contribution: rank q's data (q < p) or rank q - p's uninitialised buffer.
    if method == "auto":
        method = "exact" if p * segments * 2 * p <= EXACT_NUMBERS else "fingerprint"
    if method not in ("exact", "fingerprint"):
        raise ValueError(f"unknown verification method {method!r}")
    if method == "exact":
        embed = np.eye(2 * p, dtype=np.uint64)
    else:
        if seed is None:  # fresh for every run: no fixed input can be built to fool them
            seed = int.from_bytes(os.urandom(8), "little")
        embed = random_words(2 * p * 2, seed).reshape(2 * p, 2)
    reduction = reduce_columns(schedule, geo, ran, hints) if symmetry else None
    if reduction is not None:  # one column per orbit stands for the rest (see `columns`)
        spec = collective_spec(schedule, geo, reduction.columns)
        taken = reduction.steps
        outcome = _run(schedule.name, lambda state: repeats.chunks(taken, state, BLOCK_TRANSFERS),
                       len(ran), p, len(reduction.columns), spec, embed)
        if not isinstance(outcome, tuple) and _first_wrong(outcome, spec, embed) is None:
            return Verdict(schedule, method, segments, None)
        # A failure is found again on every column, so that it is reported as ever.
    spec = collective_spec(schedule, geo)
    chunks = step_chunks(ran, geo, BLOCK_TRANSFERS)
    outcome = _run(schedule.name, lambda state: chunks, len(ran), geo.slots, segments, spec,
                   embed)
    if isinstance(outcome, tuple):
        return Verdict(schedule, method, segments, conflict_at(schedule, geo, *outcome, names))
    bad = _first_wrong(outcome, spec, embed)
    failure = None if bad is None else explain(schedule, geo, spec, *bad, names)
    return Verdict(schedule, method, segments, failure)


# ---- running ----------------------------------------------------------------------------------


def _run(name: str, chunks: Callable[[State], Iterable[Steps]], count: int, slots: int,
         segments: int, spec: Spec, embed: np.ndarray) -> State | tuple[int, int, Items]:
    """Run the `count` steps' items, given in chunks of consecutive steps (made as they are
    applied to the state, which `chunks` is given), on a state of slots × segments cells (the
    first `spec.start` rows are the ranks'; in-network switches, after them, hold nothing at
    the start): the final state, or (step, cell, items) of a conflict."""
    state = State.start(slots * segments, embed[spec.start.reshape(-1)])
    ticker = progress.ticker(f"verify {name}: rounds", count)
    index = 0
    for chunk in chunks(state):
        conflict = apply_steps(state, chunk)
        if conflict is not None:
            ticker.finish()
            at, cell = conflict
            return index + at, cell, chunk[at]
        index += len(chunk)
        ticker.advance(len(chunk))
    ticker.finish()
    return state


BLOCK_TRANSFERS = 4096  # transfers whose items are made together (see `items_by_round`):
# small rounds gain from it; a round this large already has array work worth its overhead


def _first_wrong(state: State, spec: Spec, embed: np.ndarray) -> tuple[int, int, int] | None:
    """The first wrong (slot, first segment, end segment), in rank order, else None."""
    p, segments = spec.start.shape
    ranks = p * segments  # the cells of the ranks; in-network switches come after them
    payload = state.payload[:ranks].reshape(p, segments, -1)
    total = state.total[:ranks].reshape(p, segments)
    shift = state.shift[:ranks].reshape(p, segments)
    if spec.everyone:
        expected = embed[:p].sum(axis=0, dtype=np.uint64)
        wrong = (payload != expected).any(axis=-1) | (total != p) | (shift != spec.shift)
    else:
        expected = embed[spec.owner]
        wrong = (payload != expected).any(axis=-1) | (total != 1) | (shift != spec.shift)
    wrong &= spec.required
    flat = np.flatnonzero(wrong)
    if not len(flat):
        return None
    q, first = divmod(int(flat[0]), segments)
    end = first + 1
    # Extend over neighbours that are wrong in the same way (same state, same expectation).
    # A mixed cell's payload does not say from where its data came: it is never merged.
    while (end < segments and wrong[q, end] and total[q, end] == total[q, first]
           and shift[q, end] == shift[q, first] != MIXED
           and np.array_equal(payload[q, end], payload[q, first])
           and spec.owner[q, end] == spec.owner[q, first] and spec.shift[q, end] == spec.shift[q, first]):
        end += 1
    return q, first, end

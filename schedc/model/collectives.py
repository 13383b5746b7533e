"""What each collective means, in one table that every stage asks.

A collective over p ranks (the j-th rank of its group is rank j; V is its buffer) is defined by

- its name in a `.sched` file (`allreduce V over ranks`), and other spellings of it (MSCCL
  XML's `coll="reducescatter"`);
- whether it has a root (`broadcast V over ranks root ranks[0]`);
- its data flow: what each rank holds on each part of the buffer at the start, and what it
  must hold at the end (`analysis.verify` runs a schedule and checks the end state):

| collective     | at the start                      | at the end                                    |
|----------------|-----------------------------------|-----------------------------------------------|
| allreduce      | every rank: its data, everywhere  | every rank, everywhere: every rank's data once|
| reduce_scatter | the same                          | rank j, on part j of p: every rank's data once|
| allgather      | rank j: its data on part j only   | every rank, on part j: rank j's data          |
| broadcast      | the root: its data, everywhere    | every rank, everywhere: the root's data       |
| reduce         | every rank: its data, everywhere  | the root, everywhere: every rank's data once  |
| alltoall       | every rank: its data, everywhere  | rank j, on part i: rank i's part j            |
| alltonext      | every rank: its data, everywhere  | rank j > 0, everywhere: rank j-1's data       |
| alltoprev      | every rank: its data, everywhere  | rank j < p-1, everywhere: rank j+1's data     |

(`alltonext` and `alltoprev` are msccl-tools' `alltonext-forward` and `alltonext-backwards`
custom collectives, examples/mscclang/alltonext_*.py: each rank's buffer goes to the next
rank, or the previous one; the last, or first, rank ends with nothing required.)

- the bytes any schedule of it must move across a cut of its ranks, each way, as a multiple
  of V (`analysis.bound`, the cut-set bound);
- the bytes its ranks must send together (and receive together), where the end-host bound
  applies (`analysis.bound`).

A new collective is one more entry of `KINDS`; the grammar takes any name in its place and
`elaborate` checks it against this table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

import numpy as np


@dataclass(frozen=True, eq=False)
class Cells:
    """A collective's state grid, one cell per (slot, segment): the ranks as slots 0..p-1,
    the buffer cut into segments, each inside one p-th of it (`part`)."""

    ranks: int  # p
    part: np.ndarray  # (p, segments): which p-th of the buffer each segment lies in
    piece: int  # the length of one p-th of the buffer, in the units of segment positions
    root: int | None  # the root's slot

    @cached_property
    def slot(self) -> np.ndarray:
        return np.arange(self.ranks)[:, None]

    @cached_property
    def own(self) -> np.ndarray:
        """Each cell names its own rank."""
        return np.broadcast_to(self.slot, self.part.shape)

    @cached_property
    def everywhere(self) -> np.ndarray:
        return np.ones(self.part.shape, dtype=bool)

    @cached_property
    def zero(self) -> np.ndarray:
        return np.zeros(self.part.shape, dtype=np.int64)

    def root_only(self) -> np.ndarray:
        return np.broadcast_to(self.slot == self.root, self.part.shape)


@dataclass(frozen=True, eq=False)
class Spec:
    """A collective's start state and postcondition, per (slot, segment)."""

    start: np.ndarray  # whose data a cell holds at the start; slot + p: uninitialised
    required: np.ndarray  # bool: the cells the postcondition constrains
    everyone: bool  # the end state: every rank's data once (else `owner`'s data, alone)
    owner: np.ndarray
    shift: np.ndarray  # the expected displacement of `owner`'s data


# (ranks on one side of a cut, all ranks, the root is on that side) -> multiples of V that
# must leave the side and enter it
Crossing = Callable[[int, int, bool], tuple[Fraction, Fraction]]


@dataclass(frozen=True)
class CollectiveKind:
    name: str  # as written in a .sched file and printed
    aliases: tuple[str, ...]  # other spellings accepted for it
    rooted: bool
    reduces: bool  # it ends with every rank's data once, reduced (else each part one owner's)
    flow: Callable[[Cells], Spec]
    must_cross: Crossing
    end_host: Callable[[int], Fraction] | None  # p -> multiple of V; None: no end-host bound
    # What renaming the ranks by a permutation π does to the start state and postcondition
    # (`analysis.columns` verifies symmetric schedules up to it): "any" leaves them as they
    # are; "parts" does when part j of the buffer is renamed part π(j) too; None: neither.
    rotates: str | None = None
    by_parts: bool = True  # its start or end state differs from one p-th of V to another
    # When what crosses a cut depends on which ranks are on the side, not only how many:
    # (the side's slots, p) -> multiples of V out of the side and into it (replaces must_cross).
    crossing_of: Callable[[frozenset[int], int], tuple[Fraction, Fraction]] | None = None


def _reduced(required: Callable[[Cells], np.ndarray]) -> Callable[[Cells], Spec]:
    """Every rank starts with its data everywhere and the `required` cells end with every
    rank's data once."""
    return lambda c: Spec(c.own, required(c), True, c.zero, c.zero)


def _allgather(c: Cells) -> Spec:
    return Spec(np.where(c.part == c.slot, c.own, c.own + c.ranks), c.everywhere, False,
                c.part, c.zero)


def _broadcast(c: Cells) -> Spec:
    return Spec(np.where(c.slot == c.root, c.own, c.own + c.ranks), c.everywhere, False,
                c.zero + c.root, c.zero)


def _alltoall(c: Cells) -> Spec:
    """Rank j's part i ends holding rank i's part j, which starts (j - i)/p further on."""
    return Spec(c.own, c.everywhere, False, c.part, (c.slot - c.part) * c.piece)


def _to_neighbour(step: int) -> Callable[[Cells], Spec]:
    """Rank j ends holding rank j - step's whole buffer where that rank exists."""
    def flow(c: Cells) -> Spec:
        source = c.slot - step
        required = np.broadcast_to((source >= 0) & (source < c.ranks), c.part.shape)
        return Spec(c.own, required, False, np.broadcast_to(np.clip(source, 0, c.ranks - 1),
                                                            c.part.shape), c.zero)
    return flow


def _by_ranks(a: int, p: int, rooted_here: bool) -> tuple[Fraction, Fraction]:
    """A collective whose crossing depends on which ranks a side has (`crossing_of`) has no
    answer by the side's size alone: never a silent zero."""
    raise TypeError("this collective's crossing depends on the side's ranks: use "
                    "analysis.bound.bounds.must_cross")


# msccl-tools' alltonext-forward and -backwards (examples/mscclang/alltonext_*.py): rank j
# ends with rank j - step's buffer.
NEIGHBOUR_STEPS = {"alltonext": 1, "alltoprev": -1}


def _neighbour_crossing(step: int) -> Callable[[frozenset[int], int], tuple[Fraction, Fraction]]:
    """V for each rank of the side whose receiver (rank + step) is not, and back."""
    def crossing(side: frozenset[int], p: int) -> tuple[Fraction, Fraction]:
        out = sum(1 for j in side if 0 <= j + step < p and j + step not in side)
        back = sum(1 for j in side if 0 <= j - step < p and j - step not in side)
        return Fraction(out), Fraction(back)
    return crossing


def _rooted(to_root: bool) -> Crossing:
    """V crosses once: away from the root's side (broadcast) or toward it (reduce)."""
    def crossing(a: int, p: int, rooted_here: bool) -> tuple[Fraction, Fraction]:
        out = rooted_here != to_root
        return (Fraction(1), Fraction(0)) if out else (Fraction(0), Fraction(1))
    return crossing


KINDS: dict[str, CollectiveKind] = {k.name: k for k in (
    # Each rank's V, reduced, must reach the other side each way.
    CollectiveKind("allreduce", (), False, True, _reduced(lambda c: c.everywhere),
                   lambda a, p, _: (Fraction(1), Fraction(1)),
                   # Patarasuk and Yuan (2009): each element needs 2(p-1) one-way messages.
                   lambda p: Fraction(2 * (p - 1)), "any", False),
    # The shares the other side ends with need this side's part, and back.
    CollectiveKind("reduce_scatter", ("reducescatter",), False, True,
                   _reduced(lambda c: c.part == c.slot),
                   lambda a, p, _: (Fraction(p - a, p), Fraction(a, p)), None, "parts"),
    # The other side needs this side's shares.
    CollectiveKind("allgather", (), False, False, _allgather,
                   lambda a, p, _: (Fraction(a, p), Fraction(p - a, p)), None, "parts"),
    CollectiveKind("broadcast", (), True, False, _broadcast, _rooted(to_root=False), None,
                   None, False),
    CollectiveKind("reduce", (), True, True, _reduced(Cells.root_only), _rooted(to_root=True),
                   None, None, False),
    # One p-th of each rank's V for every rank on the other side.
    CollectiveKind("alltoall", (), False, False, _alltoall,
                   # Not "parts": the displacement its data must end with wraps round the buffer.
                   lambda a, p, _: (Fraction(a * (p - a), p), Fraction(a * (p - a), p)), None),
    # msccl-tools' alltonext-forward (alltonext_forward.py:11-39) and -backwards
    # (alltonext_backward.py:11-37): rank j's V to rank j ± 1; what crosses a cut is V per
    # rank whose neighbour is across it (`crossing_of`).
    *(CollectiveKind(name, (), False, False, _to_neighbour(step), _by_ranks, None, None, False,
                     _neighbour_crossing(step)) for name, step in NEIGHBOUR_STEPS.items()),
)}

_NAMED = {name: k for k in KINDS.values() for name in (k.name, *k.aliases)}


def collective_kind(name: str) -> CollectiveKind | None:
    """The collective a name (or an alias) means; None when there is none."""
    return _NAMED.get(name)


def collective_names() -> list[str]:
    """Every name and alias, for "did you mean" messages."""
    return list(_NAMED)

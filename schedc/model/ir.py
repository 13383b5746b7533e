"""The IR: a `Schedule` is a sequence of `Round`s; a round holds `Batch`es of transfers.

A batch is what one transfer statement produced in one round, stored as arrays (one entry
per transfer) so that a million transfers cost a few arrays, not a million objects. Every
batch keeps the span of its statement; `Batch.transfer(k)` materialises one `Transfer`, for
printing and counterexamples. The rounds of a round loop stay a `Series`, the loop's batches
with where each round starts in them, so 10^5 small rounds are not 10^5 objects either:
`Rounds` makes a round of a series only when it is asked for.

Bytes are exact: a transfer moves `length/den` of `size`, where `size` is a linear form in
the size params (`{V: 1}` for the collective's buffer V).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property

import numpy as np

from ..errors import Span
from .scalars import Scalar, rational

# A linear form over size symbols: ((symbol or 1, coefficient), ...), sorted by symbol name.
# Compiled without formulas (`model.scalars`) there are no symbols: ((1, bytes),) or ().
LinearBytes = tuple[tuple[Scalar, Fraction], ...]
Region = tuple[Fraction, Fraction]  # [start, end) of the buffer, as fractions of it


def joined(arrays: list[np.ndarray]) -> np.ndarray:
    """The batches' arrays one after another: the one array itself when there is one (no
    copy: it is read, never written), none an empty int64 array."""
    if len(arrays) == 1:
        return arrays[0]
    return np.concatenate(arrays) if arrays else np.zeros(0, np.int64)


def distinct(values: np.ndarray) -> np.ndarray:
    """np.unique of a 1-d array (its values, sorted, each once) by a sort: np.unique's first
    call imports numpy.ma (11 ms of a compile's start-up), and NumPy 2.4's hashing path takes
    1.0-1.6 s on 2 million integers drawn from 10^6 values, against 0.02 s for this
    (benchmarks/numpy_imports.py)."""
    values = np.sort(values)
    keep = np.ones(len(values), bool)
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]


def random_words(count: int, seed: int = 0) -> np.ndarray:
    """`count` pseudo-random 64-bit words, always the same for a seed: SplitMix64 (Steele,
    Lea and Flood, OOPSLA 2014), the generator that seeds NumPy's own. Not np.random: its
    first use imports numpy.random, 11 ms of a compile's start-up. (NumPy's uint64 arrays
    wrap on overflow, as the generator needs.)"""
    gamma = np.uint64(0x9E3779B97F4A7C15)
    x = np.uint64(seed % 2**64) + np.arange(1, count + 1, dtype=np.uint64) * gamma
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def linear_expr(form: LinearBytes) -> Scalar:
    """The form as a SymPy expression (SymPy imported here: a formula is asked for)."""
    import sympy
    return sympy.Add(*[sympy.Rational(c.numerator, c.denominator) * s for s, c in form])


def linear_value(form: LinearBytes, nominal: dict) -> Fraction:
    """A linear form's exact value at the nominal point (symbol → SymPy rational)."""
    total = Fraction(0)
    for symbol, coeff in form:
        total += coeff * (1 if symbol == 1 else from_rational(nominal[symbol]))
    return total


def from_rational(value: Scalar) -> Fraction:
    found = rational(value)
    assert found is not None, value  # a nominal value is always a rational
    return found


def linear_scale(form: LinearBytes, factor: Fraction) -> LinearBytes:
    return tuple((s, c * factor) for s, c in form if c * factor)


@dataclass(frozen=True, eq=False)
class BufferLayout:
    """Separate input, output and scratch buffers (an imported MSCCL algorithm), laid out
    side by side in one buffer of `chunks` equal chunks per rank. Tables are p × chunks, in
    rank order: `start` whose data a chunk holds at the start (slot q, or q + p for rank q's
    uninitialised memory); `required` the chunks the postcondition constrains; `owner` whose
    data a required chunk must end with (collectives that do not reduce); `shift` the
    expected displacement of that data, in chunks (its position at the start minus its
    position at the end). `names` says, per chunk, what it is (for counterexamples)."""

    chunks: int
    start: np.ndarray
    required: np.ndarray
    owner: np.ndarray
    shift: np.ndarray
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Collective:
    """What a schedule must compute: `allreduce V over ranks`, and so on. `layout` is None
    for one buffer of V bytes per rank (every `.sched` collective)."""

    kind: str
    size: LinearBytes
    ranks: tuple[int, ...]  # device ids, in rank order
    root: int | None
    span: Span = field(compare=False, repr=False)
    layout: BufferLayout | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Transfer:
    op: str  # reduce | copy | send
    src: int
    dst: int
    region: Region | None  # None for `send`
    into: Region | None  # where it lands at dst, when not the same place
    bytes: LinearBytes
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, eq=False)
class Batch:
    op: str
    src: np.ndarray  # device ids, int64
    dst: np.ndarray
    off: np.ndarray  # region start, in units of 1/den of the buffer
    length: np.ndarray  # region length, same units
    den: int
    into_off: np.ndarray | None  # destination region start (same length), if `into` was given
    size: LinearBytes  # bytes of a whole buffer (regions) or of the message (`send`)
    span: Span = field(compare=False, repr=False)
    origin: str = ""  # what wrote it, when a span alone does not say (an XML step)

    def __post_init__(self) -> None:
        # Frozen all the way down: a pass that changes transfers makes a new Batch.
        for array in (self.src, self.dst, self.off, self.length, self.into_off):
            if array is not None:
                array.setflags(write=False)

    def __len__(self) -> int:
        return len(self.src)

    def take(self, index: np.ndarray | slice) -> Batch:
        """The batch of the transfers `index` picks (built directly: a schedule of many
        small rounds makes one per round)."""
        return Batch(self.op, self.src[index], self.dst[index], self.off[index],
                     self.length[index], self.den,
                     None if self.into_off is None else self.into_off[index], self.size,
                     self.span, self.origin)

    def transfer(self, k: int) -> Transfer:
        share = Fraction(int(self.length[k]), self.den)
        start = Fraction(int(self.off[k]), self.den)
        region = None if self.op == "send" else (start, start + share)
        into = None
        if self.into_off is not None:
            landing = Fraction(int(self.into_off[k]), self.den)
            into = (landing, landing + share)
        return Transfer(self.op, int(self.src[k]), int(self.dst[k]), region, into,
                        tuple((s, c * share) for s, c in self.size), self.span)


@dataclass(frozen=True, eq=False)
class Round:
    """Transfers that run together; `local` are phases of copies and reductions within a
    rank (src = dst) that follow them, in order, and cost nothing (an MSCCL `cpy` or `re`)."""

    batches: tuple[Batch, ...]
    local: tuple[tuple[Batch, ...], ...] = ()

    def __len__(self) -> int:  # (asked of every round, many times: kept cheap)
        batches = self.batches
        return len(batches[0].src) if len(batches) == 1 else sum(len(b.src) for b in batches)

    def transfers(self) -> Iterator[Transfer]:
        for b in self.batches:
            for k in range(len(b)):
                yield b.transfer(k)


@dataclass(frozen=True, eq=False)
class Series:
    """Consecutive rounds that one round loop made: its batches, each in round order, and
    `starts` (batches × (rounds + 1)): round k holds batch j's transfers starts[j, k] ..
    starts[j, k + 1]. (A schedule's series have no empty round; see `busy`.)"""

    batches: tuple[Batch, ...]
    starts: np.ndarray

    def __len__(self) -> int:
        return self.starts.shape[1] - 1

    def round(self, k: int) -> Round:
        lo, hi = self.starts[:, k].tolist(), self.starts[:, k + 1].tolist()
        return Round(tuple(b.take(slice(a, z)) for b, a, z in zip(self.batches, lo, hi) if z > a))

    def sizes(self) -> np.ndarray:
        """The transfers of each round."""
        return np.diff(self.starts, axis=1).sum(axis=0)

    def per_round(self) -> list[int] | None:
        """The transfers each batch gives every round, when that is the same in every round
        (else None)."""
        counts = np.diff(self.starts, axis=1)
        if not len(self) or not np.all(counts == counts[:, :1]):
            return None
        return counts[:, 0].tolist()

    @cached_property
    def same_pairs(self) -> bool:
        """Whether every round has the first one's sources and destinations: each batch gives
        every round as many transfers, between the pairs of its first round (a ring's rounds).
        Asked by lowering and by verification, found once."""
        each = self.per_round()
        if each is None:
            return False
        for b, c, at in zip(self.batches, each, self.starts[:, 0].tolist()):
            for x in (b.src, b.dst) if c else ():
                rows = x[at:at + c * len(self)].reshape(len(self), c)
                if not bool((rows == rows[:1]).all()):
                    return False
        return True

    def round_of(self, batch: int, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """The round, counted from `lo`, of each of batch `batch`'s transfers in rounds
        lo .. hi - 1 (all rounds by default)."""
        hi = len(self) if hi is None else hi
        return np.repeat(np.arange(hi - lo), np.diff(self.starts[batch, lo:hi + 1]))

    def busy(self) -> Series:
        """This series without its empty rounds."""
        kept = np.flatnonzero(self.sizes())
        if len(kept) == len(self):
            return self
        # The rounds dropped hold nothing, so round k ends where the next one kept starts.
        return Series(self.batches, self.starts[:, np.append(kept, kept[-1] + 1 if len(kept) else 0)])


def _joined_batch(parts: list[Batch]) -> Batch:
    """One statement's batches of consecutive rounds, one after another."""
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    src, dst, off, length = (np.concatenate([getattr(b, name) for b in parts])
                             for name in ("src", "dst", "off", "length"))
    return Batch(first.op, src, dst, off, length, first.den,
                 None if first.into_off is None else np.concatenate([b.into_off for b in parts]),
                 first.size, first.span, first.origin)


def in_sequence(parts: Sequence[Series]) -> Series:
    """Consecutive series as one, their rounds one after another (the iterations of a loop of
    calls, made a group of iterations at a time). A statement's batches are joined: the k-th
    batch that an op, span, size and denominator make in one part continues the k-th such batch
    of the parts before; a batch a part lacks holds nothing in that part's rounds."""
    if len(parts) == 1:
        return parts[0]
    index: dict[tuple, int] = {}
    rows = []  # per part, the joined batch of each of its batches
    for part in parts:
        seen: dict[tuple, int] = {}
        row = []
        for b in part.batches:
            kind = (b.op, b.span, b.den, b.size, b.into_off is None, b.origin)
            seen[kind] = seen.get(kind, 0) + 1
            row.append(index.setdefault((kind, seen[kind]), len(index)))
        rows.append(row)
    members: list[list[Batch]] = [[] for _ in index]
    starts = np.zeros((len(index), sum(len(p) for p in parts) + 1), dtype=np.int64)
    filled = np.zeros(len(index), dtype=np.int64)  # transfers of each joined batch so far
    at = 0
    for part, row in zip(parts, rows):
        n = len(part)
        starts[:, at:at + n] = filled[:, None]
        for j, k in enumerate(row):
            lo, hi = int(part.starts[j, 0]), int(part.starts[j, n])
            starts[k, at:at + n] += part.starts[j, :n] - lo
            b = part.batches[j]
            members[k].append(b if (lo, hi) == (0, len(b)) else b.take(slice(lo, hi)))
            filled[k] += hi - lo
        at += n
    starts[:, at] = filled
    return Series(tuple(_joined_batch(m) for m in members), starts)


def interleaved(parts: Sequence[Series], count: int) -> Series:
    """Series that each hold `count` iterations' rounds, iteration after iteration (what the
    round loops of a loop's body make when its iterations run as lanes), as one series in the
    order of one iteration at a time: iteration 0's rounds of every part, in order, then
    iteration 1's, and so on. Each part's batches hold nothing in the other parts' rounds."""
    if len(parts) == 1:
        return parts[0]
    per = [len(p) // count for p in parts]
    width = sum(per)
    step, iteration = np.arange(width), np.arange(count)[:, None]
    batches: list[Batch] = []
    starts = []
    offset = 0
    for part, n in zip(parts, per):
        # Round (i, o) of the whole reads the part's round boundary i * n + (o - offset),
        # clipped to the part's rounds of iteration i: outside them it holds nothing.
        local = (iteration * n + np.clip(step - offset, 0, n)).reshape(-1)
        starts.append(part.starts[:, np.append(local, count * n)])
        batches += part.batches
        offset += n
    return Series(tuple(batches), np.concatenate(starts))


Part = tuple[Round, ...] | Series


class Rounds(Sequence[Round]):
    """A schedule's rounds: runs of rounds as such and series, in order. Indexing and
    iterating give `Round`s (a series makes each anew, keeping none); slices are tuples."""

    def __init__(self, parts: Sequence[Part] = ()) -> None:
        self.parts: tuple[Part, ...] = tuple(p for p in parts if len(p))
        self._ends = np.cumsum([len(p) for p in self.parts], dtype=np.int64)

    def __len__(self) -> int:
        return int(self._ends[-1]) if len(self._ends) else 0

    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(self[k] for k in range(*index.indices(len(self))))
        k = int(index) + len(self) if index < 0 else int(index)
        if not 0 <= k < len(self):
            raise IndexError("round index out of range")
        at = int(np.searchsorted(self._ends, k, side="right"))
        part = self.parts[at]
        k -= int(self._ends[at - 1]) if at else 0
        return part.round(k) if isinstance(part, Series) else part[k]

    def __iter__(self) -> Iterator[Round]:
        for part in self.parts:
            if isinstance(part, Series):
                yield from (part.round(k) for k in range(len(part)))
            else:
                yield from part

    def __add__(self, other: Sequence[Round]) -> tuple[Round, ...]:
        return (*self, *other)

    def __radd__(self, other: Sequence[Round]) -> tuple[Round, ...]:
        return (*other, *self)

    def batches(self) -> Iterator[Batch]:
        """Every batch of every round, the batches of a series whole."""
        for part in self.parts:
            yield from part.batches if isinstance(part, Series) else (b for r in part for b in r.batches)

    def sizes(self) -> np.ndarray:
        """The transfers of each round."""
        return joined([p.sizes() if isinstance(p, Series) else
                       np.array([len(r) for r in p], dtype=np.int64) for p in self.parts])


@dataclass(frozen=True, eq=False)
class Schedule:
    name: str
    collective: Collective
    rounds: Rounds  # (given as a tuple of rounds, held as Rounds)
    span: Span = field(compare=False, repr=False)
    prologue: tuple[tuple[Batch, ...], ...] = ()  # local phases before the first round

    def __post_init__(self) -> None:
        if not isinstance(self.rounds, Rounds):
            object.__setattr__(self, "rounds", Rounds((tuple(self.rounds),)))

    @property
    def transfer_count(self) -> int:
        return int(self.rounds.sizes().sum())

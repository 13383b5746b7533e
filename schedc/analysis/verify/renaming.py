"""Does a renaming of the ranks map every round of a schedule onto itself? (For
`columns`, which verifies such a schedule on one column per orbit.)

A renaming is a permutation of the devices (`turn`) that permutes the collective's ranks.
Rounds are read in blocks of rounds alike in shape, as 2-d arrays. In each, every transfer's
renamed image must be a transfer of the same round, the two matched one to one: the entries
rotate onto each other in a fixed order (the whole round, or each batch), or match batch by
batch, or by their endpoints. The permutation τ of the segments is read off the transfers of
one segment (its image moves segment τ(s)); wider transfers are checked against τ once it
is known. Every check is exact.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from ...model.ir import Batch, Round, Rounds, Series, joined
from .dataflow import Geometry

BLOCK = 65536  # transfers checked together: small rounds alike in shape, as one 2-d array
BATCHWISE = 64  # rounds of at most this many batches are first matched batch by batch


@dataclass(frozen=True, eq=False)
class Block:
    """Consecutive rounds whose batches are alike (lengths and operations), their transfers
    as (rounds × n) arrays of endpoints (device ids) and segments [first, end)."""

    start: int  # its first round's index
    src: np.ndarray
    dst: np.ndarray
    first: np.ndarray
    end: np.ndarray
    copy: np.ndarray  # (n,): which transfers are copies
    batch: np.ndarray  # (n,): each transfer's batch in its round, and place in the batch
    transfer: np.ndarray
    sizes: tuple[int, ...]  # the lengths of the batches that move data
    uniform: bool = False  # every round has the first one's endpoints (src, dst: its, repeated)

    @property
    def rounds(self) -> int:
        return len(self.src)

    def endpoints(self) -> Block:
        """The rounds whose endpoints are every round's: this block, or when uniform its
        first round alone."""
        if not self.uniform:
            return self
        return Block(self.start, self.src[:1], self.dst[:1], self.first[:1], self.end[:1],
                     self.copy, self.batch, self.transfer, self.sizes)


def blocks(rounds: Sequence[Round], geo: Geometry) -> Iterator[Block]:
    """The rounds that move data, grouped into blocks of alike rounds: a series whose batches
    give as many transfers to every round straight from its arrays, other rounds made once."""
    parts = rounds.parts if isinstance(rounds, Rounds) else (tuple(rounds),)
    offset = 0
    for part in parts:
        if isinstance(part, Series) and (each := _even(part)):
            yield from _series_blocks(part, each, offset, geo)
        else:
            made = [part.round(k) for k in range(len(part))] if isinstance(part, Series) else part
            yield from _round_blocks(list(made), offset, geo)
        offset += len(part)


def _even(series: Series) -> list[int]:
    """The transfers each batch of a series gives every round, when that is the same in every
    round and some batch moves data (else [])."""
    each = series.per_round() or []
    moving = any(c and b.op != "send" for b, c in zip(series.batches, each))
    return each if moving else []


def _series_blocks(series: Series, each: list[int], offset: int, geo: Geometry) -> Iterator[Block]:
    present = [(j, b, c) for j, (b, c) in enumerate(zip(series.batches, each)) if c]
    # a batch's place k in a round counts the batches that have transfers there, sends too
    moving = [(k, b, c, int(series.starts[j, 0])) for k, (j, b, c) in enumerate(present)
              if b.op != "send"]
    kind = tuple((k, c, b.op) for k, b, c, _ in moving)
    # A ring's rounds all join the same pairs: their endpoints are then checked once.
    head = [b.take(slice(at, at + c)) for _, b, c, at in moving] if series.same_pairs else None
    step = max(1, BLOCK // sum(c for _, _, c, _ in moving))
    for lo in range(0, len(series), step):
        hi = min(lo + step, len(series))
        pieces = [b.take(slice(at + lo * c, at + hi * c)) for _, b, c, at in moving]
        yield _block(offset + lo, pieces, hi - lo, kind, geo, by_batch=True, endpoints=head)


def _round_blocks(rounds: list[Round], offset: int, geo: Geometry) -> Iterator[Block]:
    def shape(rnd: Round) -> tuple:  # (sends move no part of the buffer; empty batches nothing)
        return tuple((k, len(b), b.op) for k, b in enumerate(rnd.batches)
                     if b.op != "send" and len(b))

    index = 0
    while index < len(rounds):
        kind = shape(rounds[index])
        n = sum(length for _, length, _ in kind)
        stop = index + 1
        while (stop < len(rounds) and (stop - index + 1) * n <= BLOCK
               and shape(rounds[stop]) == kind):
            stop += 1
        if n:
            batches = [rounds[r].batches[k] for r in range(index, stop) for k, _, _ in kind]
            yield _block(offset + index, batches, stop - index, kind, geo)
        index = stop


def _block(start: int, batches: list[Batch], count: int, kind: tuple, geo: Geometry,
           by_batch: bool = False, endpoints: list[Batch] | None = None) -> Block:
    """`count` rounds of the shape `kind` from round `start` on: their batches in order, round
    after round, or (`by_batch`) one batch per entry of `kind`, each holding all the rounds.
    `endpoints`: one round's batches, whose sources and destinations every round has."""
    def rows(values: list[np.ndarray], rounds: int = count) -> np.ndarray:
        if by_batch and len(values) > 1:
            return np.hstack([v.reshape(rounds, -1) for v in values])
        return joined(values).reshape(rounds, -1)

    def ends(side: str) -> np.ndarray:
        if endpoints is None:
            return rows([getattr(b, side) for b in batches])
        row = rows([getattr(b, side) for b in endpoints], 1)
        return np.broadcast_to(row, (count, row.shape[1]))  # (repeated, not copied)

    def position(b: Batch, values: np.ndarray) -> np.ndarray:  # in 1/scale of the buffer
        f = geo.scale // b.den
        return values if f == 1 else values * f

    first = geo.segment(rows([position(b, b.off) for b in batches]))
    end = geo.segment(rows([position(b, b.off + b.length) for b in batches]))
    lengths = [length for _, length, _ in kind]
    return Block(start, ends("src"), ends("dst"), first, end,
                 np.repeat([op == "copy" for _, _, op in kind], lengths),
                 np.repeat([k for k, _, _ in kind], lengths),
                 np.concatenate([np.arange(length) for length in lengths]), tuple(lengths),
                 endpoints is not None)


def rotation_of(devices: int, ranks: np.ndarray, g: int) -> np.ndarray:
    """The renaming of each rank as the rank g places further on in the collective's order."""
    turn = np.arange(devices, dtype=np.int64)
    turn[ranks] = np.roll(ranks, -g)
    return turn


def order(turn: np.ndarray, device: int) -> int:
    """How many renamings bring `device` back to itself."""
    count, at = 1, int(turn[device])
    while at != device:
        count, at = count + 1, int(turn[at])
    return count


class Symmetry:
    """Checks blocks of rounds against a renaming of the ranks (`turn`: device → device),
    building τ from the one-segment transfers and keeping the wider ones to check once τ is
    known."""

    def __init__(self, geo: Geometry, turn: np.ndarray) -> None:
        self.geo, self.turn = geo, turn
        self.tau = np.full(geo.segments, -1, dtype=np.int64)
        self.unknown = geo.segments  # segments whose image τ has not been told yet
        self.single = False  # every transfer of the last block checked moves one segment
        self.last_match: np.ndarray | None = None  # the last entry correspondence found
        self.ranges: list[np.ndarray] = []  # rows (first, end, image's first, image's end)

    def known(self) -> bool:
        return not self.unknown

    def holds(self, bl: Block) -> bool:
        """Every round's transfers, renamed, are the same round's transfers: matched by the
        first round's correspondence when it serves every round, else round by round."""
        ends = bl.endpoints()
        src2, dst2 = self.turn[ends.src], self.turn[ends.dst]
        width = bl.end - bl.first
        single = width == 1
        self.single = every = bool(single.all())
        turn = _rotation(ends, src2, dst2)
        if turn is not None and every and not self.unknown:
            # The common case, without copies: entry i's image is entry i + k of its window
            # (endpoints and operations checked by `_rotation`), one segment each, and τ
            # already says where each segment goes.
            return _rotated(bl.first, self.tau[bl.first], *turn)
        if turn is not None:
            if not every and not _rotated(width, width, *turn):
                return False
            first2 = _rolled(bl.first, *turn)
        else:
            matched = self._matches(ends, src2, dst2)
            if matched is None:
                return False
            def moved(x: np.ndarray) -> np.ndarray:  # x of each entry's image
                return x[:, matched] if matched.ndim == 1 else \
                    np.take_along_axis(x, matched, axis=1)

            first2 = moved(bl.first)
            if not np.array_equal(width, moved(width)):
                return False
        at, to = (bl.first, first2) if every else (bl.first[single], first2[single])
        if self.unknown:
            known = self.tau[at]
            if np.any((known >= 0) & (known != to)):
                return False
            self.tau[at] = to
            self.unknown = int(np.count_nonzero(self.tau < 0))
        if not np.array_equal(self.tau[at], to):  # two images of one segment
            return False
        if not every:
            wide = width > 1  # (a transfer of no segment has no items, nor has its image)
            self.ranges.append(np.stack([bl.first[wide], bl.end[wide], first2[wide],
                                         first2[wide] + width[wide]]))
        return True

    def _matches(self, bl: Block, src2: np.ndarray, dst2: np.ndarray) -> np.ndarray | None:
        """Which entry is each entry's image: one answer (n,) for every round of the block when
        the first round's serves the others, else one row per round."""
        def match(r: int) -> np.ndarray | None:
            found = _batchwise(bl, src2, dst2, r) if len(bl.sizes) <= BATCHWISE else None
            return _one_to_one(bl, src2, dst2, r, len(self.turn)) if found is None else found

        last = self.last_match  # the previous block's answer serves rounds alike in shape
        first: np.ndarray | None = last
        if last is None or len(last) != bl.src.shape[1] or \
                not np.array_equal(bl.copy[last], bl.copy) or \
                not np.array_equal(bl.src[0, last], src2[0]) or \
                not np.array_equal(bl.dst[0, last], dst2[0]):
            first = match(0)
        if first is None:
            return None
        self.last_match = first
        alike = ((bl.src[:, first] == src2) & (bl.dst[:, first] == dst2)).all(axis=1)
        if alike.all():
            return first
        matched = np.tile(first, (bl.rounds, 1))
        for r in np.flatnonzero(~alike):
            row = match(int(r))
            if row is None:
                return None
            matched[r] = row
        return matched

    def permutation(self) -> np.ndarray | None:
        """τ, the identity where no transfer said otherwise; None unless a permutation."""
        tau = np.where(self.tau >= 0, self.tau, np.arange(len(self.tau)))
        seen = np.zeros(len(tau), dtype=bool)
        seen[tau] = True
        return tau if seen.all() else None

    def ranges_hold(self, tau: np.ndarray) -> bool:
        """τ maps each wider transfer's segments onto its image's: as τ is one to one, it
        does when the least and the greatest of τ over the range are the image's ends."""
        if not self.ranges:
            return True
        first, end, first2, end2 = np.concatenate(self.ranges, axis=1)
        low, high = RangeExtremes(tau).query(first, end)
        return bool(np.array_equal(low, first2) and np.array_equal(high, end2 - 1))


def _rotation(bl: Block, src2: np.ndarray, dst2: np.ndarray) -> tuple[int, int] | None:
    """(k, w) when, in every round of the block, entry i's renamed image is the entry k
    places further on in its window of w entries: the whole round (w = n: the order a loop
    over the ranks writes them in) or, when the batches are all as long, each batch (the
    rings of a `parallel for`)."""
    n = bl.src.shape[1]
    windows = [n] + ([bl.sizes[0]] if len(set(bl.sizes)) == 1 < len(bl.sizes) else [])
    for w in windows:
        hits = np.flatnonzero((bl.src[0, :w] == src2[0, 0]) & (bl.dst[0, :w] == dst2[0, 0]))
        if len(hits) and all(_rotated(x, y, int(hits[0]), w) for x, y in (
                (bl.src, src2), (bl.dst, dst2), (bl.copy[None], bl.copy[None]))):
            return int(hits[0]), w
    return None


def _rotated(x: np.ndarray, y: np.ndarray, k: int, w: int) -> bool:
    """In every window of w entries of each row, x[(i + k) mod w] == y[i]."""
    x, y = x.reshape(len(x), -1, w), y.reshape(len(y), -1, w)
    return bool((x[..., k:] == y[..., :w - k]).all() and (x[..., :k] == y[..., w - k:]).all())


def _rolled(x: np.ndarray, k: int, w: int) -> np.ndarray:
    """x[(i + k) mod w] in every window of w entries of each row: each entry's image's."""
    return np.roll(x.reshape(len(x), -1, w), -k, axis=2).reshape(x.shape)


def _batchwise(bl: Block, src2: np.ndarray, dst2: np.ndarray, r: int) -> np.ndarray | None:
    """For round r of the block, when each batch's image is one batch, rotated: the batches
    of a parallel loop (`parallel for i` of rings) map onto each other so."""
    src, dst = bl.src[r], bl.dst[r]
    ends = np.cumsum((0,) + bl.sizes)
    match = np.empty(len(src), dtype=np.int64)
    for lo, hi in zip(ends[:-1], ends[1:]):
        hits = np.flatnonzero((src == src2[r, lo]) & (dst == dst2[r, lo]))
        if not len(hits):
            return None
        into = int(np.searchsorted(ends, hits[0], side="right")) - 1
        start, length = int(ends[into]), int(ends[into + 1] - ends[into])
        if length != hi - lo:
            return None
        match[lo:hi] = start + (np.arange(length) + (int(hits[0]) - start)) % length
    seen = np.zeros(len(match), dtype=bool)
    seen[match] = True  # one to one: two batches may not have their images in one
    if (seen.all() and np.array_equal(src[match], src2[r]) and np.array_equal(dst[match], dst2[r])
            and np.array_equal(bl.copy[match], bl.copy)):
        return match
    return None


def _one_to_one(bl: Block, src2: np.ndarray, dst2: np.ndarray, r: int,
                devices: int) -> np.ndarray | None:
    """For round r of the block, the entry with each entry's rotated endpoints (and the same
    operation), when no two entries share them."""
    key = (bl.src[r] * devices + bl.dst[r]) * 2 + bl.copy
    image = (src2[r] * devices + dst2[r]) * 2 + bl.copy
    order = np.argsort(key, kind="stable")
    ordered = key[order]
    if len(ordered) > 1 and not np.all(ordered[1:] != ordered[:-1]):
        return None
    where = np.searchsorted(ordered, image).clip(max=len(ordered) - 1)
    if not np.array_equal(ordered[where], image):
        return None
    return order[where]


class RangeExtremes:
    """Least and greatest value over any range of an array, in O(1) per range (a sparse
    table of the extremes over every power-of-two window)."""

    def __init__(self, values: np.ndarray) -> None:
        self.low, self.high = [values], [values]
        width = 1
        while 2 * width <= len(values):
            lo, hi = self.low[-1], self.high[-1]
            self.low.append(np.minimum(lo[:-width], lo[width:]))
            self.high.append(np.maximum(hi[:-width], hi[width:]))
            width *= 2

    def query(self, first: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        level = np.frexp(end - first)[1] - 1  # the largest power of two within the range
        low, high = np.empty(len(first), np.int64), np.empty(len(first), np.int64)
        for k in range(int(level.max(initial=0)) + 1):  # (not np.unique: it imports numpy.ma)
            at = level == k
            if not at.any():
                continue
            a, b = first[at], end[at] - (1 << int(k))
            low[at] = np.minimum(self.low[k][a], self.low[k][b])
            high[at] = np.maximum(self.high[k][a], self.high[k][b])
        return low, high

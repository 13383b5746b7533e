"""IR → loads: the bytes each round puts on each directed resource, exactly.

Rounds that move the same bytes between the same pairs (a ring's 2(k-1) rounds differ only
in *which* part moves) have the same loads, so each distinct round *shape* is lowered once.
Every distinct (source, destination) pair is routed once; transfers are expanded along their
routes and summed per (shape, resource) with NumPy. Bytes are integer numerators over one
denominator per size symbol, so 1/16 of V stays exactly 1/16 of V. A route that splits over
several paths (equal-cost multipath) is a list of (resource, share) entries: shares are
integers over one common denominator, which the size symbols' denominators take on. When the machine declares
latencies, each shape also records the largest route latency among its transfers.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from math import lcm

import numpy as np

from ..model.ir import LinearBytes, Round, Schedule, Series, distinct, joined, random_words
from ..model.scalars import Scalar, is_plain, largest, to_sympy
from ..model.topology import Topology

_INT64_SAFE = 2**62


@dataclass(frozen=True, eq=False)
class Loads:
    """Entry k loads `resource[k]` with Σ_b amount[k, b] / denominators[b] · basis[b] bytes in
    every round of shape `shape[k]`; `shape_of[r]` is the shape of round r. Entries are sorted
    by shape."""

    basis: tuple[Scalar, ...]  # size symbols (or 1)
    denominators: tuple[int, ...]
    shape_of: np.ndarray
    shape: np.ndarray
    resource: np.ndarray
    amount: np.ndarray  # entries × len(basis); int64, or Python ints (object) if they could overflow
    shape_cross: np.ndarray  # bool per shape: some transfer crosses between hosts
    bytes_cross: LinearBytes
    bytes_logical: LinearBytes
    shape_latency: tuple[Scalar, ...]  # per shape: its largest route latency (0 if none)

    @property
    def rounds(self) -> int:
        return len(self.shape_of)

    @property
    def cross_rounds(self) -> np.ndarray:
        return self.shape_cross[self.shape_of]

    def form(self, amounts) -> LinearBytes:
        """One entry's amounts as a linear form of bytes."""
        return tuple((s, Fraction(int(a), d))
                     for s, a, d in zip(self.basis, amounts, self.denominators) if a)

    def entries(self, shape: int) -> range:
        lo, hi = np.searchsorted(self.shape, [shape, shape + 1])
        return range(int(lo), int(hi))


def lower(schedule: Schedule, topology: Topology) -> Loads:
    shape_of, representatives = _shapes(schedule)
    shown = [schedule.rounds[r] for r in representatives]
    batches = [(s, b) for s, rnd in enumerate(shown) for b in rnd.batches]
    basis = tuple(sorted({sym for _, b in batches for sym, _ in b.size}, key=str))
    denominators = tuple(lcm(*[b.den * c.denominator for _, b in batches
                               for s2, c in b.size if s2 == s] or [1]) for s in basis)
    counts = np.array([len(b) for _, b in batches], dtype=np.int64)
    shape_of_transfer = np.repeat(np.array([s for s, _ in batches], dtype=np.int64), counts)
    batch_of = np.repeat(np.arange(len(batches)), counts)
    src = joined([b.src for _, b in batches])
    dst = joined([b.dst for _, b in batches])

    # Integer weight of each transfer per size symbol: bytes = weight / denominator · symbol.
    multipliers = [[_multiplier(b, s, d) for _, b in batches] for s, d in zip(basis, denominators)]
    per_round = max((len(rnd) for rnd in shown), default=1)
    largest = max((abs(m) * int(b.length.max(initial=0)) for column in multipliers
                   for m, (_, b) in zip(column, batches)), default=0)
    dtype = np.int64 if largest * per_round * 4 < _INT64_SAFE else object
    lengths = joined([b.length for _, b in batches]).astype(dtype)
    weights = np.stack([lengths * np.repeat(np.array(col, dtype=dtype), counts)
                        for col in multipliers], axis=1) if basis else np.zeros((len(src), 0), dtype)

    # Route each distinct pair once, then expand transfers along their routes.
    n = len(topology.devices)
    pairs, first, inverse = np.unique(src * n + dst, return_index=True, return_inverse=True)
    routes = [topology.route_resources(int(p // n), int(p % n), batches[batch_of[f]][1].span)
              for p, f in zip(pairs, first)]
    route_len = np.array([len(r) for r in routes], dtype=np.int64)
    route_flat = np.array([x for r in routes for x, _ in r], dtype=np.int64)
    scale = lcm(*[share.denominator for r in routes for _, share in r])
    per_transfer = route_len[inverse]
    transfer_of = np.repeat(np.arange(len(src)), per_transfer)
    starts = np.repeat((np.cumsum(route_len) - route_len)[inverse] - (np.cumsum(per_transfer) - per_transfer),
                       per_transfer)
    entry = starts + np.arange(len(transfer_of))
    entry_resource = route_flat[entry]
    entry_weights = weights[transfer_of]
    if scale > 1:  # shares: integers over `scale`, which the bytes' denominators take on
        if dtype is not object and largest * per_round * 4 * scale >= _INT64_SAFE:
            entry_weights = entry_weights.astype(object)
        route_share = np.array([share.numerator * (scale // share.denominator)
                                for r in routes for _, share in r],
                               dtype=entry_weights.dtype)
        entry_weights = entry_weights * route_share[entry][:, None]
    shapes, resources, amounts = _sum_per_key(shape_of_transfer[transfer_of], entry_resource,
                                              entry_weights, len(topology.resources))

    cross = topology.host_key[src] != topology.host_key[dst]
    shape_cross = np.zeros(len(representatives), dtype=bool)
    shape_cross[shape_of_transfer[cross]] = True
    repeats = np.bincount(shape_of, minlength=len(representatives))[shape_of_transfer]
    latency = _shape_latency(topology, pairs, [batches[batch_of[f]][1].span for f in first],
                             inverse.reshape(-1), shape_of_transfer, len(representatives))
    return Loads(basis, tuple(d * scale for d in denominators), shape_of, shapes, resources,
                 amounts, shape_cross, _total(basis, denominators, weights, repeats * cross),
                 _total(basis, denominators, weights, repeats), latency)


def merged(loads: Loads) -> Loads:
    """All rounds as one round carrying the whole schedule's load on every resource, without
    latency: its cost is max_e Σ_r V[r,e]/B[e], the time if rounds overlapped perfectly."""
    if not loads.rounds:
        return loads
    counts = np.bincount(loads.shape_of, minlength=len(loads.shape_cross))[loads.shape]
    amount = loads.amount
    if amount.dtype != object and (not amount.size or
                                   int(np.abs(amount).max()) * loads.rounds < _INT64_SAFE):
        weighted = amount * counts[:, None]
    else:
        weighted = amount.astype(object) * counts.astype(object)[:, None]
    shapes, resources, total = _sum_per_key(np.zeros(len(loads.resource), dtype=np.int64),
                                            loads.resource, weighted, int(loads.resource.max(initial=0)) + 1)
    return replace(loads, shape_of=np.zeros(1 if loads.rounds else 0, dtype=np.int64), shape=shapes,
                   resource=resources, amount=total, shape_cross=np.array([bool(loads.shape_cross.any())]),
                   shape_latency=(_zero_like(loads.shape_latency[0]),))


def _shapes(schedule: Schedule) -> tuple[np.ndarray, list[int]]:
    """Number the distinct round shapes (who sends how many bytes to whom) in order of appearance."""
    index: dict[tuple, int] = {}
    representatives: list[int] = []
    shapes: list[np.ndarray] = []
    sizes: dict[LinearBytes, int] = {}  # each distinct size as a number, quicker to hash
    numbered: dict[int, int] = {}  # ... looked up by the identity of the size object

    def number(size: LinearBytes) -> int:
        if id(size) not in numbered:  # (the schedule keeps every size alive meanwhile)
            numbered[id(size)] = sizes.setdefault(size, len(sizes))
        return numbered[id(size)]

    def shape(rnd: Round, r: int) -> int:
        key = tuple((b.src.tobytes(), b.dst.tobytes(), b.length.tobytes(), b.den, number(b.size))
                    for b in rnd.batches)
        found = index.setdefault(key, len(index))
        if found == len(representatives):
            representatives.append(r)
        return found

    first = 0
    for part in schedule.rounds.parts:
        alike = _alike(part) if isinstance(part, Series) else None
        if isinstance(part, Series) and alike is not None:
            # the series' distinct rounds, in order of appearance, found by array work
            where, which = alike
            found = np.array([shape(part.round(int(k)), first + int(k)) for k in where],
                             dtype=np.int64)
            shapes.append(found[which])
        else:
            rounds = (part.round(k) for k in range(len(part))) if isinstance(part, Series) else part
            shapes.append(np.array([shape(rnd, first + k) for k, rnd in enumerate(rounds)],
                                   dtype=np.int64))
        first += len(part)
    return joined(shapes), representatives


def _alike(series: Series) -> tuple[np.ndarray, np.ndarray] | None:
    """Where a series' distinct rounds first appear and which of them each round is, when
    every round takes as many transfers from each batch (else None): rounds compared as rows
    of their sources, destinations and lengths, a few rows at a time."""
    each = series.per_round()
    if each is None:
        return None
    n = len(series)
    views = [x.reshape(n, c) for b, c in zip(series.batches, each) if c
             for x in (b.src, b.dst, b.length)]
    if not views:
        return None
    step = max(1, ROWS_AT_ONCE // sum(v.shape[1] for v in views))
    blocks = [slice(lo, min(lo + step, n)) for lo in range(0, n, step)]

    def rows(index: slice | np.ndarray) -> np.ndarray:
        return np.hstack([v[index] for v in views])

    lengths = views[2::3]  # (each batch's src, dst and length, in turn)
    if series.same_pairs and all(np.array_equal(v, np.broadcast_to(v[:1], v.shape))
                                 for v in lengths):  # (a ring's rounds: one shape)
        return np.zeros(1, np.int64), np.zeros(n, np.int64)
    first = rows(slice(0, 1))
    # Rows compared by a hash first (sorting 10^5 rows as rows is slow), which must then
    # have put equal rows together, and only them.
    weights = row_weights(first.shape[1])
    keys = np.concatenate([(rows(b).astype(np.uint64) * weights).sum(axis=1, dtype=np.uint64)
                           for b in blocks])
    _, where, which = np.unique(keys, return_index=True, return_inverse=True)
    which = which.reshape(-1)
    if not all(np.array_equal(rows(b), rows(where[which[b]])) for b in blocks):
        return None  # a collision: let the rounds be compared one by one
    order = np.argsort(where)  # distinct rounds numbered in order of appearance
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return where[order], rank[which]


def _zero_like(value: Scalar) -> Scalar:
    """0 of the kind `value` is: SymPy's, or the number (compiled without formulas)."""
    return 0 if is_plain(value) else to_sympy(0)


ROWS_AT_ONCE = 1 << 20  # entries of the rows compared together, to bound the memory it takes


def row_weights(width: int) -> np.ndarray:
    """The weights of a row's hash (random, and always the same)."""
    return random_words(width)


def _shape_latency(topology: Topology, pairs: np.ndarray, spans: list, pair_of_transfer: np.ndarray,
                   shape_of_transfer: np.ndarray, n_shapes: int) -> tuple[Scalar, ...]:
    """Per shape, the largest route latency of its transfers: a round waits for its slowest
    first byte. Distinct latency expressions are numbered so that NumPy can pair them with shapes."""
    if not topology.has_latency:
        return (topology.zero,) * n_shapes
    n = len(topology.devices)
    index: dict[Scalar, int] = {}
    of_pair = np.array([index.setdefault(topology.route_latency(int(p // n), int(p % n), span), len(index))
                        for p, span in zip(pairs, spans)], dtype=np.int64)
    exprs = list(index)
    found: list[list[Scalar]] = [[] for _ in range(n_shapes)]
    for key in distinct(shape_of_transfer * len(exprs) + of_pair[pair_of_transfer]).tolist():
        found[key // len(exprs)].append(exprs[key % len(exprs)])
    return tuple(largest(*f) if f else topology.zero for f in found)


def _multiplier(batch, symbol, denominator: int) -> int:
    c = dict(batch.size).get(symbol, Fraction(0))
    return c.numerator * (denominator // (batch.den * c.denominator)) if c else 0


def _sum_per_key(shapes, resources, weights, n_resources: int):
    """Sum weights per (shape, resource); the result is sorted by shape, then resource."""
    keys = shapes * n_resources + resources
    unique, inverse = np.unique(keys, return_inverse=True)
    sums = np.zeros((len(unique), weights.shape[1]), dtype=weights.dtype)
    np.add.at(sums, inverse.reshape(-1), weights)
    return unique // n_resources, unique % n_resources, sums


def _total(basis, denominators, weights: np.ndarray, repeats: np.ndarray) -> LinearBytes:
    """Σ over transfers of weight × repeats, per size symbol, exactly."""
    if not weights.size:
        return ()
    if weights.dtype != object and int(np.abs(weights).max()) * int(repeats.sum()) < _INT64_SAFE:
        sums = (weights * repeats[:, None]).sum(axis=0)
    else:
        sums = (weights.astype(object) * repeats.astype(object)[:, None]).sum(axis=0)
    return tuple((s, Fraction(int(t), d)) for s, t, d in zip(basis, sums, denominators) if t)

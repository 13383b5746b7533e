"""Routes: which links a transfer crosses, and what share of its bytes each one carries.

The rules, in the order they apply to a transfer from A to B:

1. **Pinned.** A `route A -> B via X, Y` statement fixes the devices of the route. Where
   several parallel links join two consecutive devices, the bytes split evenly over them
   (under `routing first`: the first declared carries them all).
2. **Host-local.** When A and B belong to the same host, only routes whose every device
   belongs to that host are considered, as long as one exists (NCCL never sends traffic
   between two GPUs of a host over the network when NVLink or PCIe joins them). Otherwise,
   and for every other pair, all routes are.
   **By link class.** Among a host's routes, those whose every link is of a better class
   come first, as NCCL ranks a path by its worst link (`src/graph/paths.cc`,
   ncclTopoSetPaths: a path's type is the max of its links' types, and a better type wins
   before bandwidth and hop count; PATH_NVL < PATH_PIX < PATH_PXB < PATH_PHB < PATH_SYS).
   `class_tiers` gives the sets of classes tried in turn; the machine's `routing prefer`
   orders them (default: nvlink, then pcie, then every other class).
3. **Fewest links.** Among those routes, the ones with the fewest links. GPUs are endpoints:
   a route passes through one only if it is declared `forwards`.
4. **Equal-cost multipath** (the default, `routing ecmp`). When several routes are equally
   short, the bytes split *hop by hop*: at every device, the bytes that reach it split evenly
   over its out-links that still lie on a shortest route. That is the expected load of
   per-flow hashing, where every switch hashes each flow onto one of its equal-cost next hops
   independently, and it is the fluid model of ECMP. It is not an even split over whole
   routes: from A with next hops X (one shortest route on from X) and Y (two on from Y), X
   carries 1/2 of the bytes, not 1/3. In a fat tree the two agree (every device on a shortest
   route has the same fan-out); in a torus they do not: from (0, 0) to (2, 1) on a large
   one, the first hop along the rows carries 1/2 by hashing, 2/3 by whole routes. `routing first` keeps one route
   instead: from the source on, each step takes the first-declared link that still lies on a
   shortest route.

Shares are exact fractions. A route is computed once per (source, destination) pair.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from math import lcm

POLICIES = ("ecmp", "first")
# Link classes routes inside a host prefer, best first; every class not listed comes after.
DEFAULT_PREFERENCE = ("nvlink", "pcie")


def class_tiers(preference: tuple[str, ...], present: set[str]) -> tuple[frozenset[str] | None, ...]:
    """The sets of link classes a route inside a host may use, tried in turn until one
    joins the pair: the best class, then it and the next, ..., and last every class (None).
    Classes the machine has no link of are skipped (they would repeat a tier).

    >>> [sorted(t) if t else t for t in class_tiers(("nvlink", "pcie"), {"nvlink", "pcie", "nic"})]
    [['nvlink'], ['nvlink', 'pcie'], None]
    >>> class_tiers(("nvlink", "pcie"), {"pcie", "uplink"})
    (frozenset({'pcie'}), None)
    >>> class_tiers((), {"nvlink", "pcie"})
    (None,)
    """
    tiers: list[frozenset[str] | None] = []
    allowed: set[str] = set()
    for cls in preference:
        if cls in present and cls not in allowed:
            allowed.add(cls)
            if allowed != present:
                tiers.append(frozenset(allowed))
    tiers.append(None)
    return tuple(tiers)


@dataclass(frozen=True)
class Route:
    """The hops from `src` to `dst` and the share of the bytes each carries.

    `steps` lists, from the source on, every device the bytes pass and the hops (indices into
    `Topology.hops`) its share splits over evenly; `shares` gives each hop's share of all the
    bytes. A route with one path has shares of 1 only."""

    src: int
    dst: int
    steps: tuple[tuple[int, tuple[int, ...]], ...]
    shares: tuple[tuple[int, Fraction], ...]
    pinned: bool = False

    @property
    def unique(self) -> bool:
        return all(len(hops) == 1 for _, hops in self.steps)

    def path_count(self, hop_dst: Callable[[int], int]) -> int:
        """How many distinct paths of hops the bytes take."""
        counts = {self.dst: 1}
        for node, hops in reversed(self.steps):
            counts[node] = sum(counts[hop_dst(h)] for h in hops)
        return counts[self.src]

    def paths(self, hop_dst: Callable[[int], int]) -> Iterator[tuple[tuple[int, ...], Fraction]]:
        """Each path (its hops) with the share of the bytes it carries: under per-hop
        splitting, the product of 1/fan-out over the devices it passes. The shares add up
        to 1, and a hop's share is the sum of the shares of the paths through it."""
        split = dict(self.steps)

        def walk(node: int, hops: tuple[int, ...], share: Fraction):
            if node == self.dst:
                yield hops, share
                return
            out = split[node]
            for h in out:
                yield from walk(hop_dst(h), (*hops, h), share / len(out))

        yield from walk(self.src, (), Fraction(1))


def shortest(src: int, dst: int, next_hops: Callable[[int, int | None], list[tuple[int, int]]],
             remaining: dict[int, int], first: bool) -> Route | None:
    """The shortest routes from src to dst: `next_hops(u, left)` lists (hop, next device) in
    declaration order, every out-link of u (left None) or at least those that can lie on a
    route of `left` more hops; `remaining[v]` is the number of hops from v to dst through
    devices that may forward (missing: dst is out of reach from v). None if there is no route."""
    out = [remaining[v] for _, v in next_hops(src, None) if v in remaining]
    if not out:
        return None
    left = min(out) + 1
    # Shares in integers over one denominator per level (a Fraction per hop, made once).
    level: dict[int, int] = {src: 1}
    den = 1
    steps: list[tuple[int, tuple[int, ...]]] = []
    shares: dict[int, Fraction] = {}
    while left:
        fanned = []
        for node in level:
            hops = [(h, v) for h, v in next_hops(node, left) if remaining.get(v) == left - 1]
            fanned.append(hops[:1] if first else hops)
        scale = lcm(*(len(hops) for hops in fanned))
        den *= scale
        following: dict[int, int] = {}
        for (node, share), hops in zip(level.items(), fanned):
            steps.append((node, tuple(h for h, _ in hops)))
            part = share * (scale // len(hops))
            fraction = _fraction(part, den)
            for h, v in hops:
                shares[h] = fraction
                following[v] = following.get(v, 0) + part
        level, left = following, left - 1
    return Route(src, dst, tuple(steps), tuple(shares.items()))


@lru_cache(maxsize=4096)
def _fraction(numerator: int, denominator: int) -> Fraction:
    """Shares repeat (1/2, 1/8, ...): make each Fraction once."""
    return Fraction(numerator, denominator)


def pinned(src: int, dst: int, legs: tuple[tuple[int, ...], ...], devices: tuple[int, ...],
           first: bool) -> Route:
    """A pinned route through `devices` (source and destination included); `legs[k]` are the
    parallel hops from devices[k] to devices[k+1], in declaration order."""
    steps = tuple((node, hops[:1] if first else hops) for node, hops in zip(devices, legs))
    shares = tuple((h, Fraction(1, len(hops))) for _, hops in steps for h in hops)
    return Route(src, dst, steps, shares, pinned=True)

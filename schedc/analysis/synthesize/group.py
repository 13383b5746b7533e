"""The group of the machine's shifts, as the packing and the path search use it.

The packing over schedc's routes (`route_orbits`, `pricing_symmetry`) keeps a shift only if
it maps every route between ranks onto a route: it needs the group on rank indices and the
resources' orbits. The path search (`machine_group`) prices any path, so it needs less of a
shift: an automorphism of the machine (`model.symmetry` checked it hop by hop) maps every
path onto a path loading the image resources alike. It needs one thing more: no element but
the identity may fix a rank (the group acts freely on the ranks). Then an ordered pair of
ranks has exactly one element carrying it to its orbit's representative pair, so one path
chosen for the representative gives each pair of the orbit exactly one path, as a `route`
pin must. Without shifts (or with one that fixes a rank) the group is the identity alone, and
every pair is its own orbit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...model.symmetry import HostShift
from ...model.topology import Topology


@dataclass(frozen=True, eq=False)
class Group:
    """Elements k = 0..order-1 (0 the identity) as arrays: `devices[k]` the image of each
    device id, `ranks[k]` of each rank index; `to_rep[a]` the element taking rank a to
    `rep[a]`, the least rank of its orbit; `inverse[k]` the element undoing k."""

    devices: np.ndarray
    ranks: np.ndarray
    inverse: np.ndarray
    rep: np.ndarray
    to_rep: np.ndarray
    generators: tuple[HostShift, ...]

    @property
    def order(self) -> int:
        return len(self.devices)

    @property
    def trivial(self) -> bool:
        return self.order == 1

    def representatives(self) -> list[int]:
        """One rank per orbit, the least."""
        return sorted(set(self.rep.tolist()))

    def canonical(self, a: int, b: int) -> tuple[int, tuple[int, int]]:
        """(the element k taking rank a to its representative, the pair (a, b) moved by k)."""
        k = int(self.to_rep[a])
        return k, (int(self.rep[a]), int(self.ranks[k, b]))

    def path(self, k: int, path: tuple[int, ...]) -> tuple[int, ...]:
        """The devices of `path` moved by element k."""
        return tuple(int(d) for d in self.devices[k, list(path)]) if path else path

    def images(self, pair: tuple[int, int]) -> list[tuple[int, int, int]]:
        """(k, a, b) for every element k and the pair it moves `pair` to (one per k)."""
        a, b = pair
        return [(k, int(x), int(y)) for k, (x, y) in
                enumerate(zip(self.ranks[:, a].tolist(), self.ranks[:, b].tolist()))]

    def resource_orbits(self, resources: list[int]) -> np.ndarray:
        """Each of `resources` (ids) its orbit's number, orbits numbered from 0 by first
        member; every generator maps the list onto itself (it keeps bandwidths)."""
        from scipy.sparse import csr_array  # type: ignore[import-untyped]  # no types
        from scipy.sparse.csgraph import connected_components  # type: ignore[import-untyped]

        local = {r: k for k, r in enumerate(resources)}
        ids = np.asarray(resources, dtype=np.int64)
        heads = [np.array([local[int(r)] for r in g.resources.power(1, ids)], dtype=np.int64)
                 for g in self.generators]
        tails = np.tile(np.arange(len(ids)), len(heads))
        heads_all = np.concatenate(heads) if heads else np.zeros(0, dtype=np.int64)
        graph = csr_array((np.ones(len(heads_all)), (tails, heads_all)), shape=(len(ids),) * 2)
        _, labels = connected_components(graph, directed=True, connection="weak")
        _, first = np.unique(labels, return_index=True)
        renumber = np.empty(len(first), dtype=np.int64)
        renumber[np.argsort(np.argsort(first))] = np.arange(len(first))
        return renumber[labels]


def trivial_group(topology: Topology, ranks: tuple[int, ...]) -> Group:
    n = len(ranks)
    return Group(np.arange(len(topology.devices))[None, :], np.arange(n)[None, :],
                 np.zeros(1, dtype=np.int64), np.arange(n), np.zeros(n, dtype=np.int64), ())


def machine_group(topology: Topology, ranks: tuple[int, ...],
                  shifts: tuple[HostShift, ...]) -> Group:
    """The group the shifts make (they commute: every product of their powers), if it acts
    freely on the ranks and keeps the machine's own pins among them; else the identity."""
    everything = np.arange(len(topology.devices), dtype=np.int64)
    elements = everything[None, :]
    for shift in shifts:
        powers = [shift.devices.power(k, everything) for k in range(shift.order)]
        elements = np.unique(np.concatenate([p[elements] for p in powers]), axis=0)
    if len(elements) == 1 or not _keeps_pins(topology, ranks, shifts):
        return trivial_group(topology, ranks)
    identity = int(np.flatnonzero((elements == everything).all(axis=1))[0])
    elements = np.concatenate([elements[identity:identity + 1],
                               np.delete(elements, identity, axis=0)])
    position = {d: k for k, d in enumerate(ranks)}
    on_ranks = np.array([[position[int(d)] for d in row[list(ranks)]] for row in elements])
    if (on_ranks[1:] == np.arange(len(ranks))).any():
        return trivial_group(topology, ranks)  # an element fixes a rank: not free
    row_of = {row.tobytes(): k for k, row in enumerate(elements)}
    inverse = np.array([row_of[np.argsort(row).tobytes()] for row in elements])
    to_rep = np.argmin(on_ranks, axis=0)
    rep = on_ranks[to_rep, np.arange(len(ranks))]
    return Group(elements, on_ranks, inverse, rep, to_rep, shifts)


def _keeps_pins(topology: Topology, ranks: tuple[int, ...], shifts) -> bool:
    """Whether each shift maps every `route` pin between ranks onto a pin of the image path."""
    among = set(ranks)
    pins = {pair: route.devices for pair, route in topology.pinned.items()
            if pair[0] in among and pair[1] in among}
    for shift in shifts:
        for (src, dst), path in pins.items():
            moved = tuple(int(d) for d in shift.devices.power(1, np.asarray(path)))
            if pins.get((moved[0], moved[-1])) != moved:
                return False
    return True


def pricing_symmetry(orbits, n: int, resources: int, root: int | None):
    """(σ^k per shift, each resource's orbit, the roots to price, how many trees of the
    orbits each root's row counts); without orbits, every rank (or the root) alone."""
    sigma, orbit_of = orbits if orbits is not None else (
        np.arange(n)[None, :], np.arange(resources))
    roots = [root] if root is not None else sorted({int(sigma[:, a].min()) for a in range(n)})
    weight_of_root = np.array([len(sigma) / len({int(x) for x in sigma[:, c]}) for c in roots])
    return sigma, orbit_of, roots, weight_of_root


def route_orbits(shifts: tuple[HostShift, ...], ranks: tuple[int, ...],
                 resources: tuple[int, ...], row_of: dict, edges: np.ndarray, shares
                 ) -> tuple[np.ndarray, np.ndarray] | None:
    """(each element of the group the shifts make, on rank indices; each resource's orbit),
    from the shifts that map the ranks onto themselves and every edge's route onto the image
    edge's route (the others are left out); None if none does."""
    generators = [g for g in (_route_generator(s, ranks, resources, row_of, edges, shares)
                              for s in shifts) if g is not None]
    if not generators:
        return None
    sigma = np.arange(len(ranks))[None, :]
    parent = np.arange(len(resources))  # union-find over the generators' resource maps

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = int(parent[x])
        return x

    for powers, rho in generators:  # shifts commute: the group is every product of powers
        sigma = np.unique(np.concatenate([p[sigma] for p in powers]), axis=0)
        for e, image in enumerate(rho.tolist()):
            parent[find(e)] = find(image)
    roots = [find(e) for e in range(len(resources))]
    _, orbit_of = np.unique(roots, return_inverse=True)
    return sigma, orbit_of.ravel()


def _route_generator(shift: HostShift, ranks, resources, row_of, edges, shares):
    """(σ^k on rank indices for k = 0..order-1, ρ on resource indices) for one shift, if it
    keeps the ranks and carries every edge's loads onto its image edge's; else None."""
    position = {d: k for k, d in enumerate(ranks)}
    ids = np.asarray(ranks, dtype=np.int64)
    try:
        powers = np.array([[position[int(d)] for d in shift.devices.power(k, ids)]
                           for k in range(shift.order)])
    except KeyError:
        return None
    local = {r: k for k, r in enumerate(resources)}
    try:
        rho = np.array([local[int(r)] for r in shift.resources.power(1, np.asarray(resources))])
    except KeyError:
        return None
    image_rows = [row_of.get((int(powers[1, a]), int(powers[1, b]))) for a, b in edges]
    if any(r is None for r in image_rows):
        return None
    moved = shares[image_rows].toarray()  # the image edges' loads, as rows
    mapped = np.zeros_like(moved)
    mapped[:, rho] = shares.toarray()  # each edge's loads carried to the images of resources
    if not np.allclose(moved, mapped, rtol=1e-12, atol=0):
        return None
    return powers, rho

"""Symmetry of a machine: moving every host to the next one, when that changes nothing.

Machines are mostly copies of one host. If renaming host k's devices to host k+1's (the last
host's to the first's) maps every hop onto a hop with resources of the same bandwidth and
class, sharing the same way, the renaming is an automorphism of the machine, and a cut found
around host 0 is, renamed, the cut around any other host. `RankCuts` uses it to solve one
max-flow per orbit instead of one per host.

The candidate comes from the names (`node[0].g[3]` ↔ `node[1].g[3]`); it is then checked hop
by hop, so a machine whose hosts differ simply has no symmetry.

The shift by k hosts is the k-th power of that permutation, computed on demand from its
cycles (an element's image is k places further round its cycle): memory stays linear in the
machine however many hosts it has, where a table of every power would be quadratic.

Which sets of devices are shifts of each other is found on demand too: `HostShift.orbit`
gives a set a key shared by exactly its shifts (its rows of devices, host after host, read
from the row where the least rotation of that cyclic sequence starts), so a cut solved for
one set is found for any of its shifts without tabling every shift of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .topology import Topology


@dataclass(frozen=True, eq=False)
class Cycles:
    """A permutation as its cycles, so that any power of it is one array lookup."""

    members: np.ndarray  # the elements, cycle after cycle, each in the permutation's order
    start: np.ndarray  # element -> where its cycle starts in `members`
    length: np.ndarray  # element -> its cycle's length
    position: np.ndarray  # element -> its place in its cycle

    @classmethod
    def of(cls, permutation: np.ndarray) -> Cycles:
        n = len(permutation)
        members = np.empty(n, dtype=np.int64)
        start, length, position = (np.zeros(n, dtype=np.int64) for _ in range(3))
        seen = np.zeros(n, dtype=bool)
        filled = 0
        for first in range(n):
            if seen[first]:
                continue
            begin, element = filled, first
            while not seen[element]:
                seen[element] = True
                members[filled], position[element] = element, filled - begin
                filled += 1
                element = int(permutation[element])
            cycle = members[begin:filled]
            start[cycle], length[cycle] = begin, filled - begin
        return cls(members, start, length, position)

    def power(self, k: int, ids: np.ndarray) -> np.ndarray:
        """The images of `ids` under the permutation applied k times."""
        return self.members[self.start[ids] + (self.position[ids] + k) % self.length[ids]]


@dataclass(frozen=True, eq=False)
class HostShift:
    """The shift by one host, on devices and on resources; `order` = the number of hosts.
    (`index_shift` makes the same record for a family's index: `orbit` is for hosts only.)"""

    devices: Cycles
    resources: Cycles
    order: int

    def image(self, k: int, ids: frozenset[int]) -> frozenset[int]:
        """The devices `ids` shifted by k hosts."""
        if not ids:
            return ids
        return frozenset(self.devices.power(k, np.fromiter(ids, np.int64, len(ids))).tolist())

    def resource_image(self, k: int, ids: tuple[int, ...]) -> tuple[int, ...]:
        if not ids:
            return ids
        return tuple(sorted(self.resources.power(k, np.asarray(ids, np.int64)).tolist()))

    def orbit(self, ids: frozenset[int]) -> tuple[tuple, int]:
        """A key that the devices `ids` share with exactly their shifts, and the k such that
        `ids` is the orbit's representative shifted by k hosts.

        Every device on a host lies on a cycle of `order` devices (one per host) and moves one
        place round it per shift; the others stay. Row j of a set holds its devices at place j
        of their cycles; the set is its fixed devices and the cyclic sequence of its non-empty
        rows, each with the distance to the next. The key starts that sequence at its least
        rotation, whose row is k; equal sequences give one representative, so equal keys mean
        the same orbit."""
        if len(ids) == 1:  # a single rank: the start of its cycle, k places before it
            (device,) = ids
            if self.devices.length[device] == 1:
                return (ids, ()), 0
            row = ((int(self.devices.start[device]),), self.order)
            return (frozenset(), (row,)), int(self.devices.position[device])
        array = np.fromiter(ids, np.int64, len(ids))
        moving = self.devices.length[array] > 1
        fixed = frozenset(array[~moving].tolist())
        array = array[moving]
        place, cycle = self.devices.position[array], self.devices.start[array]
        by_row = np.lexsort((cycle, place))
        place, cycle = place[by_row].tolist(), cycle[by_row].tolist()
        rows: list[int] = []
        members: list[tuple[int, ...]] = []
        begin = 0
        for i in range(1, len(place) + 1):
            if i == len(place) or place[i] != place[begin]:
                rows.append(place[begin])
                members.append(tuple(cycle[begin:i]))
                begin = i
        if not rows:
            return (fixed, ()), 0
        gaps = [(rows[(j + 1) % len(rows)] - rows[j]) % self.order or self.order
                for j in range(len(rows))]
        sequence = list(zip(members, gaps))
        start = least_rotation(sequence)
        return (fixed, tuple(sequence[start:] + sequence[:start])), rows[start]


def host_shift(topology: Topology, hosts: list[int], ranks: tuple[int, ...]) -> HostShift | None:
    """The shift of `hosts` (host indices, in order) by one, verified; None if it is not an
    automorphism of the machine that keeps the set of ranks."""
    order = len(hosts)
    if order < 2:
        return None
    device_map = device_shift(topology, hosts)
    if device_map is None:
        return None
    rank_set = set(ranks)
    if {int(device_map[r]) for r in ranks} != rank_set:
        return None
    resource_map = _resource_map(topology, device_map)
    if resource_map is None:
        return None
    return HostShift(Cycles.of(device_map), Cycles.of(resource_map), order)


def index_shift(topology: Topology, ranks: tuple[int, ...]) -> HostShift | None:
    """The shift of a device family by one index (`g[i]` → `g[i+1]`, the last to the first),
    verified like `host_shift`; None if no such shift is an automorphism keeping the ranks.

    The families shifted are those indexed 0..L-1 like the first rank's (in every host): with
    them every family of that length (rails that follow the GPUs), else the ranks' own alone.
    On one switch every GPU is alike, so the packing prices one root where it priced L."""
    families: dict[str, dict[int, int]] = {}
    for d in topology.devices:
        match = _INDEXED.match(d.name)
        if match:
            families.setdefault(match[1], {})[int(match[2])] = d.id
    first = _INDEXED.match(topology.devices[ranks[0]].name)
    if first is None:
        return None
    length = len(families[first[1]])
    alike = {p: f for p, f in families.items() if f.keys() == set(range(length))}
    if length < 2 or first[1] not in alike:
        return None
    holding = {p: f for p, f in alike.items() if set(f.values()) & set(ranks)}
    for chosen in (alike, holding):
        mapping = np.arange(len(topology.devices), dtype=np.int64)
        for family in chosen.values():
            for i, device in family.items():
                mapping[device] = family[(i + 1) % length]
        # A family is one declaration, so its members agree in kind and forwarding.
        if {int(mapping[r]) for r in ranks} != set(ranks):
            continue
        resource_map = _resource_map(topology, mapping)
        if resource_map is not None:
            return HostShift(Cycles.of(mapping), Cycles.of(resource_map), length)
    return None


_INDEXED = re.compile(r"^(.*)\[(\d+)\]$")  # `node[0].g[3]`: family `node[0].g`, index 3


def device_shift(topology: Topology, hosts: list[int]) -> np.ndarray | None:
    """host k's `name.suffix` → host k+1's (device ids); devices outside these hosts stay.
    None when the hosts' devices are not alike (by name, kind and forwarding); the links
    are not checked here (`host_shift` does)."""
    members: list[dict[str, int]] = [{} for _ in hosts]
    position = {h: k for k, h in enumerate(hosts)}
    for d in topology.devices:
        k = position.get(d.host) if d.host is not None else None
        if k is not None and d.host is not None:
            members[k][d.name[len(topology.host_names[d.host]) + 1:]] = d.id
    if any(m.keys() != members[0].keys() for m in members):
        return None
    mapping = np.arange(len(topology.devices), dtype=np.int64)
    for k, m in enumerate(members):
        following = members[(k + 1) % len(hosts)]
        for suffix, device in m.items():
            mapping[device] = following[suffix]
    for d in topology.devices:
        image = topology.devices[int(mapping[d.id])]
        if (image.kind, image.forwards) != (d.kind, d.forwards):
            return None
    return mapping


def _resource_map(topology: Topology, device_map: np.ndarray) -> np.ndarray | None:
    """The resource map that carries every hop onto the hop between the images of its ends
    (the j-th of parallel hops onto the j-th), if bandwidths, classes and sharing agree."""
    by_pair: dict[tuple[int, int], list[int]] = {}
    for index, each in enumerate(topology.hops):
        by_pair.setdefault((each.src, each.dst), []).append(index)
    mapping: dict[int, int] = {}
    for (src, dst), hops in by_pair.items():
        images = by_pair.get((int(device_map[src]), int(device_map[dst])), [])
        if len(images) != len(hops):
            return None
        for hop, image in zip(hops, images):
            ours, theirs = topology.hops[hop].resources, topology.hops[image].resources
            if len(ours) != len(theirs):
                return None
            for r, s in zip(ours, theirs):
                a, b = topology.resources[r], topology.resources[s]
                if mapping.setdefault(r, s) != s or (a.effective_bandwidth, a.cls) != (b.effective_bandwidth, b.cls):
                    return None
    if len(set(mapping.values())) != len(mapping):
        return None
    table = np.arange(len(topology.resources), dtype=np.int64)
    for r, s in mapping.items():
        table[r] = s
    return table


def least_rotation(sequence: list) -> int:
    """Where a lexicographically least rotation of `sequence` starts (Booth's algorithm,
    linear in its length)."""
    doubled = sequence + sequence
    failure = [-1] * len(doubled)
    start = 0
    for j in range(1, len(doubled)):
        item = doubled[j]
        i = failure[j - start - 1]
        while i != -1 and item != doubled[start + i + 1]:
            if item < doubled[start + i + 1]:
                start = j - i - 1
            i = failure[i]
        if item != doubled[start + i + 1]:  # then i == -1
            if item < doubled[start]:
                start = j
            failure[j - start] = -1
        else:
            failure[j - start] = i + 1
    return start

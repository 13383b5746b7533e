"""The two sides of a cut as short text: whole hosts by their names, other ranks by theirs,
runs of indices as ranges (`node[0..3]`), strides as `node[0, 2, …, 14]`, and at most a few
items a side, so a cut of thousands of devices still names its sides in one line.

A bound names every cut it finds (1,023 between the hosts of the 8,192-GPU hierarchical file,
each side thousands of devices), so `SideNames` parses the names once and works on arrays:
which hosts a side holds whole, where one family's run of indices ends, and only the items
shown are made into text."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from ...model.topology import Topology

MOST_ITEMS = 4  # items (names or index ranges) shown per side; the rest are counted
_INDEXED = re.compile(r"(.*)\[(\d+)\](.*)")


class SideNames:
    """Names sides of `ranks` of one machine; `groups` are the hosts (name, ranks), which a
    side names whole when it holds all of a host's ranks."""

    def __init__(self, topology: Topology, groups: Sequence[tuple[str, frozenset[int]]],
                 ranks: Sequence[int]) -> None:
        self.ranks = np.asarray(ranks, dtype=np.int64)
        self.devices = len(topology.devices)
        self.labels: list[str] = []  # per name: its text, or the `head[]tail` of its family
        self.families: dict[str, int] = {}
        self.group_family, self.group_index = self._parse([name for name, _ in groups])
        self.rank_family, self.rank_index = self._parse([topology.devices[r].name for r in ranks])
        members = [sorted(m) for _, m in groups]
        self.sizes = np.array([len(m) for m in members], dtype=np.int64)
        self.members = np.array([r for m in members for r in m], dtype=np.int64)
        self.member_group = np.repeat(np.arange(len(members)), self.sizes)
        self.group_of = np.full(self.devices, -1, dtype=np.int64)  # a rank's host, if any
        for g, m in enumerate(members):
            self.group_of[m] = g

    def _parse(self, names: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Each name's family (an id; a name without an index is a family of its own) and
        index (-1 without one)."""
        family, index = [], []
        for name in names:
            match = _INDEXED.fullmatch(name)
            label = name if match is None else f"{match.group(1)}[]{match.group(3)}"
            family.append(self.families.setdefault(label, len(self.families)))
            if family[-1] == len(self.labels):
                self.labels.append(label)
            index.append(-1 if match is None else int(match.group(2)))
        return np.array(family, dtype=np.int64), np.array(index, dtype=np.int64)

    def sides(self, side: frozenset[int]) -> str:
        """'A | B': the ranks of `side` against the other ranks."""
        mask = np.zeros(self.devices, dtype=bool)
        mask[list(side)] = True
        return f"{self._side(mask)} | {self._side(~mask)}"

    def _side(self, mask: np.ndarray) -> str:
        in_side = mask[self.ranks]
        whole = np.zeros(len(self.sizes), dtype=bool)
        alone = in_side
        if len(self.members):
            held = np.bincount(self.member_group, weights=mask[self.members],
                               minlength=len(self.sizes))
            whole = (held == self.sizes) & (self.sizes > 0)
            group = self.group_of[self.ranks]
            alone = in_side & ~((group >= 0) & whole[np.maximum(group, 0)])
        family = np.concatenate([self.group_family[whole], self.rank_family[alone]])
        index = np.concatenate([self.group_index[whole], self.rank_index[alone]])
        # An item starts where the family changes, and at every name without an index.
        starts = np.flatnonzero(np.r_[True, (family[1:] != family[:-1]) | (index[1:] < 0)
                                      | (index[:-1] < 0)]) if len(family) else np.array([], int)
        ends = np.r_[starts[1:], len(family)]
        shown = range(len(starts)) if len(starts) <= MOST_ITEMS else \
            [*range(MOST_ITEMS - 1), len(starts) - 1]
        items = [self._item(family[starts[k]], index[starts[k]:ends[k]]) for k in shown]
        if len(starts) > MOST_ITEMS:
            items.insert(MOST_ITEMS - 1, "…")
            return f"{', '.join(items)} ({int(in_side.sum()):,} ranks)"
        return ", ".join(items)

    def _item(self, family: int, indices: np.ndarray) -> str:
        label = self.labels[family]
        if indices[0] < 0:
            return label
        head, _, tail = label.partition("[]")
        return f"{head}[{_indices(indices)}]{tail}"


def sides_text(topology: Topology, groups: Sequence[tuple[str, frozenset[int]]],
               side: frozenset[int], ranks: Sequence[int]) -> str:
    """'A | B' for one cut (`SideNames` names many of one machine)."""
    return SideNames(topology, groups, ranks).sides(side)


def _indices(indices: np.ndarray) -> str:
    """0..3 for a run, 0, 2, …, 14 for a stride, else the runs listed (a few of them)."""
    steps = np.diff(indices)
    if len(indices) > 2 and bool(np.all(steps == steps[0])):
        first, second, last = (int(i) for i in (indices[0], indices[1], indices[-1]))
        return f"{first}..{last}" if steps[0] == 1 else f"{first}, {second}, …, {last}"
    starts = np.r_[0, np.flatnonzero(steps != 1) + 1]
    ends = np.r_[starts[1:], len(indices)] - 1
    shown = range(len(starts)) if len(starts) <= MOST_ITEMS else \
        [*range(MOST_ITEMS - 1), len(starts) - 1]
    runs = [_run(int(indices[starts[k]]), int(indices[ends[k]])) for k in shown]
    if len(starts) > MOST_ITEMS:
        runs.insert(MOST_ITEMS - 1, "…")
    return ", ".join(runs)


def _run(lo: int, hi: int) -> str:
    return str(lo) if lo == hi else f"{lo}, {hi}" if hi == lo + 1 else f"{lo}..{hi}"

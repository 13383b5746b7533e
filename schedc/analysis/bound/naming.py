"""The two sides of a cut as short text: whole hosts by their names, other ranks by theirs,
runs of indices as ranges (`node[0..3]`), strides as `node[0, 2, …, 14]`, and at most a few
items a side, so a cut of thousands of devices still names its sides in one line."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ...model.topology import Topology

MOST_ITEMS = 4  # items (names or index ranges) shown per side; the rest are counted
_INDEXED = re.compile(r"(.*)\[(\d+)\](.*)")


def sides_text(topology: Topology, groups: Sequence[tuple[str, frozenset[int]]],
               side: frozenset[int], ranks: Sequence[int]) -> str:
    """'A | B': the ranks of `side` against the other `ranks`; `groups` are the hosts (name,
    ranks), which a side names whole when it holds all of a host's ranks."""
    rest = frozenset(ranks) - side
    return f"{_side(topology, groups, side, ranks)} | {_side(topology, groups, rest, ranks)}"


def _side(topology: Topology, groups: Sequence[tuple[str, frozenset[int]]],
          side: frozenset[int], ranks: Sequence[int]) -> str:
    whole = [(name, members) for name, members in groups if members <= side]
    covered = frozenset().union(*(members for _, members in whole))
    names = [name for name, _ in whole] + [topology.devices[r].name for r in ranks
                                           if r in side and r not in covered]
    return _compact(names, len(side))


def _compact(names: list[str], count: int) -> str:
    """Names with one index each, consecutive ones of one family merged: node[0..3], g[5]."""
    items: list[str] = []
    k = 0
    while k < len(names):
        match = _INDEXED.fullmatch(names[k])
        if match is None:
            items.append(names[k])
            k += 1
            continue
        head, tail = match.group(1), match.group(3)
        indices = []
        while k < len(names):
            found = _INDEXED.fullmatch(names[k])
            if found is None or (found.group(1), found.group(3)) != (head, tail):
                break
            indices.append(int(found.group(2)))
            k += 1
        items.append(f"{head}[{_indices(indices)}]{tail}")
    if len(items) > MOST_ITEMS:
        items = [*items[:MOST_ITEMS - 1], "…", items[-1]]
        return f"{', '.join(items)} ({count:,} ranks)"
    return ", ".join(items)


def _indices(indices: list[int]) -> str:
    """0..3 for a run, 0, 2, …, 14 for a stride, else the runs listed (a few of them)."""
    step = indices[1] - indices[0] if len(indices) > 1 else 0
    if len(indices) > 2 and all(b - a == step for a, b in zip(indices, indices[1:])):
        return f"{indices[0]}..{indices[-1]}" if step == 1 else \
            f"{indices[0]}, {indices[1]}, …, {indices[-1]}"
    runs: list[str] = []
    start = 0
    for k in range(1, len(indices) + 1):
        if k == len(indices) or indices[k] != indices[k - 1] + 1:
            lo, hi = indices[start], indices[k - 1]
            runs.append(str(lo) if lo == hi else f"{lo}, {hi}" if hi == lo + 1 else f"{lo}..{hi}")
            start = k
    if len(runs) > MOST_ITEMS:
        runs = [*runs[:MOST_ITEMS - 1], "…", runs[-1]]
    return ", ".join(runs)

"""A synthesized schedule as a `.sched` file: the trees as tables, one loop that runs them.

The file imports the machine, declares the collective and `param chunks` (structural, so
`scale --in chunks` and `--set chunks=K` apply), lists every tree edge in integer tables and
runs them in one loop of rounds; each pass of `plan` (rounding, chunk counts) is stated in
the header. Only comments carry text from elsewhere, each line through `comment`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..analysis.synthesize.plan import Plan
from ..errors import TopologyError
from ..language.quote import comment as escaped
from ..language.quote import string
from ..model.collectives import KINDS

_WIDTH = 96  # numbers per table line
# The tables a phase writes (after its prefix): named so a reader of the file can follow them.
TABLES = ("tree_root", "tree_first", "tree_units", "edge_tree", "edge_parent", "edge_child",
          "edge_depth", "root_image")
_DEVICE = re.compile(r"[A-Za-z_]\w*(\[\d+\])*(\.[A-Za-z_]\w*(\[\d+\])*)*")


@dataclass(frozen=True)
class Phase:
    """One packing to write: all-reduce has two (reduce-scatter, then all-gather)."""

    plan: Plan
    prefix: str  # the tables' prefix: "" alone, "rs_" and "ag_" in an all-reduce


def comment(text: str) -> str:
    """`text` as a comment line (`language.quote.comment`: every line break or other
    unprintable character a visible escape), so nothing in it can end the comment and start
    a statement."""
    return f"# {escaped(text)}".rstrip()


def schedule_text(*, machine: str, kind: str, size: str, over: str, root: str | None, name: str,
                  chunks: int, phases: Sequence[Phase], ranks: int, header: Sequence[str],
                  routes: Sequence[str] = ()) -> str:
    """The whole file; `routes` are `route` statements the trees need (see `route_statement`)."""
    lines = [comment(h) for h in header]
    group = f"{name}_ranks"
    lines += ["", f"import {string(machine, 'the machine file')}", ""]
    if routes:
        lines += ["# The routes these trees take where schedc's own differ (the optimum's cut "
                  "counts these paths);", "# pinned for every schedule of this file.",
                  "topology {", *(f"  {r}" for r in routes), "}", ""]
    lines += [
              f"param chunks = {chunks}   # structural: each tree's slice goes in `chunks` "
              "pipelined chunks", "",
              f"let {group} = {over}",
              f"{kind} {size} over {group}" + (f" root {root}" if root is not None else ""), ""]
    for phase in phases:
        lines += _tables(phase)
        if len(phases) == 1:  # the result itself, over the collective's ranks
            lines += _runner(phase, group, ranks, f"schedule {name} {{")
        else:  # a function of the ranks `g`, which the result calls
            lines += _runner(phase, "g", ranks, f"schedule {name}_{phase.plan.kind}(g) {{")
    if len(phases) > 1:
        lines += [f"schedule {name} {{",
                  *(f"  {name}_{p.plan.kind}({group})" for p in phases), "}", ""]
    return "\n".join(lines)


def route_statement(src: str, dst: str, through: Sequence[str]) -> str:
    """`route SRC -> DST via ...` between devices named as the compiler names them (an
    identifier, indices and members: `node[0].g[1]`); any other name is refused, so nothing
    but the statement can be written."""
    check_names((src, dst, *through), "pin a route through")
    return f"route {src} -> {dst}" + (f" via {', '.join(through)}" if through else "")


def check_names(devices: Sequence[str], doing: str) -> None:
    """Refuse a device name that is not an expression of the language (an identifier,
    indices and members: `node[0].g[1]`), so a written file holds nothing but names."""
    for device in devices:
        if not _DEVICE.fullmatch(device):
            raise TopologyError(f"cannot {doing} the device {device!r}: its name is not an "
                                "expression of the language")


def _tables(phase: Phase) -> list[str]:
    p, x = phase.plan, phase.prefix
    role = "leaves" if KINDS[p.kind].reduces else "reaches"
    if p.images is not None:  # root 0's trees, and where each root's are their images
        trees = [t for t in p.trees if t.root == 0]
        n = len(p.images)
        head = [f"# {p.kind}: {len(p.trees)} trees, {len(trees)} from each rank, the same but for "
                "a renaming of the ranks that",
                f"# leaves the machine as it is: rank q of rank 0's trees is rank "
                f"{x}root_image[c * {n} + q] of rank c's.",
                f"# Tree t of rank 0 carries units {x}tree_first[t] .. {x}tree_first[t] + "
                f"{x}tree_units[t] - 1 (of {p.units}) of its data;"]
        tail = _table(f"{x}root_image", [int(v) for row in p.images for v in row])
    else:
        trees = list(p.trees)
        head = [f"# {p.kind}: {len(p.trees)} trees. Tree t carries units {x}tree_first[t] ..",
                f"# {x}tree_first[t] + {x}tree_units[t] - 1 (of {p.units}) of rank "
                f"{x}tree_root[t]'s data;"]
        tail = _table(f"{x}tree_root", [t.root for t in trees])
    edges = [(t, a, b, d) for t, tree in enumerate(trees) for a, b, d in tree.edges]
    return [
        *head,
        f"# edge e of tree {x}edge_tree[e] joins rank {x}edge_parent[e] to rank "
        f"{x}edge_child[e], and data {role} the",
        f"# child at depth {x}edge_depth[e] (1: a child of the root).",
        *tail,
        *_table(f"{x}tree_first", [t.first for t in trees]),
        *_table(f"{x}tree_units", [t.units for t in trees]),
        *_table(f"{x}edge_tree", [e[0] for e in edges]),
        *_table(f"{x}edge_parent", [e[1] for e in edges]),
        *_table(f"{x}edge_child", [e[2] for e in edges]),
        *_table(f"{x}edge_depth", [e[3] for e in edges]),
        "",
    ]


def _runner(phase: Phase, group: str, ranks: int, opening: str) -> list[str]:
    p, x = phase.plan, phase.prefix
    inward = KINDS[p.kind].reduces
    rooted = KINDS[p.kind].rooted
    t = f"{x}edge_tree[e]"
    slice_ = f"part({x}tree_first[{t}]..{x}tree_first[{t}] + {x}tree_units[{t}] - 1 of {p.units})"
    symmetric = p.images is not None
    if not rooted:
        slice_ += f" of part({'c' if symmetric else f'{x}tree_root[{t}]'} of {ranks})"
    region = f"part(k of chunks) of {slice_}"
    if symmetric:
        parent, child = (f"{group}[{x}root_image[c * {ranks} + {x}edge_{end}[e]]]"
                         for end in ("parent", "child"))
    else:
        parent, child = f"{group}[{x}edge_parent[e]]", f"{group}[{x}edge_child[e]]"
    if inward:  # in-trees: the deepest stage first, each child reduces into its parent
        when = f"s - ({p.depth} - {x}edge_depth[e])"
        move = f"reduce {region} from {child} to {parent}"
        how = f"chunk k leaves depth d in round k + {p.depth} - d"
    else:
        when = f"s - {x}edge_depth[e] + 1"
        move = f"copy {region} from {parent} to {child}"
        how = "chunk k reaches depth d in round k + d - 1"
    body = [f"for e in 0..len({x}edge_tree) - 1 {{",
            f"  let k = {when}",
            "  if k >= 0 and k < chunks {",
            f"    {move}",
            "  }",
            "}"]
    if symmetric:  # every rank's trees: root 0's, renamed
        body = [f"for c in 0..{ranks - 1} {{", *(f"  {line}" for line in body), "}"]
    return [
        f"# Pipelined: {how}.",
        opening,
        f"  for s in 0..chunks {'+' if p.depth >= 2 else '-'} {abs(p.depth - 2)} round {{",
        *(f"    {line}" for line in body),
        "  }",
        "}",
        "",
    ]


def _table(name: str, values: Sequence[int]) -> list[str]:
    text = [str(v) for v in values]
    rows, row = [], f"let {name} = ["
    for k, item in enumerate(text):
        piece = item + (", " if k < len(text) - 1 else "]")
        if len(row) + len(piece) > _WIDTH:
            rows.append(row.rstrip())
            row = "  "
        row += piece
    if not text:
        row += "]"
    rows.append(row)
    return rows

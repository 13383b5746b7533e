"""The shift of a device family by one index (`g[i]` → `g[i+1]`): found where it is an
automorphism of the machine, refused where it is not, and the packing solved over the group
it makes with the host shift reaches what the packing over every root reaches."""

from __future__ import annotations

import re
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import schedc
from schedc.analysis.bound.cuts import RankCuts
from schedc.analysis.bound.optimum import optimum
from schedc.analysis.synthesize.packing import pack
from schedc.analysis.synthesize.plan import Plan, PlannedTree, check_tables
from schedc.errors import LimitError
from schedc.model.ir import linear_value
from schedc.model.symmetry import index_shift

ROOT = Path(__file__).parents[1]


def compiled(tmp_path: Path, machine: str, collective: str = "allgather 1 GiB over ranks"):
    probe = tmp_path / "probe.sched"
    probe.write_text(f'import "{ROOT / "schedules" / "machines" / machine}"\n{collective}\n')
    program = schedc.load(probe).program
    (coll,) = program.collectives
    return program, coll


def names(topology, shift, ids) -> list[str]:
    return [topology.devices[int(i)].name for i in shift.devices.power(1, ids)]


def test_one_switch_shifts_its_gpus(tmp_path):
    program, coll = compiled(tmp_path, "flat_8.sched")
    shift = index_shift(program.topology, coll.ranks)
    assert shift is not None and shift.order == 8
    moved = names(program.topology, shift, list(coll.ranks))
    assert moved == [f"g[{(i + 1) % 8}]" for i in range(8)]


def test_rails_follow_the_gpus_they_serve(tmp_path):
    # rail_4x8: node[h].g[i]'s NIC is on rail switch i, so g[i] → g[i+1] must carry rail i
    # to rail i+1 (every family of length 8 moves together), in every host alike.
    program, coll = compiled(tmp_path, "rail_4x8.sched")
    shift = index_shift(program.topology, coll.ranks)
    assert shift is not None and shift.order == 8
    moved = names(program.topology, shift, list(coll.ranks))
    assert moved[:8] == [f"node[0].g[{(i + 1) % 8}]" for i in range(8)]
    assert moved[8] == "node[1].g[1]"


def test_a_torus_is_not_an_index_ring(tmp_path):
    # torus_4x4 numbers its 16 chips row by row: chip[3] → chip[4] leaves the row, and chip[3]'s
    # link to chip[0] (the row's wrap) has no image, so the shift is refused.
    program, coll = compiled(tmp_path, "torus_4x4.sched")
    assert index_shift(program.topology, coll.ranks) is None


@pytest.mark.parametrize("machine", ["flat_8.sched", "rail_4x8.sched", "nvlink_2x8.sched"])
def test_the_packing_over_orbits_reaches_the_packing_over_every_root(tmp_path, machine):
    program, coll = compiled(tmp_path, machine)
    finder = RankCuts(program.topology, program.nominal, coll.ranks)
    exact = optimum(finder, coll, program.nominal)
    # The optimum's rate: one rank's shard per second of the optimum's time.
    shard = float(linear_value(coll.size, program.nominal)) / len(coll.ranks)
    rate = shard / float(exact.parts[0].value)
    shifts = tuple(s for s in (finder.shift, index_shift(program.topology, coll.ranks)) if s)
    assert shifts
    every_root = pack(program.topology, program.nominal, coll.ranks, "allgather", None, rate)
    by_orbits = pack(program.topology, program.nominal, coll.ranks, "allgather", None, rate,
                     None, shifts)
    assert by_orbits.reached == pytest.approx(every_root.reached, rel=1e-6)
    assert by_orbits.reached == pytest.approx(1.0, rel=1e-6)
    # The trees written are closed under the shifts: each tree's image is a tree, same weight.
    trees = {(t.root, t.edges): t.weight for t in by_orbits.trees}
    position = {d: k for k, d in enumerate(coll.ranks)}
    for shift in shifts:
        image = [position[int(d)] for d in shift.devices.power(1, list(coll.ranks))]
        for (root, edges), weight in trees.items():
            moved = (image[root], tuple((image[a], image[b]) for a, b in edges))
            assert trees.get(moved) == pytest.approx(weight)


def test_a_symmetric_machine_writes_rank_0s_trees_and_their_images(tmp_path):
    # On rail_4x8 the host and index shifts move rank 0 to each of the 32 ranks in one way
    # (4 hosts × 8 indices), so the file lists rank 0's trees and a 32 × 32 root_image table,
    # and what it compiles to is what every tree written out would be: the time of the
    # packing's rounding (tests/test_synthesize.py checks the optimum).
    source = ROOT / "schedules" / "machines" / "rail_4x8.sched"
    result = schedc.synthesize(source, "allgather", over="ranks", size="1 GiB")
    table = re.search(r"let root_image = \[([^\]]*)\]", result.text)
    assert table is not None and "tree_root" not in result.text
    image = [int(v) for v in table[1].split(",")]
    assert len(image) == 32 * 32
    rows = [image[c * 32:(c + 1) * 32] for c in range(32)]
    assert [row[0] for row in rows] == list(range(32))  # row c takes rank 0 to rank c
    assert all(sorted(row) == list(range(32)) for row in rows)  # each a renaming
    # Rank 8 is node[1].g[0]: the host shift by one; rank 1 (node[0].g[1]) the index shift.
    assert rows[8][1] == 9 and rows[1][8] == 9 and rows[1][7] == 0
    assert result.bandwidth_time <= result.optimum * Fraction(101, 100)


def test_tables_past_the_parser_are_refused_before_the_text(tmp_path):
    # 3 numbers a tree and 4 an edge, two tokens each: 120 one-level trees of 119 edges
    # (a 120-GPU switch written tree by tree) are 2·(3·120 + 4·14,280) = 114,960 tokens.
    trees = tuple(PlannedTree(c, 0, 1, tuple((c, v, 1) for v in range(120) if v != c))
                  for c in range(120))
    plan = Plan("allgather", trees, 1, 1, np.zeros((1, 1)))
    with pytest.raises(LimitError, match="about 114,960 tokens, past the parser's 100,000"):
        check_tables([plan])
    images = np.array([[(q + c) % 120 for q in range(120)] for c in range(120)])
    check_tables([replace(plan, images=images)])  # 2·(3 + 4·119 + 14,400)

"""The cut search's machinery: orbits of the host shift found on demand, and max-flow on arrays
(scipy) against networkx's residual network."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import pytest
from conftest import SCHEDULES, examples, write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_bound import FOUR_HOSTS
from test_bound_properties import machines

from schedc.analysis.bound import cuts as cuts_module
from schedc.analysis.bound.cuts import RankCuts
from schedc.elaborate.loader import load_program
from schedc.model.symmetry import least_rotation

MACHINES = sorted((SCHEDULES / "machines").glob("*.sched")) + [SCHEDULES / "seed" / "nvlink_2x8.sched"]
RAILS = "link node[h].g[i] <-> rail[i] bw B_N class nic for h in 0..3 for i in 0..1"


def _finder(path: Path, arrays: bool = False) -> RankCuts:
    """The cut search of `path`'s collective; on arrays (scipy), or on networkx's residual
    network, which small machines get anyway."""
    program = load_program(path)
    ranks = program.results[0].collective.ranks if program.results else \
        tuple(d.id for d in program.topology.devices if d.kind == "gpu")
    finder = RankCuts(program.topology, program.nominal, ranks)
    finder.network.arrays = None
    if arrays:
        assert finder.network.solve_on_arrays()
    return finder


def _table(finder: RankCuts) -> list[tuple]:
    """Every cut with everything found about it, both ways (backward on demand if symmetric)."""
    def capacity(c):
        return c.resources, c.bandwidth, c.value, c.side

    return [(c.family, c.name, c.side, capacity(c.forward), capacity(finder.backward(c)))
            for c in finder.cuts()]


@given(st.lists(st.integers(0, 3), min_size=1, max_size=12))
def test_least_rotation_is_the_least_of_all_rotations(sequence):
    start = least_rotation(sequence)
    rotations = [sequence[k:] + sequence[:k] for k in range(len(sequence))]
    assert sequence[start:] + sequence[:start] == min(rotations)


def test_orbit_keys_are_shared_by_exactly_the_shifts_of_a_set(tmp_path):
    finder = _finder(write(tmp_path, "four.sched", FOUR_HOSTS.format(nics=RAILS)))
    shift, topology = finder.shift, finder.topology
    assert shift is not None and shift.order == 4
    host = {h: frozenset(d.id for d in topology.devices if d.host == h) for h in range(4)}
    rng = random.Random(14)
    sets = [frozenset([d.id]) for d in topology.devices] + list(host.values())
    sets += [host[0] | host[2], host[1] | frozenset([0])]  # one shifted onto itself by 2 hosts
    sets += [frozenset(rng.sample(range(len(topology.devices)), rng.randint(2, 8)))
             for _ in range(150)]
    orbits: dict[tuple, set[frozenset[int]]] = {}
    for side in sets:
        key, k = shift.orbit(side)
        orbits.setdefault(key, set()).add(side)
        for j in range(shift.order):
            image = shift.image(j, side)
            image_key, image_k = shift.orbit(image)
            assert image_key == key
            assert shift.image((image_k - k) % shift.order, side) == image
    for members in orbits.values():  # a key is shared by shifts of one set only
        first = next(iter(members))
        assert members <= {shift.image(j, first) for j in range(shift.order)}
    assert len(orbits) < len(set(sets))  # some sets were shifts of others


@pytest.mark.parametrize("path", MACHINES, ids=lambda p: p.stem)
def test_array_max_flow_finds_the_cuts_networkx_finds(path):
    assert _table(_finder(path, arrays=True)) == _table(_finder(path))


UNLIMITED = {
    "spine": FOUR_HOSTS.format(nics=RAILS).replace("spine bw B_S class spine", "spine"),
    "pair": """param V = 1 MiB
topology {
  gpu g[3]
  switch sw
  link g[0] <-> g[1]
  link g[i] <-> sw bw 5 GB/s for i in 0..2
}
allreduce V over g
""",
}


@pytest.mark.parametrize("name", sorted(UNLIMITED))
def test_array_max_flow_agrees_with_networkx_on_unlimited_links(tmp_path, name):
    path = write(tmp_path, f"{name}.sched", UNLIMITED[name])
    table = _table(_finder(path, arrays=True))
    assert table == _table(_finder(path))
    unlimited = [row for row in table if row[3][1] is None]
    assert bool(unlimited) == (name == "pair")  # g[0] | g[1] ... is joined without limit


@settings(max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(machines())
def test_array_max_flow_agrees_with_networkx_on_random_machines(text):
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "machine.sched"
        path.write_text(text)
        arrays, plain = _finder(path, arrays=True), _finder(path)
    assert _table(arrays) == _table(plain)


def test_cuts_found_on_demand_through_the_shift_equal_cuts_solved_one_by_one(tmp_path):
    for path in (SCHEDULES / "seed" / "nvlink_2x8.sched", SCHEDULES / "machines" / "pcie_2x4.sched",
                 write(tmp_path, "four.sched", FOUR_HOSTS.format(nics=RAILS))):
        shifted, plain = _finder(path, arrays=True), _finder(path, arrays=True)
        assert shifted.shift is not None
        plain.shift = None
        assert _table(shifted) == _table(plain)
        assert shifted.solved < plain.solved


def test_capacities_too_large_for_arrays_go_to_networkx(tmp_path):
    # 10^9 + 7 B/s and 100 GB/s have no common divisor above 1: the finite capacities add up to
    # far more than 2^29, so the int32 arrays are not used; the cuts are still exact.
    text = FOUR_HOSTS.format(nics=RAILS).replace("param B_N = 10 GB/s", "param B_N = 1000000007 B/s")
    finder = _finder(write(tmp_path, "large.sched", text))
    assert not finder.network.solve_on_arrays() and finder.network.arrays is None
    by_name = {c.name: c for c in finder.cuts()}
    host = by_name["node[0] | rest"].forward  # its two NICs
    assert str(host.bandwidth) == "2*B_N" and host.value == 2 * 1000000007
    rank = by_name["node[0].g[0] | rest"].forward  # its local link and its NIC
    assert str(rank.bandwidth) == "B_L + B_N" and rank.value == 100 * 10**9 + 1000000007


def test_arrays_are_for_networks_where_they_pay(monkeypatch):
    seed = SCHEDULES / "seed" / "nvlink_2x8.sched"
    program = load_program(seed)
    ranks = program.results[0].collective.ranks
    small = RankCuts(program.topology, program.nominal, ranks)  # 80 edges × 10 problems
    assert small.network.graph.number_of_edges() * small.work < cuts_module.ARRAYS_FROM
    assert small.network.arrays is None
    monkeypatch.setattr(cuts_module, "ARRAYS_FROM", 0)
    assert RankCuts(program.topology, program.nominal, ranks).network.arrays is not None

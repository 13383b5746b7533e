"""`bound`'s exact optimum, against values derived by hand, from ForestColl's published figures,
and by brute force over every subset of a small machine's devices."""

from __future__ import annotations

import itertools
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import schedc

FIXTURES = Path(__file__).parent / "fixtures" / "synthesize"
GiB = 2**30
GB = 10**9


def optimum_of(path, sets=(), kind=None):
    (b,) = [b for b in schedc.bound(schedc.load(path, list(sets)))
            if kind is None or b.collective.kind == kind]
    return b


def test_directly_linked_gcds_bind_at_a_pair():
    # By hand: the two GCDs of a package hold 2/16 of the data and must receive the other
    # 14/16 of 1 GiB over their links out of the package: 2 × (2 × 50 + 50) = 300 GB/s.
    b = optimum_of(FIXTURES / "mi250_16.sched")
    assert b.optimum.value == Fraction(14 * GiB, 16 * 300 * GB)
    assert GiB / float(b.optimum.value) / GB == pytest.approx(342.857142857, rel=1e-9)
    (part,) = b.optimum.parts
    assert len(part.ranks_inside) == 2 and b.optimum_sides == ("gcd[0, 1] | gcd[2..15]",)
    # The families alone stop at one GCD: 15/16 of V over 350 GB/s, below the optimum.
    assert b.binding.value == Fraction(15 * GiB, 16 * 350 * GB) < b.optimum.value
    assert b.binds == "optimum" and b.best_value == b.optimum.value


def test_reduce_scatter_binds_at_the_pair_too(tmp_path):
    # The links are the same both ways, so reduce-scatter's binding side is the pair too:
    # 14/16 of 1 GiB must leave it over 300 GB/s, and that is the best bound.
    probe = tmp_path / "rs.sched"
    probe.write_text(f'import "{FIXTURES / "mi250_16.sched"}"\nreduce_scatter V over ranks\n')
    b = optimum_of(probe, kind="reduce_scatter")
    assert b.optimum.value == Fraction(14 * GiB, 16 * 300 * GB)
    assert b.binds == "optimum" and b.best_value == b.optimum.value


@pytest.mark.parametrize("hosts, algbw", [(2, "346.666666667"), (4, "266.666666667"),
                                          (8, "228.571428571")])
def test_forestcoll_a100_figures(hosts, algbw):
    # ForestColl (arXiv 2402.06787) publishes these all-gather algbw on its 8-GPU A100 hosts;
    # by hand: at 2 hosts one GPU receives 15/16 V over 300 + 25 GB/s, from 4 hosts on a host
    # receives (n-1)/n V over its 8 NICs of 25 GB/s.
    b = optimum_of(FIXTURES / "forestcoll_a100.sched", [f"hosts={hosts}"])
    n = 8 * hosts
    by_hand = (Fraction(n - 1, n) * GiB / (325 * GB) if hosts == 2
               else Fraction(hosts - 1, hosts) * GiB / (200 * GB))
    assert b.optimum.value == by_hand
    assert f"{GiB / float(b.optimum.value) / GB:.9f}" == algbw


def test_reductions_run_the_machine_backwards(tmp_path):
    # g[0] sends at 10 GB/s and receives at 100; g[1], g[2] have 100 each way. By hand:
    # all-gather must get g[0]'s third of V out to the others (1/3 V over 10 GB/s);
    # reduce-scatter must get g[0]'s contributions to the other two parts out (2/3 V).
    machine = ["param V = 1 GiB", "topology {", "  gpu g[3]", "  switch s",
               "  link g[0] -> s bw 10 GB/s", "  link s -> g[0] bw 100 GB/s",
               "  link g[i] <-> s bw 100 GB/s for i in 1..2", "}"]
    for kind, share in (("allgather", Fraction(1, 3)), ("reduce_scatter", Fraction(2, 3))):
        path = tmp_path / f"{kind}.sched"
        path.write_text("\n".join([*machine, f"{kind} V over [g[0], g[1], g[2]]"]) + "\n")
        b = schedc.bound(schedc.load(path))[0]
        assert b.optimum.value == share * GiB / (10 * GB), kind


def test_broadcast_is_the_narrowest_flow_from_the_root(tmp_path):
    # The 4x4 torus: every chip has 4 links of B_ICI = 50 GB/s, so V leaves the root at most
    # at 200 GB/s, and Edmonds' theorem says 200 GB/s is reached.
    machine = Path(__file__).parents[1] / "schedules" / "machines" / "torus_4x4.sched"
    path = tmp_path / "torus_broadcast.sched"
    path.write_text(f'import "{machine}"\nparam V = 64 MiB\nbroadcast V over ranks root ranks[5]\n')
    (b,) = schedc.bound(schedc.load(path))
    assert b.collective.kind == "broadcast"
    assert b.optimum.value == Fraction(64 * 2**20, 200 * GB)


def test_allreduce_optimum_is_reduce_scatter_plus_allgather():
    b = optimum_of(Path(__file__).parents[1] / "schedules" / "seed" / "nvlink_2x8.sched")
    assert [p.kind for p in b.optimum.parts] == ["reduce_scatter", "allgather"]
    # 15/16 of 192 MiB leaves, then enters, one GPU over B_L + B_N = 500 GB/s: the end-host
    # bound exactly, so the sum is the all-reduce optimum here.
    assert b.optimum.value == 2 * Fraction(15 * 192 * 2**20, 16 * 500 * GB) == b.best_value


# ---- brute force over every subset, on random small machines --------------------------------

@st.composite
def machines(draw):
    gpus = draw(st.integers(2, 5))
    switches = draw(st.integers(0, 2))
    nodes = [f"g[{i}]" for i in range(gpus)] + [f"s[{j}]" for j in range(switches)]
    pairs = list(itertools.combinations(range(len(nodes)), 2))
    chosen = draw(st.lists(st.sampled_from(pairs), min_size=1, max_size=8, unique=True))
    chosen = sorted(set(chosen) | {(i, i + 1) for i in range(len(nodes) - 1)})  # connected
    rates = [draw(st.sampled_from([10, 25, 50, 100])) for _ in chosen]
    return gpus, switches, nodes, list(zip(chosen, rates))


def _brute_force(gpus: int, nodes: list[str], links) -> Fraction:
    """max over device sets S holding a rank (not all) of |ranks outside S|·(V/N) / B⁻(S),
    from the link list alone (each link carries its rate each way)."""
    n = len(nodes)
    rate = np.zeros((n, n), dtype=np.int64)
    for (a, b), r in links:
        rate[a, b] += r
        rate[b, a] += r
    best = Fraction(0)
    for mask in range(1, 2**n):
        inside = np.array([(mask >> k) & 1 for k in range(n)], dtype=bool)
        held = int(inside[:gpus].sum())
        if held == 0 or held == gpus:
            continue
        ingress = int(rate[np.ix_(~inside, inside)].sum())
        best = max(best, Fraction(gpus - held, gpus) / (ingress * GB))
    return best * GiB


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(machines())
def test_optimum_equals_brute_force(tmp_path_factory, machine):
    gpus, switches, nodes, links = machine
    lines = ["param V = 1 GiB", "topology {", f"  gpu g[{gpus}] forwards"]
    if switches:
        lines.append(f"  switch s[{switches}]")
    lines += [f"  link {nodes[a]} <-> {nodes[b]} bw {r} GB/s" for (a, b), r in links]
    lines += ["}", f"allgather V over [g[k] for k in 0..{gpus - 1}]"]
    path = tmp_path_factory.mktemp("m") / "m.sched"
    path.write_text("\n".join(lines) + "\n")
    b = schedc.bound(schedc.load(path))[0]
    assert b.optimum.value == _brute_force(gpus, nodes, links)

"""Lower bounds: cut-set, end-host and overlapped, against the seed's figures and by hand."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
import sympy
from conftest import ROOT, SCHEDULES, MiB, expr, golden, write
from test_window import TWO_GPUS

import schedc
from schedc.analysis.bound import cuts as cuts_module
from schedc.analysis.bound.bounds import must_cross
from schedc.elaborate.loader import load_program
from schedc.model.ir import Collective, linear_expr

SEED = SCHEDULES / "seed" / "nvlink_2x8.sched"
PCIE = Path(__file__).parent / "fixtures" / "bound" / "pcie_2x4.sched"
RING = (SCHEDULES / "lib" / "ring.sched").as_posix()
GB = 10**9


def compute(path, *sets, names=None):
    session = schedc.load(path, sets)
    (b,) = schedc.bound(session, names or (), verify=False)  # some compute nothing: bounds only
    return session.program, b


@pytest.fixture(scope="module")
def seed():
    return compute(SEED)


@pytest.fixture(scope="module")
def pcie():
    return compute(PCIE)


# ---- the seed's NVLink machine: the host-to-host cut is 8 NICs × 50 GB/s ------------------


def test_seed_binding_cut_is_the_host_to_host_cut(seed):
    program, b = seed
    cut = b.binding
    assert cut.cut.name == "node[0] | node[1]"
    assert cut.cut.family == "host"
    crossing = cut.crossing
    assert crossing.capacity.value == 400 * GB
    assert crossing.capacity.bandwidth == expr(program, "8*B_N")
    assert sorted(program.topology.resources[r].cls for r in crossing.capacity.resources) == ["nic"] * 8
    assert linear_expr(crossing.bytes) == expr(program, "V")
    assert crossing.bound == expr(program, "V/(8*B_N)")
    assert crossing.value == Fraction(192 * MiB, 400 * GB)  # 0.503 ms
    assert float(crossing.value) * 1e3 == pytest.approx(0.50332, abs=5e-6)


def test_seed_binding_cut_is_exactly_the_hierarchical_cross_host_phase(seed):
    program, b = seed
    hierarchical = next(e for e in b.schedules if e.timing.name == "hierarchical")
    cross = [c for c in hierarchical.timing.cost.classes
             if program.topology.resources[c.terms[c.dominant].resources[0]].cls == "nic"]
    phase = sympy.Add(*[c.count * (c.regime_time - c.startup) for c in cross])
    assert sympy.simplify(phase - b.binding.crossing.bound) == 0
    # ... and it moves exactly the minimum across that cut, over all 8 NICs.
    assert [linear_expr(x) for x in hierarchical.cut_bytes] == [expr(program, "V")] * 2
    assert hierarchical.cut_used == (8, 8)


def test_seed_end_host_bound_binds(seed):
    program, b = seed
    # The 16 ranks send 2·15·V through 16 × (B_L + B_N) = 8 TB/s.
    assert str(b.end_host.bound) == "15*V/(8*(B_L + B_N))"
    assert sympy.simplify(b.end_host.bound - expr(program, "15*V/(8*(B_L + B_N))")) == 0
    assert b.end_host.value == Fraction(30 * 192 * MiB, 16 * 500 * GB)
    assert b.binds == "end-host"
    assert b.best_value == b.end_host.value
    assert float(b.best_value) * 1e3 == pytest.approx(0.75497, abs=5e-6)


def test_seed_single_rank_cuts(seed):
    program, b = seed
    singles = [c for c in b.cuts if c.cut.family == "rank"]
    assert len(singles) == 16
    assert {c.forward.capacity.bandwidth for c in singles} == {expr(program, "B_L + B_N")}
    assert {c.value for c in singles} == {Fraction(192 * MiB, 500 * GB)}


def test_seed_schedules_against_the_bound(seed):
    program, b = seed
    e = {x.timing.name: x for x in b.schedules}
    # Overlapped: the busiest resource's total. The contiguous ring pushes 30 × 12 MiB
    # through one NIC direction; hierarchical 14 × 24 MiB through each NVLink direction.
    assert e["ring"].overlapped_value == Fraction(360 * MiB, 50 * GB)
    assert e["interleaved"].overlapped_value == Fraction(360 * MiB, 50 * GB)
    assert e["hierarchical"].overlapped_value == Fraction(336 * MiB, 450 * GB)
    assert sympy.simplify(e["hierarchical"].overlapped.time
                          - expr(program, "Max(7*V/(4*B_L), V/(8*B_N))")) == 0
    # time / best bound, by hand: the end-host bound 15·V/(8(B_L + B_N)) = 0.75497 ms under
    # hierarchical's 16α + V/(8·B_N) + 7V/(4·B_L) and the rings' 30α + 15V/(8·B_N).
    alpha, V, B_L, B_N = Fraction(83, 10**8), 192 * MiB, 450 * GB, 50 * GB
    best = Fraction(15 * V, 8 * (B_L + B_N))
    hierarchical = 16 * alpha + Fraction(V, 8 * B_N) + Fraction(7 * V, 4 * B_L)
    assert e["hierarchical"].ratio == hierarchical / best
    ring = 30 * alpha + Fraction(15 * V, 8 * B_N)
    assert e["ring"].ratio == e["interleaved"].ratio == ring / best
    assert float(e["hierarchical"].ratio) == pytest.approx(1.7213, abs=5e-5)
    assert float(e["ring"].ratio) == pytest.approx(10.033, abs=5e-4)
    # What keeps them from the bound: a NIC for the rings, NVLink for hierarchical.
    classes = {n: program.topology.resources[x.busiest].cls for n, x in e.items()}
    assert classes == {"ring": "nic", "interleaved": "nic", "hierarchical": "nvlink"}
    # Across the binding cut: the ring moves 2(p-1)/p·V = 360 MiB each way through 1 of the
    # 8 NICs; the interleaved ring 15·V over all 8.
    assert _mib(e["ring"].cut_bytes, program) == [360, 360]
    assert e["ring"].cut_used == (1, 8)
    assert _mib(e["interleaved"].cut_bytes, program) == [2880, 2880]
    assert e["interleaved"].cut_used == (8, 8)


def _mib(forms, program):
    return [linear_expr(f).xreplace(program.nominal) / MiB for f in forms]


def test_overlapped_bound_never_exceeds_the_time(seed):
    _, b = seed
    for e in b.schedules:
        assert b.best_value <= e.overlapped_value <= e.timing.time


# ---- the PCIe counter-example: the cut is the shared 32 GB/s slot ---------------------------


def test_pcie_binding_cut_is_the_shared_slot(pcie):
    program, b = pcie
    crossing = b.binding.crossing
    assert b.binding.cut.name == "node[0] | node[1]"
    assert crossing.capacity.value == 32 * GB
    assert crossing.capacity.bandwidth == expr(program, "B_slot")
    assert [program.topology.resources[r].name for r in crossing.capacity.resources] == \
        ["node[0].slot (forward)"]
    assert crossing.value == Fraction(192 * MiB, 32 * GB)


def test_pcie_ring_is_at_the_end_host_bound(pcie):
    program, b = pcie
    assert b.binds == "end-host"
    assert b.end_host.bound == expr(program, "7*V/(4*B_L)")  # 2·7·V / (8 × 32 GB/s)
    e = {x.timing.name: x for x in b.schedules}
    # 14 rounds × 24 MiB at 32 GB/s = 11.01 ms: the bound itself, plus 14 α.
    assert e["ring"].overlapped_value == b.best_value == Fraction(14 * 24 * MiB, 32 * GB)
    assert e["ring"].timing.time == b.best_value + 14 * Fraction(83, 10**8)
    assert float(e["hierarchical"].ratio) == pytest.approx(15.735 / 11.010, abs=5e-4)


def test_a_narrower_slot_makes_the_cut_bind():
    program, b = compute(PCIE, "B_slot=16GB/s")
    assert b.binds == "cut"
    assert b.best == expr(program, "V/B_slot")
    assert b.best_value == Fraction(192 * MiB, 16 * GB)


# ---- cuts: symmetry, shared resources, families --------------------------------------------

FOUR_HOSTS = """param V = 1 MiB
param B_L = 100 GB/s
param B_N = 10 GB/s
param B_S = 25 GB/s
topology {{
  host node[4] {{
    gpu g[2]
    switch sw
    link g[i] <-> sw bw B_L class local for i in 0..1
  }}
  switch rail[2]
  switch spine
  {nics}
  link rail[i] <-> spine bw B_S class spine for i in 0..1
}}
let ranks = [node[h].g[i] for h in 0..3 for i in 0..1]
allreduce V over ranks
"""


def _capacities(program):
    finder = cuts_module.RankCuts(program.topology, program.nominal, program.results[0].collective.ranks
                                  if program.results else ())
    return finder


def _cut_table(path):
    program = load_program(path)
    ranks = program.results[0].collective.ranks if program.results else \
        tuple(d.id for d in program.topology.devices if d.kind == "gpu")
    finder = cuts_module.RankCuts(program.topology, program.nominal, ranks)
    table = [(c.name, c.side, str(c.forward.bandwidth), c.forward.value,
              [program.topology.resources[r].name for r in c.forward.resources]) for c in finder.cuts()]
    return finder, table


@pytest.mark.parametrize("path", [SEED, SCHEDULES / "machines" / "pcie_2x4.sched"])
def test_cuts_found_through_symmetry_equal_cuts_solved_one_by_one(path, monkeypatch):
    finder, shifted = _cut_table(path)
    assert finder.shift is not None
    monkeypatch.setattr(cuts_module, "host_shift", lambda *args: None)
    plain, solved = _cut_table(path)
    assert plain.shift is None
    assert shifted == solved
    assert finder.solved < plain.solved


def test_symmetry_with_four_hosts(tmp_path, monkeypatch):
    nics = "link node[h].g[i] <-> rail[i] bw B_N class nic for h in 0..3 for i in 0..1"
    path = write(tmp_path, "four.sched", FOUR_HOSTS.format(nics=nics))
    finder, shifted = _cut_table(path)
    assert finder.shift is not None and finder.shift.order == 4
    monkeypatch.setattr(cuts_module, "host_shift", lambda *args: None)
    _, solved = _cut_table(path)
    assert shifted == solved
    names = [row[0] for row in shifted]
    assert names[:5] == ["node[0] | rest", "node[1] | rest", "node[2] | rest", "node[3] | rest",
                         "node[0] … node[1] | node[2] … node[3]"]
    # The halves: each rail joins all hosts, so the spine is not needed: 4 NICs per side.
    assert shifted[4][2:4] == ("4*B_N", 40 * GB)


def test_hosts_that_differ_are_not_taken_for_symmetric(tmp_path):
    nics = ("link node[0].g[i] <-> rail[i] bw B_S class nic for i in 0..1\n"
            "  link node[h].g[i] <-> rail[i] bw B_N class nic for h in 1..3 for i in 0..1")
    path = write(tmp_path, "odd.sched", FOUR_HOSTS.format(nics=nics))
    finder, table = _cut_table(path)
    assert finder.shift is None
    by_name = {row[0]: row for row in table}
    assert by_name["node[0] | rest"][2] == "2*B_S"
    assert by_name["node[1] | rest"][2] == "2*B_N"


def test_the_min_cut_family_finds_an_oversubscribed_uplink(tmp_path):
    # Even hosts hang off leaf 0, odd hosts off leaf 1; the leaves meet at the spine over
    # one slow uplink each. Neither hosts nor halves cut there; the min cut between node[0]
    # and node[1] does, and binds.
    path = write(tmp_path, "leaves.sched", """param V = 1 MiB
param B_N = 10 GB/s
param B_up = 5 GB/s
topology {
  host node[4] { gpu g[2] }
  switch leaf[2]
  switch spine
  link node[h].g[i] <-> leaf[h % 2] bw B_N class nic for h in 0..3 for i in 0..1
  link leaf[i] <-> spine bw B_up class uplink for i in 0..1
}
let ranks = [node[h].g[i] for h in 0..3 for i in 0..1]
allreduce V over ranks
schedule one { copy all from node[0].g[0] to node[1].g[0] }
""")
    program, b = compute(path)
    by_name = {c.cut.name: c for c in b.cuts}
    assert by_name["node[0] | rest"].forward.capacity.bandwidth == expr(program, "2*B_N")
    assert by_name["node[0] … node[1] | node[2] … node[3]"].forward.capacity.bandwidth == \
        expr(program, "4*B_N")
    # named by its two sides (before: "min cut node[0] → node[1]", the pair it separates)
    found = by_name["min cut node[0, 2] | node[1, 3]"]
    names = program.topology.devices
    assert [names[r].name for r in found.cut.side] == \
        ["node[0].g[0]", "node[0].g[1]", "node[2].g[0]", "node[2].g[1]"]
    assert found.forward.capacity.bandwidth == expr(program, "B_up")
    assert [program.topology.resources[r].name for r in found.forward.capacity.resources] == \
        ["leaf[0]->spine"]
    assert b.binding is found
    assert b.best == expr(program, "V/B_up")


def test_a_shared_slot_counts_once_and_ports_add_up(tmp_path):
    # Two ports per host, both `via` one slot: the host cut is min(2 ports, the slot).
    path = write(tmp_path, "slot.sched", f"""import "{RING}"
param V = 64 MiB
param B_P = 25 GB/s
param B_slot = 32 GB/s
topology {{
  host node[2] {{
    gpu g[2]
    switch pcie
    nic port[2]
    shared slot bw B_slot class slot
    link g[i] <-> pcie bw 64 GB/s class pcie for i in 0..1
    link pcie <-> port[i] via slot for i in 0..1
  }}
  switch tor
  link node[h].port[i] <-> tor bw B_P class nic for h in 0..1 for i in 0..1
}}
let ranks = [node[h].g[i] for h in 0..1 for i in 0..1]
allreduce V over ranks
schedule ring = ring_allreduce(ranks)
""")
    program, b = compute(path)
    host = b.cuts[0]
    assert host.cut.name == "node[0] | node[1]"
    assert host.forward.capacity.bandwidth == expr(program, "B_slot")
    assert host.forward.capacity.value == 32 * GB
    _, wide = compute(path, "B_slot=64GB/s")
    assert wide.cuts[0].forward.capacity.bandwidth == expr(program, "2*B_P")


def test_gpus_that_are_not_ranks_do_not_relay(tmp_path):
    # g[1] is no rank and does not forward: the only way from g[0] to g[2] is the slow link.
    path = write(tmp_path, "relay.sched", """param V = 1 MiB
topology {
  gpu g[3]
  link g[0] <-> g[1] bw 100 GB/s
  link g[1] <-> g[2] bw 100 GB/s
  link g[0] <-> g[2] bw 1 GB/s
}
allreduce V over [g[0], g[2]]
schedule s { copy all from g[0] to g[2] }
""")
    program, b = compute(path)
    assert b.binding.crossing.capacity.value == 1 * GB


def test_a_window_narrows_the_cut(run):
    code, out, err = run("bound", TWO_GPUS, "--json")
    assert code == 0, err
    document = json.loads(out)
    # The cut around g[0] is its link, window-limited to W/L = 256 KiB / 10 µs = 26.2144 GB/s.
    assert document["binding_cut"]["bandwidth"] == 26_214_400_000
    assert document["binding_cut"]["bandwidth_formula"] == "Min(B, W/L)"
    assert document["schedules"][0]["limited_by"]["window_limited"] is True
    assert document["schedules"][0]["window_limited_rounds"] == 2


@pytest.mark.parametrize("second, bandwidth", [("bw 2 * B", "3*B"), ("", None)])
def test_parallel_links_add_up_and_an_unlimited_one_wins(tmp_path, second, bandwidth):
    path = write(tmp_path, "parallel.sched", f"""param V = 1 MiB
param B = 10 GB/s
topology {{
  gpu g[2]
  link g[0] <-> g[1] bw B
  link g[0] <-> g[1] {second}
}}
allreduce V over g
schedule one {{ copy all from g[0] to g[1] }}
""")
    program, b = compute(path)
    (cut,) = b.cuts
    if bandwidth is None:
        assert (cut.forward.capacity.bandwidth, cut.forward.capacity.value) == (None, None)
        assert (b.binds, b.best_value, b.schedules[0].ratio) == ("none", 0, None)
    else:
        assert cut.forward.capacity.bandwidth == expr(program, bandwidth)
        assert b.best == expr(program, "V/(3*B)")  # end-host: 2·V / (2 × 3·B)


def test_ranks_that_nothing_connects(run, tmp_path):
    path = write(tmp_path, "apart.sched", """param V = 1 MiB
topology {
  gpu g[3]
  link g[0] <-> g[1] bw 1 GB/s
}
allreduce V over g
schedule one { copy all from g[0] to g[1] }
""")
    code, out, err = run("bound", path)
    assert (code, out) == (2, "")
    assert err.splitlines()[0] == (f"{path}:6:1: error: nothing connects g[2] to 2 ranks (g[0], …), "
                                   "so no schedule can compute this allreduce")


@pytest.mark.parametrize("kind, forward, backward", [
    ("allreduce", 1, 1),
    ("reduce_scatter", Fraction(5, 8), Fraction(3, 8)),  # what the other side ends with
    ("allgather", Fraction(3, 8), Fraction(5, 8)),  # what this side starts with
    ("alltoall", Fraction(15, 8), Fraction(15, 8)),  # 3 × 5 pairs, V/8 each
    ("broadcast", 1, 0),  # the root is on this side
    ("reduce", 0, 1),
])
def test_bytes_that_must_cross(kind, forward, backward):
    V = sympy.Symbol("V")
    ranks = tuple(range(8))
    collective = Collective(kind, ((V, Fraction(1)),), ranks, 0 if kind in ("broadcast", "reduce") else None,
                            span=None)
    out, back = must_cross(collective, frozenset(range(3)))
    assert (linear_expr(out), linear_expr(back)) == (forward * V, backward * V)


# ---- the command line ------------------------------------------------------------------------


def test_json(run):
    code, out, err = run("bound", SEED, "--json")
    assert code == 0, err
    document = json.loads(out)
    assert document["schema"] == "schedc.bound/1"
    keys = {"collective", "bound_s", "bound_formula", "binds", "binding_cut", "end_host", "cuts",
            "schedules", "optimum"}
    assert set(document) == {"schema", "file", "params", "collectives"} | keys
    (only,) = document["collectives"]
    assert set(only) == keys and all(only[k] == document[k] for k in keys)
    assert document["bound_s"] == pytest.approx(30 * 192 * MiB / (16 * 500e9), rel=1e-15)
    assert document["binds"] == "end-host"
    cut = document["binding_cut"]
    assert (cut["name"], cut["bandwidth"], cut["bandwidth_formula"]) == ("node[0] | node[1]", 400 * GB, "8*B_N")
    assert cut["bound_s"] == pytest.approx(192 * MiB / 400e9, rel=1e-15)
    assert cut["sides"][0] == [f"node[0].g[{i}]" for i in range(8)]
    # Reduce-scatter then all-gather: 15/16 of V leaves, then enters, one GPU over B_L + B_N.
    optimum = document["optimum"]
    assert optimum["lower_bound"] is False
    assert [c["kind"] for c in optimum["cuts"]] == ["reduce_scatter", "allgather"]
    assert optimum["time_s"] == pytest.approx(2 * 15 / 16 * 192 * MiB / 500e9, rel=1e-15)
    assert [s["name"] for s in document["schedules"]] == ["ring", "interleaved", "hierarchical"]
    for s in document["schedules"]:
        assert s["ratio"] == pytest.approx(s["time_s"] / document["bound_s"], rel=1e-12)
    ring = document["schedules"][0]
    assert ring["binding_cut"] == {"bytes_forward": 360 * MiB, "bytes_backward": 360 * MiB,
                                   "resources_used": 1, "resources": 8}
    assert ring["limited_by"]["class"] == "nic"
    # Formulas parse back to the figures they stand for.
    symbols = {p.name: p.symbol for p in load_program(SEED).params.values()}
    point = {symbols[n]: sympy.nsimplify(p["value"]) for n, p in document["params"].items()}
    assert float(sympy.sympify(document["bound_formula"], locals=symbols).subs(point)) == \
        pytest.approx(document["bound_s"], rel=1e-12)
    for s in document["schedules"]:
        assert float(sympy.sympify(s["overlapped_formula"], locals=symbols).subs(point)) == \
            pytest.approx(s["overlapped_s"], rel=1e-12)


def test_text_golden(run, monkeypatch):
    monkeypatch.chdir(ROOT)
    code, out, err = run("bound", "schedules/seed/nvlink_2x8.sched")
    assert code == 0, err
    golden(Path(__file__).parent / "fixtures" / "bound" / "nvlink_2x8.bound", out)
    code, again, _ = run("bound", "schedules/seed/nvlink_2x8.sched")
    assert again == out


SHIPPED = sorted(p.relative_to(SCHEDULES).as_posix() for p in SCHEDULES.rglob("*.sched"))


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_file(run, monkeypatch, shipped, reuse_shipped, name):
    monkeypatch.chdir(ROOT)
    code, out, err = run("bound", f"schedules/{name}", "--json")
    assert code == 0, err
    document = json.loads(out)
    program = shipped[f"schedules/{name}"].program
    groups = document["collectives"]
    collectives = dict.fromkeys(r.collective for r in program.results)  # in order of appearance
    assert [s["name"] for g in groups for s in g["schedules"]] == \
        [r.name for c in collectives for r in program.results if r.collective == c]
    for group in groups:
        if group["collective"] and group["collective"]["ranks"] > 1:
            assert group["bound_s"] > 0
            assert all(s["ratio"] >= 1 for s in group["schedules"])


def test_machine_files_print_their_cuts(run):
    code, out, err = run("bound", SCHEDULES / "machines" / "pcie_2x4.sched")
    assert code == 0, err
    assert "no schedules, so no collective to bound" in out
    assert "node[0] | node[1]" in out and "32 GB/s = B_slot" in out


def test_work_beyond_the_limit_is_refused(run, tmp_path):
    code, out, err = run("bound", SEED, "--max-cuts", "3")
    assert code == 2
    assert out == ""
    assert err.splitlines()[0] == (f"{SEED}:7:1: error: bounding this collective takes up to 11 "
                                   "max-flow problems; the limit is 3 (raise it with --max-cuts)")



def test_work_beyond_the_limit_without_schedules_points_at_the_gpus(run):
    # A machine file alone asks for the cuts between its GPUs: the refusal points at the GPUs'
    # declaration (line 13 of the machine: `gpu g[8]`), as any bad input does.
    machine = SCHEDULES / "machines" / "nvlink_2x8.sched"
    code, out, err = run("bound", machine, "--max-cuts", "1")
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        f"{machine}:13:5: error: bounding the cuts between its GPUs takes up to 11 max-flow "
        "problems; the limit is 1 (raise it with --max-cuts)",
        "      gpu g[8]", "      ^~~~~~~~"]

def test_schedules_of_different_collectives(run, tmp_path):
    path = write(tmp_path, "two.sched", f"""import "{RING}"
param V = 1 MiB
topology {{
  gpu g[2]
  link g[0] <-> g[1] bw 1 GB/s
}}
allreduce V over g
schedule a = ring_allreduce(g)
allgather V over g
schedule b = ring_allgather(g)
""")
    code, out, err = run("bound", path)
    assert code == 0, err
    sections = out.split("\n\n" + str(path) + ": ")
    assert "allreduce of 1 MiB over 2 ranks" in sections[0] and "allgather of 1 MiB" in sections[1]
    code, out, err = run("bound", path, "--json")
    document = json.loads(out)
    assert [c["collective"]["kind"] for c in document["collectives"]] == ["allreduce", "allgather"]
    assert document["bound_s"] == document["collectives"][0]["bound_s"]
    assert [s["name"] for s in document["collectives"][1]["schedules"]] == ["b"]
    code, out, err = run("bound", path, "-s", "b")
    assert code == 0, err
    assert "allgather of 1 MiB over 2 ranks" in out


# ---- the min-cut row names the cut's two sides (before, the pair of hosts it separated).

LEAVES = """param V = 1 MiB
param B_N = 10 GB/s
param B_up = 5 GB/s
topology {{
  host node[{hosts}] {{ gpu g[2] }}
  switch leaf[2]
  switch spine
  link node[h].g[i] <-> leaf[h % 2] bw B_N class nic for h in 0..{last} for i in 0..1
  link leaf[i] <-> spine bw B_up class uplink for i in 0..1
}}
let ranks = [node[h].g[i] for h in 0..{last} for i in 0..1]
allreduce V over ranks
schedule one {{ copy all from node[0].g[0] to node[1].g[0] }}
"""


@pytest.mark.parametrize("hosts, name", [
    (4, "min cut node[0, 2] | node[1, 3]"),
    (16, "min cut node[0, 2, …, 14] | node[1, 3, …, 15]"),  # even hosts hang off leaf 0
])
def test_the_min_cut_row_names_the_two_sides(tmp_path, run, hosts, name):
    path = write(tmp_path, "leaves.sched", LEAVES.format(hosts=hosts, last=hosts - 1))
    code, out, _ = run("bound", path, "--no-verify")  # (`one` is no all-reduce)
    assert code == 0
    rows = [line for line in out.splitlines() if line.startswith("  min cut")]
    # the slow uplink of 5 GB/s each way, which V = 1 MiB must cross: V/B_up = 209.72 µs
    assert len(rows) == 1 and rows[0].startswith(f"  {name}  ")
    assert rows[0].split("  ")[-1] == "209.72 µs = V/B_up"
    assert f"  binding cut: {name}, 1 × uplink (leaf[0]->spine)\n" in out


class _Devices:
    def __init__(self, names):
        self.devices = [type("Device", (), {"name": n})() for n in names]


@pytest.mark.parametrize("side, expected", [
    (range(0, 4), "g[0..3] | g[4..7]"),
    ([0, 2, 4, 6], "g[0, 2, …, 6] | g[1, 3, …, 7]"),
    ([0, 1, 5], "g[0, 1, 5] | g[2..4, 6, 7]"),  # runs of two as two indices
])
def test_sides_are_named_compactly(side, expected):
    from schedc.analysis.bound.naming import sides_text
    topology = _Devices([f"g[{i}]" for i in range(8)])
    assert sides_text(topology, [], frozenset(side), list(range(8))) == expected  # type: ignore[arg-type]


def test_a_side_of_many_families_is_cut_and_counted():
    from schedc.analysis.bound.naming import sides_text
    topology = _Devices([f"{c}[0]" for c in "abcdefgh"])
    text = sides_text(topology, [], frozenset(range(6)), list(range(8)))  # type: ignore[arg-type]
    assert text == "a[0], b[0], c[0], …, f[0] (6 ranks) | g[0], h[0]"


def test_thousands_of_devices_are_named_in_a_line():
    from schedc.analysis.bound.naming import sides_text
    names = [f"node[{h}].g[{i}]" for h in range(1024) for i in range(8)]
    topology = _Devices(names)
    hosts = [(f"node[{h}]", frozenset(range(8 * h, 8 * h + 8))) for h in range(1024)]
    odd = frozenset(r for r in range(8192) if (r // 8) % 3 == 0 or r == 8)
    text = sides_text(topology, hosts, odd, list(range(8192)))  # type: ignore[arg-type]
    # hosts 0, 3, …, 1023 (a stride) whole, and node[1].g[0]; the other side: the other hosts
    # but node[1], whose runs 2 | 4, 5 | 7, 8 | … | 1021, 1022 are cut to the first three and
    # the last, and node[1].g[1..7]
    assert text == ("node[0, 3, …, 1023], node[1].g[0] | node[2, 4, 5, 7, 8, …, 1021, 1022], "
                    "node[1].g[1..7]")

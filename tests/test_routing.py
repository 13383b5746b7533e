"""Routing on real fabrics: equal-cost multipath, host-local routes, pinned routes, `routing
first`, `emit routes`, tied bottlenecks, and the issue's two fat-tree cases."""

from __future__ import annotations

import tempfile
from fractions import Fraction
from pathlib import Path

import pytest
import sympy
from conftest import SCHEDULES, timings, write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_topology import MACHINE

from schedc.analysis.bound.bounds import bound_all
from schedc.elaborate.loader import load_program
from schedc.render.emit import schedule_pairs
from schedc.session import Session

MiB = 2**20
V = 192 * MiB
ALPHA = Fraction(83, 100_000_000)  # 0.83 us
B_L, B_N = 450 * 10**9, 50 * 10**9
FAT_TREE = (SCHEDULES / "machines" / "fat_tree_4x8.sched").as_posix()
LIB = (SCHEDULES / "lib").as_posix()


def _id(program, name: str) -> int:
    return next(d.id for d in program.topology.devices if d.name == name)


def shares(program, a: str, b: str) -> dict[str, Fraction]:
    """{'x->y': share} of the hops of the route from a to b."""
    topo = program.topology
    route = topo.route(_id(program, a), _id(program, b), None)
    names = [d.name for d in topo.devices]
    return {f"{names[topo.hops[h].src]}->{names[topo.hops[h].dst]}": s for h, s in route.shares}




def small(tmp_path, body, ranks="a, z", schedule="copy all from a to z"):
    return load_program(write(tmp_path, "t.sched", MACHINE.format(body=body, ranks=ranks,
                                                                 schedule=schedule)))


def formula(program, name="x"):
    return Session(program).timing(name).cost.formula


def symbols(program):
    return [program.params[n].symbol for n in ("V", "B")]


DIAMOND = ("gpu a\n gpu z\n switch s1\n switch s2\n link a <-> s1 bw B\n link a <-> s2 bw B\n"
           " link s1 <-> z bw B\n link s2 <-> z bw B")


def test_equal_cost_routes_share_the_bytes_evenly(tmp_path):
    program = small(tmp_path, DIAMOND)
    assert shares(program, "a", "z") == {"a->s1": Fraction(1, 2), "a->s2": Fraction(1, 2),
                                         "s1->z": Fraction(1, 2), "s2->z": Fraction(1, 2)}
    v, b = symbols(program)
    assert formula(program) == v / (2 * b)  # half of V on each of a's two links
    first = small(tmp_path, "routing first\n " + DIAMOND)
    assert first.topology.describe_route(_id(first, "a"), _id(first, "z"), None) == "a -> s1 -> z"
    assert formula(first) == v / b


def test_the_split_is_per_hop_as_switches_hash_not_per_route(tmp_path):
    # a -> u -> m -> z is one shortest route; a -> w -> m1 -> z and a -> w -> m2 -> z are two
    # more. Hashing at every switch sends half of a's bytes to u and half to w, and w splits
    # its half again: a->w carries 1/2 (an even split over the 3 routes would give it 2/3).
    body = ("gpu a\n gpu z\n switch u, m, w, m1, m2\n link a <-> u bw B\n link u <-> m bw B\n"
            " link m <-> z bw B\n link a <-> w bw B\n link w <-> m1 bw B\n link w <-> m2 bw B\n"
            " link m1 <-> z bw B\n link m2 <-> z bw B")
    program = small(tmp_path, body)
    found = shares(program, "a", "z")
    assert found["a->u"] == found["a->w"] == Fraction(1, 2)
    assert found["w->m1"] == found["m1->z"] == Fraction(1, 4)
    assert sum(found.values()) == 3  # every path has 3 hops
    paths = dict((" ".join(n), s) for n, s in program.topology.route_paths(
        _id(program, "a"), _id(program, "z"), None))
    assert paths == {"a u m z": Fraction(1, 2), "a w m1 z": Fraction(1, 4),
                     "a w m2 z": Fraction(1, 4)}
    v, b = symbols(program)
    assert formula(program) == v / (2 * b)


def test_parallel_links_split_too(tmp_path):
    program = small(tmp_path, "gpu a\n gpu z\n link a <-> z bw B\n link a <-> z bw B")
    v, b = symbols(program)
    assert formula(program) == v / (2 * b)


def test_a_route_with_several_paths_waits_for_the_slowest(tmp_path):
    body = ("gpu a\n gpu z\n switch s1\n switch s2\n link a <-> s1 bw B latency 1 us\n"
            " link a <-> s2 bw B latency 3 us\n link s1 <-> z bw B latency 1 us\n"
            " link s2 <-> z bw B latency 1 us")
    program = small(tmp_path, body)
    c, = Session(program).timing("x").cost.classes
    assert c.startup.xreplace(program.nominal) == Fraction(4, 10**6)  # 3 us + 1 us


def test_host_local_routes_come_first(tmp_path):
    # g0 -> g1 is two links through the host's switch, and two through the outside switch
    # `leaf` (declared first): the route stays inside the host.
    body = ("switch leaf\n host n { gpu g0\n gpu g1\n switch local }\n"
            " link n.g0 <-> leaf bw B\n link n.g1 <-> leaf bw B\n"
            " link n.g0 <-> n.local bw 4 * B\n link n.g1 <-> n.local bw 4 * B")
    program = small(tmp_path, body, "n.g0, n.g1", "copy all from n.g0 to n.g1")
    assert set(shares(program, "n.g0", "n.g1")) == {"n.g0->n.local", "n.local->n.g1"}
    v, b = symbols(program)
    assert formula(program) == v / (4 * b)
    # Without a route inside the host, the outside one is taken.
    outside = small(tmp_path, body.replace(" link n.g1 <-> n.local bw 4 * B", ""),
                    "n.g0, n.g1", "copy all from n.g0 to n.g1")
    assert set(shares(outside, "n.g0", "n.g1")) == {"n.g0->leaf", "leaf->n.g1"}


PINNED = DIAMOND + "\n route a -> z via s2"


def test_a_pinned_route_is_taken(tmp_path):
    program = small(tmp_path, PINNED)
    assert shares(program, "a", "z") == {"a->s2": 1, "s2->z": 1}
    assert program.topology.route(_id(program, "a"), _id(program, "z"), None).pinned
    # The reverse direction is not pinned by `->`; `<->` pins it too.
    assert len(shares(program, "z", "a")) == 4
    both = small(tmp_path, DIAMOND + "\n route a <-> z via s2")
    assert shares(both, "z", "a") == {"z->s2": 1, "s2->a": 1}


def test_a_pinned_route_splits_over_parallel_links(tmp_path):
    body = "gpu a\n gpu z\n switch s\n link a <-> s bw B\n link a <-> s bw B\n link s <-> z\n" \
           " route a -> z via s"
    program = small(tmp_path, body)
    v, b = symbols(program)
    assert formula(program) == v / (2 * b)
    assert formula(small(tmp_path, "routing first\n " + body)) == v / b


def test_a_route_may_come_before_its_links(tmp_path):
    body = "gpu a\n gpu z\n switch s1, s2\n route a -> z via s2\n" + DIAMOND.split("switch s2\n")[1]
    assert shares(small(tmp_path, body), "a", "z") == {"a->s2": 1, "s2->z": 1}


def test_pinned_routes_of_a_family(tmp_path):
    body = ("gpu g[3]\n switch s[2]\n link g[i] <-> s[j] bw B for i in 0..2 for j in 0..1\n"
            " route g[i] -> g[(i + 1) % 3] via s[i % 2] for i in 0..2")
    program = small(tmp_path, body, "g[0], g[1], g[2]", "copy all from g[0] to g[1]")
    assert shares(program, "g[1]", "g[2]") == {"g[1]->s[1]": 1, "s[1]->g[2]": 1}
    assert shares(program, "g[2]", "g[0]") == {"g[2]->s[0]": 1, "s[0]->g[0]": 1}


ROUTE_ERRORS = [
    ("missing link", DIAMOND + "\n route a -> z via s1, s2",
     "the route a -> z: no link from s1 to s2"),
    ("no link at all without via", DIAMOND + "\n route a -> z",
     "the route a -> z: no link from a to z"),
    ("through a GPU", DIAMOND + "\n gpu m\n link a <-> m\n link m <-> z\n route a -> z via m",
     "the route a -> z passes m, which does not forward traffic"),
    ("a loop", DIAMOND + "\n route a -> z via s1, a, s2", "the route a -> z passes a twice"),
    ("to itself", DIAMOND + "\n route a -> a via s1", "a route from a to itself"),
    ("pinned twice", DIAMOND + "\n route a -> z via s1\n route a -> z via s2",
     "the route a -> z is pinned twice, differently"),
    ("unknown policy", "routing ecpm\n " + DIAMOND,
     "unknown routing policy 'ecpm'; did you mean 'ecmp'?"),
    ("two policies", "routing first\n routing ecmp\n " + DIAMOND, "routing is already 'first'"),
    ("policy inside a host", "host n { routing first }\n " + DIAMOND,
     "`routing` applies to the whole machine"),
    ("not a device", DIAMOND + "\n route a -> z via 3", "a device of a route must be a device"),
]


@pytest.mark.parametrize("text, message", [c[1:] for c in ROUTE_ERRORS],
                         ids=[c[0] for c in ROUTE_ERRORS])
def test_route_errors_point_at_the_statement(run, tmp_path, text, message):
    path = write(tmp_path, "t.sched", MACHINE.format(body=text, ranks="a, z",
                                                   schedule="copy all from a to z"))
    code, out, err = run("time", path)
    assert code == 2 and out == "" and "Traceback" not in err
    first = err.splitlines()[0]
    assert first.startswith(f"{path}:") and message in first, err
    line, col = (int(x) for x in first[len(str(path)) + 1:].split(":")[:2])
    source = path.read_text().splitlines()[line - 1]
    assert err.splitlines()[1] == "  " + source
    assert err.splitlines()[2].index("^") == col + 1
    keyword = "via" if message.startswith("a device") else ("routing" if "polic" in message
                                                             or "routing" in message else "route")
    assert keyword in source


def test_route_and_routing_stay_ordinary_names(tmp_path):
    text = "let route = 2\nlet routing = route + 1\nreport r = routing\n"
    program = load_program(write(tmp_path, "n.sched", text))
    assert program is not None


# ---- the two cases, on schedules/machines/fat_tree_4x8.sched ----------------------
#
# 4 hosts × 8 GPUs, a leaf per host, 2 spines, uplinks of 200 GB/s = 4 B_N per leaf per spine.
# Hierarchical all-reduce of V = 192 MiB: 14 rounds of V/8 over NVLink, 6 rounds of V/32 over
# the NICs, where each leaf sends 8 × V/32 = V/4 to the next: V/8 per uplink over both
# spines (as long as the NIC's V/32 over B_N), V/4 over the first spine alone (twice as long).
HIERARCHICAL = 20 * ALPHA + Fraction(14 * V, 8 * B_L) + Fraction(6 * V, 32 * B_N)  # 1.5545 ms
FIRST_SPINE = 20 * ALPHA + Fraction(14 * V, 8 * B_L) + Fraction(6 * V, 16 * B_N)   # 2.3095 ms
# Intra-host rounds pinned through the leaf: V/8 over a NIC instead of NVLink: 7.818 ms.
THROUGH_LEAF = 20 * ALPHA + Fraction(14 * V, 8 * B_N) + Fraction(6 * V, 32 * B_N)

SCHEDULE_FILE = f"""import "{{machine}}"
import "{LIB}/ring.sched"
import "{LIB}/hierarchical.sched"
{{extra}}
param V = 192 MiB
allreduce V over ranks
schedule ring = ring_allreduce(ranks)
schedule hierarchical = hierarchical_allreduce(groups)
"""


def nic_first_machine() -> str:
    """The fat tree with its declarations reordered: the NIC links before the NVLink links,
    so a route through the leaf is the first-declared of two equally short ones."""
    text = Path(FAT_TREE).read_text()
    nvlink = "    link g[i] <-> nvswitch bw B_L class nvlink for i in 0..7\n"
    nic = ("  link node[h].g[i] <-> leaf[h // hosts_per_leaf] bw B_N class nic "
           "for h in 0..hosts-1 for i in 0..7\n")
    assert nvlink in text and nic in text
    return text.replace(nvlink, "").replace(nic, nic + (
        "  link node[h].g[i] <-> node[h].nvswitch bw B_L class nvlink for h in 0..hosts-1 "
        "for i in 0..7\n"))


def fat_tree(tmp_path, extra: str = "", nic_first: bool = False):
    machine = FAT_TREE
    if nic_first:
        machine = write(tmp_path, "nic_first.sched", nic_first_machine()).as_posix()
    path = write(tmp_path, "case.sched", SCHEDULE_FILE.format(machine=machine, extra=extra))
    return timings(path)


def test_two_spines_carry_the_cross_leaf_traffic(tmp_path):
    _, found = fat_tree(tmp_path)
    assert found["hierarchical"].time == HIERARCHICAL
    _, first = fat_tree(tmp_path, "topology { routing first }")
    assert first["hierarchical"].time == FIRST_SPINE


def test_nic_links_declared_first_change_nothing(tmp_path):
    program, shipped = fat_tree(tmp_path)
    _, reordered = fat_tree(tmp_path, nic_first=True)
    for name in ("ring", "hierarchical"):
        assert reordered[name].time == shipped[name].time
        assert reordered[name].cost.formula == shipped[name].cost.formula
    assert reordered["hierarchical"].time == HIERARCHICAL
    # Host-local routes hold under `routing first` too; only the spine choice changes.
    _, first = fat_tree(tmp_path, "topology { routing first }", nic_first=True)
    assert first["hierarchical"].time == FIRST_SPINE
    # Pinning the intra-host routes through the leaf gives the 7.82 ms.
    pins = ("topology { route node[h].g[i] -> node[h].g[(i + 1) % 8] via leaf[h] "
            "for h in 0..3 for i in 0..7 }")
    _, pinned = fat_tree(tmp_path, pins, nic_first=True)
    assert pinned["hierarchical"].time == THROUGH_LEAF


def test_time_lists_every_tied_bottleneck(run):
    code, out, _ = run("time", SCHEDULES / "algorithms" / "fat_tree_4x8.sched", "-s", "hierarchical")
    assert code == 0
    lines = out.splitlines()
    k = next(i for i, line in enumerate(lines) if "bottleneck: nic" in line)
    assert lines[k + 1].strip().startswith("tied with: uplink (leaf[0]->spine[0], ")


def test_the_overlapped_bound_uses_the_split(tmp_path):
    # Overlapped, per resource, all rounds: NVLink carries 14 × V/8 (782.94 µs); an uplink
    # 6 × V/8 over 4 B_N with both spines (377.5 µs), 6 × V/4 with the first only (1.51 ms).
    for extra, busiest, value in (("", "nvlink", Fraction(14 * V, 8 * B_L)),
                                  ("topology { routing first }", "uplink",
                                   Fraction(6 * V, 16 * B_N))):
        path = write(tmp_path, "case.sched", SCHEDULE_FILE.format(machine=FAT_TREE, extra=extra))
        session = Session(load_program(path))
        (b,) = bound_all(session, ["hierarchical"])
        (e,) = b.schedules
        assert e.overlapped_value == value
        assert session.program.topology.resources[e.busiest].cls == busiest


# ---- emit routes ----------------------------------------------------------------------------


def test_emit_routes_lists_each_pair_with_its_shares(run):
    torus = SCHEDULES / "algorithms" / "torus_4x4.sched"
    code, out, _ = run("emit", "routes", torus, "-s", "diagonal")
    assert code == 0
    assert out == ("diagonal: 1 pair, 1 over several routes (routing ecmp)\n"
                   "  chip[0] -> chip[5]: 2 routes\n"
                   "       1/2  chip[0] -> chip[1] -> chip[5]\n"
                   "       1/2  chip[0] -> chip[4] -> chip[5]\n")
    # (0, 0) to (2, 2): both directions of both dimensions are shortest (2 hops each way),
    # 4 × C(4, 2) = 24 paths.
    code, out, _ = run("emit", "routes", torus, "--pair", "chip[0]", "chip[10]")
    assert code == 0 and "chip[0] -> chip[10]: 24 routes" in out and "… 16 more" in out
    code, _, err = run("emit", "routes", torus, "--pair", "chip[0]", "chip[99]")
    assert code == 2 and "no device 'chip[99]'" in err


def test_seed_machines_have_unique_routes():
    """ECMP changes nothing on the machines that were there before it: every pair that a
    schedule of theirs uses has exactly one shortest route."""
    files = [*sorted((SCHEDULES / "seed").glob("*.sched")),
             *(SCHEDULES / "algorithms" / f"{n}.sched" for n in
               ("flat_8", "flat_16", "flat_16_composed", "rail_4x8"))]
    checked = 0
    for path in files:
        session = Session(load_program(path))
        topology = session.program.topology
        for name in session.selected(required=False):
            for a, z, _ in schedule_pairs(session.schedule(name), len(topology.devices)):
                assert topology.route(a, z, None).unique, (path, name)
                checked += 1
    assert checked > 1000


# ---- the time does not depend on the order of declarations --------------------------------


@st.composite
def machines(draw):
    """Random hosts of GPUs (some with a local switch), top-level switches in a chain, GPUs
    with NICs on random switches (parallel links too), and random rounds of sends: the
    pieces of a .sched text, and two random orders of its declarations."""
    hosts = draw(st.integers(1, 3))
    tops = [f"s{k}" for k in range(draw(st.integers(1, 3)))]
    bandwidths = st.sampled_from(["B1", "B2", "2 * B1", ""])
    devices: list[tuple[str, str]] = [("", f"switch {s}") for s in tops]
    links = [(tops[k], tops[k + 1], draw(bandwidths)) for k in range(len(tops) - 1)]
    gpus = []
    for h in range(hosts):
        names = [f"h{h}.g{k}" for k in range(draw(st.integers(1, 3)))]
        gpus += names
        devices += [(f"h{h}", f"gpu g{k}") for k in range(len(names))]
        local = draw(st.booleans())
        if local:
            devices.append((f"h{h}", "switch sw"))
            links.append((f"h{h}.sw", draw(st.sampled_from(tops)), draw(bandwidths)))
        for g in names:
            if local:
                links.append((g, f"h{h}.sw", draw(bandwidths)))
            for _ in range(draw(st.integers(0 if local else 1, 2))):
                links.append((g, draw(st.sampled_from(tops)), draw(bandwidths)))
    pairs = st.tuples(st.sampled_from(gpus), st.sampled_from(gpus)).filter(lambda p: p[0] != p[1])
    rounds = draw(st.lists(st.lists(pairs, min_size=1, max_size=4), min_size=1, max_size=3))
    orders = [(draw(st.permutations(range(len(devices)))), draw(st.permutations(range(len(links)))),
               draw(st.lists(st.booleans(), min_size=len(links), max_size=len(links))))
              for _ in range(2)]
    return devices, links, gpus, rounds, orders


def render(devices, links, gpus, rounds, order) -> str:
    device_order, link_order, flips = order
    blocks: dict[str, list[str]] = {}
    top: list[str] = []
    for k in device_order:
        host, decl = devices[k]
        if host:
            if host not in blocks:
                blocks[host] = []
                top.append(host)
            blocks[host].append(decl)
        else:
            top.append(decl)
    lines = ["param V = 1 MiB", "param alpha = 1 us", "param B1 = 10 GB/s", "param B2 = 25 GB/s",
             "topology {"]
    lines += [f"  host {t} {{ {'; '.join(blocks[t])} }}" if t in blocks else f"  {t}" for t in top]
    for k in link_order:
        a, b, bw = links[k]
        if flips[k]:
            a, b = b, a
        lines.append(f"  link {a} <-> {b}" + (f" bw {bw}" if bw else ""))
    lines += ["}", f"allreduce V over [{', '.join(gpus)}]", "schedule x {"]
    lines += ["  round { " + "; ".join(f"send V from {a} to {b}" for a, b in r) + " }"
              for r in rounds]
    return "\n".join(lines + ["}"]) + "\n"


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(machines())
def test_declaration_order_changes_no_time_or_formula(machine):
    devices, links, gpus, rounds, orders = machine
    results = []
    with tempfile.TemporaryDirectory() as directory:
        for order in orders:
            path = Path(directory) / "m.sched"
            path.write_text(render(devices, links, gpus, rounds, order))
            t = Session(load_program(path)).timing("x")
            results.append((t.time, t.cost.formula))
    (time_a, formula_a), (time_b, formula_b) = results
    assert time_a == time_b
    assert formula_a == formula_b or sympy.simplify(formula_a - formula_b) == 0


def test_the_documented_route_error_is_real(run, tmp_path):
    page = (Path(__file__).resolve().parent.parent / "docs" / "routing.md").read_text()
    block = page.split("$ cat case.sched\n")[-1].split("```")[0]
    text, shown = block.split("$ schedc time case.sched\n")
    text = text.replace('"schedules/', f'"{SCHEDULES.as_posix()}/')
    code, out, err = run("time", write(tmp_path, "case.sched", text))
    assert code == 2 and out == ""
    assert err.replace(f"{tmp_path}/", "") == shown

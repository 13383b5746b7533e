"""Routing, resources and the cross-host notion."""

from __future__ import annotations

import pytest
import sympy
from conftest import SCHEDULES, write

from schedc.cost.lower import lower
from schedc.elaborate.loader import load_program
from schedc.errors import SchedcError
from schedc.session import Session


def _device(program, name: str) -> int:
    return next(d.id for d in program.topology.devices if d.name == name)


def route(program, a: str, b: str) -> str:
    topo = program.topology
    return topo.describe_route(_device(program, a), _device(program, b), None)


@pytest.fixture(scope="module")
def nvlink():
    return load_program(SCHEDULES / "seed" / "nvlink_2x8.sched")


def test_rail_optimised_routes(nvlink):
    assert route(nvlink, "node[0].g[0]", "node[0].g[1]") == "node[0].g[0] -> node[0].nvswitch -> node[0].g[1]"
    assert route(nvlink, "node[0].g[3]", "node[1].g[3]") == "node[0].g[3] -> rail[3] -> node[1].g[3]"
    assert route(nvlink, "node[0].g[7]", "node[1].g[0]") == \
        "node[0].g[7] -> rail[7] -> spine -> rail[0] -> node[1].g[0]"


def test_resources_are_directed(nvlink):
    names = {r.name for r in nvlink.topology.resources}
    assert {"node[0].g[0]->rail[0]", "rail[0]->node[0].g[0]"} <= names
    spine = [r for r in nvlink.topology.resources if "spine" in r.name]
    assert spine and all(r.bandwidth is None for r in spine)


MACHINE = """
param V = 1 MiB
param B = 10 GB/s
topology {{
{body}
}}
allreduce V over [{ranks}]
schedule x {{ {schedule} }}
"""


def compile_text(tmp_path, body, ranks, schedule):
    return load_program(write(tmp_path, "t.sched", MACHINE.format(body=body, ranks=ranks, schedule=schedule)))


def test_gpus_do_not_forward_unless_declared(tmp_path):
    chain = "gpu a\n gpu b {fw}\n gpu c\n link a <-> b bw B\n link b <-> c bw B"
    program = compile_text(tmp_path, chain.format(fw=""), "a, c", "copy all from a to c")
    with pytest.raises(SchedcError, match="no route from a to c"):
        Session(program).timing("x")
    program = compile_text(tmp_path, chain.format(fw="forwards"), "a, c", "copy all from a to c")
    assert route(program, "a", "c") == "a -> b -> c"


def test_equal_routes_take_the_first_declared_link(tmp_path):
    # Under `routing first`; the default splits over both (tests/test_routing.py).
    body = "routing first\n gpu a\n gpu z\n switch s2\n switch s1\n link a <-> s2 bw B\n" \
           " link a <-> s1 bw B\n link s1 <-> z bw B\n link s2 <-> z bw B"
    program = compile_text(tmp_path, body, "a, z", "copy all from a to z")
    assert route(program, "a", "z") == "a -> s2 -> z"
    swapped = body.replace(" link a <-> s2 bw B\n link a <-> s1 bw B", " link a <-> s1 bw B\n link a <-> s2 bw B")
    program = compile_text(tmp_path, swapped, "a, z", "copy all from a to z")
    assert route(program, "a", "z") == "a -> s1 -> z"


def test_shortest_route_wins_over_declaration_order(tmp_path):
    body = "gpu a\n gpu z\n switch s\n switch t\n switch u\n link a <-> s bw B\n link s <-> t bw B\n" \
           " link t <-> z bw B\n link a <-> u bw B\n link u <-> z bw B"
    program = compile_text(tmp_path, body, "a, z", "copy all from a to z")
    assert route(program, "a", "z") == "a -> u -> z"


def _formula(program):
    return Session(program).timing("x").cost.formula


def test_full_duplex_directions_are_separate_resources(tmp_path):
    body = "gpu a\n gpu b\n link a <-> b bw B"
    program = compile_text(tmp_path, body, "a, b", "round { copy all from a to b; copy all from b to a }")
    V, B = program.params["V"].symbol, program.params["B"].symbol
    assert sympy.simplify(_formula(program) - V / B) == 0


def test_half_duplex_directions_share_one_resource(tmp_path):
    body = "gpu a\n gpu b\n link a <-> b bw B half"
    program = compile_text(tmp_path, body, "a, b", "round { copy all from a to b; copy all from b to a }")
    V, B = program.params["V"].symbol, program.params["B"].symbol
    assert sympy.simplify(_formula(program) - 2 * V / B) == 0


def test_shared_resource_carries_the_traffic_of_every_link_via_it(tmp_path):
    body = ("gpu a[2]\n gpu z\n switch s\n shared bus bw B class bus\n"
            " link a[i] <-> s bw 4 * B via bus for i in 0..1\n link s <-> z")
    program = compile_text(tmp_path, body, "a[0], a[1], z",
                           "round { copy all from a[0] to z; copy all from a[1] to z }")
    V, B = program.params["V"].symbol, program.params["B"].symbol
    t = Session(program).timing("x")
    assert sympy.simplify(t.cost.formula - 2 * V / B) == 0  # both transfers cross the bus
    (c,) = t.cost.classes
    assert program.topology.resources[c.terms[c.dominant].resources[0]].cls == "bus"


def test_link_without_bandwidth_is_never_a_bottleneck(tmp_path):
    body = "gpu a\n gpu b\n switch s\n link a <-> s bw B\n link s <-> b"
    program = compile_text(tmp_path, body, "a, b", "copy all from a to b")
    V, B = program.params["V"].symbol, program.params["B"].symbol
    assert sympy.simplify(_formula(program) - V / B) == 0


def test_one_way_links(tmp_path):
    body = "gpu a\n gpu b\n link a -> b bw B"
    program = compile_text(tmp_path, body, "a, b", "copy all from b to a")
    with pytest.raises(SchedcError, match="no route from b to a"):
        Session(program).timing("x")


def test_cross_host_rounds_are_the_middle_phase_of_hierarchical(nvlink):
    loads = lower(nvlink.schedule("hierarchical"), nvlink.topology)
    assert [r for r, cross in enumerate(loads.cross_rounds) if cross] == [7, 8]

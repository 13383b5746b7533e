"""Properties of the bounds on random machines: time >= overlapped >= every lower bound."""

from __future__ import annotations

import tempfile
from pathlib import Path

from conftest import SCHEDULES, examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import schedc
from schedc.analysis.bound.cuts import RankCuts
from schedc.elaborate.loader import load_program

RING = (SCHEDULES / "lib" / "ring.sched").as_posix()


@st.composite
def machines(draw):
    """A .sched text: hosts of GPUs on a local switch, joined by rails or by one NIC per host
    in a shared slot; one ring schedule of a random collective over a random rank order."""
    hosts = draw(st.integers(1, 3))
    gpus = draw(st.integers(1 if hosts > 1 else 2, 3))
    fabric = draw(st.sampled_from(["rails", "slot"]))
    odd_host = hosts > 1 and draw(st.booleans())  # host 0's uplink differs from the others'
    window = draw(st.booleans())
    kind = draw(st.sampled_from(["allreduce", "allgather", "reduce_scatter"]))
    order = draw(st.permutations([(h, i) for h in range(hosts) for i in range(gpus)]))
    local = draw(st.sampled_from(["B_L", "(i + 1) * B_L"]))
    nic = "B_N latency 2 us window 64 KiB" if window else "B_N"
    lines = [f'import "{RING}"', "param V = 24 MiB", "param alpha = 1 us",
             f"param B_L = {draw(st.sampled_from([20, 50, 450]))} GB/s",
             f"param B_N = {draw(st.sampled_from([10, 25, 50]))} GB/s",
             f"param B_S = {draw(st.sampled_from([16, 32, 400]))} GB/s",
             "topology {", f"  host node[{hosts}] {{", f"    gpu g[{gpus}]", "    switch sw",
             f"    link g[i] <-> sw bw {local} class local for i in 0..{gpus - 1}"]
    first = 1 if odd_host else 0
    if fabric == "rails":
        lines += ["  }", f"  switch rail[{gpus}]", "  switch spine",
                  f"  link rail[i] <-> spine bw B_S class spine for i in 0..{gpus - 1}"]
        if odd_host:
            lines.append(f"  link node[0].g[i] <-> rail[i] bw 2 * B_N class nic for i in 0..{gpus - 1}")
        if first < hosts:
            lines.append(f"  link node[h].g[i] <-> rail[i] bw {nic} class nic "
                         f"for h in {first}..{hosts - 1} for i in 0..{gpus - 1}")
    else:
        lines += ["    nic port", "    shared slot bw B_S class slot", "    link sw <-> port via slot",
                  "  }", "  switch tor"]
        if odd_host:
            lines.append("  link node[0].port <-> tor bw 2 * B_N class nic")
        if first < hosts:
            lines.append(f"  link node[h].port <-> tor bw {nic} class nic for h in {first}..{hosts - 1}")
    ranks = ", ".join(f"node[{h}].g[{i}]" for h, i in order)
    lines += ["}", f"let order = [{ranks}]", f"{kind} V over order",
              f"schedule ring = ring_{kind}(order)"]
    return "\n".join(lines) + "\n"


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(machines())
def test_time_overlapped_and_bounds_are_ordered(text):
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "machine.sched"
        path.write_text(text)
        session = schedc.load(path)
        (b,) = schedc.bound(session, ["ring"])
        program = session.program
    (e,) = b.schedules
    assert e.timing.time >= e.overlapped_value >= b.best_value > 0
    for c in b.cuts:  # a cut's bound is at most the best, its bandwidth its formula's value
        assert c.value <= b.best_value
        for capacity in (c.forward.capacity, c.backward.capacity):
            assert capacity.bandwidth.xreplace(program.nominal) == capacity.value


@settings(max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(machines())
def test_symmetry_changes_no_cut(text):
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "machine.sched"
        path.write_text(text)
        program = load_program(path)
    ranks = program.results[0].collective.ranks
    shifted = RankCuts(program.topology, program.nominal, ranks)
    plain = RankCuts(program.topology, program.nominal, ranks)
    plain.shift = None

    def table(finder):
        return [(c.name, c.side, c.forward.bandwidth, c.forward.value, c.forward.resources,
                 None if c.backward is None else (c.backward.bandwidth, c.backward.resources))
                for c in finder.cuts()]

    assert table(shifted) == table(plain)

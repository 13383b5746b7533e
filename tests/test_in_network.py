"""In-network reduction: a switch declared `reduces` sums what is reduced into it and sends
the sum on (NVLS, SHARP). Verification tracks what it holds; the cut-set bounds still hold and
the end-host bound does not apply."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from conftest import SCHEDULES, write

import schedc

MACHINE = """\
import "{lib}"
param V = 1 GiB
param B = 450 GB/s
topology {{
  gpu g[8]
  switch nvs reduces
  link g[i] <-> nvs bw B class nvlink for i in 0..7
}}
allreduce V over g
schedule nvls = nvls_allreduce(g, nvs, 4)
schedule two_step {{ nvls_reduce_scatter(g, nvs); nvls_allgather(g, nvs) }}
schedule missing {{
  round {{ for i in 0..6: reduce all from g[i] to nvs }}
  round {{ for i in 0..7: copy all from nvs to g[i] }}
}}
schedule twice {{
  round {{ for i in 0..7: reduce all from g[i] to nvs }}
  round {{ for i in 0..7: reduce all from g[i] to nvs }}
  round {{ for i in 0..7: copy all from nvs to g[i] }}
}}
"""


@pytest.fixture
def machine(tmp_path):
    return write(tmp_path, "nvls.sched", MACHINE.format(lib=SCHEDULES / "lib" / "nvls.sched"))


def test_verification_tracks_the_switch(machine):
    session = schedc.load(machine)
    verdicts = {v.name: v for v in schedc.verify(session)}
    assert verdicts["nvls"].ok and verdicts["two_step"].ok
    assert not verdicts["missing"].ok and not verdicts["twice"].ok
    assert "g[7]" in str(verdicts["missing"].failure)  # the contribution never reduced


def test_time_of_nvls_by_hand(machine):
    session = schedc.load(machine)
    V, B = Fraction(2**30), Fraction(450 * 10**9)
    # 4 chunks, 5 rounds of V/4 on each link direction: 5·V/(4·B).
    assert schedc.time(session, "nvls").time == 5 * V / (4 * B)
    # Reduce-scatter: V up, then V/8 down; all-gather: V/8 up, then V down.
    assert schedc.time(session, "two_step").time == 2 * V / B + 2 * V / (8 * B)


def test_bound_says_the_end_host_bound_does_not_apply(machine, run):
    code, out, _ = run("bound", machine, "-s", "nvls")
    assert code == 0
    assert "end-host bound: does not apply: nvs reduces in the network" in out
    # Each rank must still send its V and receive the sum: the single-rank cut gives V/B, and
    # the pipelined schedule (5/4·V/B) is not below it.
    assert "best bound: 2.3861 ms = V/B, from the binding cut" in out
    code, out, _ = run("bound", machine, "-s", "nvls", "--json")
    document = json.loads(out)
    assert document["end_host"] is None and "reduces in the network" in \
        document["end_host_not_applicable"]
    assert document["schedules"][0]["ratio"] == pytest.approx(1.25)


def test_a_host_cut_still_carries_v_each_way(tmp_path, run):
    path = write(tmp_path, "two.sched", """\
param V = 1 GiB
param B_N = 50 GB/s
topology {
  host h[2] { gpu g[2]; switch s reduces; link g[i] <-> s bw 450 GB/s class nvlink for i in 0..1 }
  switch spine
  link h[k].g[i] <-> spine bw B_N class nic for k in 0..1 for i in 0..1
}
allreduce V over [h[k].g[i] for k in 0..1 for i in 0..1]
schedule host_local_nvls {
  parallel for k in 0..1: nvls_reduce_scatter(h[k].g, h[k].s)
  parallel for i in 0..1: round { reduce part(i of 2) from h[0].g[i] to h[1].g[i]
                                  reduce part(i of 2) from h[1].g[i] to h[0].g[i] }
  parallel for k in 0..1: nvls_allgather(h[k].g, h[k].s)
}
""".replace("param V", f'import "{SCHEDULES / "lib" / "nvls.sched"}"\nparam V'))
    code, out, _ = run("bound", path)
    # The host cut: 2 NICs each way, V must cross: V/(2·B_N) = 1 GiB / 100 GB/s. The switches
    # sit in the hosts, so the end-host count holds with hosts for ranks: 2(H-1)·V = 2 GiB
    # through the 2 hosts' 2 NICs each, 4·B_N: the same V/(2·B_N).
    assert code == 0 and "end-host bound: does not apply" not in out
    assert "the 2 hosts send, and receive, 2(H-1)·V = 2 GiB in all" in out
    assert "10.737 ms = V/(2*B_N)" in out.split("end-host bound over hosts")[1].split("\n\n")[0]
    assert "best bound: 10.737 ms = V/(2*B_N), from the binding cut" in out


@pytest.mark.parametrize("text, message", [
    ("topology { gpu g[2] reduces }", "only a switch reduces in the network, not a gpu"),
    ("topology { gpu g[2]; switch s; link g[i] <-> s for i in 0..1 }\nallreduce 1 MiB over g\n"
     "schedule x { reduce all from g[0] to s }", "s is not a rank of the collective"),
])
def test_errors(tmp_path, run, text, message):
    path = write(tmp_path, "bad.sched", text + "\n")
    code, _, err = run("check", path)
    assert code == 2 and message in err


def test_counterexamples_name_the_switch(tmp_path, run):
    path = write(tmp_path, "conflict.sched", """\
param V = 1 MiB
topology {
  gpu g[2]
  switch s reduces
  link g[i] <-> s bw 1 GB/s for i in 0..1
}
allreduce V over g
schedule clash {
  round { copy all from g[0] to s; copy all from g[1] to s }
  round { copy all from s to g[0]; copy all from s to g[1] }
}
schedule empty { round { copy all from s to g[0]; copy all from s to g[1] } }
""")
    code, out, _ = run("verify", path)
    assert code == 1
    assert "round 1 writes s's [0, 1) (all) with 2 transfers, and a copy among them" in out
    # The switch starts with nothing: copying from it first gives the ranks nothing.
    assert "holds        0 contributions: nothing" in out and "missing      g[0], g[1]" in out

"""Protocols: a schedule's time is the minimum over the declared protocols of
Σ_rounds (α_p + max_e V/(eff_p·B_e)); the figures here are worked by hand."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
import sympy
from conftest import write

import schedc
from schedc.analysis.solve.protocols import protocol_spans

RING8 = """\
import "{lib}"
param V = 1 MiB
param B = 450 GB/s
param aLL = 1 us
topology {{
  gpu g[8]
  switch nvs
  link g[i] <-> nvs bw B class nvlink for i in 0..7
}}
allreduce V over g
schedule ring = ring_allreduce(g)
protocol LL alpha aLL eff 0.5
protocol Simple alpha 10 us eff 0.9 class nvlink cap 400 GB/s
"""


@pytest.fixture
def ring8(tmp_path):
    from conftest import SCHEDULES
    return write(tmp_path, "ring8.sched", RING8.format(lib=SCHEDULES / "lib" / "ring.sched"))


def test_time_is_the_fastest_protocol(ring8):
    timing = schedc.time(schedc.load(ring8), "ring")
    cost = timing.cost
    # 14 rounds, each V/8 on every NVLink direction.
    # LL: 14·1 µs + 14·(V/8)/(0.5·450 GB/s); Simple: 14·10 µs + 14·(V/8)/min(0.9·450, 400) GB/s.
    V = 2**20
    ll = Fraction(14, 10**6) + Fraction(14 * V, 8) / (Fraction(1, 2) * 450 * 10**9)
    simple = Fraction(14, 10**5) + Fraction(14 * V, 8) / (400 * 10**9)
    assert {p.name: p.value for p in cost.protocol_times} == {"LL": ll, "Simple": simple}
    assert cost.protocol == "LL" and timing.time == ll
    assert isinstance(cost.formula, sympy.Min)


def test_the_winner_changes_at_the_size_where_the_times_meet(ring8):
    session = schedc.load(ring8)
    V = session.program.params["V"].symbol
    spans = protocol_spans(session.timing("ring"), V)
    # 14 µs + 3.5·V/450e9 = 140 µs + 1.75·V/400e9  ->  V = 126 µs / (3.5/450e9 - 1.75/400e9)
    crossing = Fraction(126, 10**6) / (Fraction(35, 10 * 450 * 10**9) - Fraction(175, 100 * 400 * 10**9))
    assert [s.protocol for s in spans] == ["LL", "Simple"]
    assert spans[0].hi == spans[1].lo == sympy.Rational(crossing.numerator, crossing.denominator)
    big = schedc.time(schedc.load(ring8, ["V=1GiB"]), "ring")
    assert big.cost.protocol == "Simple"


def test_time_and_solve_say_which_protocol_wins(ring8, run):
    code, out, _ = run("time", ring8)
    assert code == 0
    assert "protocol          LL wins at the nominal point (LL 22.156 µs, Simple 144.59 µs)" in out
    assert "regime (LL)       14*aLL + 7*V/(2*B)" in out
    code, out, _ = run("time", ring8, "--json")
    document = json.loads(out)["schedules"][0]
    assert document["protocol"] == "LL" and set(document["protocol_times"]) == {"LL", "Simple"}
    code, out, _ = run("solve", ring8, "time(ring) = 1 ms", "--for", "V")
    assert code == 0 and "switch at V = 37.029 MB: LL -> Simple" in out
    code, out, _ = run("solve", ring8, "time(ring) = 1 ms", "--for", "V", "--json")
    switches = json.loads(out)["protocol_switches"]["ring"]
    assert [s["protocol"] for s in switches] == ["LL", "Simple"]


def test_a_class_start_up_applies_to_rounds_that_use_that_class(tmp_path):
    path = write(tmp_path, "two.sched", """\
param V = 1 MiB
topology {
  host h[2] { gpu g[2]; switch s; link g[i] <-> s bw 100 GB/s class nvlink for i in 0..1 }
  link h[0].s <-> h[1].s bw 10 GB/s class nic
}
allreduce V over [h[k].g[i] for k in 0..1 for i in 0..1]
schedule two {
  round { reduce all from h[0].g[1] to h[0].g[0]; reduce all from h[1].g[1] to h[1].g[0] }
  round { reduce all from h[0].g[0] to h[1].g[0] }
  round { copy all from h[1].g[0] to h[0].g[0] }
  round { copy all from h[0].g[0] to h[0].g[1]; copy all from h[1].g[0] to h[1].g[1] }
}
protocol P alpha 1 us eff 1 class nic alpha 5 us
""")
    timing = schedc.time(schedc.load(path), "two")
    # Two local rounds at 1 µs + V/100 GB/s, two cross rounds at 5 µs + V/10 GB/s.
    V = 2**20
    assert timing.time == 2 * (Fraction(1, 10**6) + Fraction(V, 100 * 10**9)) + \
        2 * (Fraction(5, 10**6) + Fraction(V, 10 * 10**9))


@pytest.mark.parametrize("line, message", [
    ("protocol LL alpha 1 us\nprotocol LL alpha 2 us", "protocol 'LL' is already declared"),
    ("protocol LL alpha 1 us alpha 2 us", "alpha is already given"),
    ("protocol LL eff 2 us", "a protocol's share of the bandwidth"),
    ("protocol LL eff 0", "must be positive"),
    ("protocol LL class nic cap 3 us", "a protocol's rate cap"),
    ("protocol LL class nvlnk cap 3 GB/s", "no link of class 'nvlnk'; did you mean 'nvlink'?"),
])
def test_bad_protocols(tmp_path, run, line, message):
    path = write(tmp_path, "bad.sched", "param V = 1 MiB\ntopology { gpu g[2]; switch s\n"
                 f"  link g[i] <-> s bw 1 GB/s class nvlink for i in 0..1 }}\n{line}\n")
    code, _, err = run("check", path)
    assert code == 2 and message in err and f"{path}:" in err

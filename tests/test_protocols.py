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
protocol Simple alpha 1 us eff 1 class nic alpha 5 us
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


# ---- physical ranges (model/protocol.py): eff in (0, 1], every start-up >= 0. Before, `eff 100`
# made every link 100 times faster and a negative start-up made rounds end before they began.

_MACHINE = "param V = 1 MiB\ntopology { gpu g[2]; switch s\n" \
           "  link g[i] <-> s bw 1 GB/s class nvlink for i in 0..1 }\n"
_SHARE = "a protocol's share of the bandwidth must be"


@pytest.mark.parametrize("line, where, message", [
    ("protocol Simple eff 100", "4:21",
     f"{_SHARE} at most 1 (all of the link's bandwidth); this one is 100"),
    ("protocol LL eff 1.0000001", "4:17",  # printed in full: '1' would look in range
     f"{_SHARE} at most 1 (all of the link's bandwidth); this one is 1.0000001"),
    ("protocol LL eff -0.5", "4:17", f"{_SHARE} positive; this one is -0.5"),
    ("protocol Simple alpha -3 us", "4:23", "a protocol's start-up must be zero or more; this one "
     "is -3 µs"),
    ("protocol LL alpha 1 us class nvlink alpha -0.5 us", "4:43",
     "a protocol's start-up must be zero or more; this one is -500 ns"),
    ("param e = 0.5\nprotocol LL eff 2 * e + 0.5", "5:17",
     f"{_SHARE} at most 1 (all of the link's bandwidth); this one is 1.5"),
    ("startup -1 ns", "4:9", "the per-round start-up must be zero or more; this one is -1 ns"),
    ("param alpha = -1 us", "4:15", "'alpha' is the per-round start-up, so it must be zero or "
     "more; this one is -1 µs"),
])
def test_protocol_values_out_of_their_physical_range(tmp_path, run, line, where, message):
    path = write(tmp_path, "range.sched", f"{_MACHINE}{line}\n")
    code, out, err = run("check", path)
    assert code == 2
    assert f"{path}:{where}: error: {message}\n" in err


@pytest.mark.parametrize("line", ["protocol LL alpha 0 s eff 1", "protocol LL128 eff 0.0001",
                                  "startup 0 us", "param alpha = 0 us"])
def test_the_edges_of_the_ranges_are_accepted(tmp_path, run, line):
    path = write(tmp_path, "edge.sched", f"{_MACHINE}{line}\n")
    assert run("check", path)[0] == 0


def test_a_set_that_takes_a_share_out_of_range_is_refused_where_it_is_used(tmp_path, run):
    path = write(tmp_path, "set.sched", f"{_MACHINE}param e = 0.5\nprotocol LL eff e\n")
    code, _, err = run("check", path, "--set", "e=1.25")
    assert code == 2 and err.startswith(
        f"{path}:5:17: error: {_SHARE} at most 1 (all of the link's bandwidth); this one is 1.25\n"
        "  protocol LL eff e\n                  ^\n")
    path = write(tmp_path, "alpha.sched", f"{_MACHINE}param alpha = 1 us\n")
    code, _, err = run("check", path, "--set", "alpha=-2us")
    assert (code, err) == (2, "--set alpha:1:1: error: 'alpha' is the per-round start-up, so it "
                              "must be zero or more; this one is -2 µs\n  -2us\n  ^~~~\n")


# ---- names: NCCL's own, as src/init.cc spells them (ncclProtoStr = {"LL", "LL128", "Simple"}).
# Before, any name was a protocol of its own, so a typo (LL218) passed silently.

_NCCL_NOTE = "  note: a protocol is one of NCCL's, spelt as NCCL spells them: LL, LL128, Simple\n"


@pytest.mark.parametrize("line, expected", [
    ("protocol LL218 alpha 1 us eff 0.5",
     "4:10: error: unknown protocol 'LL218'; did you mean 'LL128'?\n"
     "  protocol LL218 alpha 1 us eff 0.5\n           ^~~~~\n" + _NCCL_NOTE),
    ("protocol ll eff 0.5",  # NCCL's case, found whatever the case written
     "4:10: error: unknown protocol 'll'; did you mean 'LL'?\n"
     "  protocol ll eff 0.5\n           ^~\n" + _NCCL_NOTE),
    ("protocol SIMPLE eff 1",
     "4:10: error: unknown protocol 'SIMPLE'; did you mean 'Simple'?\n"
     "  protocol SIMPLE eff 1\n           ^~~~~~\n" + _NCCL_NOTE),
    ("protocol Fast eff 0.5",
     "4:10: error: unknown protocol 'Fast' (NCCL's protocols: LL, LL128, Simple)\n"
     "  protocol Fast eff 0.5\n           ^~~~\n"),
])
def test_a_protocol_name_that_is_not_nccls_is_refused(tmp_path, run, line, expected):
    path = write(tmp_path, "name.sched", f"{_MACHINE}{line}\n")
    code, _, err = run("check", path)
    assert (code, err) == (2, f"{path}:{expected}")


def test_nccls_three_protocols_are_accepted(tmp_path, run):
    path = write(tmp_path, "all.sched", f"{_MACHINE}protocol LL eff 0.5\nprotocol LL128 eff 0.9375\n"
                 "protocol Simple eff 1\n")
    assert run("check", path)[0] == 0


def test_the_api_solution_carries_the_protocol_switches(ring8, run, tmp_path):
    """Issue 35: `solve`'s protocol switches are the API's (`Solution.switches`), not added by
    the command. LL wins below V* and Simple above, where 14 µs + 14·(V/8)/(0.5·450 GB/s) =
    140 µs + 14·(V/8)/(400 GB/s) (the fixture's start-ups and shares), so
    V* = 126 µs / (1.75 · (1/225e9 − 1/400e9) s/B) = 37,028,571.43 B; and `plot=` draws it."""
    plot = tmp_path / "solve.svg"
    solution = schedc.solve(schedc.load(ring8), "time(ring) = 1 ms", "V", plot=plot)
    (low, high) = solution.switches["ring"]
    expected = Fraction(126, 10**6) / (Fraction(7, 4) * (Fraction(1, 225 * 10**9)
                                                          - Fraction(1, 400 * 10**9)))
    assert (low.protocol, high.protocol) == ("LL", "Simple")
    assert Fraction(str(low.hi)) == Fraction(str(high.lo)) == expected
    assert plot.read_text().startswith("<?xml")
    code, out, _ = run("solve", ring8, "time(ring) = 1 ms", "--for", "V", "--json")
    switches = json.loads(out)["protocol_switches"]["ring"]
    assert code == 0 and switches[0]["hi"] == pytest.approx(float(expected), rel=1e-15)

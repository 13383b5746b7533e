"""`schedc scale` on the traps of issue 20, each a small variation of a shipped file whose
time changes past the instances a fit samples: every answer is a correct piecewise form or
says `checked` with its range, and every figure is compared with a form derived here by hand
and with a direct compile at that size."""

from __future__ import annotations

import json
from fractions import Fraction

import sympy
from conftest import ROOT, timings, write

RAIL_SPINE = ROOT / "tests" / "scale" / "rail_spine_hosts.sched"
# The same figures with the spine split in two (equal-cost routes) and one pinned route (the
# one routing picks anyway): the pin is outside the proof, so its pieces stay checked
# (tests/test_scale_fabric.py proves RAIL_SPINE's, and two spines without a pin).
RAIL_SPINES = ROOT / "tests" / "scale" / "rail_spines_hosts.sched"
MIB = 2**20


def _scale(run, *args) -> dict:
    code, out, err = run("scale", *args, "--json")
    assert code == 0, err
    return json.loads(out)


def _compiled(path, name: str, param: str, n: int) -> Fraction:
    return timings(path, f"{param}={n}", names=[name])[1][name].time


def _form(entry: dict, **values) -> Fraction:
    """A piece's regime form at exact values of every param."""
    names = {k: sympy.Symbol(k, positive=True) for k in values}
    expr = sympy.sympify(entry["regime_formula"], locals=names)
    exact = {names[k]: sympy.Rational(Fraction(v).numerator, Fraction(v).denominator)
             for k, v in values.items()}
    value = expr.xreplace(exact)
    if not value.is_Rational:  # log(2^k)/log(2) at a power of two: exactly k
        value = sympy.nsimplify(sympy.expand_log(value, force=True))
    return Fraction(int(value.p), int(value.q))


def test_finite_rail_to_spine_links_end_the_nic_regime_at_51_hosts(run):
    """The ring's cross-host hops all climb rail[7] -> spine: V/8 per round on that link
    against V/(8n) on a NIC. By hand, with p = 8n GPUs and 2(p - 1) rounds:
    T = 2(8n - 1)(α + V/(8n·B_N)) while B_S/n >= B_N, i.e. n <= 2.5 TB/s / 50 GB/s = 50;
    T = 2(8n - 1)(α + V/(8·B_S)) from 51 hosts on. On RAIL_SPINES (two spines, each link
    B_S/2, every transfer split over both, a route pinned) the figures are the same, the
    pieces checked."""
    document = _scale(run, RAIL_SPINES, "--in", "hosts", "--no-bound", "--at", "100", "--at",
                      "51", "--at", "1000", "--extrapolate")
    first, second = document["schedules"]
    assert (first["valid_from"], first["valid_to"], second["valid_from"]) == (2, 50, 51)
    assert first["status"] == second["status"] == "checked"
    assert first["ends"] == "B_S/hosts >= B_N is false from hosts = 51"
    assert 50 in first["checked_at"] and 51 in second["checked_at"]
    alpha, V, B_N, B_S = Fraction(83, 10**8), 192 * MIB, 50 * 10**9, 25 * 10**11

    def nic(n):
        return 2 * (8 * n - 1) * (alpha + Fraction(V, 8 * n * B_N))

    def spine(n):
        return 2 * (8 * n - 1) * (alpha + Fraction(V, 8 * B_S))

    values = dict(alpha=alpha, V=V, B_L=450 * 10**9, B_N=B_N, B_S=B_S)
    for n in (2, 50):
        assert _form(first, hosts=n, **values) == nic(n) \
            == _compiled(RAIL_SPINES, "ring", "hosts", n)
    for n in (51, 100):
        assert _form(second, hosts=n, **values) == spine(n) \
            == _compiled(RAIL_SPINES, "ring", "hosts", n)
    assert spine(100) != nic(100)  # the old answer (9.3693 ms) against 17.412 ms
    at = {a["n"]: a for a in document["at"]["ring"]}
    # The far check of the second piece (8 × 54 = 432 hosts is refused by the limits, so
    # halfway down: 244) covers 100 hosts: the form, equal to the compile.
    assert second["valid_to"] == 244 and 244 in second["checked_at"]
    assert at[100] == {"n": 100, "time_s": float(spine(100)), "method": "formula"}
    assert at[51]["method"] == "formula" and at[51]["time_s"] == float(spine(51))
    # 1,000 hosts is past every compile: only with --extrapolate, and labelled so.
    assert at[1000] == {"n": 1000, "time_s": float(spine(1000)), "method": "extrapolated"}
    # The limit is that of the last piece, which grows like 2·V·hosts/B_S, and is labelled.
    assert second["limit"] == "oo" and second["limit_extrapolated"]
    hosts, v, b_s, a = sympy.symbols("hosts V B_S alpha", positive=True)
    assert sympy.simplify(sympy.sympify(second["asymptote"], locals=dict(
        hosts=hosts, V=v, B_S=b_s, alpha=a)) - (16 * a * hosts + 2 * v * hosts / b_s)) == 0


SIDE = """param alpha = 1 us
param B = 25 GB/s
param V = 64 MiB
param p = 8
topology {
  gpu g[p + 2]
  switch sw
  link g[i] <-> sw bw B for i in 0..p-1
  link g[p] -> g[p + 1] bw B
}
allgather V over [g[i] for i in 0..p+1]
schedule ring {
  for s in 0..p-2 round {
    for j in 0..p-1: copy part((j - s) % p of p) from g[j] to g[(j + 1) % p]
    copy part(0 of 64) from g[p] to g[p + 1]
  }
}
"""


def test_a_term_dominated_at_every_sample_is_kept_and_binds_from_65(run, tmp_path):
    """A ring all-gather over p ports of B that also sends V/64 on a side link of B each
    round. By hand: (p - 1)(α + max(V/p, V/64)/B): V/(pB) up to p = 64, V/(64B) after."""
    case = write(tmp_path, "side.sched", SIDE)
    document = _scale(run, case, "--in", "p", "--no-bound", "--no-verify")
    first, second = document["schedules"][:2]
    assert (first["valid_to"], second["valid_from"]) == (64, 65)
    p, alpha, V, B = sympy.symbols("p alpha V B", positive=True)
    names = dict(p=p, alpha=alpha, V=V, B=B)
    full = (alpha + sympy.Max(V / (B * p), V / (64 * B))) * (p - 1)
    for entry in (first, second):  # the full formula keeps the side link's term
        formula = sympy.sympify(entry["formula"], locals=names)
        for n in (8, 64, 65, 200):
            assert sympy.simplify((formula - full).subs(p, n)) == 0
    assert "is false from p = 65" in first["ends"]
    values = dict(alpha=Fraction(1, 10**6), V=64 * MIB, B=25 * 10**9)

    def hand(n):
        return (n - 1) * (values["alpha"] + max(Fraction(values["V"], n), Fraction(values["V"], 64))
                          / values["B"])

    for entry, n in ((first, 64), (second, 65), (second, 100)):
        assert _form(entry, p=n, **values) == hand(n) == _compiled(case, "ring", "p", n)


def _trap(tmp_path, name: str, body: str):
    return write(tmp_path, f"{name}.sched", f"""param alpha = 1 us
param B = 25 GB/s
param V = 64 MiB
param p = 8
topology {{
  gpu g[4]
  link g[0] -> g[1] bw B
  link g[2] -> g[3] bw B
}}
broadcast V over [g[0], g[1], g[2], g[3]] root g[0]
schedule trap {{
  {body}
}}
""")


VALUES = dict(alpha=Fraction(1, 10**6), V=64 * MIB, B=25 * 10**9)
ROUND = VALUES["alpha"] + Fraction(VALUES["V"], VALUES["B"])  # α + V/B


def _check(entries: list[dict], case, hand, points) -> None:
    """Each point lies in one piece, whose form equals the hand-derived time and a compile."""
    for n in points:
        (entry,) = [e for e in entries if e["valid_from"] <= n <= e["valid_to"]
                    and (e["family"] != "powers of two" or n & (n - 1) == 0)
                    and (" mod " not in e["family"] or n % int(e["family"].split()[-1])
                         == int(e["family"].split()[2]))]
        assert _form(entry, p=n, **VALUES) == hand(n) == _compiled(case, "trap", "p", n), n


def test_a_branch_on_the_param_is_a_boundary_read_from_the_source(run, tmp_path):
    # p rounds of V/p; from p = 49 each round also sends all of V on the other link.
    case = _trap(tmp_path, "branch", "for s in 0..p-1 round { copy part(0 of p) from g[0] "
                                     "to g[1]; if p > 48: copy all from g[2] to g[3] }")
    document = _scale(run, case, "--in", "p", "--no-bound", "--no-verify")
    first, second = document["schedules"]
    assert (first["valid_to"], second["valid_from"]) == (48, 49)
    assert first["ends"].startswith("p = 49 is a boundary read from the source")
    assert any(n.startswith(f"{case}:12: ") and "a piece starts at p = 49" in n
               for n in document["notes"]["trap"])
    a, v, b = VALUES["alpha"], VALUES["V"], VALUES["B"]
    _check([first, second], case, lambda n: n * a + Fraction(v, b) if n <= 48
           else n * (a + Fraction(v, b)), (2, 48, 49, 100))


def test_a_ceil_of_the_param_steps_at_every_multiple(run, tmp_path):
    # ceil(p/64) rounds of all of V: one up to 64, two up to 128, ...
    case = _trap(tmp_path, "ceil", "for s in 1..ceil(p / 64) round { copy all from g[0] to g[1] }")
    document = _scale(run, case, "--in", "p", "--no-bound", "--no-verify")
    pieces = document["schedules"]
    assert [(e["valid_from"], e["valid_to"]) for e in pieces] == [
        (2, 64), (65, 128), (129, 192), (193, 256)]
    assert any("not covered" in n for n in document["notes"]["trap"])
    _check(pieces, case, lambda n: -(-n // 64) * ROUND, (64, 65, 128, 129, 200))
    # Past the pieces --at compiles (5 rounds at 300), with no extrapolation from the last.
    document = _scale(run, case, "--in", "p", "--no-bound", "--no-verify", "--at", "300")
    assert document["at"]["trap"] == [{"n": 300, "time_s": float(5 * ROUND), "method": "compiled"}]


def test_a_modulus_of_the_param_is_fitted_residue_by_residue(run, tmp_path):
    # p rounds of V/p, and one round of all of V more when 9 divides p.
    case = _trap(tmp_path, "mod", "for s in 1..p round { copy part(0 of p) from g[0] to g[1] }\n"
                                  "  if p % 9 == 0: round { copy all from g[2] to g[3] }")
    document = _scale(run, case, "--in", "p", "--no-bound", "--no-verify")
    pieces = document["schedules"]
    assert sorted(e["family"] for e in pieces) == [f"integers = {r} mod 9" for r in range(9)]
    assert all(e["status"] == "checked" for e in pieces)
    a, v, b = VALUES["alpha"], VALUES["V"], VALUES["B"]
    _check(pieces, case, lambda n: n * a + Fraction(v, b) + (ROUND if n % 9 == 0 else 0),
           (9, 10, 17, 18, 27, 45))


def test_a_power_of_two_threshold(run, tmp_path):
    # log2(p) rounds of all of V, and one more from p = 128 on.
    case = _trap(tmp_path, "pow", "for s in 1..log2(p) round { copy all from g[0] to g[1] }\n"
                                  "  if p >= 128: round { copy all from g[2] to g[3] }")
    document = _scale(run, case, "--in", "p", "--no-bound", "--no-verify")
    first, second = document["schedules"]
    assert first["family"] == second["family"] == "powers of two"
    assert (first["valid_to"], second["valid_from"]) == (64, 128)
    _check([first, second], case, lambda n: ((n.bit_length() - 1) + (n >= 128)) * ROUND,
           (2, 64, 128, 1024))


def test_the_end_of_a_regime_follows_set_values(run):
    # With B_S = 1 TB/s the NIC binds while 10^12/hosts >= 5·10^10: up to 20 hosts.
    document = _scale(run, RAIL_SPINE, "--in", "hosts", "--no-bound", "--set", "B_S=1TB/s")
    first, second = document["schedules"]
    assert (first["valid_to"], second["valid_from"]) == (20, 21)
    assert first["ends"] == "B_S/hosts >= B_N is false from hosts = 21"
    assert 20 in first["checked_at"] and 21 in second["checked_at"]

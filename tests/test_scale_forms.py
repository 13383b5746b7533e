"""`schedc scale`: closed forms in a structural param, each compared with a form derived
here by hand (or from Thakur, Rabenseifner & Gropp 2005), never with schedc's own output."""

from __future__ import annotations

import json

import sympy
from conftest import ROOT, SCHEDULES, timings, write

HOSTS = SCHEDULES / "seed" / "nvlink_hosts.sched"
FIELDS = {"name", "param", "formula", "regime_formula", "regime_conditions", "fit_points",
          "check_points", "valid_from", "valid_to", "limit", "status", "checked_at", "argument"}


def _scale(run, *args) -> dict:
    code, out, err = run("scale", *args, "--json")
    assert code == 0, err
    return json.loads(out)


def _parse(text: str, **names) -> sympy.Expr:
    return sympy.sympify(text, locals=names)


def _symbols(*names: str) -> list[sympy.Symbol]:
    return [sympy.Symbol(n, positive=True) for n in names]


def test_ring_and_hierarchical_over_hosts(run):
    document = _scale(run, HOSTS, "--in", "hosts")
    alpha, V, B_L, B_N = _symbols("alpha", "V", "B_L", "B_N")
    n = sympy.Symbol("hosts", positive=True, integer=True)
    names = dict(alpha=alpha, V=V, B_L=B_L, B_N=B_N, hosts=n)
    by_name = {entry["name"]: entry for entry in document["schedules"]}
    assert sorted(by_name) == ["hierarchical", "ring"] and len(document["schedules"]) == 2
    # By hand. Ring over 8n GPUs: 2(8n - 1) rounds, each moving V/(8n) per GPU; with
    # B_L >= B_N the NIC hop waits longest.
    ring = 2 * (8 * n - 1) * alpha + 2 * (8 * n - 1) * V / (8 * n * B_N)
    # Hierarchical: 7 + 7 local rounds of V/8 on NVLink; the cross-host ring all-reduce of
    # V/8 on each rail: 2(n - 1) rounds of V/(8n) on the NIC.
    hierarchical = (14 + 2 * (n - 1)) * alpha + 14 * V / (8 * B_L) + 2 * (n - 1) * V / (8 * n * B_N)
    for name, reference in (("ring", ring), ("hierarchical", hierarchical)):
        entry = by_name[name]
        assert set(entry) >= FIELDS
        assert sympy.simplify(_parse(entry["regime_formula"], **names) - reference) == 0
        assert entry["param"] == "hosts" and entry["valid_from"] == 2
        # Proved for every hosts >= 2 (tests/test_scale_proof.py checks the argument's
        # hypotheses one by one): unbounded, and its limit is no extrapolation.
        assert entry["status"] == "proved" and entry["argument"].startswith("Presburger (isl)")
        assert entry["checked_at"] == [2, 3, 4, 5, 6, 7, 40] and entry["valid_to"] is None
        assert entry["extrapolated_beyond"] is None
        assert entry["limit"] == "oo"  # 2(8n - 1)·α and (2n + 12)·α grow without bound
        assert entry["limit_extrapolated"] is False
        fit, check = entry["fit_points"], entry["check_points"]
        assert not set(fit) & set(check) and max(check) >= 8 * max(fit)
        # The formula with its Max agrees with the regime form where B_L >= B_N.
        formula = _parse(entry["formula"], **names)
        at = {alpha: sympy.Rational(83, 10**8), V: 192 * 2**20, B_L: 450 * 10**9,
              B_N: 50 * 10**9}
        for hosts in (3, 100):
            assert formula.subs({**at, n: hosts}) == reference.subs({**at, n: hosts})
    assert by_name["ring"]["regime_conditions"] == ["B_L >= B_N"]
    # Leading terms as n -> oo, by hand from the forms above.
    leading = {"ring": 16 * alpha * n + 2 * V / B_N,
               "hierarchical": 2 * alpha * n + 7 * V / (4 * B_L) + V / (4 * B_N)}
    for name, reference in leading.items():
        found = _parse(by_name[name]["asymptote"], **names)
        assert sympy.simplify(found - reference) == 0, name
    # The end-host bound: 2(p - 1)/p·V leaves and enters every GPU, at B_L + B_N each way.
    end_host = 2 * (8 * n - 1) * V / (8 * n * (B_L + B_N))
    assert sympy.simplify(_parse(by_name["ring"]["bounds"]["end-host"], **names) - end_host) == 0
    ratio = _parse(by_name["ring"]["ratio"], **names)
    assert sympy.simplify(ratio - ring / end_host) == 0


def test_the_fitted_form_matches_a_compile_far_beyond_the_fit(run):
    """Evaluating the form at 100 hosts needs no compile there; a compile agrees."""
    document = _scale(run, HOSTS, "--in", "hosts", "-s", "hierarchical", "--no-bound")
    entry = document["schedules"][0]
    program, t = timings(HOSTS, "hosts=100", names=["hierarchical"])
    n = sympy.Symbol("hosts", positive=True, integer=True)
    symbols = {p.name: p.symbol for p in program.params.values() if not p.structural}
    form = sympy.sympify(entry["regime_formula"], locals={**symbols, "hosts": n})
    compiled = t["hierarchical"].cost.regime_formula
    assert form.subs(n, 100).xreplace(program.nominal) == compiled.xreplace(program.nominal)


def test_no_closed_form_outside_the_basis(run, tmp_path):
    # n³ rounds: not a combination of 1, n, 1/n, n² (and n = 64, the sixth power of two, is
    # refused by the limits). The product is noted at its line, read from the source.
    case = write(tmp_path, "cube.sched", f'''import "{SCHEDULES}/machines/flat_8.sched"
param V = 1 MiB
param n = 2
broadcast V over [g[0], g[1]] root g[0]
schedule cube {{ for s in 1..n * n * n round {{ copy all from g[0] to g[1] }} }}
''')
    document = _scale(run, case, "--in", "n", "--no-bound")
    entry = document["schedules"][0]
    assert entry["regime_formula"] is None and entry["formula"] is None
    assert [t["value"] for t in entry["times"]] == sorted(entry["fit_points"]
                                                          + entry["check_points"])
    notes = document["notes"]["cube"]
    assert any("no closed form" in note for note in notes)
    assert any(note.startswith(f"{case}:5: ") and "(not affine)" in note for note in notes)
    code, out, _ = run("scale", case, "--in", "n", "--no-bound")
    assert "no closed form in this basis; times: " in out


def test_a_regime_that_changes_with_n_is_a_piece_of_its_own(run):
    """One host has no NIC hop: a piece of its own, the times only; from 2 hosts, a form."""
    document = _scale(run, HOSTS, "--in", "hosts", "--from", "1", "-s", "ring", "--no-bound",
                      "--no-verify")
    first, second = document["schedules"]
    assert (first["valid_from"], first["valid_to"], first["regime_formula"]) == (1, 1, None)
    _, one = timings(HOSTS, "hosts=1", names=["ring"])
    assert first["times"] == [{"value": 1, "time_s": float(one["ring"].time)}]
    assert second["valid_from"] == 2 and second["valid_to"] is None
    assert second["regime_formula"] is not None and second["status"] == "proved"
    # The one-host piece has no form, so nothing of it is proved.
    assert first["status"] == "checked" and first["argument"] is None


def test_a_regime_change_far_out_is_found_by_bisection(run, tmp_path):
    # From 12 hosts on, every round also sends all of V across hosts: hosts·(α + V/(8 B_L))
    # below 12, hosts·(α + V/B_N) from 12 (V/B_N > V/(8 B_L) at the nominal point).
    case = write(tmp_path, "late.sched", f'''import "{SCHEDULES}/machines/nvlink_hosts.sched"
param V = 8 MiB
broadcast V over [node[0].g[0], node[0].g[1], node[0].g[2], node[1].g[2]] root node[0].g[0]
schedule late {{
  for s in 0..hosts-1 round {{
    copy part(0 of 8) from node[0].g[0] to node[0].g[1]
    if hosts >= 12: copy all from node[0].g[2] to node[1].g[2]
  }}
}}
''')
    document = _scale(run, case, "--in", "hosts", "--no-bound", "--no-verify")
    first, second = document["schedules"]
    alpha, V, B_L, B_N = _symbols("alpha", "V", "B_L", "B_N")
    n = sympy.Symbol("hosts", positive=True, integer=True)
    names = dict(alpha=alpha, V=V, B_L=B_L, B_N=B_N, hosts=n)
    assert (first["valid_from"], first["valid_to"]) == (2, 11)
    assert sympy.simplify(_parse(first["regime_formula"], **names)
                          - n * (alpha + V / (8 * B_L))) == 0
    assert second["valid_from"] == 12 and second["valid_to"] == max(second["checked_at"])
    assert sympy.simplify(_parse(second["regime_formula"], **names) - n * (alpha + V / B_N)) == 0
    assert max(second["check_points"]) >= 8 * max(second["fit_points"])


def test_conditions_that_depend_on_n_are_fitted_too(run, tmp_path):
    # One round: V/n over a link of B_1 and V/16 over a link of B_2, both 10 GB/s. By hand:
    # V/(n·B_1) dominates while n·B_1 <= 16·B_2, i.e. up to n = 16; from 17 on V/(16·B_2).
    case = write(tmp_path, "two.sched", """param V = 16 MiB
param alpha = 1 us
param B_1 = 10 GB/s
param B_2 = 10 GB/s
param n = 2
topology {
  gpu g[4]
  switch s
  link g[0] -> g[1] bw B_1
  link g[2] -> g[3] bw B_2
}
broadcast V over [g[0], g[1], g[2], g[3]] root g[0]
schedule two { round { copy part(0 of n) from g[0] to g[1]; copy part(0 of 16) from g[2] to g[3] } }
""")
    document = _scale(run, case, "--in", "n", "--no-bound", "--no-verify")
    first, second = document["schedules"]
    alpha, V, B_1, B_2 = _symbols("alpha", "V", "B_1", "B_2")
    n = sympy.Symbol("n", positive=True, integer=True)
    names = dict(alpha=alpha, V=V, B_1=B_1, B_2=B_2, n=n)
    assert (first["valid_from"], first["valid_to"], second["valid_from"]) == (2, 16, 17)
    assert sympy.simplify(_parse(first["regime_formula"], **names) - (alpha + V / (n * B_1))) == 0
    assert sympy.simplify(_parse(second["regime_formula"], **names) - (alpha + V / (16 * B_2))) == 0
    assert _parse(second["limit"], **names) == alpha + V / (16 * B_2)
    # Each piece's condition, read as a relation in n: n·B_1 <= 16·B_2, then the reverse
    # (at B_1 = B_2 both hold at the tie n = 16).
    for entry, holds, fails in ((first, 16, 17), (second, 17, 15)):
        (condition,) = entry["regime_conditions"]
        relation = _parse(condition, **names)
        at = {B_1: 1, B_2: 1}
        assert bool(relation.subs({**at, n: holds})) and not bool(relation.subs({**at, n: fails}))


def test_the_chunk_count_optimum(run):
    # T(c) = (c + p - 2)(α + V/(cB)): dT/dc = α - (p - 2)V/(c²B) = 0 at c* = sqrt((p-2)V/(αB)).
    case = SCHEDULES / "examples" / "pipelined_chain.sched"
    for p in (8, 16):
        document = _scale(run, case, "--in", "c", "--set", f"p={p}", "--no-bound")
        entry = document["schedules"][0]
        alpha, V, B = _symbols("alpha", "V", "B")
        c = sympy.Symbol("c", positive=True, integer=True)
        names = dict(alpha=alpha, V=V, B=B, c=c)
        reference = (c + p - 2) * (alpha + V / (c * B))
        assert sympy.simplify(_parse(entry["regime_formula"], **names) - reference) == 0
        optimum = entry["optimum"]
        star = sympy.sqrt((p - 2) * V / (alpha * B))
        assert sympy.simplify(_parse(optimum["stationary"], **names) - star) == 0
        # 1 µs, 64 MiB, 25 GB/s: c* = sqrt((p - 2)·2^26/25000).
        value = ((p - 2) * 2**26 / 25000) ** 0.5
        assert abs(optimum["value"] - value) < 1e-9 * value
        best = optimum["best"]
        assert best in (int(value), int(value) + 1)
        times = {}
        for chunks in (int(value), int(value) + 1):
            _, t = timings(case, f"p={p}", f"c={chunks}")
            times[chunks] = t["chain"].time
        assert times[best] == min(times.values())
        assert optimum["best_time_s"] == float(times[best])


def test_the_library_in_p_is_the_textbook(run):
    """Thakur, Rabenseifner & Gropp (2005), alpha-beta model, beta = 1/B, n = V."""
    document = _scale(run, SCHEDULES / "algorithms" / "flat_p.sched", "--in", "p", "--no-bound",
                      "--no-verify")  # tests/test_textbook.py verifies them at p = 8 and 16
    alpha, V, B = _symbols("alpha", "V", "B")
    p = sympy.Symbol("p", positive=True, integer=True)
    lg = sympy.log(p, 2)
    share = (p - 1) / p
    textbook = {
        "ring_allreduce": 2 * (p - 1) * alpha + 2 * share * V / B,
        "rd_allreduce": lg * alpha + lg * V / B,
        "rabenseifner_allreduce": 2 * lg * alpha + 2 * share * V / B,
        "ring_allgather": (p - 1) * alpha + share * V / B,
        "rd_allgather": lg * alpha + share * V / B,
        "ring_reduce_scatter": (p - 1) * alpha + share * V / B,
        "rh_reduce_scatter": lg * alpha + share * V / B,
        "binomial_broadcast": lg * (alpha + V / B),
        "scatter_allgather_broadcast": 2 * lg * alpha + 2 * share * V / B,
        "binomial_reduce": lg * (alpha + V / B),
        "pairwise_alltoall": (p - 1) * alpha + share * V / B,
    }
    entries = {e["name"]: e for e in document["schedules"]}
    assert sorted(entries) == sorted(textbook) and len(document["schedules"]) == len(textbook)
    names = dict(alpha=alpha, V=V, B=B, p=p)
    for name, reference in textbook.items():
        entry = entries[name]
        assert sympy.simplify(_parse(entry["regime_formula"], **names) - reference) == 0, name
        assert max(entry["check_points"]) >= 8 * max(entry["fit_points"])
        # The ring family fits every p >= 2; recursive doubling and halving need p = 2^k.
        assert entry["family"] == ("integers" if name.startswith("ring") else "powers of two") \
            or name in ("binomial_broadcast", "binomial_reduce", "pairwise_alltoall")


def test_at_past_the_checked_range_compiles_unless_extrapolate(run):
    """The ring is proved for every hosts >= 2, so 10^5 hosts comes from its form; on the
    machine with finite rail-to-spine links split over two spines it is only checked (up to
    244 hosts), so beyond
    that `--at` compiles, or with --extrapolate evaluates the last form, labelled so."""
    document = _scale(run, HOSTS, "--in", "hosts", "-s", "ring", "--no-bound", "--at", "100000",
                      "--at", "3", "--at", "20")
    far, near, inside = document["at"]["ring"]
    # By hand at 10^5 hosts: 2(8·10^5 - 1) α + (8·10^5 - 1)/(4·10^5) V/B_N.
    alpha, V, B_N = sympy.Rational(83, 10**8), 192 * 2**20, 50 * 10**9
    n = 100000
    assert far == {"n": n, "time_s": float(2 * (8 * n - 1) * alpha
                                          + sympy.Rational(8 * n - 1, 4 * n) * V / B_N),
                   "method": "formula"}
    for entry, hosts in ((near, 3), (inside, 20)):  # inside the checked range: the form
        _, t = timings(HOSTS, f"hosts={hosts}", names=["ring"])
        assert entry == {"n": hosts, "time_s": float(t["ring"].time), "method": "formula"}
    assert document["compiles"] < 10  # 2–7 and 40: nothing near 10^5 was compiled
    # A checked last piece: past its range (244 hosts) a value is compiled, and says so.
    spine = ROOT / "tests" / "scale" / "rail_spines_hosts.sched"  # a pinned route: checked
    document = _scale(run, spine, "--in", "hosts", "-s", "ring", "--no-bound", "--at", "250")
    assert [p["status"] for p in document["schedules"]] == ["checked", "checked"]
    (entry,) = document["at"]["ring"]
    _, t = timings(spine, "hosts=250", names=["ring"])
    assert entry == {"n": 250, "time_s": float(t["ring"].time), "method": "compiled"}
    # ... with --extrapolate, from the last form, labelled so: by hand, from 51 hosts the
    # rail-to-spine link binds, 2(8n - 1)(α + V/(8 B_S)) with B_S = 2.5 TB/s.
    document = _scale(run, spine, "--in", "hosts", "-s", "ring", "--no-bound", "--at", "100000",
                      "--extrapolate")
    (entry,) = document["at"]["ring"]
    B_S = 2500 * 10**9
    assert entry == {"n": n, "time_s": float(2 * (8 * n - 1) * (alpha + sympy.Rational(V, 8 * B_S))),
                     "method": "extrapolated"}
    # ... and without it, a size the limits refuse is refused, pointing at --extrapolate.
    code, out, err = run("scale", spine, "--in", "hosts", "-s", "ring", "--no-bound",
                         "--at", "100000")
    assert code == 2 and out == ""
    assert "800,000 devices" in err and "--extrapolate evaluates the last form" in err


def test_in_needs_a_structural_param(run):
    code, out, err = run("scale", HOSTS, "--in", "V")
    assert code == 2 and out == ""
    assert err.strip() == ("error: --in needs a structural param (a unitless integer such as "
                           "'param hosts = 2'); 'V' is not one (structural params: hosts)")
    code, _, err = run("scale", SCHEDULES / "seed" / "nvlink_2x8.sched", "--in", "hosts")
    assert code == 2 and err.strip().endswith("; this file has none")

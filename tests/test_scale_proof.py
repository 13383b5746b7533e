"""`schedc scale`'s proof for every n (docs/scale.md, "Proof for every n"): the shipped
affine families are `proved`, each proved form equals a direct compile far past every
instance the fit used, the round classes the proof derives are the ones counted here by
hand, and every hypothesis that fails leaves the piece `checked` with a note naming it."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
import sympy
from conftest import ROOT, SCHEDULES, write

import schedc

HOSTS = SCHEDULES / "seed" / "nvlink_hosts.sched"
FLAT = SCHEDULES / "algorithms" / "flat_p.sched"
RAIL_SPINE = ROOT / "tests" / "scale" / "rail_spine_hosts.sched"
AFFINE = ("ring_allreduce", "ring_allgather", "ring_reduce_scatter")


def _scale(run, *args) -> dict:
    code, out, err = run("scale", *args, "--json")
    assert code == 0, err
    return json.loads(out)


def _compiled(path, setting: str, name: str) -> Fraction:
    """A direct compile (no verification: 8,000 ranks are past the verifier's cap)."""
    session = schedc.load(path, [setting], max_transfers=10**8, max_rounds=10**6)
    return Fraction(schedc.time(session, name, verify=False).time)


def test_the_seed_families_are_proved_for_every_host_count(run):
    document = _scale(run, HOSTS, "--in", "hosts", "--no-bound")
    assert [(p["name"], p["status"], p["valid_from"], p["valid_to"])
            for p in document["schedules"]] == [("ring", "proved", 2, None),
                                                ("hierarchical", "proved", 2, None)]
    for piece in document["schedules"]:
        assert piece["argument"] == (
            "Presburger (isl): transfers affine in hosts, port machine uniform in node[...] "
            "(routes read at hosts = 2, 3), round classes and loads exact for every hosts >= 2")
        assert not piece["limit_extrapolated"] and piece["extrapolated_beyond"] is None
    code, out, _ = run("scale", HOSTS, "--in", "hosts", "--no-bound")
    assert code == 0 and "(extrapolated)" not in out and "  for hosts >= 2  proved: " in out


EXCHANGES = ("rd_allreduce", "rabenseifner_allreduce", "rd_allgather", "rh_reduce_scatter")


def test_the_textbook_library_is_proved_but_its_scatter_and_all_to_all(run):
    document = _scale(run, FLAT, "--in", "p", "--no-bound")
    for piece in document["schedules"]:
        if piece["name"] in AFFINE:
            assert (piece["status"], piece["valid_from"], piece["valid_to"]) == ("proved", 2, None)
            assert "for every p >= 2" in piece["argument"]
        elif piece["name"] in EXCHANGES + ("binomial_broadcast", "binomial_reduce"):
            # proved in m (tests/test_scale_powers.py)
            assert (piece["family"], piece["status"]) == ("powers of two", "proved")
        else:  # the scatter-allgather broadcast, the XOR exchange: labelled
            assert piece["family"] == "powers of two" and piece["status"] == "checked"
            (note,) = [n for n in piece["notes"] if n.startswith("not proved: ")]
            assert note.startswith("not proved: a power-of-two family, checked at its "
                                   "instances only: ")
            assert "/lib/" in note and ".sched:" in note  # the source line that leaves it
            assert piece["extrapolated_beyond"] == piece["valid_to"] == 128


@pytest.mark.parametrize("path, param, n, name", [
    (HOSTS, "hosts", 1000, "hierarchical"),
    (FLAT, "p", 2000, "ring_allreduce"),
])
def test_a_proved_form_equals_a_direct_compile_far_out(run, path, param, n, name):
    document = _scale(run, path, "--in", param, "-s", name, "--no-bound", "--at", str(n))
    (piece,) = document["schedules"]
    assert piece["status"] == "proved" and max(piece["checked_at"]) < n
    (at,) = document["at"][name]
    assert at["method"] == "formula"  # from the proved form: nothing compiled at n
    assert at["time_s"] == float(_compiled(path, f"{param}={n}", name))


def test_the_derived_round_classes_are_the_ones_counted_by_hand():
    """Hierarchical over n hosts, by hand: 7 + 7 rounds inside the hosts, each GPU sending
    V/8 over NVLink; 2(n - 1) rounds of the rail rings, V/(8n) over each NIC."""
    from schedc.analysis.forall.family import symbolic_result
    from schedc.analysis.scale.portloads import PortRule, round_classes
    session = schedc.load(HOSTS)
    n = sympy.Symbol("hosts", positive=True, integer=True)
    B_L, B_N = (next(r.bandwidth for r in session.program.topology.resources if r.cls == cls)
                for cls in ("nvlink", "nic"))
    rule = PortRule(0, ("nvlink",), ("nic",), {"nvlink": B_L, "nic": B_N})
    sym, _ = symbolic_result(session, "hosts", "hierarchical")
    found = {(c.count, c.loads) for c in round_classes(sym, rule, 2, None, n)}
    assert found == {(14, frozenset({(B_L, sympy.Rational(1, 8))})),
                     (2 * n - 2, frozenset({(B_N, 1 / (8 * n))}))}
    # The ring: every one of its 2(8n - 1) rounds loads an NVLink port and a NIC by V/(8n).
    sym, _ = symbolic_result(session, "hosts", "ring")
    (ring,) = round_classes(sym, rule, 2, None, n)
    assert ring.count == 16 * n - 2 and ring.loads == {(B_L, 1 / (8 * n)), (B_N, 1 / (8 * n))}


def test_a_fabric_link_with_a_latency_leaves_the_ring_checked(run, tmp_path):
    """rail[i] <-> spine with a bandwidth is a fabric resource the argument covers
    (tests/test_scale_fabric.py); with a latency too its time is not bytes over bandwidth,
    so both pieces stay checked, and the note names the link's line."""
    text = RAIL_SPINE.read_text().replace("bw B_S class spine", "bw B_S latency 1 us class spine")
    case = write(tmp_path, "rail_spine_latency.sched", text.replace(
        '"../../schedules/lib/ring.sched"', f'"{SCHEDULES}/lib/ring.sched"'))
    document = _scale(run, case, "--in", "hosts", "-s", "ring", "--no-bound")
    pieces = document["schedules"]
    assert pieces and all(p["status"] == "checked" for p in pieces)
    line = next(k for k, text in enumerate(text.splitlines(), 1)
                if "link rail[i] <-> spine" in text)
    for piece in pieces:
        assert any(f"{case}:{line}: a resource with a bandwidth that is not one port of one "
                   "device" in note for note in piece["notes"]), piece["notes"]
        assert piece["valid_to"] is not None


FLAT_MACHINE = f'import "{SCHEDULES}/machines/flat.sched"\nimport "{SCHEDULES}/lib/ring.sched"\n'


@pytest.mark.parametrize("extra, schedule, why", [
    # A `send` moves bytes the symbolic elaboration does not read.
    ("", "schedule s {\n  ring_allgather(ranks)\n  send V from g[0] to g[1]\n}",
     "'send' (bytes without data) is not read symbolically"),
    # ... also in a schedule it calls.
    ("schedule helper(g) {\n  ring_allgather(g)\n  send V from g[0] to g[1]\n}\n",
     "schedule s = helper(ranks)", "'send' (bytes without data) is not read symbolically"),
    # A link to one fixed copy: the machine is not uniform in g[...] (the time is still
    # right, but the argument does not cover it).
    ("topology {\n  switch extra\n  link g[0] <-> extra bw B\n}\n",
     "schedule s = ring_allgather(ranks)",
     "a link not uniform in the copies of g"),
    # A second switch: equal-cost routes split every transfer over two ports per GPU, so a
    # transfer does not load one port of each end with all its bytes (the loads the proof
    # derives would be twice the real ones).
    ("topology {\n  switch sw2\n  link g[i] <-> sw2 bw B class port2 for i in 0..p-1\n}\n",
     "schedule s = ring_allgather(ranks)",
     "does not load one port (or one bundle of ports, equally) of each end"),
    # Two rounds in one: a rank sends two transfers of one statement per round.
    ("", "schedule s {\n  for s in 0..p-2 round {\n    for j in 0..p-1: for m in 0..1: copy "
         "part(2 * ((j - s) % p) + m of 2 * p) of all from g[j] to g[(j + 1) % p]\n  }\n}",
     "a rank takes part in more than one transfer of this statement in one round"),
])
def test_a_hypothesis_that_fails_leaves_the_piece_checked(run, tmp_path, extra, schedule, why):
    case = write(tmp_path, "case.sched", FLAT_MACHINE + extra
                 + "param V = 64 MiB\nallgather V over ranks\n" + schedule + "\n")
    document = _scale(run, case, "--in", "p", "--no-bound")
    (piece, *_) = document["schedules"]
    assert piece["status"] == "checked" and piece["valid_to"] is not None
    assert piece["argument"] is None
    assert any(note.startswith("not proved: ") and why in note for note in piece["notes"]), \
        piece["notes"]


CHAIN_ON = """\
param alpha = 1 us
param B = 25 GB/s
param p = 8
param V = 64 MiB
topology {{
  gpu g[p]
  switch sw
  {links}
}}
let ranks = [g[i] for i in 0..p-1]
broadcast V over ranks root ranks[0]
schedule chain {{
  for j in 0..p-2 round {{ copy all from ranks[j] to ranks[j + 1] }}
}}
"""


@pytest.mark.parametrize("links", [
    # The link's bandwidth depends on which copy it joins: from g[62] on, slower.
    "link g[i] <-> sw bw B / max(1, i - 60) class port for i in 0..p-1",
    # An inner clause whose `if` reads the copy: from g[60] on, a second, equal-cost port.
    "link g[i] <-> sw bw B class port for i in 0..p-1\n"
    "  link g[i] <-> sw bw B class port for i in 0..p-1 for k in 0..0 if i >= 60",
])
def test_a_link_that_depends_on_its_copy_leaves_the_piece_checked(run, tmp_path, links):
    # Both machines equal the flat one at every instance the fit and the routes were read at
    # (p <= 40); a proof that read only the links' ends called them proved, and at p = 100 a
    # compile disagreed with the form (a reviewer's repro).
    case = write(tmp_path, "case.sched", CHAIN_ON.format(links=links))
    document = _scale(run, case, "--in", "p", "--no-bound", "--at", "100")
    (piece, *_) = document["schedules"]
    assert piece["status"] == "checked" and piece["valid_to"] is not None
    assert any("a link whose bandwidth, class or loops depend on which copy of g it joins"
               in note for note in piece["notes"]), piece["notes"]
    (at,) = document["at"]["chain"]
    assert at["method"] == "compiled"
    # The flat machine's chain: 99 rounds of α + V/B; these machines are slower at p = 100.
    alpha, V, B = 1e-6, 64 * 2**20, 25e9
    assert at["time_s"] > 99 * (alpha + V / B) * 1.001 if "max(1" in links else \
        at["time_s"] < 99 * (alpha + V / B) * 0.999


def test_solve_for_hosts_compiles_what_the_proved_forms_say(run):
    """`solve --for hosts` compiles each value; its times are the proved forms' values."""
    code, out, err = run("solve", HOSTS, "time(hierarchical) = time(ring)", "--for", "hosts",
                         "--max-transfers", "40000", "--json")
    assert code == 0, err
    points = json.loads(out)["points"]
    document = _scale(run, HOSTS, "--in", "hosts", "--no-bound",
                      *[a for p in points for a in ("--at", str(p["value"]))])
    for name, side in (("hierarchical", "left"), ("ring", "right")):
        at = {a["n"]: a for a in document["at"][name]}
        for p in points:
            if p["value"] >= 2:
                assert at[p["value"]]["method"] == "formula"
                assert at[p["value"]]["time_s"] == p[side]


def test_the_traps_of_issue_20_stay_checked_with_the_reason(run, tmp_path):
    """The side-link trap is affine, but its machine is sized by p + 2 (not one family of p
    copies) and joins two ranks directly; the branch trap lists its ranks and branches on p. Neither is
    proved, and each says which line stops the proof (tests/test_scale_traps.py checks
    their figures against compiles past every sample)."""
    from test_scale_traps import SIDE, _trap
    case = write(tmp_path, "side.sched", SIDE)
    document = _scale(run, case, "--in", "p", "--no-bound", "--no-verify")
    line = SIDE.splitlines().index("  gpu g[p + 2]") + 1
    for piece in document["schedules"]:
        assert piece["status"] == "checked" and piece["valid_to"] is not None
        assert f"not proved: {case}:{line}: a family sized by p other than one family of p " \
               "copies" in piece["notes"]
    case = _trap(tmp_path, "branch", "for s in 0..p-1 round { copy part(0 of p) from g[0] "
                                     "to g[1]; if p > 48: copy all from g[2] to g[3] }")
    document = _scale(run, case, "--in", "p", "--no-bound", "--no-verify")
    for piece in document["schedules"]:
        assert piece["status"] == "checked"
        # The first hypothesis to fail is named: its ranks are a list literal (line 10),
        # before its `if` (line 12).
        assert f"not proved: {case}:10: a list literal is outside the affine class" in \
            piece["notes"]


MIX = f"""import "{SCHEDULES}/machines/nvlink_hosts.sched"
param V = 192 MiB
allgather V over ranks
schedule mix {{
  for s in 0..6 round {{
    for h in 0..hosts-1: for j in 0..7: copy part(0 of 8) of all from node[h].g[j] to node[h].g[(j + 1) % 8]
    for i in 0..7: for h in 0..hosts-1: copy part(0 of 8 * hosts) of all from node[h].g[i] to node[(h + 1) % hosts].g[i]
  }}
}}
"""


def test_a_regime_that_ends_is_proved_piece_by_piece(run, tmp_path):
    """Each of 7 rounds moves V/8 over every NVLink port and V/(8n) over every NIC, so by
    hand T(n) = 7α + 7·max(V/(8 B_L), V/(8n B_N)): the NIC binds below n = B_L/B_N = 9,
    NVLink from 9 on (a tie at 9). Both pieces are proved, each over its own range. (The
    rounds compute no collective: --no-verify.)"""
    case = write(tmp_path, "mix.sched", MIX)
    document = _scale(run, case, "--in", "hosts", "--no-bound", "--no-verify",
                      "--at", "300")
    first, second = document["schedules"]
    assert (first["status"], first["valid_from"], first["valid_to"]) == ("proved", 2, 8)
    assert first["argument"].endswith("exact for every 2 <= hosts <= 8")
    assert (second["status"], second["valid_from"], second["valid_to"]) == ("proved", 9, None)
    alpha, V, B_L, B_N = Fraction(83, 10**8), 192 * 2**20, 450 * 10**9, 50 * 10**9

    def hand(n: int) -> Fraction:
        return 7 * alpha + 7 * max(Fraction(V, 8 * B_L), Fraction(V, 8 * n * B_N))

    for n in (8, 9, 300):
        assert _compiled(case, f"hosts={n}", "mix") == hand(n)
    assert document["at"]["mix"] == [{"n": 300, "time_s": float(hand(300)), "method": "formula"}]

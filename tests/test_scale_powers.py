"""Power-of-two families proved in m (issue 37, item 5; docs/scale.md, "Proof for every
n"): recursive doubling and halving and Rabenseifner's all-reduce on the textbook machine
are `proved` for every p = 2^m, m >= 1, their forms equal to Thakur, Rabenseifner & Gropp
(2005) and to direct compiles at p = 2^11, and so are the binomial broadcast and reduce
(each round a tree's step j -> j + 2^s or j - 2^s); the families outside those read in m
(the scatter-allgather broadcast's binomial scatter, the XOR all-to-all, each a guarded
transfer) stay `checked`, each naming its line."""

from __future__ import annotations

import json
from fractions import Fraction

from conftest import SCHEDULES, write

import schedc

FLAT = SCHEDULES / "algorithms" / "flat_p.sched"
EXCHANGES = ("rd_allreduce", "rabenseifner_allreduce", "rd_allgather", "rh_reduce_scatter")
TREES = ("binomial_broadcast", "binomial_reduce")


def _values():
    session = schedc.load(FLAT)
    nominal = {str(k): Fraction(str(v)) for k, v in session.program.nominal.items()}
    return nominal["alpha"], nominal["V"], nominal["B"]


def by_hand(name: str, p: int) -> Fraction:
    """Thakur, Rabenseifner & Gropp (2005), with m = log2 p rounds of each kind: recursive
    doubling all-reduce m(α + V/B); all-gather and reduce-scatter mα + (p - 1)/p · V/B
    (round s moves V/2^(m-s), halving's the same sizes in the other order); Rabenseifner
    both. Binomial broadcast and reduce (their table's binomial tree): m rounds, each of
    one whole message over one link, m(α + V/B)."""
    alpha, V, B = _values()
    m = p.bit_length() - 1
    gather = m * alpha + Fraction(p - 1, p) * V / B
    return {"rd_allreduce": m * (alpha + V / B), "rd_allgather": gather,
            "rh_reduce_scatter": gather, "rabenseifner_allreduce": 2 * gather,
            "binomial_broadcast": m * (alpha + V / B), "binomial_reduce": m * (alpha + V / B)}[name]


def test_the_exchanges_are_proved_for_every_power_of_two(run):
    p = 2**11
    code, out, err = run("scale", FLAT, "--in", "p", "--no-bound", "--json", "--at", str(p),
                         *[a for name in EXCHANGES + TREES for a in ("-s", name)])
    assert code == 0, err
    document = json.loads(out)
    for piece in document["schedules"]:
        assert (piece["status"], piece["family"], piece["valid_to"]) == \
            ("proved", "powers of two", None)
        assert piece["argument"].startswith("powers of two: for every p = 2^m, m >= 1")
        assert not piece["limit_extrapolated"]
    for name in EXCHANGES + TREES:
        (at,) = document["at"][name]
        assert at["method"] == "formula"
        session = schedc.load(FLAT, [f"p={p}"], max_transfers=10**8)
        compiled = Fraction(schedc.time(session, name, verify=False).time)
        assert compiled == by_hand(name, p)
        assert at["time_s"] == float(compiled)


def test_the_other_power_of_two_families_stay_checked_naming_the_line(run):
    code, out, err = run("scale", FLAT, "--in", "p", "--no-bound", "--json")
    assert code == 0, err
    for piece in json.loads(out)["schedules"]:
        if piece["name"] in EXCHANGES + TREES or piece["family"] != "powers of two":
            continue
        assert piece["status"] == "checked" and piece["valid_to"] == 128
        (note,) = [n for n in piece["notes"] if n.startswith("not proved: ")]
        assert "/lib/" in note and ".sched:" in note, note


PARTNER = f"""import "{SCHEDULES}/machines/flat.sched"
param V = 64 MiB
allreduce V over ranks
schedule s {{
  let k = len(ranks)
  for s in 0..log2(k)-1 round {{
    for j in 0..k-1: reduce all from ranks[j] to ranks[j ^ (k - 1)]
  }}
}}
"""


def test_a_partner_that_is_no_power_of_two_leaves_the_piece_checked(run, tmp_path):
    """j ^ (k - 1) flips every bit: a permutation, but not the exchange the lemma covers
    (the rounds compute no all-reduce: --no-verify)."""
    case = write(tmp_path, "partner.sched", PARTNER)
    code, out, err = run("scale", case, "--in", "p", "--no-bound", "--no-verify", "--json")
    assert code == 0, err
    for piece in json.loads(out)["schedules"]:
        assert piece["status"] == "checked"
        assert any(n.startswith("not proved: ") for n in piece["notes"]), piece["notes"]


TREE = f"""import "{SCHEDULES}/machines/flat.sched"
param V = 64 MiB
broadcast V over ranks root ranks[0]
schedule s {{
  let k = len(ranks)
  for s in 0..ceil_log2(k)-1 round {{
    for j in 0..(1 << s)-1: if j + (1 << s) < k: copy all from ranks[j] to ranks[(j + (1 << s)) % k]
  }}
}}
"""


def test_a_tree_step_with_another_guard_leaves_the_piece_checked(run, tmp_path):
    """The partner `(j + 2^s) % k` is j + 2^s here (it is below k), but the lemma reads the
    step by its source, and this is not the step it reads: checked, naming the guard."""
    case = write(tmp_path, "tree.sched", TREE)
    code, out, err = run("scale", case, "--in", "p", "--no-bound", "--no-verify", "--json")
    assert code == 0, err
    for piece in json.loads(out)["schedules"]:
        assert piece["status"] == "checked"
        assert any(n.startswith("not proved: ") and "an 'if' that is not a precondition" in n
                   for n in piece["notes"]), piece["notes"]

"""Bounds in n (docs/scale.md, "Bounds in n"): the cut-set and end-host bounds of an
all-reduce as closed forms in hosts, proved on machines built uniformly in hosts
(`analysis/scale/cutforms.py`). Each form is derived by hand here and compared with `bound`
compiled directly, at three sizes, one of them 1,000 hosts; a hypothesis that fails leaves
the bounds fitted, with a note naming it."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
import sympy
from conftest import ROOT, SCHEDULES, write

import schedc
from schedc.analysis.bound.bounds import bound

HOSTS = SCHEDULES / "seed" / "nvlink_hosts.sched"
SHARED_NIC = ROOT / "tests" / "scale" / "shared_nic_hosts.sched"
n, V, B_L, B_N = sympy.symbols("hosts V B_L B_N", positive=True)
NAMES = {"hosts": n, "V": V, "B_L": B_L, "B_N": B_N}


def _scale(run, *args) -> dict:
    code, out, err = run("scale", *args, "--json")
    assert code == 0, err
    return json.loads(out)


def _parse(text: str) -> sympy.Expr:
    return sympy.sympify(text, locals=NAMES)


def _same(text: str, expected: sympy.Expr) -> bool:
    return sympy.simplify(_parse(text) - expected) == 0


def _direct(path, hosts: int, param: str = "hosts", name: str = "ring"):
    """`bound` at one size, compiled (the optimum over all cuts left out: the closed forms
    are the families' cut-set bound and the end-host bound)."""
    session = schedc.load(path, [f"{param}={hosts}"], max_transfers=10**8, max_rounds=10**6)
    collective = session.program.result(name).collective
    return bound(session, collective, [], optimum_too=False), session.program.nominal


def _value(form: sympy.Expr, nominal: dict, hosts: int, symbol: sympy.Symbol = n) -> Fraction:
    exact = form.xreplace({s: v for s, v in nominal.items() if s != symbol}).xreplace(
        {symbol: hosts})
    return Fraction(int(exact.p), int(exact.q))


def test_the_seed_bounds_are_proved_for_every_host_count(run):
    document = _scale(run, HOSTS, "--in", "hosts", "-s", "ring")
    (piece,) = document["schedules"]
    assert piece["bounds_status"] == "proved"
    assert piece["bounds_argument"].startswith("cut families uniform in hosts")
    # By hand: V must cross every cut each way. One host's 8 GPUs reach the others only
    # through their 8 NICs (8·B_N = 400 GB/s), narrower than one GPU's own ports
    # (B_L + B_N = 500 GB/s) and than the other hosts' 8·(hosts - 1) NICs: V/(8·B_N).
    # End-host: the 8·hosts ranks send 2(8·hosts - 1)·V through 8·hosts·(B_L + B_N).
    cut = V / (8 * B_N)
    end_host = 2 * (8 * n - 1) * V / (8 * n * (B_L + B_N))
    assert _same(piece["bounds"]["cut-set"], cut)
    assert _same(piece["bounds"]["end-host"], end_host)
    assert _same(piece["bounds"]["bound"], end_host)  # (8n-1)/(4n(B_L+B_N)) > 1/(8 B_N)
    ((whole,),) = [piece["bound_pieces"]]
    assert whole["valid_from"] == 2 and whole["valid_to"] is None
    for hosts in (2, 5, 24):
        found, nominal = _direct(HOSTS, hosts)
        assert found.binding.value == _value(cut, nominal, hosts)
        assert found.end_host.value == _value(end_host, nominal, hosts)
        assert found.best_value == _value(end_host, nominal, hosts)


def test_the_binding_bound_changes_at_an_exact_host_count(run):
    """Before: "bound  no closed form in this basis" (one form on 2-40 failed the fit)."""
    document = _scale(run, SHARED_NIC, "--in", "hosts", "--at", "1000")
    (piece,) = document["schedules"]
    assert piece["bounds_status"] == "proved"
    # By hand: one host's 2 GPUs leave it through one NIC of B_N = 55 GB/s (V/B_N); one GPU
    # alone through its NVLink, B_L = 100 GB/s. End-host: 2(2n - 1)·V through 2n·B_L, so
    # (2n - 1)·V/(n·B_L), above V/B_N when 2 - 1/n > B_L/B_N = 20/11, n > 5.5.
    cut = V / B_N
    end_host = (2 * n - 1) * V / (n * B_L)
    first, second = piece["bound_pieces"]
    assert (first["valid_from"], first["valid_to"]) == (2, 5)
    assert (second["valid_from"], second["valid_to"]) == (6, piece["valid_to"])
    assert _same(first["bound"], cut) and _same(second["bound"], end_host)
    assert all(_same(p["cut-set"], cut) and _same(p["end-host"], end_host)
               for p in (first, second))
    for hosts in (5, 6, 1000):  # the last piece's form, proved, far past its compiles
        found, nominal = _direct(SHARED_NIC, hosts)
        best = cut if hosts <= 5 else end_host
        assert found.binding.value == _value(cut, nominal, hosts)
        assert found.end_host.value == _value(end_host, nominal, hosts)
        assert found.best_value == _value(best, nominal, hosts)
    (at,) = document["at"]["ring"]
    _, nominal = _direct(SHARED_NIC, 6)
    assert Fraction(at["bound_s"]) == pytest.approx(_value(end_host, nominal, 1000), rel=1e-15)
    assert at["ratio"] == pytest.approx(at["time_s"] / at["bound_s"])


def test_the_distance_to_the_limit_at_1024_hosts_is_printed(run):
    code, out, _ = run("scale", HOSTS, "--in", "hosts", "-s", "ring", "--at", "1024")
    assert code == 0
    # (8·1024 - 1)·V/(4·1024·(B_L + B_N)) = 8191 · 192 MiB / (4096 · 500 GB/s) = 805.21 µs.
    bound_s = 8191 * 192 * 2**20 / (4096 * 500e9)
    assert f"bound {bound_s * 1e6:.2f} µs (proved)" in out
    assert "-> oo (proved)" in out  # time/bound's limit: the time and the bound are proved


def test_bounds_not_proved_name_the_failing_hypothesis(run, tmp_path):
    machine = (SCHEDULES / "machines" / "nvlink_hosts.sched").read_text(encoding="utf-8")
    # The spine's links grow with the hosts: the fabric depends on n.
    grown = write(tmp_path, "grown.sched", machine.replace(
        "link rail[i] <-> spine for i in 0..7",
        "link rail[i] <-> spine bw hosts * B_N for i in 0..7") + (
        f'import "{ROOT / "schedules" / "lib" / "ring.sched"}"\n'
        "param V = 192 MiB\nallreduce V over ranks\nschedule ring = ring_allreduce(ranks)\n"))
    (piece,) = _scale(run, grown, "--in", "hosts")["schedules"]
    assert piece["bounds_status"] == "checked"
    assert any("bounds not proved" in note and "grown.sched:21" in note
               for note in piece["notes"]), piece["notes"]
    gather = write(tmp_path, "gather.sched", f'import "{HOSTS.parent.parent / "machines" / "nvlink_hosts.sched"}"\n'
                   f'import "{ROOT / "schedules" / "lib" / "ring.sched"}"\n'
                   "param V = 192 MiB\nallgather V over ranks\n"
                   "schedule ring = ring_allgather(ranks)\n")
    (piece,) = _scale(run, gather, "--in", "hosts")["schedules"]
    assert piece["bounds_status"] == "checked"
    assert any("the collective is allgather" in note for note in piece["notes"])


def test_half_of_each_host_in_rail_major_order(run, tmp_path):
    """The ranks: GPUs 0-3 of every host, rail-major; the other GPUs relay nothing."""
    ranks = "[node[h].g[i] for i in 0..3 for h in 0..hosts-1]"
    path = write(tmp_path, "half.sched",
                 f'import "{SCHEDULES / "machines" / "nvlink_hosts.sched"}"\n'
                 f'import "{ROOT / "schedules" / "lib" / "ring.sched"}"\n'
                 f"param V = 192 MiB\nallreduce V over {ranks}\n"
                 f"schedule ring = ring_allreduce({ranks})\n")
    (piece,) = _scale(run, path, "--in", "hosts")["schedules"]
    assert piece["bounds_status"] == "proved"
    # By hand: a host's 4 ranks leave it through their 4 NICs (4·B_N = 200 GB/s); the
    # 4·hosts ranks send 2(4·hosts - 1)·V through 4·hosts·(B_L + B_N). V/(4·B_N) binds:
    # 1/200 GB/s > (4n - 1)/(2n · 500 GB/s) for every n.
    cut = V / (4 * B_N)
    end_host = 2 * (4 * n - 1) * V / (4 * n * (B_L + B_N))
    assert _same(piece["bounds"]["bound"], cut) and _same(piece["bounds"]["end-host"], end_host)
    for hosts in (2, 3, 7):
        found, nominal = _direct(path, hosts)
        assert found.best_value == _value(cut, nominal, hosts)
        assert found.end_host.value == _value(end_host, nominal, hosts)


def test_ranks_missing_from_a_copy_are_not_proved(tmp_path):
    from schedc.analysis.scale.cutforms import bound_forms
    ranks = "[node[h].g[i] for h in 1..hosts-1 for i in 0..7]"  # host 0 holds no rank
    path = write(tmp_path, "skip.sched",
                 f'import "{SCHEDULES / "machines" / "nvlink_hosts.sched"}"\n'
                 f'import "{ROOT / "schedules" / "lib" / "ring.sched"}"\n'
                 f"param V = 192 MiB\nallreduce V over {ranks}\n"
                 f"schedule ring = ring_allreduce({ranks})\n")
    found = bound_forms(schedc.load(path, ["hosts=3"]), "hosts", "ring", n)
    assert found.argument is None and found.pieces == ()
    assert found.note == "bounds not proved: the ranks are not in every copy of node"


def test_the_textbook_machine_in_p(run):
    """p GPUs on one switch, B each way: the copies are single GPUs."""
    flat = SCHEDULES / "algorithms" / "flat_p.sched"
    document = _scale(run, flat, "--in", "p", "-s", "ring_allreduce")
    (piece,) = document["schedules"]
    assert piece["bounds_status"] == "proved"
    p, B = sympy.symbols("p B", positive=True)
    # By hand: one GPU against the rest crosses its one link, V/B; the end-host bound is
    # Patarasuk and Yuan's 2(p - 1)/p·V/B, equal to V/B at p = 2 and larger from p = 3.
    names = {"p": p, "B": B, "V": V}
    end_host = 2 * (p - 1) * V / (p * B)
    assert sympy.simplify(sympy.sympify(piece["bounds"]["bound"], locals=names) - end_host) == 0
    assert sympy.simplify(sympy.sympify(piece["bounds"]["cut-set"], locals=names) - V / B) == 0
    ((whole,),) = [piece["bound_pieces"]]
    assert (whole["valid_from"], whole["valid_to"]) == (2, None)
    symbol = sympy.Symbol("p", positive=True, integer=True)
    for ranks in (2, 3, 1000):
        found, nominal = _direct(flat, ranks, "p", "ring_allreduce")
        assert found.best_value == _value(end_host.subs(p, symbol), nominal, ranks, symbol)

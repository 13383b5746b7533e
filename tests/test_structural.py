"""Structural params (unitless integers that size the machine or a schedule): --set
recompiles, sweeps and solves compile once per integer value, errors point at the --set and
the declaration."""

from __future__ import annotations

import json

import pytest
from conftest import SCHEDULES, timings, write

SEED = SCHEDULES / "seed"
HOSTS = SEED / "nvlink_hosts.sched"


def test_at_two_hosts_it_is_the_seed_machine():
    _, fixed = timings(SEED / "nvlink_2x8.sched")
    _, parametric = timings(HOSTS)
    for name in ("ring", "hierarchical"):
        assert parametric[name].time == fixed[name].time
        assert parametric[name].cost.formula == fixed[name].cost.formula


def test_set_hosts_recompiles_the_machine():
    program, t = timings(HOSTS, "hosts=5")
    assert len(program.topology.devices) == 5 * 8 + 5 + 8 + 1  # GPUs, NVSwitches, rails, spine
    ring = t["ring"]
    assert ring.cost.rounds == 2 * (40 - 1)  # a ring over 40 GPUs
    assert len(ring.schedule.collective.ranks) == 40


def test_non_integer_value_points_at_the_set_and_the_declaration(run):
    code, out, err = run("time", HOSTS, "--set", "hosts=2.5")
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert lines[0] == ("--set hosts:1:1: error: hosts is a structural param (an integer), so "
                        "5/2 is not a value it can take")
    assert lines[-1] == ("  note: hosts is declared at "
                         f"{SEED / '..' / 'machines' / 'nvlink_hosts.sched'}:10:1: "
                         "param hosts = 2          # structural: `--set hosts=16` compiles 16 hosts")


def test_out_of_range_value_points_at_the_set(run):
    # hosts = 0 empties `host node[hosts]`; before, the error was about a member of it,
    # "host 'node' has no member 'g' (members: none)", at a link that used it.
    code, out, err = run("time", HOSTS, "--set", "hosts=0")
    machine = SEED / ".." / "machines" / "nvlink_hosts.sched"
    assert (code, out) == (2, "")
    assert err == (
        "--set hosts:1:1: error: hosts = 0 is out of range for this file: the host family "
        "'node[hosts]' is empty (hosts = 0); a family has at least one host\n  0\n  ^\n"
        f"  note: hosts is declared at {machine}:10:1: param hosts = 2          # structural: "
        "`--set hosts=16` compiles 16 hosts\n"
        f"  note: where it fails: {machine}:13:13: host node[hosts] {{\n")


@pytest.mark.parametrize("text, expected", [
    ("param n = 0\ntopology { host h[n] { gpu g[2] }; switch s }\n",
     "2:19: error: the host family 'h[n]' is empty (n = 0); a family has at least one host\n"
     "  topology { host h[n] { gpu g[2] }; switch s }\n                    ^\n"),
    ("topology { gpu g[0]; switch s }\n",
     "1:18: error: the gpu family 'g[0]' is empty; a family has at least one gpu\n"
     "  topology { gpu g[0]; switch s }\n                   ^\n"),
    ("param k = 2\ntopology { host h[2] { switch s[k - 2] } }\n",
     "2:33: error: the switch family 's[k - 2]' is empty (k - 2 = 0); a family has at least one "
     "switch\n  topology { host h[2] { switch s[k - 2] } }\n                                  ^~~~~\n"),
])
def test_an_empty_family_is_refused_at_its_declaration(tmp_path, run, text, expected):
    path = write(tmp_path, "empty.sched", text)
    code, _, err = run("check", path)
    assert (code, err) == (2, f"{path}:{expected}")


def test_structural_sweep_compiles_each_integer_once(run):
    code, out, _ = run("sweep", HOSTS, "--vary", "hosts=2:9:5", "--json")
    assert code == 0
    document = json.loads(out)
    # geomspace(2, 9, 5) = 2, 2.91, 4.24, 6.18, 9 rounds to 2, 3, 4, 6, 9.
    assert document["values"] == [2, 3, 4, 6, 9] and document["compiles"] == 5
    for n, ring, hierarchical in zip(document["values"], document["schedules"]["ring"],
                                     document["schedules"]["hierarchical"]):
        _, t = timings(HOSTS, f"hosts={n}")  # each point is the file compiled at that size
        assert ring == float(t["ring"].time) and hierarchical == float(t["hierarchical"].time)


def test_structural_sweep_refuses_a_fractional_end(run):
    code, _, err = run("sweep", HOSTS, "--vary", "hosts=2:9.5")
    assert code == 2 and "hosts is a structural param (an integer); 19/2 is not an integer" in err


def test_solve_for_hosts_searches_the_integers(run, tmp_path):
    # A ring over hosts x 8 GPUs against a fixed 2 ms: 2(8n - 1)·α + (8n - 1)/(4n)·V/B_N grows
    # with n; by hand, n = 2 gives 7.57 ms, so with V = 48 MiB: n = 2: 1.93 ms, n = 3: 1.98 ms,
    # n = 4: 2.01 ms — the ring passes 2 ms between 3 and 4 hosts.
    case = write(tmp_path, "ring.sched", f'''import "{SCHEDULES}/machines/nvlink_hosts.sched"
import "{SCHEDULES}/lib/ring.sched"
param V = 48 MiB
allreduce V over ranks
schedule ring = ring_allreduce(ranks)
''')
    code, out, _ = run("solve", case, "time(ring) = 2 ms", "--for", "hosts", "--json",
                       "--max-transfers", "40000")  # stops the search at 16 hosts
    assert code == 0
    found = json.loads(out)
    assert found["changes"] == [{"lo": 3, "hi": 4, "before": "left", "after": "right"}]
    assert found["searched"][0] == 1 and found["roots"] == []
    by_n = {p["value"]: p["left"] for p in found["points"]}
    for n in (3, 4):
        _, t = timings(case, f"hosts={n}")
        assert by_n[n] == float(t["ring"].time)
    assert by_n[3] < 2e-3 < by_n[4]


def test_sensitivity_leaves_structural_params_out(run):
    code, out, _ = run("sensitivity", HOSTS, "--json")
    assert code == 0
    for schedule in json.loads(out)["schedules"]:
        assert [s["param"] for s in schedule["sensitivities"]] == ["alpha", "B_L", "B_N", "V"]


def test_a_structural_param_pinned_in_a_file_is_compiled_at_that_value(run, tmp_path):
    head = f'import "{SCHEDULES}/machines/nvlink_hosts.sched"\nimport "{SCHEDULES}/lib/ring.sched"\n' \
           "param V = 1 MiB\nallreduce V over ranks\nschedule ring = ring_allreduce(ranks)\n"
    pinned = write(tmp_path, "pinned.sched", head + "report t = time(ring, hosts = 4)\n"
                                                  "expect time(ring, hosts = 4) = time(ring)\n")
    code, out, err = run("eval", pinned, "--json")
    assert code == 0, err
    _, at4 = timings(pinned, "hosts=4")
    assert json.loads(out)["reports"][0]["value"] == pytest.approx(float(at4["ring"].time),
                                                                   rel=1e-12)
    code, out, _ = run("check", pinned)  # 4 hosts take longer than the nominal 2
    assert code == 1 and "FAIL  expect time(ring, hosts = 4) = time(ring)" in out
    code, _, err = run("check", pinned, "--set", "hosts=4")  # now both sides are 4 hosts
    assert code == 0, err
    solved = write(tmp_path, "solved.sched", head + "report n = solve(time(ring) = 1 ms, hosts)\n")
    code, _, err = run("check", solved)
    assert code == 2 and "hosts is a structural param (it sizes the machine" in err

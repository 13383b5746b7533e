"""Issue 36: "out of memory", "no route from X to Y" and "a transfer from A to itself" said
with a position (file:line:col, the line, a caret), as every other error is. The campaign
found them without one: `emit routes --pair` (a route asked for on the command line) and a
MemoryError anywhere (caught by the command line alone)."""

from __future__ import annotations

import re

from conftest import write

import schedc.analysis.whatif as whatif_stage
import schedc.session as session_stage
from schedc.elaborate.topology import TopologyBuilder

DISCONNECTED = """param V = 1 MiB
param B = 1 GB/s
topology {
  gpu g[2]
  switch spine[1]
  switch leaf[1]
  link g[0] <-> spine[0] bw B
  link g[1] <-> leaf[0] bw B
}
allreduce V over [g[0], g[1]]
schedule x {
  round { copy all from g[0] to g[0] }
}
"""


def diagnostic(err: str) -> tuple[str, str, str]:
    first, excerpt, caret = err.splitlines()[:3]
    assert re.match(r".+:\d+:\d+: error: ", first), err
    assert caret.strip().startswith("^"), err
    return first, excerpt, caret


def test_pair_without_a_route_is_said_at_the_option(run, tmp_path):
    path = write(tmp_path, "disc.sched", DISCONNECTED)
    code, _, err = run("emit", "routes", path, "--pair", "spine[0]", "leaf[0]")
    assert code == 2
    first, excerpt, caret = diagnostic(err)
    assert first == "--pair:1:1: error: no route from spine[0] to leaf[0]"
    assert excerpt.strip() == "spine[0] leaf[0]" and caret.strip() == "^" + "~" * 15


def test_pair_to_itself_is_said_at_the_option(run, tmp_path):
    path = write(tmp_path, "disc.sched", DISCONNECTED)
    code, _, err = run("emit", "routes", path, "--pair", "g[0]", "g[0]")
    assert code == 2
    first, _, _ = diagnostic(err)
    assert first == "--pair:1:1: error: a transfer from g[0] to itself"


def test_pair_naming_no_device_points_at_the_name(run, tmp_path):
    path = write(tmp_path, "disc.sched", DISCONNECTED)
    code, _, err = run("emit", "routes", path, "--pair", "g[0]", "lea[0]")
    assert code == 2
    first, excerpt, caret = diagnostic(err)
    # "g[0] lea[0]": the second name starts at column 6 (5 characters and a space before it)
    assert first.startswith("--pair:1:6: error: --pair: no device 'lea[0]'")
    assert caret.index("^") - excerpt.index("lea[0]") == 0


def test_the_schedules_own_transfer_to_itself_stays_at_its_statement(run, tmp_path):
    path = write(tmp_path, "disc.sched", DISCONNECTED)
    code, _, err = run("time", path)
    first, excerpt, _ = diagnostic(err)
    assert first.endswith(":12:11: error: a transfer from g[0] to itself")
    assert "copy all from g[0] to g[0]" in excerpt


def test_out_of_memory_in_a_statement_is_said_at_it(run, tmp_path, monkeypatch):
    def exhausted(self, block, env):
        raise MemoryError
    monkeypatch.setattr(TopologyBuilder, "add", exhausted)
    path = write(tmp_path, "disc.sched", DISCONNECTED)
    code, _, err = run("time", path)
    assert code == 2
    first, excerpt, _ = diagnostic(err)
    assert re.search(r"disc\.sched:3:1: error: out of memory here", first)
    assert excerpt.strip() == "topology {"


def test_out_of_memory_in_a_schedule_is_said_at_its_declaration(run, tmp_path, monkeypatch):
    def exhausted(schedule, topology):
        raise MemoryError
    monkeypatch.setattr(session_stage, "lower", exhausted)
    path = write(tmp_path, "ring.sched", DISCONNECTED.replace("to g[0] }", "to g[1] }")
                 .replace("link g[1] <-> leaf[0] bw B", "link g[1] <-> spine[0] bw B"))
    code, _, err = run("time", path, "--no-verify")
    assert code == 2
    first, excerpt, _ = diagnostic(err)
    assert "error: out of memory here" in first and "(computing the loads of schedule 'x')" in first
    assert first.startswith(f"{path}:11:")
    assert excerpt.strip().startswith("schedule x")


def test_out_of_memory_in_a_whatif_failure_is_said_at_the_class(run, tmp_path, monkeypatch):
    def exhausted(session, name):
        raise MemoryError
    monkeypatch.setattr(whatif_stage, "_timed", exhausted)
    path = write(tmp_path, "ring.sched", DISCONNECTED.replace("to g[0] }", "to g[1] }")
                 .replace("link g[1] <-> leaf[0] bw B", "link g[1] <-> spine[0] bw B"))
    code, _, err = run("whatif", path, "--class", "spine", "--no-verify")
    assert code == 2
    first, excerpt, _ = diagnostic(err)
    assert first.startswith("--class:1:1: error: out of memory here")
    assert "(timing the failure of spine[0], 1 of 1)" in first and excerpt.strip() == "spine"

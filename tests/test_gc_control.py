"""The command line's control of the garbage collector (`schedc.cli.main`) and its exit
without teardown (`schedc.cli.entry`): memory stays bounded on a big case, output and exit
codes are those of `main`, and a program that calls `main` in-process keeps its collector."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT, SCHEDULES

SEED = SCHEDULES / "seed" / "nvlink_2x8.sched"
BIG = SCHEDULES / "scale" / "ring_1024.sched"  # 2,046 rounds of 1,024 transfers
PER_TRANSFER = 80  # bytes: the peak-memory target of benchmarks/targets.py, per transfer

# A small launcher forks the program and reports wait4's ru_maxrss of that child alone: a
# child forked from pytest itself would count pytest's memory (see benchmarks/processes.py).
LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
sys.stderr.write(f"\\n{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}")
"""


def _program(*args: str) -> tuple[int, str, int]:
    """(exit code, stdout, peak resident bytes) of `python -m schedc args` from the root."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-S", "-c", LAUNCHER, sys.executable, "-m", "schedc",
                           *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    code, peak = done.stderr.rsplit("\n", 1)[-1].split()
    return int(code), done.stdout, int(peak) * 1024


def test_memory_stays_bounded_without_the_collector():
    """Without cyclic collection during the command, the peak of a 2.1 M-transfer compile and
    verification stays within what the transfers need (80 B each, the benchmarks' target)
    above the peak of a command that imports everything and compiles almost nothing."""
    code, out, peak = _program("time", str(BIG), "--json")
    assert code == 0
    transfers = json.loads(out)["schedules"][0]["transfers"]
    assert transfers == 2 * 1023 * 1024
    code, _, base = _program("compare", str(SEED))
    assert code == 0
    assert peak <= base + PER_TRANSFER * transfers, (peak, base, transfers)


@pytest.mark.parametrize("args", [("compare", str(SEED)),
                                  ("verify", str(SCHEDULES / "seed" / "pcie_2x4.sched")),
                                  ("time", str(SEED), "--set", "hosts=x"), ("--help",),
                                  ("no-such-command",)])
def test_program_prints_and_exits_as_main(run, args):
    """The program's exit without teardown loses nothing: stdout, stderr and the exit code are
    those of `main` run in-process, byte for byte."""
    here = os.getcwd()
    os.chdir(ROOT)
    try:
        expected = run(*args)
    finally:
        os.chdir(here)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "schedc", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout, done.stderr) == expected


def test_main_in_process_keeps_the_collector(run):
    """`main` turns the collector off only while its command runs, and only raises
    SystemExit: an in-process caller's collector is as it was, on or off."""
    assert gc.isenabled()
    code, out, _ = run("compare", SEED)
    assert code == 0 and out
    assert gc.isenabled()
    gc.disable()
    try:
        assert run("compare", "no-such-file.sched")[0] == 2
        assert not gc.isenabled()
    finally:
        gc.enable()



@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [("--version",), ("compare", str(SEED))])
def test_output_that_cannot_be_written_is_said_not_a_bug(args):
    """stdout on a full device: exit 120, as CPython exits when it cannot flush stdout, with
    what happened on stderr, whether the write fails while the command runs (a long output)
    or only at the exit's flush (a short one)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "schedc", *args], cwd=ROOT, env=env,
                              stdout=full, stderr=subprocess.PIPE, text=True, check=False)
    assert done.returncode == 120
    assert done.stderr == "schedc: cannot write the output: No space left on device\n"


def test_the_program_neither_collects_nor_frees_its_session_before_exiting(capsys):
    """Run as the program (`entry`: `main(exiting=True)`, then an exit without teardown), a
    command leaves the collector off (turning it on would start a full collection over every
    object, 0.1-0.4 s) and its session alive (freeing it object by object costs as much on a
    big machine); run in-process, `main` frees it and restores the collector."""
    from schedc.cli import main
    from schedc.cli.options import KEPT
    assert gc.isenabled() and not KEPT
    try:
        with pytest.raises(SystemExit):
            main(["compare", str(SEED)], exiting=True)
        assert not gc.isenabled()
        assert [type(s).__name__ for s in KEPT] == ["Session"]
        gc.enable()  # (as an in-process caller's collector)
        with pytest.raises(SystemExit):
            main(["compare", str(SEED)])
        assert gc.isenabled() and not KEPT
    finally:
        KEPT.clear()
        gc.enable()
    capsys.readouterr()

"""The API checks its arguments, and the command line relies on those checks: each bad value
below is refused by the API call with a `UsageError` and its message, and by the command with
the same message and exit code 2 (click only converts an option to its type). The first four
are the defects issue 35 found: a ZeroDivisionError, a limit of 0 read as "no limit", an
out-of-range compute capability accepted, and a .sched file called malformed XML."""

from __future__ import annotations

import pytest
from conftest import ROOT, SCHEDULES

import schedc
from schedc.errors import UsageError

PCIE = SCHEDULES / "seed" / "pcie_2x4.sched"
HOSTS = SCHEDULES / "seed" / "nvlink_hosts.sched"
TOPO = ROOT / "tests" / "fixtures" / "topo" / "ndv4-topo.xml"
XML = ROOT / "tests" / "fixtures" / "hierarchical.xml"
LOG = ROOT / "tests" / "fixtures" / "no-such-log.txt"  # never read: the check comes first


def _pcie():
    return schedc.load(PCIE)


# (what the API is called with, the same request on the command line, the message)
CASES = [
    (lambda: schedc.export_msccl(_pcie(), "ring", channels=0),
     ("export", "msccl", PCIE, "-s", "ring", "--channels", "0"),
     "--channels 0: must be from 1 to 32"),
    (lambda: schedc.load(PCIE, max_transfers=0),
     ("time", PCIE, "--max-transfers", "0"), "--max-transfers 0: must be at least 1"),
    (lambda: schedc.load(PCIE, max_transfers=-5),
     ("compare", PCIE, "--max-transfers", "-5"), "--max-transfers -5: must be at least 1"),
    (lambda: schedc.import_machine(TOPO, sm=5, nvlinks=12),
     ("machine", "import", TOPO, "--sm", "5", "--nvlinks", "12"),
     "--sm 5: must be from 10 to 200"),
    (lambda: schedc.validate_msccl(str(PCIE), "msccl"),
     ("verify", PCIE, "--executor", "msccl"),
     f"{PCIE}: --executor checks an MSCCL XML file (FILE.xml) against the executor's rules; "
     "a .sched file is verified without --executor"),
    # the other ranges the command line used to check itself
    (lambda: schedc.load(PCIE, max_rounds=0),
     ("time", PCIE, "--max-rounds", "0"), "--max-rounds 0: must be at least 1"),
    (lambda: schedc.verify_files(SCHEDULES / "seed", max_transfers=0),
     ("verify", SCHEDULES / "seed", "--max-transfers", "0"),
     "--max-transfers 0: must be at least 1"),
    (lambda: schedc.check(PCIE, max_rounds=-1),
     ("check", PCIE, "--max-rounds", "-1"), "--max-rounds -1: must be at least 1"),
    (lambda: schedc.emit("ast", PCIE, max_lines=0),
     ("emit", "ast", PCIE, "--max-lines", "0"), "--max-lines 0: must be at least 1"),
    (lambda: schedc.emit("ast", PCIE, max_transfers=0),
     ("emit", "ast", PCIE, "--max-transfers", "0"), "--max-transfers 0: must be at least 1"),
    (lambda: schedc.bound(_pcie(), max_cuts=0),
     ("bound", PCIE, "--max-cuts", "0"), "--max-cuts 0: must be at least 1"),
    (lambda: schedc.report(_pcie(), max_cuts=0),
     ("report", PCIE, "--max-cuts", "0"), "--max-cuts 0: must be at least 1"),
    (lambda: schedc.scale(schedc.load(HOSTS), "hosts", start=0),
     ("scale", HOSTS, "--in", "hosts", "--from", "0"), "--from 0: must be at least 1"),
    (lambda: schedc.scale(schedc.load(HOSTS), "hosts", at=[3, 0]),
     ("scale", HOSTS, "--in", "hosts", "--at", "3", "--at", "0"), "--at 0: must be at least 1"),
    (lambda: schedc.calibrate(_pcie(), [LOG], every=0),
     ("calibrate", LOG, "--machine", PCIE, "--every", "0"), "--every 0: must be at least 1"),
    (lambda: schedc.import_machine(TOPO, hosts=4097),
     ("machine", "import", TOPO, "--hosts", "4097"), "--hosts 4097: must be from 1 to 4,096"),
    (lambda: schedc.import_machine(TOPO, sm=80, nvlinks=73),
     ("machine", "import", TOPO, "--sm", "80", "--nvlinks", "73"),
     "--nvlinks 73: must be from 1 to 72"),
    (lambda: schedc.export_msccl(_pcie(), "ring", max_steps=0),
     ("export", "msccl", PCIE, "-s", "ring", "--max-steps", "0"),
     "--max-steps 0: must be from 1 to 32,768"),
    (lambda: schedc.export_msccl(_pcie(), "ring", min_bytes=-1),
     ("export", "msccl", PCIE, "-s", "ring", "--min-bytes", "-1"),
     "--min-bytes -1: must be from 0 to 9,223,372,036,854,775,807"),
    (lambda: schedc.export_msccl(_pcie(), "ring", max_bytes=2**63),
     ("export", "msccl", PCIE, "-s", "ring", "--max-bytes", str(2**63)),
     "--max-bytes 9223372036854775808: must be from 0 to 9,223,372,036,854,775,807"),
    (lambda: schedc.validate_msccl(str(XML), "msccl", max_steps=32769),
     ("verify", XML, "--executor", "msccl", "--max-steps", "32769"),
     "--max-steps 32769: must be from 1 to 32,768"),
]


def _id(args: tuple) -> str:
    return " ".join(a if isinstance(a, str) else a.name for a in args)


@pytest.mark.parametrize(("call", "args", "message"), CASES, ids=[_id(c[1]) for c in CASES])
def test_the_api_and_the_command_refuse_alike(run, call, args, message):
    with pytest.raises(UsageError) as refused:
        call()
    assert refused.value.message == message
    code, out, err = run(*args)
    assert (code, out, err) == (2, "", refused.value.render() + "\n")


@pytest.mark.parametrize(("call", "message"), [
    (lambda: schedc.export_msccl(_pcie(), "ring", channels=1.5),
     "--channels 1.5: must be a whole number from 1 to 32"),
    (lambda: schedc.export_msccl(_pcie(), "ring", channels=True),
     "--channels True: must be a whole number from 1 to 32"),
    (lambda: schedc.load(PCIE, max_transfers="10"),
     "--max-transfers '10': must be a whole number at least 1"),
    (lambda: schedc.export_msccl(_pcie(), "ring", proto="simple"),
     "--proto simple: one of LL, LL128, Simple"),
    (lambda: schedc.export_msccl(_pcie(), "ring", executor="nccl"),
     "--executor nccl: one of msccl-executor-nccl, msccl"),
    (lambda: schedc.export_msccl(_pcie(), "ring", layout="in-place"),
     "layout in-place: one of inplace, outofplace, both"),
    (lambda: schedc.tune(_pcie(), "alltoall", "8B:16GB"),
     "--collective alltoall: one of allreduce, allgather, reduce_scatter, broadcast, reduce"),
    (lambda: schedc.nccl_model(_pcie(), nodes=0), "--nodes 0: must be at least 1"),
    (lambda: schedc.nccl_model(_pcie(), channels=1.5), "--channels 1.5: must be a whole number"),
    (lambda: schedc.nccl_model(_pcie(), sm="90"), "--sm '90': must be a whole number"),
    (lambda: schedc.verify_for_all(HOSTS, "hosts", start="3"),
     "--from '3': must be a whole number"),
    (lambda: schedc.solve(_pcie(), "time(ring) = 1 s", "V", timeout=-1),
     "--timeout -1: must be a number of seconds above 0, at most 1,000,000"),
    (lambda: schedc.sensitivity(_pcie(), timeout=float("nan")),
     "--timeout nan: must be a number of seconds above 0, at most 1,000,000"),
    (lambda: schedc.check(PCIE, timeout=0),
     "--timeout 0: must be a number of seconds above 0, at most 1,000,000"),
    (lambda: schedc.evaluate(_pcie(), timeout="10"),
     "--timeout '10': must be a number of seconds above 0, at most 1,000,000"),
    (lambda: schedc.report(_pcie(), timeout=0),
     "--timeout 0: must be a number of seconds above 0, at most 1,000,000"),
])
def test_what_only_a_script_can_pass_is_refused_too(call, message):
    """Values click's types keep from the command line (a float, a bool, a string, a choice
    outside click.Choice) reach the API from a script: refused with a message, not a
    traceback deeper down."""
    with pytest.raises(UsageError) as refused:
        call()
    assert refused.value.message == message


def test_valid_values_are_still_taken():
    """The edges of each range are accepted, and the checks change no valid call."""
    session = _pcie()
    assert schedc.export_msccl(session, "ring", channels=2, max_steps=32768, min_bytes=0,
                               max_bytes=2**63 - 1) == schedc.export_msccl(
        session, "ring", channels=2, max_bytes="9223372036854775807")
    assert schedc.load(PCIE, max_transfers=1, max_rounds=1).program is not None
    text = schedc.import_machine(TOPO, hosts=1, nvlinks=1, sm=10, nic_speed="200Gbit/s")
    assert "param B_nvlink" in text

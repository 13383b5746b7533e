"""Every MSCCL export of every library algorithm, at every size the library's machines have
(and the sizes of issue 24), checked against each executor's rules, re-implemented here from
the executors' source (not from schedc.msccl.rules): each rule cites its line.

Sources: Azure/msccl-executor-nccl at c6f6b36d1a4c7ae44916fcc5c8e32c95cce2ae54 (NCCL below):
src/misc/msccl/msccl_parser.cc (cc:), src/include/msccl/msccl_struct.h (struct.h:),
src/include/msccl/msccl_parser.h (parser.h:), makefiles/common.mk; microsoft/msccl at
b23e9cd5dd63f82ee1c5aae7e0a2042079be903a (MSCCL below): src/graph/topo.cc (topo.cc:),
src/include/msccl.h (msccl.h:).
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from conftest import SCHEDULES, flat_machine, write
from test_library import MACHINES, _imports, _suite

import schedc
from schedc.errors import UsageError
from schedc.export.msccl_xml import export_msccl

NCCL, MSCCL = "msccl-executor-nccl", "msccl"
STEPS = {NCCL: 64, MSCCL: 256}  # common.mk:19 MSCCL_MAX_NUM_STEPS ?= 64; msccl.h:6
THREAD_BLOCKS = {NCCL: 32 * 32, MSCCL: 108 * 2}  # struct.h:17-18 (× MAXCHANNELS); msccl.h:8
REQUIRED_ALGO = {NCCL: {"nchunksperloop", "nchannels", "ngpus", "proto", "coll", "minBytes",
                        "maxBytes", "inplace", "outofplace"},  # cc:315-389
                 MSCCL: {"name", "ngpus", "nchunksperloop", "nchannels", "proto", "coll",
                         "inplace"}}  # topo.cc:771-848
COLLS = {NCCL: {"allreduce", "allgather", "reducescatter", "alltoall"},  # cc:343-368
         MSCCL: {"allreduce", "allgather", "reduce_scatter", "alltoall"}}  # topo.cc:826-839
STEP_ATTRS = {"s", "srcoff", "srcbuf", "dstoff", "dstbuf", "cnt", "type", "depid", "deps",
              "hasdep"}  # cc:472-483, topo.cc:959-970
SENDING, RECEIVING = {"s", "rcs", "rrs", "rrcs"}, {"r", "rcs", "rrs", "rrc", "rrcs"}  # cc:499-537
TAG = re.compile(r'<(/?)([A-Za-z_]\w*)((?: [A-Za-z_]\w*="[^"]*")*)(/?)>')


def elements(text: str) -> list[tuple[str, dict[str, str], int]]:
    """(name, attributes, depth) of every element, read as the executors' tokenizer reads
    them (cc:104-157): only ' ' and newlines between tags (cc:107-112), attributes one space
    apart in double quotes (cc:29, 139), values of at most 255 characters (parser.h:20)."""
    out, depth, at = [], 0, 0
    for match in TAG.finditer(text):
        assert not text[at:match.start()].strip(" \n"), "text between tags (cc:110)"
        at = match.end()
        closing, name, attrs, single = match.groups()
        if closing:
            depth -= 1
            continue
        values = dict(re.findall(r' (\w+)="([^"]*)"', attrs))
        assert len(values) <= 16, "MAX_ATTR_COUNT (parser.h:21)"
        assert all(len(v) <= 255 for v in values.values()), "MAX_STR_LEN (parser.h:20)"
        out.append((name, values, depth))
        depth += not single
    assert not text[at:].strip(" \n")
    return out


def check_rules(text: str, executor: str, max_steps: int | None = None) -> None:
    steps_limit = max_steps or STEPS[executor]
    found = elements(text)
    name, algo, _ = found[0]
    assert name == "algo" and REQUIRED_ALGO[executor] <= set(algo)
    assert algo["proto"] in ("Simple", "LL", "LL128")  # cc:290-301
    assert algo["coll"] in COLLS[executor]
    ngpus, chunks, nchannels = (int(algo[k]) for k in ("ngpus", "nchunksperloop", "nchannels"))
    assert 1 <= nchannels <= 32  # MAXCHANNELS, device.h:65; msccl_setup.cc:93
    assert int(algo["minBytes"]) <= int(algo["maxBytes"]) or algo["maxBytes"] == "0"  # topo:807
    multiplier = {"allgather": ("i", ngpus), "reducescatter": ("o", ngpus),
                  "reduce_scatter": ("o", ngpus)}.get(algo["coll"], (None, 1))
    gpus = [k for k, e in enumerate(found) if e[0] == "gpu"]
    for g, start in enumerate(gpus):
        end = gpus[g + 1] if g + 1 < len(gpus) else len(found)
        _check_gpu(found[start:end], executor, steps_limit, ngpus, chunks, nchannels, multiplier,
                   len(gpus))


def _check_gpu(part, executor, steps_limit, ngpus, chunks, nchannels, multiplier, ngpu_nodes):
    _, gpu, _ = part[0]
    gid = int(gpu["id"])
    size = {b: int(gpu[f"{b}_chunks"]) for b in "ios"}  # cc:401-403
    for b in "io":  # topo.cc:886: a buffer's chunks × the collective's multiplier = the loop
        factor = multiplier[1] if multiplier[0] == b else 1
        assert size[b] == 0 or size[b] * factor == chunks, (b, size[b], chunks)
    # One rank's parse keeps the algo, every gpu, its own tbs and steps: < MAX_NODES (cc:169)
    assert 1 + ngpu_nodes + len(part) - 1 < 4096
    tbs: list[tuple[dict, list[dict]]] = []
    for name, attrs, _ in part[1:]:
        if name == "tb":
            tbs.append((attrs, []))
        else:
            assert name == "step"
            tbs[-1][1].append(attrs)
    ids = [int(t["id"]) for t, _ in tbs]
    assert sorted(ids) == list(range(len(ids)))  # cc:417-429, 684-696: 0.. without gaps
    assert len(ids) <= THREAD_BLOCKS[executor]  # cc:421, topo.cc:903
    by_id = {int(t["id"]): steps for t, steps in tbs}
    senders: dict[int, int] = {}
    receivers: dict[int, int] = {}
    for t, steps in tbs:
        send, recv, chan, bid = int(t["send"]), int(t["recv"]), int(t["chan"]), int(t["id"])
        assert gid not in (send, recv) and -1 <= send < ngpus and -1 <= recv < ngpus  # cc:431-445
        assert 0 <= chan < nchannels  # cc:449; a channel past nchannels is never connected
        senders[chan] = senders.get(chan, 0) + (send >= 0)
        receivers[chan] = receivers.get(chan, 0) + (recv >= 0)
        assert len(steps) <= steps_limit  # cc:485: s < MSCCL_MAX_NUM_STEPS
        pending = 0
        for position, s in enumerate(steps):
            assert set(s) >= STEP_ATTRS
            assert int(s["s"]) == position  # (deps name steps by position: the kernel counts)
            kind, cnt, depid, deps = s["type"], int(s["cnt"]), int(s["depid"]), int(s["deps"])
            assert s["hasdep"] in ("0", "1")  # cc:647
            if depid >= 0:
                pending += 1
                assert depid != bid and depid in by_id and 0 <= deps < len(by_id[depid])
                assert depid <= 127  # dependentBid is int8_t (struct.h:58, msccl_kernel.cu:229)
                assert by_id[depid][deps]["hasdep"] == "1"  # only those set a flag (kernel.cu:313)
            if kind == "nop":
                continue
            assert pending == 0 or depid >= 0  # cc:616: the last dependency on the step itself
            pending = 0
            assert 1 <= cnt < 72  # cc:577 MSCCL_MAX_COUNT (struct.h:19)
            assert kind not in SENDING or send >= 0  # cc:585
            assert kind not in RECEIVING or recv >= 0  # cc:598
            for key in ("src", "dst"):
                buf, off = s[f"{key}buf"], int(s[f"{key}off"])
                assert buf in "ios" and off <= 32767  # cc:256-267; int16_t (struct.h:44-45)
                if not (key == "src" and kind in ("r", "rcs")) and not (key == "dst" and kind == "s"):
                    assert off >= 0 and off + cnt <= size[buf], (key, buf, off, cnt)  # cc:270
    assert max(senders.values(), default=0) <= 32  # cc:589 (struct.h:17)
    assert max(receivers.values(), default=0) <= 32  # cc:602


EXPORTABLE = ("allreduce", "allgather", "reduce_scatter", "alltoall")


def _exports(session, executor, layout, channels):
    """Each exportable schedule's XML, or the refusal's message."""
    for name in session.selected():
        schedule = session.schedule(name)
        if schedule.collective.kind not in EXPORTABLE:
            continue
        try:
            yield name, export_msccl(schedule, name, channels=channels, executor=executor,
                                     layout=layout), None
        except UsageError as refusal:
            yield name, None, refusal.message


@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_every_library_export_meets_each_executors_rules(tmp_path, machine):
    group, grid = MACHINES[machine]
    text = f'import "{SCHEDULES}/machines/{machine}.sched"\n' + _imports() + "param V = 64 MiB\n"
    session = schedc.load(write(tmp_path, "suite.sched", text + _suite(group, grid, True)))
    checked = 0
    for executor, layout, channels in ((NCCL, "inplace", 1), (NCCL, "outofplace", 1),
                                       (NCCL, "both", 4), (MSCCL, "inplace", 4),
                                       (MSCCL, "outofplace", 1)):
        for name, xml, refusal in _exports(session, executor, layout, channels):
            if xml is None:
                # The only refusal at these sizes: a pairwise all-to-all over 32 ranks on 4
                # channels is 31 peers × 4 channels × 2 = 248 thread blocks per gpu, past
                # microsoft/msccl's 216 (by hand); 3 channels (186) fit.
                assert (machine, name, executor) == ("rail_4x8", "pairwise_alltoall", MSCCL), \
                    refusal
                assert refusal.endswith("msccl allows 216 (MSCCL_MAX_NUM_THREAD_BLOCKS, "
                                        "src/include/msccl.h:8) (--executor msccl-executor-nccl "
                                        "allows 1,024): --channels 3 fits"), refusal
                xml = export_msccl(session.schedule(name), name, channels=3, executor=executor)
            check_rules(xml, executor)
            checked += 1
    assert checked >= 5 * 9


def test_the_issues_cases_fit_each_executor(tmp_path):
    """A 40-rank ring all-reduce (78 rounds to one peer: past 64 steps unless spread over
    channels), a 256-rank recursive-doubling all-gather (its last round moves 128 of 256
    chunks: past cnt < 72 unless cut), a 32-rank pairwise all-to-all on 4 channels (248
    thread blocks: ids past int8_t unless those waited for come first)."""
    machine = write(tmp_path, "m.sched", flat_machine(256))
    cases = [(40, "allreduce", "ring_allreduce"), (256, "allgather", "rd_allgather"),
             (32, "alltoall", "pairwise_alltoall")]
    for n, kind, function in cases:
        group = f"[g[i] for i in 0..{n - 1}]"
        suite = write(tmp_path, f"s{n}.sched", 'import "m.sched"\n' + _imports()
                      + f"{kind} V over {group}\nschedule x = {function}({group})\n")
        schedule = schedc.load(suite).schedule("x")
        channels = 4 if n == 32 else 1
        text = export_msccl(schedule, "x", channels=channels)
        check_rules(text, NCCL)
        if n == 40:
            # The ring over one channel group has 78 steps per thread block; two groups.
            assert 'nchannels="2"' in text and max(_steps_per_tb(text)) <= 64
            check_rules(export_msccl(schedule, "x", executor=MSCCL), MSCCL)
            assert 'nchannels="1"' in export_msccl(schedule, "x", executor=MSCCL)
            back = schedc.load(write(tmp_path, "x.xml", text), machine=machine, ranks=group)
            assert schedc.verify(back)[0].ok
        if n == 256:
            # 128 chunks in steps of at most 71: 71 + 57 (by hand).
            counts = [int(c) for c in re.findall(r'cnt="(\d+)"', text)]
            assert max(counts) == 71 and 57 in counts
        if n == 32:
            assert re.search(r'<tb id="247"', text) and not re.search(r'depid="(1[3-9]\d|2\d\d)"',
                                                                      text)


def _steps_per_tb(text: str) -> list[int]:
    return [len(re.findall("<step ", block)) for block in text.split("<tb ")[1:]]


@pytest.mark.parametrize("layout", ["outofplace", "both"])
def test_out_of_place_exports_verify_on_import(tmp_path, layout):
    """Every exportable library schedule on pcie_2x4 (8 ranks), out of place: read back, the
    out-of-place layout (and, for `both`, the in-place one too) computes the collective."""
    group, grid = MACHINES["pcie_2x4"]
    machine = SCHEDULES / "machines" / "pcie_2x4.sched"
    text = f'import "{machine}"\n' + _imports() + "param V = 64 MiB\n"
    session = schedc.load(write(tmp_path, "suite.sched", text + _suite(group, grid, True)))
    with tempfile.TemporaryDirectory() as directory:
        for name, xml, refusal in _exports(session, NCCL, layout, 2):
            assert xml is not None, refusal
            attrs = '" inplace="1" outofplace="1"' if layout == "both" else \
                '" inplace="0" outofplace="1"'
            assert attrs in xml
            back = schedc.load(write(Path(directory), f"{name}.xml", xml), ["V=64MiB"],
                               machine=machine)  # (the low-level writer sets no maxBytes)
            verdicts = schedc.verify(back)
            assert len(verdicts) == (2 if layout == "both" else 1)
            assert all(v.ok for v in verdicts), name

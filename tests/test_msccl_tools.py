"""What msccl-tools writes, against what msccl-tools itself says of it: its custom
`alltonext` collectives, the examples whose own check fails, and microsoft/msccl's `ra` step.

The fixtures are msccl-tools' own output (tests/fixtures/msccl-tools/README.md: MIT, commit
030a750fc56e03fb863ffe48268672d84d4cdc7b).
"""

from __future__ import annotations

import re
from fractions import Fraction

import pytest
from conftest import ROOT, expr, flat_machine, write

import schedc
from schedc.analysis.bound.bounds import must_cross
from schedc.model.ir import linear_value

TOOLS = ROOT / "tests" / "fixtures" / "msccl-tools"
FORWARD = TOOLS / "alltonext_forward_2_1.xml"
BACKWARD = TOOLS / "alltonext_backward_2_1.xml"


# ---- msccl-tools' custom alltonext collectives ------------------------------------------------

def test_alltonext_forward_is_schedc_s_alltonext_and_takes_its_time_by_hand(tmp_path):
    # alltonext_forward.py 2 1: 16 ranks, 2 nodes of 8; rank r's 8 chunks go to rank r + 1.
    # Ranks 0-6 and 8-14 send their whole V to r + 1 (round 1). Rank 7, across the nodes,
    # scatters its 8 chunks: chunk c to rank c (c < 7) and chunk 7 to rank 15 (round 1), they
    # send it to 8 + c (c = 1..6), chunk 0 from rank 0 and chunk 7 from rank 15 straight to
    # rank 8 (round 2), and ranks 9-14 pass their chunk on to 8 (round 3). On one switch, ports
    # of bandwidth B: round 1's busiest port takes V + V/8 (rank 1-6's inbound), round 2's
    # 2·V/8 (into 8), round 3's 6·V/8 (into 8): 3α + (9 + 2 + 6)·V/(8B).
    machine = write(tmp_path, "m.sched", flat_machine(16))
    session = schedc.load(FORWARD, machine=machine)
    (name,) = session.selected()
    coll = session.program.result(name).collective
    assert coll.kind == "alltonext"
    (verdict,) = schedc.verify(session)
    assert verdict.ok, verdict.failure
    assert schedc.time(session, name).cost.formula == expr(session.program,
                                                           "3*alpha + 17*V/(8*B)")


def test_alltonext_backward_is_alltoprev_and_the_mirror_image(tmp_path):
    # alltonext_backward.py 2 1: rank r's chunks go to r - 1; rank 8 scatters across the nodes
    # (chunk c via 8 + c and c to 7, chunk 0 straight to 0, chunk 7 via 15): the same three
    # rounds mirrored, 3α + 17·V/(8B).
    machine = write(tmp_path, "m.sched", flat_machine(16))
    session = schedc.load(BACKWARD, machine=machine)
    (name,) = session.selected()
    assert session.program.result(name).collective.kind == "alltoprev"
    assert schedc.verify(session)[0].ok
    assert schedc.time(session, name).cost.formula == expr(session.program,
                                                           "3*alpha + 17*V/(8*B)")


def test_the_postcondition_is_the_one_the_name_says(run, tmp_path):
    # The forward file renamed alltonext-backwards must fail: its data goes the other way.
    text = FORWARD.read_text().replace('name="alltonext-forward"', 'name="alltonext-backwards"')
    code, out, err = run("verify", write(tmp_path, "renamed.xml", text))
    assert code == 1
    assert "alltonext_backwards: alltoprev over 16 ranks: FAILS" in out
    # gpu[0] must end with gpu[1]'s input; the forward program never sends it anything.
    assert "gpu[0] ends with the wrong" in out


def test_a_wrong_alltonext_chunk_is_caught(run, tmp_path):
    # Rank 1 sends its input to rank 2 from offset 1 instead of 0 (cnt 7 of 8): o_2[0] is
    # never written.
    text = FORWARD.read_text()
    line = ('<step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="8" '
            'depid="-1" deps="-1" hasdep="0"/>')
    gpu1 = text.index('<gpu id="1"')
    at = text.index(line, gpu1)
    wrong = line.replace('srcoff="0"', 'srcoff="1"').replace('cnt="8"', 'cnt="7"')
    text = text[:at] + wrong + text[at + len(line):]
    gpu2 = text.index('<gpu id="2"')
    receive = ('<step s="0" type="r" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="8" '
               'depid="-1" deps="-1" hasdep="0"/>')
    at = text.index(receive, gpu2)
    text = text[:at] + receive.replace('cnt="8"', 'cnt="7"') + text[at + len(receive):]
    code, out, _ = run("verify", write(tmp_path, "wrong.xml", text))
    assert code == 1
    assert "FAILS" in out and "gpu[2] ends with the wrong" in out


def test_alltonext_and_alltoprev_are_collectives_of_the_language(run, tmp_path):
    machine = write(tmp_path, "m.sched", flat_machine(8))
    path = write(tmp_path, "next.sched", f'import "{machine}"\n'
                 "alltonext V over ranks\n"
                 "schedule shift { round { for j in 0..6: copy all from ranks[j] to ranks[j + 1] } }\n"
                 "schedule back { round { for j in 0..6: copy all from ranks[j + 1] to ranks[j] } }\n"
                 "alltoprev V over ranks\n"
                 "schedule prev { round { for j in 0..6: copy all from ranks[j + 1] to ranks[j] } }\n")
    code, out, _ = run("verify", path)
    assert code == 1
    assert "shift: alltonext over 8 ranks: verified (1 round, 7 transfers" in out
    assert "back: alltonext over 8 ranks: FAILS" in out
    assert "prev: alltoprev over 8 ranks: verified (1 round, 7 transfers" in out


@pytest.mark.parametrize("kind, side, out, back", [
    # rank j's V must reach j + 1 (alltonext) or j - 1 (alltoprev): V crosses for each rank
    # whose neighbour is on the other side, counted by hand.
    ("alltonext", {0, 1, 2, 3}, 1, 0),  # 3 → 4 out
    ("alltonext", {4, 5, 6, 7}, 0, 1),
    ("alltonext", {0, 2, 4, 6}, 4, 3),  # 0→1, 2→3, 4→5, 6→7 out; 1→2, 3→4, 5→6 in
    ("alltonext", {7}, 0, 1),           # the last rank sends nothing
    ("alltoprev", {0, 1, 2, 3}, 0, 1),  # 4 → 3 in
    ("alltoprev", {0}, 0, 1),           # the first rank sends nothing
])
def test_what_must_cross_a_cut_depends_on_which_ranks_are_on_it(tmp_path, kind, side, out, back):
    machine = write(tmp_path, "m.sched", flat_machine(8))
    path = write(tmp_path, "c.sched", f'import "{machine}"\n{kind} V over ranks\n'
                 "schedule s { round { copy all from ranks[0] to ranks[1] } }\n")
    session = schedc.load(path)
    coll = session.program.result("s").collective
    forward, backward = must_cross(coll, frozenset(coll.ranks[j] for j in side))
    nominal = session.program.nominal
    value = lambda b: linear_value(b, nominal) if b else 0  # noqa: E731
    assert (value(forward), value(backward)) == (out * Fraction(2**20), back * Fraction(2**20))


# ---- the examples msccl-tools' own check rejects ----------------------------------------------

@pytest.mark.parametrize("name", sorted(p.name for p in (TOOLS / "check-fails").glob("*.xml")))
def test_what_msccl_tools_own_check_rejects_fails_verification(name):
    # README.md beside the fixtures: msccl-tools' Check() returns False on each (the pipelines'
    # with its commented-out call re-enabled). Each is an all-reduce in name whose ranks end
    # without every rank's contribution.
    session = schedc.load(TOOLS / "check-fails" / name)
    (verdict,) = schedc.verify(session)
    assert not verdict.ok
    assert verdict.failure is not None


def test_a_pipeline_example_never_reduces_its_second_half(run):
    # pipeline_a100_ring.py 4 2 1: AllReduce(2*4, ...) over 8 ranks; ranks 0-3 reduce among
    # themselves and hand the sums to ranks 4-7, whose own inputs are never reduced. The first
    # wrong chunk is the one msccl-tools' Check() names first when re-enabled: "Rank 0 chunk 0
    # is incorrect should be ReduceChunk index 0 from all ranks, given Chunk(origin_rank=0,
    # origin_index=0, ...)": rank 0's own input alone, never written.
    code, out, _ = run("verify", TOOLS / "check-fails" / "pipeline_a100_ring_4_2_1.xml")
    assert code == 1
    assert out.startswith("allreduce_ring_2channelsperring: allreduce over 8 ranks: FAILS\n"
                          "  gpu[0] ends with the wrong i[0] of the buffer\n"
                          "    holds        1 contribution: gpu[0]\n")
    assert "never written: it still holds what it held at the start" in out


# ---- microsoft/msccl's `ra` step --------------------------------------------------------------

PAIR = (ROOT / "schedules" / "examples" / "pair_allreduce.xml").read_text()
STEP = ('      <step s="{s}" type="{type}" srcbuf="{src}" srcoff="{srcoff}" dstbuf="{dst}" '
        'dstoff="{dstoff}" cnt="1" depid="{depid}" deps="{deps}" hasdep="{hasdep}"/>\n')
# gpu 1's last step: it receives the reduced i[0] that gpu 0 sends back.
LAST = ('      <step s="2" type="r" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" '
        'depid="-1" deps="-1" hasdep="0"/>\n')


def step(s, type, src="i", srcoff=0, dst="i", dstoff=0, depid=-1, deps=-1, hasdep=0):
    return STEP.format(s=s, type=type, src=src, srcoff=srcoff, dst=dst, dstoff=dstoff,
                       depid=depid, deps=deps, hasdep=hasdep)


def pair(tmp_path, last_steps: str, scratch: int = 0):
    """The hand-made pair all-reduce with gpu 1's last step replaced."""
    assert PAIR.count(LAST) == 1
    text = PAIR.replace(LAST, last_steps)
    text = text.replace('<gpu id="1" i_chunks="2" o_chunks="0" s_chunks="0">',
                        f'<gpu id="1" i_chunks="2" o_chunks="0" s_chunks="{scratch}">')
    return write(tmp_path, "pair.xml", text)


def test_ra_ends_its_thread_block_as_microsoft_msccls_kernel_does(run, tmp_path):
    # microsoft/msccl at b23e9cd5dd63: the parser takes "ra" as MSCCL_RES_ADD (topo.cc:1021-1024)
    # and its kernel tries SEND, RECV, REDUCE, RECV_COPY_SEND, RECV_REDUCE_SEND,
    # RECV_REDUCE_COPY_SEND, RECV_REDUCE_COPY, LOCAL_COPY and then `else return;`
    # (msccl_interpreter.h:151-196): the thread block stops at the ra. gpu 1 receives the
    # reduced half into scratch and copies it home; an `ra` before the copy stops it.
    home = step(2, "r", dst="s", dstoff=0) + step(3, "cpy", src="s", srcoff=0)
    code, out, err = run("verify", pair(tmp_path, home, scratch=1))
    assert code == 0 and "pair: allreduce over 2 ranks: verified" in out, err
    stopped = step(2, "r", dst="s", dstoff=0) + step(3, "ra", src="s", dstoff=1) + \
        step(4, "cpy", src="s", srcoff=0)
    code, out, err = run("verify", pair(tmp_path, stopped, scratch=1))
    assert code == 1
    assert "pair: allreduce over 2 ranks: FAILS\n  gpu[1] ends with the wrong i[0]" in out
    # The copy home never ran: i[0] still holds gpu 1's own half only.
    assert "holds        1 contribution: gpu[1]" in out
    assert "never written: it still holds what it held at the start" in out
    assert ("pair.xml:15:7: warning: gpu 1, tb 0, step 3: 'ra' ends its thread block: "
            "microsoft/msccl's kernel has no branch for MSCCL_RES_ADD and the thread block "
            "returns there (src/collectives/device/msccl_interpreter.h:195-196 at b23e9cd5dd63); "
            "read so: this step and the 1 after it do not run") in err
    # msccl-executor-nccl knows no "ra" (msccl_parser.cc:541 "type of transfer is not
    # supported"): a warning says so.
    assert 'msccl-executor-nccl would refuse this file: gpu 1, tb 0, step 3: step type "ra" ' \
           "is not one it knows (msccl_parser.cc:541" in err


def test_ra_as_the_last_step_changes_nothing_for_a_one_slice_buffer(run, tmp_path):
    # The kernel's `return` at the ra leaves its loop over slices of the buffer too
    # (msccl_interpreter.h:105, :195-196 at b23e9cd): the reading holds for a buffer whose
    # chunks fit one slice, and the warning says so.
    code, out, err = run("verify", pair(tmp_path, LAST + step(3, "ra", dstoff=1)))
    assert code == 0, err
    assert out == "pair: allreduce over 2 ranks: verified (2 rounds, 4 transfers; exact multisets)\n"
    assert "this step does not run" in err
    assert "only a buffer whose chunks fit one slice" in err


def test_what_waits_for_a_step_after_an_ra_is_an_error(run, tmp_path):
    # A receive after the ra never runs: what gpu 0 sends it is never taken in.
    code, out, err = run("verify", pair(tmp_path, step(2, "ra", dstoff=1) + step(3, "r")))
    assert (code, out) == (2, "")
    assert ("pair.xml:15:7: error: gpu 1, tb 0, step 3: this 'r' never runs: its thread block "
            "ends at its 'ra' (step 2: microsoft/msccl's kernel has no branch for MSCCL_RES_ADD") \
        in err
    assert "so what gpu 0 sends it is never taken in" in err


def test_a_dependency_on_a_step_after_an_ra_is_an_error(run, tmp_path):
    # gpu 1 gets a second thread block (no peers) whose copy waits for tb 0's step 3, which
    # the ra at step 2 stops: the executor would poll that flag forever.
    tb0 = LAST + step(3, "ra", dstoff=1) + step(4, "nop", hasdep=1)
    text = PAIR.replace(LAST, tb0).replace(
        "    </tb>\n  </gpu>\n</algo>",
        '    </tb>\n    <tb id="1" send="-1" recv="-1" chan="0">\n'
        + step(0, "cpy", srcoff=0, dstoff=1, depid=0, deps=4) + "    </tb>\n  </gpu>\n</algo>")
    code, out, err = run("verify", write(tmp_path, "dep.xml", text))
    assert (code, out) == (2, "")
    assert ("error: gpu 1, tb 1, step 0: waits for tb 0, step 4, which never runs: that thread "
            "block ends at its 'ra' (step 3:") in err


def test_the_executors_differ_on_ra(run, tmp_path):
    path = pair(tmp_path, LAST + step(3, "ra", dstoff=1))
    code, out, _ = run("verify", path, "--executor", "msccl")
    assert code == 0 and "msccl would load it" in out
    code, out, err = run("verify", path, "--executor", "msccl-executor-nccl")
    assert code == 2
    assert 'step type "ra" is not one it knows' in err


def test_the_fixtures_readme_lists_every_file():
    # Each fixture's provenance (example and arguments) is in README.md beside it.
    readme = (TOOLS / "README.md").read_text()
    listed = set(re.findall(r"^\| ([\w.-]+\.xml) \|", readme, re.M))
    present = {p.name for p in TOOLS.rglob("*.xml")}
    assert listed == present


def test_reading_leaves_the_garbage_collector_as_it_was(tmp_path):
    # Cyclic collection is off while a file is read (schedc/msccl/program.py), and back on
    # after it, whether the file reads or not.
    import gc
    assert gc.isenabled()
    schedc.load(FORWARD)
    assert gc.isenabled()
    with pytest.raises(schedc.SchedcError):
        schedc.load(TOOLS / "unknown-custom" / "simple_custom_collective_1.xml")
    assert gc.isenabled()
    gc.disable()
    try:
        schedc.load(FORWARD)
        assert not gc.isenabled()
    finally:
        gc.enable()

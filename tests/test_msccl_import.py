"""MSCCL XML in: the real algorithms of Azure/msccl-scheduler, and hand-made ones that fail."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
import sympy
from conftest import ROOT, SCHEDULES, SHARED_DATA, expr, flat_machine, needs_shared_data, write

import schedc

MSCCL = SHARED_DATA / "msccl"
MACHINES = {"ndv4": SCHEDULES / "machines" / "ndv4.sched",
            "ncv4": SCHEDULES / "machines" / "ncv4.sched"}
SENDING = {"s", "rcs", "rrs", "rrcs"}


def real_files():
    return sorted(needs_shared_data("msccl").glob("*.xml"))


def machine_for(path):
    return MACHINES[path.name.split("_")[0]]


def test_every_real_file_verifies_and_has_a_time_on_its_machine():
    for path in real_files():
        session = schedc.load(path, machine=machine_for(path))
        (name,) = session.selected()
        (verdict,) = schedc.verify(session)
        assert verdict.ok, (path.name, verdict.failure)
        timing = schedc.time(session, name)
        assert timing.time > 0
        # The bytes moved, counted from the XML directly: every send-type step moves cnt
        # chunks of V / nchunksperloop.
        root = ET.parse(path).getroot()
        chunks = sum(int(s.get("cnt")) for s in root.iter("step") if s.get("type") in SENDING)
        V = session.program.params["V"].symbol
        logical = sympy.Rational(chunks, int(root.get("nchunksperloop"))) * V
        assert sympy.simplify(schedc.time(session, name).cost.bytes_logical[0][1] * V
                              - logical) == 0


def test_the_ndv4_ring_takes_the_textbook_ring_time():
    path = needs_shared_data("msccl", "ndv4_r48ll.xml")
    session = schedc.load(path, machine=MACHINES["ndv4"])
    timing = schedc.time(session, "allreduce_ring_4channelsperring")
    # A ring all-reduce over p = 8 GPUs: 2(p-1) = 14 rounds, each moving V/p out of every GPU
    # over its NVLink (4 rings of 8 chunks each, 64 chunks in all: 8 chunks = V/8 per round).
    assert timing.cost.formula == expr(session.program, "14*alpha + 14*V/(8*B_L)")


def test_ranks_map_the_xml_gpus_onto_other_devices(run):
    path = needs_shared_data("msccl", "ndv4_r48ll.xml")
    # Eight GPUs that alternate between two hosts: every ring hop crosses the NICs.
    code, out, err = run("time", path, "--machine", SCHEDULES / "machines" / "nvlink_2x8.sched",
                         "--ranks", "[node[i % 2].g[i // 2] for i in 0..7]")
    assert code == 0, err
    assert "14 (14 cross-host)" in out
    assert "14*alpha + 7*V/(4*B_N)" in out


# ---- hand-made algorithms ----------------------------------------------------------------------

# A 2-GPU all-reduce, in place, two chunks: each GPU sends the other's half, reduces its own
# half as it arrives and sends it back (rrcs), then receives the other reduced half.
TWO_GPUS = """<algo name="pair" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" coll="allreduce" inplace="1" outofplace="0" minBytes="0" maxBytes="1048576">
  <gpu id="0" i_chunks="2" o_chunks="0" s_chunks="0">
    <tb id="0" send="1" recv="1" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="rrcs" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="2" type="r" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="2" o_chunks="0" s_chunks="0">
    <tb id="0" send="0" recv="0" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="rrcs" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="2" type="r" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
</algo>
"""


def test_a_hand_made_allreduce_verifies_without_a_machine(run, tmp_path):
    path = write(tmp_path, "pair.xml", TWO_GPUS)
    code, out, err = run("verify", path)
    assert (code, err) == (0, "")
    # Round 1: both halves cross; round 2: the reduced halves come back.
    assert "pair: allreduce over 2 ranks: verified (2 rounds, 4 transfers" in out


def test_a_copy_where_a_reduction_belongs_is_pinned_to_its_step(run, tmp_path):
    # gpu 0 copies gpu 1's half over its own instead of reducing it: it ends with gpu 1's
    # data only, and so does gpu 1, which receives that half back.
    broken = TWO_GPUS.replace('<step s="1" type="rrcs" srcbuf="i" srcoff="0"',
                              '<step s="1" type="rcs" srcbuf="i" srcoff="0"', 1)
    path = write(tmp_path, "pair.xml", broken)
    code, out, _ = run("verify", path)
    assert code == 1
    assert "gpu[0] ends with the wrong i[0] of the buffer" in out
    assert "holds        1 contribution: gpu[1]\n" in out
    assert "missing      gpu[0]\n" in out
    # Step 1 starts after step 0's send (round 1), so it takes gpu 1's half in from the
    # connection's buffer (its temporary t[0]) after round 1.
    assert (f"round 1: copy t[0] from gpu[0] to gpu[0] into i[0]   at {path}:5:7 "
            "(gpu 0, tb 0, step 1 'rcs' takes in what gpu 1, tb 0, step 0 's' sent)") in out


def _error(run, tmp_path, text: str) -> str:
    path = write(tmp_path, "bad.xml", text)
    code, out, err = run("verify", path)
    assert (code, out) == (2, ""), err
    assert "Traceback" not in err
    return err.replace(str(path), "bad.xml")


def test_malformed_xml_names_the_line(run, tmp_path):
    err = _error(run, tmp_path, TWO_GPUS.replace("</tb>\n  </gpu>\n  <gpu", "\n  </gpu>\n  <gpu", 1))
    assert err.startswith("bad.xml:8:5: error: malformed XML: mismatched tag")


def test_a_send_without_its_receive(run, tmp_path):
    lines = TWO_GPUS.splitlines()
    del lines[12]  # gpu 1's last receive
    err = _error(run, tmp_path, "\n".join(lines))
    assert err.startswith("bad.xml:5:7: error: gpu 0, tb 0, step 1: 'rrcs' has no matching "
                          "receive on gpu 1 on channel 0 (it is the 2nd there; gpu 1 has 1)")


def test_a_count_past_the_buffer(run, tmp_path):
    err = _error(run, tmp_path, TWO_GPUS.replace('srcoff="1" dstbuf="i" dstoff="1" cnt="1"',
                                                 'srcoff="1" dstbuf="i" dstoff="1" cnt="2"', 1))
    assert err.startswith("bad.xml:4:7: error: gpu 0, tb 0, step 0: srcoff=1 cnt=2 runs past "
                          "the input buffer (i_chunks=\"2\")")


def test_an_unknown_step_type(run, tmp_path):
    err = _error(run, tmp_path, TWO_GPUS.replace('type="r" ', 'type="recv" ', 1))
    assert err.startswith("bad.xml:6:7: error: gpu 0, tb 0, step 2: unknown step type \"recv\"")


def test_a_missing_attribute_both_executors_require(run, tmp_path):
    # Both parsers read `inplace` with a required getter (msccl_parser.cc:384, topo.cc:848).
    err = _error(run, tmp_path, TWO_GPUS.replace(' inplace="1"', ""))
    assert err.startswith("bad.xml:1:1: error: algo: <algo> has no 'inplace' attribute")


def test_a_dependency_cycle(run, tmp_path):
    # gpu 0's first step waits for gpu 1's last; gpu 1's last waits for gpu 0's second step.
    text = TWO_GPUS.replace('<step s="0" type="s" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" '
                            'cnt="1" depid="-1" deps="-1"',
                            '<step s="0" type="s" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" '
                            'cnt="1" depid="1" deps="0"', 1)
    text = text.replace('<tb id="0" send="1" recv="1" chan="0">',
                        '<tb id="0" send="1" recv="1" chan="0">', 1)
    text = text.replace("    </tb>\n  </gpu>\n  <gpu id=\"1\"",
                        "    </tb>\n    <tb id=\"1\" send=\"-1\" recv=\"-1\" chan=\"0\">\n"
                        "      <step s=\"0\" type=\"nop\" srcbuf=\"i\" srcoff=\"-1\" dstbuf=\"i\" "
                        "dstoff=\"-1\" cnt=\"0\" depid=\"0\" deps=\"2\" hasdep=\"1\"/>\n"
                        "    </tb>\n  </gpu>\n  <gpu id=\"1\"", 1)
    err = _error(run, tmp_path, text)
    assert re.match(r"bad\.xml:\d+:7: error: gpu 0, tb \d, step \d: a dependency cycle: ", err), err


def test_time_needs_a_machine(run, tmp_path):
    path = write(tmp_path, "pair.xml", TWO_GPUS)
    code, out, err = run("time", path)
    assert code == 2 and out == ""
    assert "name one with --machine M.sched" in err


def test_the_pair_on_a_switch_takes_two_rounds_of_half_the_buffer(run, tmp_path):
    path = write(tmp_path, "pair.xml", TWO_GPUS)
    machine = write(tmp_path, "m.sched", "param alpha = 1 us\nparam B = 10 GB/s\n"
                    "topology {\n  gpu g[2]\n  switch sw\n  link g[i] <-> sw bw B for i in 0..1\n}\n"
                    "let ranks = [g[0], g[1]]\n")
    session = schedc.load(path, ["V=1MB"], machine=machine)
    timing = schedc.time(session, "pair")
    # Each round moves one chunk (V/2) each way over each port: 2 (alpha + V/(2B)).
    assert timing.cost.formula == expr(session.program, "2*alpha + V/B")
    assert float(timing.time) == pytest.approx(2e-6 + 1e6 / 10e9)


def test_a_buffer_too_large_to_verify_is_refused_before_the_work(run, tmp_path):
    text = TWO_GPUS.replace('nchunksperloop="2"', 'nchunksperloop="200000000"')
    err = _error(run, tmp_path, text)
    # The buffer, and one chunk of temporary for each of a gpu's two receiving steps.
    assert err.startswith("bad.xml:1:1: error: algo: 2 gpus × 200,000,002 chunks of buffer are "
                          "more than the 67,108,864 that verification handles")


def test_both_layouts_are_checked_when_both_are_allowed(run, tmp_path):
    # The pair works on `i` only: right in place, but out of place its output is never
    # written, and the executor may run it either way.
    path = write(tmp_path, "pair.xml", TWO_GPUS.replace('outofplace="0"', 'outofplace="1"')
                 .replace('o_chunks="0"', 'o_chunks="2"'))
    code, out, _ = run("verify", path)
    assert code == 1
    assert "pair: allreduce over 2 ranks: FAILS\n  gpu[0] ends with the wrong o[0] .. o[1] of the buffer" \
        in out
    assert "  never written: it still holds what it held at the start" in out
    assert "pair_inplace: allreduce over 2 ranks: verified (2 rounds, 4 transfers" in out


# ---- the dialects real tools write -------------------------------------------------------------

TOOLS = ROOT / "tests" / "fixtures" / "msccl-tools"
ASTRA = ROOT / "tests" / "fixtures" / "astra-sim" / "custom_allreduce.xml"


def flat(n: int, tmp_path):
    return write(tmp_path, "m.sched", flat_machine(n))


@pytest.mark.parametrize("name", sorted(p.name for p in TOOLS.glob("*.xml")))
def test_every_msccl_tools_example_imports_verifies_and_times(run, tmp_path, name):
    path = TOOLS / name
    root = ET.parse(path).getroot()
    # msccl-tools writes `inplace` only (msccl/language/ir.py:329).
    assert not {"outofplace", "minBytes", "maxBytes"} & set(root.attrib)
    machine = flat(int(root.get("ngpus")), tmp_path)
    code, out, err = run("time", path, "--machine", machine, "--set", "V=64MiB")
    assert code == 0, err
    assert "time " in out
    inplace = root.get("inplace") == "1"
    # One warning names every missing attribute and microsoft/msccl's default for each
    # (src/graph/topo.cc at b23e9cd5dd63: 847-853 and tuning.cc:368 select on `inplace`
    # alone; 796 minBytes = 0; 805 maxBytes = 1 << 27).
    assert err.count("warning: <algo> has no") == 1
    assert ("<algo> has no 'outofplace', 'minBytes', 'maxBytes' attributes (msccl-tools does "
            "not write them); read as microsoft/msccl does") in err
    assert f"outofplace={int(not inplace)} (it reads only `inplace`" in err
    assert "minBytes=0 (topo.cc:796)" in err and "maxBytes=134217728 = 128 MiB (topo.cc:805" in err
    assert "msccl-executor-nccl requires every one (msccl_parser.cc:376-389)" in err
    session = schedc.load(path, machine=machine)
    (verdict,) = schedc.verify(session)
    assert verdict.ok, verdict.failure
    assert (session.program.algo.min_bytes, session.program.algo.max_bytes) == (0, 1 << 27)


def test_astra_sims_example_imports_verifies_and_takes_the_ring_time(tmp_path):
    # ASTRA-sim's example: a ring all-reduce over 8 NPUs, LL128, no outofplace/minBytes/maxBytes.
    machine = write(tmp_path, "m.sched", "param alpha = 1 us\nparam B = 10 GB/s\n"
                    "topology {\n  gpu g[8]\n  switch sw\n  link g[i] <-> sw bw B for i in 0..7\n}\n"
                    "let ranks = [g[i] for i in 0..7]\n")
    session = schedc.load(ASTRA, machine=machine)
    (name,) = session.selected()
    assert schedc.verify(session)[0].ok
    # 2 (p - 1) = 14 rounds of one chunk (V/8) out of every GPU through its port.
    assert schedc.time(session, name).cost.formula == expr(session.program, "14*alpha + 7*V/(4*B)")


def test_a_custom_collective_schedc_does_not_know_is_refused_by_name(run):
    # msccl-tools' simple/custom_collective.py: a collective of its own named allgather_ring.
    path = TOOLS / "unknown-custom" / "simple_custom_collective_1.xml"
    code, out, err = run("verify", path)
    assert (code, out) == (2, "")
    assert f"{path}:1:1: error: algo: coll \"custom\" is a collective defined by the program " \
           "that wrote the file, and the file does not say what it computes; schedc knows " \
           "msccl-tools' 'alltonext-forward', 'alltonext-backwards' (by the <algo> name), not " \
           "'allgather_ring'" in err


def test_max_bytes_zero_is_no_limit(run, tmp_path):
    # msccl-executor-nccl: "0 for no limit" (msccl_struct.h:105; msccl_lifecycle.cc:335 selects
    # when maxBytes == 0 || nBytes <= maxBytes). microsoft/msccl refuses minBytes > maxBytes
    # (topo.cc:807): a warning says so.
    path = write(tmp_path, "pair.xml", TWO_GPUS.replace('minBytes="0" maxBytes="1048576"',
                                                        'minBytes="1024" maxBytes="0"'))
    code, out, err = run("verify", path, "--set", "V=1MiB")  # (no limit: no size, below)
    assert code == 0, err
    assert "verified" in out
    assert "warning: msccl would refuse this file: minBytes=1024 is more than maxBytes=0 " \
           "(topo.cc:807" in err
    assert "msccl-executor-nccl would" not in err


def test_an_nccl_topology_file_is_named_as_such(run, tmp_path):
    path = write(tmp_path, "topo.xml", '<system version="1">\n  <cpu numaid="0">\n'
                 '    <pci busid="0000:17:00.0" class="0x030200"/>\n  </cpu>\n</system>\n')
    code, out, err = run("verify", path)
    assert (code, out) == (2, "")
    assert err.startswith(f"{path}:1:1: error: this is an NCCL topology file (root element "
                          "<system>, as NCCL_TOPO_FILE and NCCL_TOPO_DUMP_FILE have it), not an "
                          "MSCCL algorithm: use `schedc machine import`")
    other = write(tmp_path, "other.xml", "<project><name>x</name></project>\n")
    code, _, err = run("verify", other)
    assert code == 2 and "the root element is <project>, not <algo>: not an MSCCL algorithm" in err


def test_entity_declarations_are_refused(run, tmp_path):
    path = write(tmp_path, "e.xml", '<!DOCTYPE algo [<!ENTITY x "1">]>\n' + TWO_GPUS)
    code, out, err = run("verify", path)
    assert (code, out) == (2, "")
    assert "a document type declaration (<!DOCTYPE ...>): schedc reads XML without entities" in err
    external = write(tmp_path, "x.xml", '<!DOCTYPE algo SYSTEM "http://example.com/a.dtd">\n'
                     + TWO_GPUS.replace('name="pair"', 'name="&ext;"'))
    code, _, err = run("verify", external)
    assert code == 2 and f"{external}:1:" in err and "error: a document type declaration" in err


def test_verify_executor_lists_every_violation_with_its_place(run, tmp_path):
    # Three rules broken at once for msccl-executor-nccl: the declaration line its tokenizer
    # cannot read (cc:153), no outofplace (msccl_parser.cc:388), a cnt of 72 (cc:577: cnt <
    # MSCCL_MAX_COUNT = 72); each at its line and column.
    text = '<?xml version="1.0"?>\n' + TWO_GPUS.replace(' outofplace="0"', "").replace(
        'nchunksperloop="2"', 'nchunksperloop="144"').replace('i_chunks="2"', 'i_chunks="144"')
    text = text.replace('<step s="0" type="s" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1"',
                        '<step s="0" type="s" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="72"', 1)
    path = write(tmp_path, "v.xml", text)
    code, out, err = run("verify", path, "--executor", "msccl-executor-nccl")
    assert (code, out) == (2, "")
    lines = [line for line in err.splitlines() if ": error: " in line]
    assert lines == [
        f"{path}:1:20: error: expected '>', got '?' (an `<?xml ...?>` declaration: the tokenizer "
        "does not know it) (msccl-executor-nccl refuses it: msccl_parser.cc:153)",
        f"{path}:2:1: error: algo: <algo> has no 'outofplace' attribute (msccl-executor-nccl "
        "refuses it: msccl_parser.cc:388)",
        f"{path}:5:7: error: gpu 0, tb 0, step 0: cnt=72; a step moves fewer than 72 chunks "
        "(MSCCL_MAX_COUNT) (msccl-executor-nccl refuses it: msccl_parser.cc:577)"]
    assert err.rstrip().endswith("msccl-executor-nccl: 3 problems")
    code, out, err = run("verify", TOOLS / "allgather_ring_8_4_1.xml", "--executor", "msccl")
    assert (code, err) == (0, "")
    # Its 8 chunks over 4 channels: 2 a thread block, each passing a gpu once (s, rcs or r).
    assert out.endswith("allgather_ring_8_4_1.xml: msccl would load it (8 gpus, at most 4 "
                        "thread blocks and 2 steps in one thread block)\n")


def test_verify_executor_knows_each_executors_step_limit(run):
    # ndv4's ring (Azure/msccl-scheduler) has 4 steps in each thread block: within both
    # executors' limits, past a build with MSCCL_MAX_NUM_STEPS=3 (cc:485: s < the limit).
    path = needs_shared_data("msccl", "ndv4_r48ll.xml")
    code, out, err = run("verify", path, "--executor", "msccl-executor-nccl", "--max-steps", "3")
    assert (code, out) == (2, "")
    assert ": error: gpu 0, tb 0, step 3: step number 3; at most 3 steps per thread block " \
           "(msccl-executor-nccl refuses it: msccl_parser.cc:485)" in err
    for executor in ("msccl", "msccl-executor-nccl"):
        code, out, err = run("verify", path, "--executor", executor)
        assert code == 0, err
        assert "would load it (8 gpus, at most 32 thread blocks and 4 steps" in out

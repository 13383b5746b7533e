"""MSCCL XML in: the real algorithms of Azure/msccl-scheduler, and hand-made ones that fail."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
import sympy
from conftest import SCHEDULES, SHARED_DATA, expr, needs_shared_data, write

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

"""One test per cause of the campaign of issue 36 (../shared/repros/turn4, r01-r22 and the
fuzz_c* folders), each input re-created here: no traceback or internal error (exit 70), work
bounded before it starts (or within its limit, with a message naming the option), linear
readers, short excerpts, no line of a file that is not schedc's. r15 (names injected into
generated source) is tests/test_quote.py."""

from __future__ import annotations

import gc
import json
import os
import re
import time
import weakref
from pathlib import Path

import pytest
from conftest import ROOT, rail_machine, write
from repro_inputs import gather_round, smi

from schedc.limits import MAX_FAILURE_WORK, MAX_ROUTES

CALIBRATION = ROOT / "schedules" / "calibration"
DGX = CALIBRATION / "nvidia_dgxc_1node_8xH100_nvlink_allreduce.sched"
PCIE = ROOT / "schedules" / "seed" / "pcie_2x4.sched"
TUNER = ROOT / "schedules" / "examples" / "tuner_flat_8.sched"
PAIR_XML = ROOT / "schedules" / "examples" / "pair_allreduce.xml"
FLAT = ROOT / "schedules" / "machines" / "flat.sched"
TOPO = ROOT / "tests" / "fixtures" / "topo"


def located(err: str) -> tuple[str, str, str]:
    """(the first line, the excerpt, the caret line) of a diagnostic; asserts its shape."""
    first, excerpt, caret = err.splitlines()[:3]
    assert re.match(r".+:\d+:\d+: error: ", first), err[:500]
    assert caret.strip().startswith("^"), err[:500]
    return first, excerpt, caret


def refused(run, *args) -> str:
    code, out, err = run(*args)
    assert code == 2, (code, out[:300], err[:1000])
    assert "internal error" not in err and "Traceback" not in err
    return err


def timed(run, *args) -> tuple[float, int, str, str]:
    """(CPU seconds, exit code, stdout, stderr) of `schedc args`."""
    start = time.process_time()
    code, out, err = run(*args)
    return time.process_time() - start, code, out, err


# ---- tracebacks and internal errors -----------------------------------------------------------

@pytest.mark.parametrize("command", ["time", "whatif", "eval", "compare", "report"])
def test_r01_a_directory_as_file(run, command):
    err = refused(run, command, ROOT / "schedules")
    assert "schedules is a directory, not a .sched file" in err


@pytest.mark.parametrize("value", ["1e308", "inf", "nan", "-1", "0", "1e7"])
@pytest.mark.parametrize("command", [("check", TUNER), ("solve", PCIE, "time(ring) = 1 ms",
                                                        "--for", "V")])
def test_r02_timeout_is_a_finite_number_of_seconds(run, command, value):
    err = refused(run, *command, "--timeout", value)
    assert f"--timeout {float(value):g}: must be a number of seconds above 0, at most " \
        "1,000,000" in err


def json_log(results: list[str], ngpus: int = 1, one_line: bool = True) -> str:
    """An nccl-tests -J document of 8 ranks (as nccl-tests writes it) with these results."""
    devices = ", ".join('{"rank": %d}' % i for i in range(8))
    return ('{"version": 3, "args": ["./build/all_reduce_perf"], "config": {"nthreads": 1, '
            f'"ngpus": {ngpus}, "devices": [{devices}]}}, "results": ['
            + (", " if one_line else ",\n").join(results) + "]}\n")


def result(size: int, wrong: str = "0", time_us: float = 10.0) -> str:
    figures = (f'{{"time": {time_us}, "alg_bw": 0.0, "bus_bw": 0.0, "nwrong": {wrong}}}')
    return (f'{{"size": {size}, "count": {size // 4}, "type": "float", "redop": "sum", '
            f'"root": -1, "out_of_place": {figures}, "in_place": {figures}}}')


def test_r03_a_401_digit_nwrong(run, tmp_path):
    log = write(tmp_path, "nwrong.json", json_log([result(8), result(16, "1" + "0" * 400)]))
    first, excerpt, caret = located(refused(run, "predict", DGX, "--against", log))
    assert "results[1].out_of_place.nwrong must be a finite number, got 401 digits" in first
    col = int(first.split(":")[2])
    assert log.read_text().index('{"size": 16') + 1 == col  # the result's own position


def test_r21_ngpus_zero_is_ignored_not_a_division(run, tmp_path):
    log = write(tmp_path, "ngpus0.json", json_log([result(8 * 2**k) for k in range(6)], 0))
    code, out, err = run("predict", DGX, "--against", log)
    assert code in (0, 1, 2) and "internal error" not in err and "ZeroDivision" not in err


def test_r04_an_nccl_input_beyond_a_c_float(run):
    err = refused(run, "nccl", PCIE, "--input", "ring.bwIntra=1e308", "--json")
    assert "NCCL holds it in a C float, whose largest value is 3.402823e+38" in err


@pytest.mark.parametrize("value", ["1" + "0" * 400, "3000000000"])
def test_an_nccl_count_beyond_a_c_int(run, value):
    """Found by this round's campaign: math.isfinite overflowed on a 401-digit count."""
    err = refused(run, "nccl", PCIE, "--input", f"nNodes={value}")
    assert "NCCL holds it in a C int, whose largest value is 2,147,483,647" in err


def test_r04_an_overflow_in_ncclS_floats_is_null_in_json_and_warns_nothing(run):
    code, out, err = run("nccl", PCIE, "--input", "ring.bwIntra=3e38", "--input",
                         "ring.nChannels=32", "--json")
    assert code == 0 and err == ""  # (no NumPy RuntimeWarning)
    assert "null" in out and json.loads(out)


def test_r05_scale_of_an_msccl_algorithm(run):
    err = refused(run, "scale", PAIR_XML, "--machine", FLAT, "--ranks", "[g[0],g[1]]",
                  "--in", "p")
    assert "scale recompiles a .sched schedule at each value of p; 'pair' is read from" in err


def _nic_gpu(tmp_path: Path) -> tuple[Path, int]:
    """ndv5 with the second GPU's <pci> renamed <nic> (r20); its line."""
    lines = (TOPO / "ndv5-topo.xml").read_text().splitlines()
    k = next(i for i, line in enumerate(lines) if 'busid="0002:00:00.0"' in line)
    lines[k] = lines[k].replace("<pci ", "<nic ", 1)
    return write(tmp_path, "nic_gpu.xml", "\n".join(lines) + "\n"), k + 1


def test_r20_a_gpu_pci_renamed_nic(run, tmp_path):
    path, line = _nic_gpu(tmp_path)
    first, excerpt, _ = located(refused(run, "machine", "import", path, "--nic-speed",
                                        "200Gbit/s"))
    assert first.startswith(f"{path}:{line}:7: error: ")
    assert "holds a <nic>, which makes it a NIC to NCCL" in first and "<nic " in excerpt


def test_fuzz_c09_nic_orders_of_one_type(run, tmp_path):
    path = write(tmp_path, "c09.xml", """<system version="1">
  <cpu numaid="0" affinity="00000000,x86_64" vendor="AuthenticAMD" familyid="23" modelid="49">
    <pci busid="01.0" class="0x060400" link_speed="16 GT/s" link_width="16">
      <nic busid="0003:0" class="0x030200"/>
    </pci>
    <pci busid="ffff:0" class="0x060400" link_speed="16 GT/s" link_width="16">
      <pci busid="00.0" class="0x030200" link_speed="16 GT/s" link_width="16"/>
      <pci busid="0106:00:00.0" class="0x020700" link_speed="16 GT/s" link_width="16"/>
    </pci>
  </cpu>
</system>
""")
    code, out, err = run("machine", "import", path, "--nic-speed", "200Gbit/s", "--fabric",
                         "single-switch")
    assert code == 0, err


# ---- work bounded before it starts --------------------------------------------------------------

def test_r06_whatif_times_only_the_failures_on_a_route(run, tmp_path):
    """1,600 NICs of 200 hosts: 51 s and 10.6 GB, then refused at the work limit; the one
    transfer's route crosses two of them, so only those are timed (the others leave its
    route, so its time, as it is: tests/test_whatif_incremental.py)."""
    path = write(tmp_path, "m200.sched", rail_machine(200))
    seconds, code, out, err = timed(run, "whatif", path, "--class", "nic", "--no-verify")
    assert code == 0, err
    failed = [line.split()[0] for line in out.splitlines() if line.endswith("no route")]
    assert failed == ["node[0].g[0]<->rail[0]", "node[1].g[0]<->rail[0]"] and seconds < 20


def gather(hosts: int) -> str:
    """rail_machine(hosts) with every GPU sending to its rail's GPU on node[0]."""
    return rail_machine(hosts, gather_round(hosts))


def test_r06_whatif_refused_before_the_first_failure(run, tmp_path):
    path = write(tmp_path, "g200.sched", gather(200))
    seconds, code, _, err = timed(run, "whatif", path, "--class", "nic", "--no-verify")
    assert code == 2 and "whatif --class nic would time 1,600 failures" in err
    assert f"the limit is {MAX_FAILURE_WORK:,} (raise it with --max-failure-work" in err
    assert seconds < 10  # (51 s and 10.6 GB before)


def test_r06_whatif_keeps_one_failed_machine_at_a_time(run, tmp_path, monkeypatch):
    """Failed machines are dropped as they are timed (all 800 were kept: 2.7 GB)."""
    from schedc.session import Session
    made: list[weakref.ref] = []
    alive: list[int] = []
    on = Session.on

    def counted(self, topology, params=None):
        gc.collect()
        alive.append(sum(r() is not None for r in made))
        found = on(self, topology, params)
        made.append(weakref.ref(found))
        return found
    monkeypatch.setattr(Session, "on", counted)
    path = write(tmp_path, "g6.sched", gather(6))
    # What existed before the command is set aside from the collections above (a full
    # collection scans every object of the test worker: 30 s CPU in the suite, 3.6 s alone,
    # 0.2 s with the freeze). The check is no weaker than with full collections: a machine
    # held by a cycle through an older object survives a collection that skips that object,
    # so it counts as alive, never as freed.
    gc.freeze()
    try:
        code, out, err = run("whatif", path, "--class", "nic", "--no-verify")
    finally:
        gc.unfreeze()
    assert code == 0, err
    assert len(made) > 40 and max(alive) <= 1


def test_r06_the_failure_limit_is_an_option(run, tmp_path):
    path = write(tmp_path, "g6.sched", gather(6))
    err = refused(run, "whatif", path, "--class", "nic", "--no-verify",
                  "--max-failure-work", "1000")
    assert "the limit is 1,000" in err


def test_r07_nvidia_smi_import_is_linear_in_the_cells(run, tmp_path):
    path = write(tmp_path, "smi700.txt", smi(700))
    out_path = tmp_path / "m.sched"
    seconds, code, _, err = timed(run, "machine", "import", "--nvidia-smi", path, "--sm", "90",
                                  "--nvlinks", "18", "-o", out_path)
    assert code == 0, err
    assert "gpu g[700] sm 90" in out_path.read_text()
    assert seconds < 5  # (8.5 s before for 700 GPUs, growing as N^2.4; 1,000: 25 s)


def test_campaign_nvidia_smi_direct_nvlinks_named_once(run, tmp_path):
    """The 2026-12-07 21:05 campaign's slow runs (12 of 12): a 400-GPU matrix whose NV cells
    are not all equal has a direct link per GPU pair, 400 · 399 / 2 = 79,800, and the writer
    named each end by sorting every part again (6.8 s of CPU, 45-85 s wall at load 12)."""
    text = smi(400).replace("GPU0\t X \tNV18", "GPU0\t X \tNV12", 1)
    text = text.replace("GPU1\tNV18", "GPU1\tNV12", 1)  # (the matrix stays symmetric)
    out_path = tmp_path / "m.sched"
    seconds, code, _, err = timed(run, "machine", "import", "--nvidia-smi",
                                  write(tmp_path, "smi400.txt", text), "--sm", "90",
                                  "--nvlinks", "18", "-o", out_path)
    assert code == 0, err
    links = [x.split()[1:4] for x in out_path.read_text().splitlines()
             if x.lstrip().startswith("link g[") and "class nvlink" in x]
    assert len(links) == 79_800 and ["g[7]", "<->", "g[123]"] in links
    assert ["g[0]", "<->", "g[1]"] in links and ["g[398]", "<->", "g[399]"] in links
    assert seconds < 5  # (1.1 s here at load 12)


def msccl_steps(steps: int) -> str:
    """One thread block of `steps` nops per gpu of 2 (r08)."""
    out = ['<algo name="big" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" '
           'coll="allreduce" inplace="1" outofplace="0" minBytes="0" maxBytes="0">']
    for g in range(2):
        out += [f'<gpu id="{g}" i_chunks="2" o_chunks="0" s_chunks="0">',
                f'<tb id="0" send="{1 - g}" recv="{1 - g}" chan="0">']
        out += [f'<step s="{s}" type="nop" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" '
                'depid="-1" deps="-1" hasdep="0"/>' for s in range(steps)]
        out += ["</tb>", "</gpu>"]
    return "\n".join([*out, "</algo>"]) + "\n"


def test_r08_executor_rules_of_20000_steps(run, tmp_path):
    path = write(tmp_path, "s20000.xml", msccl_steps(20_000))
    start = time.process_time()
    err = refused(run, "verify", path, "--executor", "msccl")
    assert time.process_time() - start < 20  # (killed at 150 s before)
    first, _, _ = located(err)
    assert "its parse keeps 20004 elements" in first and "the parser holds 4095" in first
    assert len(err.splitlines()) < 300  # (118,000 lines before)
    assert "more of the rule at topo.cc:972, not shown" in err
    assert err.rstrip().endswith("msccl: 39,490 problems")


def test_r09_msccl_nodes_refused_before_building_the_xml(run, tmp_path):
    out = tmp_path / "out.xml"
    seconds, code, _, err = timed(run, "export", "msccl", ROOT / "schedules" / "scale" /
                                  "ring_1024.sched", "-s", "ring", "-o", out)
    assert code == 2 and "gpu 0's part of the XML would have at least" in err and "MAX_NODES" in err
    assert not out.exists() and seconds < 15  # (35-42 s and 2.6 GB before)


def text_log(rows: int, sizes: int | None = None) -> str:
    """An nccl-tests text log of `rows` rows (of `sizes` distinct sizes, repeated)."""
    head = ("# nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: "
            "5 iters: 20\n# Collective test starting: all_reduce_perf\n"
            "#       size         count      type   redop    root     time   algbw   busbw "
            "#wrong     time   algbw   busbw #wrong\n#        (B)    (elements)             "
            "                  (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n")
    size = [8 * (1 + (k % sizes if sizes else k)) for k in range(rows)]
    return head + "".join(f"{s} {s // 4} float sum -1 {10 + k % 7}.0 0.0 0.0 0 10.0 0.0 0.0 0\n"
                          for k, s in enumerate(size))


def large_sizes_log(rows: int, sizes: int = 4) -> str:
    """fuzz_c11's log: sizes 1, 2, 4 and 8 GiB repeated, at its times (with `sizes` > 4, on
    to 2^(29 + sizes) B, each double the time of the last); no row below 1 GiB says anything
    of the latencies, and the fit does not settle (800,000 evaluations)."""
    times = {2**30: 278168.0, 2**31: 534127.0, 2**32: 1106007.0, 2**33: 2382474.0}
    for k in range(4, sizes):
        times[2 ** (30 + k)] = 2 * times[2 ** (29 + k)]
    head = text_log(0)
    return head + "".join(f"{s} {s // 4} float sum -1 {times[s]} 0.0 0.0 0 {times[s]} 0.0 0.0 0\n"
                          for s in (2 ** (30 + k % sizes) for k in range(rows)))


def test_fuzz_c11_repeated_sizes_are_refused_before_the_fit(run, tmp_path):
    """1,000 rows of 4 sizes: 251 fit rows (every 4th and the largest) but 4 equations, as
    the model's time depends on the size alone: fewer than the DGX machine's 7 params, so
    refused before the search (194 s before the work limit; 8.5 s with it)."""
    log = write(tmp_path, "l.txt", large_sizes_log(1000))
    seconds, code, _, err = timed(run, "calibrate", log, "--machine", DGX)
    assert code == 2 and "251 fit rows of 4 distinct sizes cannot check 7 params" in err
    assert seconds < 5


def test_r10_calibrate_refuses_a_fit_past_its_work_limit(run, tmp_path):
    """100 rows: 26 fit rows (every 4th and the largest), the DGX machine's 7 params:
    estimated at 2,750 × 8 × (26 + 100) = 2,772,000 units, within the limit given; refused
    during the fit when it passes the limit."""
    log = write(tmp_path, "l.txt", large_sizes_log(100, sizes=8))  # (8 sizes > 7 params)
    err = refused(run, "calibrate", log, "--machine", DGX, "--max-fit-work", "3000000")
    assert "the fit did not settle within 3,000,000 units of work (26 fit rows" in err
    assert "raise --max-fit-work" in err


def test_r10_calibrate_of_10000_rows_is_refused_before_the_fit(run, tmp_path):
    """10,000 rows (the documented row limit; 70 s before): at most 2,501 fit rows (every 4th
    size and the largest), 7 params: 2,750 × 8 × (rows + 100) units estimated, past the
    default 20,000,000 from 810 rows on, so refused before the first evaluation."""
    log = write(tmp_path, "l.txt", text_log(10_000))
    seconds, code, _, err = timed(run, "calibrate", log, "--machine", DGX)
    assert code == 2, err
    found = re.search(r"a fit of 7 params on ([\d,]+) fit rows may take ([\d,]+) units of work", err)
    assert found, err
    rows, work = (int(g.replace(",", "")) for g in found.groups())
    assert 810 <= rows <= 2501 and work == 2750 * 8 * (rows + 100)
    assert "the limit is 20,000,000" in err and "raise --max-fit-work" in err
    assert seconds < 5


def test_r11_positions_of_a_one_line_json_log_are_linear(run, tmp_path):
    results = [result(8 * (k + 1)) for k in range(10_000)]
    results[-1] = result(8 * 10_000, wrong="-1")  # an error in the last one: its column
    log = write(tmp_path, "one_line.json", json_log(results))
    start = time.process_time()
    first, _, caret = located(refused(run, "predict", DGX, "--against", log))
    assert time.process_time() - start < 15  # (35 s before: each position from the start)
    col = log.read_text().rindex('{"size"') + 1
    assert first.startswith(f"{log}:1:{col}: error: results[9999]")


def test_r12_a_14_mb_expression_is_refused_at_once(run, tmp_path):
    path = write(tmp_path, "long.sched", "report y = " + " + ".join(["1"] * 1_000_000) + "\n")
    start = time.process_time()
    err = refused(run, "eval", path)
    assert time.process_time() - start < 10  # (74 s and 4.9 GB before, for 3.5 M terms)
    first, excerpt, _ = located(err)
    assert "more than 5,000 operators in a row" in first and len(err) < 1000


def test_r12_too_many_tokens_and_brackets(run, tmp_path):
    many = write(tmp_path, "many.sched", "let x = [" + ",".join(["1"] * 60_000) + "]\n")
    assert "more than 100,000 tokens to parse" in refused(run, "eval", many)
    deep = write(tmp_path, "deep.sched", "report y = " + "(" * 300 + "1" + ")" * 300 + "\n")
    first, _, _ = located(refused(run, "eval", deep))
    assert first.startswith(f"{deep}:1:{len('report y = ') + 201}: error: brackets nested")


def test_r13_a_deeply_nested_json_log_is_positioned(run, tmp_path):
    log = write(tmp_path, "deep.json", '{"results": ' + "[" * 100_000 + "]" * 100_000 + "}")
    first, _, caret = located(refused(run, "predict", DGX, "--against", log))
    col = len('{"results": ') + 200  # the '{' is level 1: the 200th '[' is level 201
    assert first == f"{log}:1:{col}: error: nested more than 200 levels deep; nccl-tests " \
                    "writes 4"


def test_r14_an_excerpt_is_cut_around_its_column(run, tmp_path):
    nest = '<pci busid="0000:01:00.0" class="0x060400" link_speed="32.0 GT/s PCIe" ' \
           'link_width="16">'
    path = write(tmp_path, "deep.xml", '<system version="1">\n<cpu numaid="0" affinity="f" '
                 'arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">\n'
                 + nest * 100_000 + "</pci>" * 100_000 + "\n</cpu>\n</system>\n")
    err = refused(run, "machine", "import", path)
    first, excerpt, caret = located(err)
    assert len(err) < 2000  # (8.7 MB before)
    col = int(first.split(":")[2])
    text = path.read_text().splitlines()[2]
    assert excerpt.startswith("  ...") and excerpt.endswith("...") and len(excerpt) < 220
    at = caret.index("^")  # the caret under the character of its column, the text around it
    assert excerpt[at - 30:at + 30] == text[col - 31:col + 29]


def test_r22_machine_show_of_a_1000_host_import(run, tmp_path):
    machine = tmp_path / "m1000.sched"
    code, _, err = run("machine", "import", "--nvidia-smi", TOPO /
                       "dgx1-nvidia-smi-msccl-tools.txt", "--nic-speed", "400Gbit/s", "--sm",
                       "90", "--nvlinks", "1", "--hosts", "1000", "-o", machine)
    assert code == 0, err
    start = time.process_time()
    code, out, err = run("machine", "show", machine)
    assert code == 0, err
    assert time.process_time() - start < 20  # (30 s CPU and 4.6 GB before)
    assert f"routes from the first GPU to {MAX_ROUTES} of the 7,999 others, evenly spread" in out
    code, out, _ = run("machine", "show", machine, "--json", "--max-routes", "50")
    assert json.loads(out)["routed"] == {"gpus": 50, "of": 7999}


def test_machine_show_routes_to_every_gpu_of_a_small_machine(run):
    code, out, err = run("machine", "show", ROOT / "schedules" / "seed" / "nvlink_2x8.sched",
                         "--json")
    assert code == 0, err
    assert json.loads(out)["routed"] == {"gpus": 15, "of": 15}


# ---- files that are not schedc's ------------------------------------------------------------------

SECRET = "SECRET-MARKER password=hunter2"


@pytest.fixture
def secret(tmp_path):
    path = write(tmp_path, "secret.txt", SECRET + "\n")
    (tmp_path / "link.sched").symlink_to(path)
    (tmp_path / "link.xml").symlink_to(path)
    return path


@pytest.mark.parametrize("args", [
    ("eval", "{main}"), ("eval", "{dir}/link.sched"), ("eval", "{dir}/secret.txt"),
    ("time", str(PAIR_XML), "--machine", "{dir}/secret.txt"),
    ("time", str(PAIR_XML), "--machine", "{dir}/link.sched"),
    ("predict", str(DGX), "--against", "{dir}/log.txt", "--fitted", "{dir}/link.sched"),
    ("machine", "import", "{dir}/secret.txt"), ("machine", "import", "{dir}/link.xml"),
    ("machine", "import", "--nvidia-smi", "{dir}/secret.txt"),
    ("time", "{dir}/link.xml"), ("emit", "ast", "{dir}/link.sched"),
    ("calibrate", "--manifest", "{dir}/secret.txt"),
    ("calibrate", "--manifest", "{dir}/manifest.txt"),
])
def test_r16_no_line_of_a_file_that_is_not_schedcs(run, tmp_path, secret, args):
    main = write(tmp_path, "main.sched", 'import "link.sched"\nreport x = 1\n')
    write(tmp_path, "manifest.txt", "log.txt link.sched\n")
    write(tmp_path, "log.txt", text_log(12))
    code, out, err = run(*(a.format(dir=tmp_path, main=main) for a in args))
    assert code == 2 and "internal error" not in err
    assert "SECRET" not in err + out and "hunter2" not in err + out


# ---- warnings and positions -----------------------------------------------------------------

def test_r18_no_library_warning_reaches_stderr(run, tmp_path):
    code, out, err = run("report", PCIE, "--set", "V=1e308 B", "-o", tmp_path / "r.html")
    assert code == 0 and "Warning" not in err, err


def test_a_missing_route_for_ncclS_inputs_is_positioned(run, tmp_path):
    path = write(tmp_path, "nr.sched", """param B = 1 GB/s
topology {
  gpu g[2]
  switch s
  switch t
  link g[0] <-> s bw B
  link g[1] <-> t bw B
}
allreduce 1 MiB over [g[0], g[1]]
schedule x {
  round { copy all from g[0] to g[1] }
}
""")
    first, excerpt, _ = located(refused(run, "nccl", path))
    assert first == f"{path}:9:1: error: no route from g[0] to g[1], which NCCL's inputs " \
                    "for these ranks need"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs")
def test_r17_a_fifo_with_a_reader_is_written_through(run, tmp_path):
    """A FIFO is opened and written as a shell redirection would (one with no reader waits,
    as `> fifo` does: docs/robustness.md); with a reader it gets the whole file."""
    import threading
    fifo = tmp_path / "f.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    code, _, err = run("export", "msccl", ROOT / "schedules" / "seed" / "nvlink_2x8.sched",
                       "-s", "ring", "-o", fifo)
    reader.join(30)
    assert code == 0, err
    assert got and got[0].startswith(b"<algo") and fifo.is_fifo()


@pytest.mark.parametrize("hosts, fabric, refused_at", [(100, "rail", False), (3641, "rail", True),
                                                       (3500, "fat-tree:", True)])
def test_machine_import_counts_the_devices_hosts_and_fabric_make(run, tmp_path, hosts, fabric,
                                                                 refused_at):
    """What --hosts and --fabric will create is counted before the file is written (the DGX-1
    matrix: 18 devices a host; a rail fabric adds its 4 rails and a spine, a fat tree a leaf
    per host and the spines): 3,640 hosts on rails are 65,525 devices, 3,641 are refused."""
    out = tmp_path / "m.sched"
    code, _, err = run("machine", "import", "--nvidia-smi", TOPO / "dgx1-nvidia-smi-msccl-tools.txt",
                       "--nic-speed", "400Gbit/s", "--sm", "90", "--nvlinks", "1", "--hosts",
                       hosts, "--fabric", fabric, "-o", out)
    if refused_at:
        assert code == 2 and "the limit is 65,536" in err and not out.exists()
    else:
        assert code == 0, err
        shown = run("machine", "show", out, "--max-routes", "2")[1]
        assert "devices: 800 gpus, 400 nics, 605 switches" in shown  # 100 × 18 + 5, as counted

"""What a newcomer met on a fresh clone (issue 35, item 6), each fixed and kept so: the
messages, units and outputs a first session tripped over."""

from __future__ import annotations

from conftest import MACHINES, ROOT

from schedc.words import counted, plural

SEED = ROOT / "schedules" / "seed" / "nvlink_2x8.sched"


# ---- plurals: one helper, no "1 rounds" or "16 gpu" --------------------------------------------

def test_counted_nouns_are_singular_for_one_only():
    assert [counted(n, "round") for n in (0, 1, 2)] == ["0 rounds", "1 round", "2 rounds"]
    assert counted(1, "thread block") == "1 thread block"
    assert counted(3, "thread block") == "3 thread blocks"
    assert counted(20_000_000, "transfer") == "20,000,000 transfers"
    assert [plural(w) for w in ("switch", "gpu", "GPU", "nic", "policy", "day", "box")] == \
        ["switches", "gpus", "GPUs", "nics", "policies", "days", "boxes"]


def test_machine_show_counts_devices_in_plural(run):
    code, out, err = run("machine", "show", SEED)
    assert code == 0, err
    # nvlink_2x8: 2 hosts of 8 GPUs and 1 NVSwitch each; 8 rail switches and a spine.
    assert "devices: 16 gpus, 11 switches" in out
    assert "per host (node[0]): 8 gpus, 1 switch" in out


def test_a_one_round_schedule_says_one_round(run, tmp_path):
    path = tmp_path / "one.sched"
    path.write_text(f'import "{MACHINES / "flat_8.sched"}"\nbroadcast V over [g[0], g[1]] root g[0]\n'
                    "schedule once { round { copy all from g[0] to g[1] } }\n")
    code, out, err = run("verify", path)
    assert code == 0, err
    assert "verified (1 round, 1 transfer;" in out


# ---- --derate's help -------------------------------------------------------------------------

def test_derate_help_shows_one_percent_sign(run):
    code, out, _ = run("time", "--help")
    assert code == 0
    text = " ".join(out.split())  # click wraps the help text
    assert "(0.5, 1/2, 50%; repeatable)" in text and "%%" not in out


# ---- the transfer limit: the message quotes the limit, not what is left of it ----------------

def test_the_transfer_limit_message_quotes_the_limit(run, tmp_path):
    path = tmp_path / "two.sched"
    path.write_text(f'import "{MACHINES / "flat_8.sched"}"\nallgather V over ranks\n'
                    "schedule two {\n"
                    "  round { for i in 0..6: copy part(i of 8) of all from ranks[i] to ranks[i + 1] }\n"
                    "  round { for i in 0..6: copy part(i of 8) of all from ranks[i + 1] to ranks[i] }\n"
                    "}\n")
    code, out, err = run("time", path, "--max-transfers", "10", "--no-verify")
    assert code == 2 and out == ""
    # The first round makes 7 transfers; the second's loop of 7 would pass 10. What was left
    # (3) is not the limit the user set and can raise.
    assert err.splitlines()[0] == (
        f"{path}:5:20: error: this loop makes 7 iterations in one go after 7 transfers already "
        "made; the limit is 10 (raise it with --max-transfers)")


# ---- a statement in the wrong block names the block it belongs to -----------------------------

MISPLACED = [  # (the text, the error's line:col, its message)
    ("param B = 1 GB/s\nrouting prefer nvlink\n", "2:1",
     "unexpected 'routing' at the top level: a 'routing' statement belongs inside "
     "'topology { ... }'"),
    ("topology {\n  gpu g[2]\n  param x = 3\n}\n", "3:3",
     "unexpected 'param' in a topology block: a 'param' statement belongs at the top level "
     "of the file, outside every block"),
    ("schedule s {\n  link a <-> b\n}\n", "2:3",
     "unexpected 'link' in a schedule's body: a 'link' statement belongs inside "
     "'topology { ... }'"),
    ("round { copy all from a to b }\n", "1:1",
     "unexpected 'round' at the top level: a 'round' statement belongs in a schedule's body "
     "('schedule NAME { ... }')"),
]


def test_a_statement_in_the_wrong_block_names_its_block(run, tmp_path):
    for text, at, message in MISPLACED:
        path = tmp_path / "wrong.sched"
        path.write_text(text)
        code, out, err = run("time", path)
        assert code == 2 and out == "", err
        assert err.splitlines()[0] == f"{path}:{at}: error: {message}"


def test_a_statement_in_its_block_still_gets_the_usual_message(run, tmp_path):
    path = tmp_path / "typo.sched"
    path.write_text("topology {\n  gpu g[2]\n  lnk g[0] <-> g[1]\n}\n")
    code, _, err = run("time", path)
    assert code == 2 and "belongs" not in err and "unexpected" in err


# ---- sizes with units in --min-bytes and --max-bytes -----------------------------------------

def test_byte_options_take_units(run):
    code, out, err = run("export", "msccl", SEED, "-s", "ring", "--min-bytes", "4KiB",
                         "--max-bytes", "192MiB")
    assert code == 0, err
    # 4 KiB = 4 * 2^10 = 4,096 B; 192 MiB = 192 * 2^20 = 201,326,592 B.
    assert 'minBytes="4096" maxBytes="201326592"' in out.splitlines()[0]
    code, out, err = run("export", "msccl", SEED, "-s", "ring", "--max-bytes", "1.5GB")
    assert code == 0 and 'maxBytes="1500000000"' in out, err  # GB = 10^9 B
    code, out, err = run("nccl", SEED, "--max-bytes", "1GiB", "--json")
    assert code == 0, err
    import json
    assert json.loads(out)["max_bytes"] == 2**30


def test_byte_options_refuse_what_is_not_a_whole_size(run):
    for value, message in [("1.5B", "--max-bytes 1.5B: must be a whole number of bytes, not 3/2"),
                           ("12GB/s", "--max-bytes 12GB/s: must be a size in bytes"),
                           ("1e400MiB", "--max-bytes 1e400MiB: must be a size in bytes"),
                           ("-1", "--max-bytes -1: must be from 0 to")]:
        code, out, err = run("export", "msccl", SEED, "-s", "ring", "--max-bytes", value)
        assert code == 2 and out == "" and message in err, (value, err)


# ---- MSCCL's maxBytes: the top of a range, not a size ----------------------------------------
# msccl-executor-nccl (Azure/msccl-executor-nccl c6f6b36), src/misc/msccl/msccl_lifecycle.cc:332-335:
#     size_t nBytes = param->count * ncclTypeSize(param->dataType) * m.sizeMultiplier;
#     bool msgSizeIsValid = param->count > 0 && ... &&
#       nBytes >= m.minBytes && (m.maxBytes == 0 || nBytes <= m.maxBytes);
# and src/include/msccl/msccl_struct.h:105 "Max message size allowed for this algorithm, 0 for
# no limit". A file is picked for every size up to maxBytes: a limit of 0 or 2^63 - 1 (every
# int64 size is below it) names no size at all.

MACHINE_2X8 = ROOT / "schedules" / "machines" / "nvlink_2x8.sched"


def test_an_export_writes_its_size_as_max_bytes_and_reads_back_exactly(run, tmp_path):
    out = tmp_path / "r.xml"
    code, _, err = run("export", "msccl", SEED, "-s", "ring", "-o", out)
    assert code == 0, err
    assert 'minBytes="0" maxBytes="201326592"' in out.read_text()  # V = 192 MiB = 192·2^20
    code, text, err = run("time", out, "--machine", MACHINE_2X8)
    assert code == 0, err
    # The seed's ring: 30 rounds of V/16 over one 50 GB/s NIC, 30·α + 30·V/(16·B_N) =
    # 30·0.83 µs + 30·201326592/(16·50e9) s = 24.9 µs + 7.5497 ms = 7.5746 ms, as the README.
    assert "time              7.5746 ms" in text


def test_an_xml_without_a_size_limit_needs_a_size(run, tmp_path):
    for limit in ("0", "9223372036854775807"):
        out = tmp_path / f"r{limit}.xml"
        code, _, err = run("export", "msccl", SEED, "-s", "ring", "-o", out, "--max-bytes", limit)
        assert code == 0, err
        code, text, err = run("time", out, "--machine", MACHINE_2X8)
        assert (code, text) == (2, ""), err
        assert f'the file sets no size limit (maxBytes="{limit}"' in err
        assert "pass --set V=SIZE" in err and "Traceback" not in err
        code, text, err = run("time", out, "--machine", MACHINE_2X8, "--set", "V=192MiB")
        assert code == 0 and "time              7.5746 ms" in text, err


# ---- every command that writes a file says so, on stderr -------------------------------------

def test_commands_that_write_a_file_say_so_on_stderr(run, tmp_path):
    topo = ROOT / "tests" / "fixtures" / "topo" / "ndv4-topo.xml"
    cases = [
        (["machine", "import", topo, "--nic-speed", "200Gbit/s", "-o", tmp_path / "m.sched"],
         tmp_path / "m.sched"),
        (["export", "msccl", SEED, "-s", "ring", "-o", tmp_path / "r.xml"], tmp_path / "r.xml"),
        (["machine", "show", SEED, "--host-svg", tmp_path / "h.svg"], tmp_path / "h.svg"),
        (["sweep", SEED, "--vary", "V=1MiB:4MiB:3", "--plot", tmp_path / "s.svg"],
         tmp_path / "s.svg"),
    ]
    for args, path in cases:
        code, out, err = run(*args)
        assert code == 0, err
        assert path.exists() and f"wrote {path}\n" in err, (args, err)
        assert "wrote" not in out  # stdout is what the command prints (or nothing)


# ---- nccl --explain: each size explained, the answer first, float32 at its precision ----------

def test_nccl_explains_each_size_the_answer_first(run):
    code, out, err = run("nccl", SEED, "--collective", "allgather", "--explain", "V=4KiB",
                         "--explain", "V=256MiB", "--explain", "V=4096B")
    assert code == 0, err
    whys = [line for line in out.splitlines() if line.startswith("why, for ")]
    # 4 KiB = 4,096 B (given twice, explained once) and 256 MiB = 268,435,456 B.
    assert [w.split(" (")[0] for w in whys] == ["why, for allgather of 4,096 bytes",
                                                "why, for allgather of 268,435,456 bytes"]
    order = [out.index(h) for h in ("why, for", "choice (", "table (", "inputs (")]
    assert order == sorted(order)
    # NCCL's ring/LL latency of the seed's all-gather is the float32 sum 23.300001 and its
    # bandwidth 41.600002: printed to FLT_DIG = 6 digits, 23.3 and 41.6.
    assert "23.3 µs + n / (41.6 GB/s)" in out
    assert "23.300001" not in out and "41.600002" not in out
    assert " us " not in out and " us)" not in out and "(latency us" not in out
    code, out, err = run("nccl", SEED, "--collective", "allgather", "--json")
    import json
    latency = [r["latency_us"] for r in json.loads(out)["table"]
               if r["algo"] == "ring" and r["proto"] == "ll"]
    assert latency == [23.300001]  # JSON keeps every float32 digit, to be read back exactly


# ---- solve --for hosts: the crossings are the headline, and a bar shows the compiles ----------

HOSTS_FILE = ROOT / "schedules" / "seed" / "nvlink_hosts.sched"


def test_solve_for_hosts_headlines_the_crossing_not_the_tie(run):
    code, out, err = run("solve", HOSTS_FILE, "time(hierarchical) = time(ring)", "--for",
                         "hosts", "--max-transfers", "40000")
    assert code == 0, err
    # At 1 host both schedules are the local ring (a tie, not a crossing); from 2 on the
    # hierarchical one is smaller (docs/scale.md derives ring − hierarchical > 0).
    head = out.split("\n\n", 1)[1].splitlines()
    assert head[0] == "no crossover in 1..16: time(hierarchical) is smaller throughout, but " \
                      "at the ties below"
    assert head[1] == "1 solution (the sides equal): hosts = 1"


def test_solve_for_hosts_names_a_real_crossing_first(run):
    code, out, err = run("solve", HOSTS_FILE, "time(hierarchical) = 1.5 ms", "--for", "hosts",
                         "--max-transfers", "40000")
    assert code == 0, err
    # hierarchical at n hosts: (14 + 2(n−1))·α + 2(n−1)·V/(8n·B_N) + 7·V/(4·B_L), α = 0.83 µs,
    # V = 192·2^20 B, B_N = 50 GB/s, B_L = 450 GB/s: n = 3: 14.94 + 671.09 + 782.94 = 1,468.97
    # µs < 1.5 ms; n = 4: 16.6 + 754.97 + 782.94 = 1,554.51 µs > 1.5 ms. The crossing is 3↔4.
    head = out.split("\n\n", 1)[1].splitlines()
    assert head[:2] == ["the smaller side crosses 1 time in 1..32:",
                        "  between hosts = 3 and 4: time(hierarchical) -> 1.5 ms"]
    assert "       3      1.469 ms" in out and "       4     1.5545 ms" in out


def test_solve_for_hosts_reports_its_progress():
    import schedc
    from schedc.progress import listening
    seen = []
    with listening(lambda label, done, total: seen.append((label, done, total))):
        schedc.solve(schedc.load(HOSTS_FILE, max_transfers=40000),
                     "time(hierarchical) = 1.5 ms", "hosts")
    ladder = [(d, t) for label, d, t in seen if label == "solve: hosts = 1..1024"]
    # The ladder: 1..16 one by one, then 32, 64, ..., 1024 (MAX_SEARCH, 2^10): 16 + 6 = 22
    # values, of which 1..32 compile and 64 stops at --max-transfers; the bar ends full.
    assert ladder and ladder[0] == (1, 22) and ladder[-1] == (22, 22)
    assert [d for d, _ in ladder] == sorted(d for d, _ in ladder)
    assert all(done <= total for _, done, total in seen)


# ---- the report's drawings -------------------------------------------------------------------

def test_the_fabric_drawing_puts_spine_rails_and_hosts_in_rows(run, tmp_path):
    import re
    path = tmp_path / "fabric.svg"
    code, _, err = run("machine", "show", SEED, "--fabric-svg", path)
    assert code == 0, err
    svg = path.read_text()
    boxes = {name: int(y) for y, name in re.findall(
        r'<rect x="-?\d+" y="(-?\d+)"[^>]*/><text[^>]*>([^<]+)</text>', svg)}
    # The seed: hosts link to the 8 rails, the rails to the spine: three rows, spine on top.
    assert boxes["spine"] < boxes["rail[0]"] == boxes["rail[7]"] < boxes["node[0]"]
    # No straight link runs along a row (through the boxes between its ends).
    for y1, y2 in re.findall(r'<line x1="-?\d+" y1="(-?\d+)" x2="-?\d+" y2="(-?\d+)"', svg):
        assert y1 != y2


def test_curves_of_equal_times_stay_visible():
    import matplotlib
    matplotlib.use("Agg")
    import numpy as np
    from matplotlib.figure import Figure

    from schedc.render.plot import _lines
    axes = Figure().add_subplot()
    x = np.array([1.0, 2.0, 4.0, 8.0])
    # Two schedules equal over part of the range, as the seed's ring and hierarchical below
    # B_L = 50 GB/s: the earlier is drawn wider, and each has its own style and marker.
    _lines(axes, x, {"ring": x * 2, "interleaved": x * 0 + 9, "hierarchical": np.minimum(x * 2, 5)})
    ring, _, hierarchical = axes.get_lines()
    assert ring.get_linewidth() > hierarchical.get_linewidth()
    assert ring.get_linestyle() != hierarchical.get_linestyle()
    assert ring.get_marker() != hierarchical.get_marker()


def test_machine_import_says_its_notes_on_stderr(run, tmp_path):
    out = tmp_path / "m.sched"
    code, text, err = run("machine", "import", ROOT / "tests" / "fixtures" / "topo" /
                          "ndv4-topo.xml", "--nic-speed", "200Gbit/s", "-o", out)
    assert code == 0 and text == "", err
    # ndv4-topo.xml has GPUs only as PCI devices: the file's head says their NVLinks are not
    # in it; written to a file, that note is on stderr too, one line.
    lines = err.splitlines()
    assert lines[0] == f"wrote {out}"
    assert "note: GPUs are known only by their PCI class (no <gpu> with an sm or NVLinks): " \
           "their NVLinks are not in the file, so GPUs meet over PCI only; --nvlinks N --sm S " \
           "assumes N NVLinks per GPU to an NVSwitch." in lines
    assert "# Note: GPUs are known only by their PCI class" in out.read_text()

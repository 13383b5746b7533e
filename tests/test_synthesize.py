"""`schedc synthesize`: the written schedule verifies, and its time at α = 0 is within 1 % of the
exact optimum (and never below it), measured by compiling the written file again here."""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path

import pytest

import schedc
from schedc.cost.formula import nominal_value
from schedc.errors import UsageError
from schedc.export.sched_schedule import comment

ROOT = Path(__file__).parents[1]
FIXTURES = Path(__file__).parent / "fixtures" / "synthesize"
MACHINES = ROOT / "schedules" / "machines"


def written(tmp_path: Path, source: Path, collective: str, **options) -> tuple[Path, object]:
    out = tmp_path / f"{collective}.sched"
    result = schedc.synthesize(source, collective, output=out, **options)
    assert out.read_text() == result.text  # (written by the API)
    return out, result


def at_zero_alpha(path: Path, name: str) -> Fraction:
    """The written schedule's time with every start-up at 0, from a fresh compile."""
    session = schedc.load(path)
    timing = schedc.time(session, name)  # verifies first
    zero = {s: 0 for s in session.program.alpha.free_symbols}
    return nominal_value(timing.cost.formula.xreplace(zero), session.program.nominal)


def optimum(path: Path, kind: str, over="ranks", size="1 GiB", tmp: Path | None = None) -> Fraction:
    """`bound`'s optimum for the collective, declared on the machine in a file of its own."""
    assert tmp is not None
    probe = tmp / f"probe_{kind}.sched"
    probe.write_text(f'import "{path}"\n{kind} {size} over {over}\n')
    (b,) = schedc.bound(schedc.load(probe))
    return b.optimum.value


@pytest.mark.parametrize("machine", ["nvlink_2x8.sched", "pcie_2x4.sched", "rail_4x8.sched",
                                     "shared_nic_2x8.sched", "ncv4.sched",
                                     "systems/dgx_a100.sched", "systems/aws_p4d.sched"])
@pytest.mark.parametrize("kind", ["allgather", "reduce_scatter"])
def test_within_one_percent_of_the_optimum(tmp_path, machine, kind):
    source = MACHINES / machine
    out, result = written(tmp_path, source, kind, over="ranks", size="1 GiB")
    best = optimum(source, kind, tmp=tmp_path)
    assert result.optimum == best
    time = at_zero_alpha(out, result.name)
    assert best <= time <= best * Fraction(101, 100)
    assert time == result.bandwidth_time


def test_a_machine_file_without_a_collective_takes_every_gpu(tmp_path):
    # pcie_2x4 declares no collective; its `ranks` lists node[h].g[i] host by host, as the
    # machine declares them, so the default ranks are those and the optimum is ranks' optimum.
    source = MACHINES / "pcie_2x4.sched"
    with pytest.raises(UsageError, match="give --size BYTES"):
        schedc.synthesize(source, "allgather")
    out, result = written(tmp_path, source, "allgather", size="1 GiB")
    assert "[node[0].g[0], node[0].g[1], node[0].g[2], node[0].g[3], node[1].g[0]," in result.text
    assert result.optimum == optimum(source, "allgather", tmp=tmp_path)
    assert result.optimum <= at_zero_alpha(out, result.name) <= result.optimum * Fraction(101, 100)


def test_directly_linked_gcds(tmp_path):
    # The optimum is the package pair's cut (tests/test_optimum.py works it by hand); GCDs relay.
    out, result = written(tmp_path, FIXTURES / "mi250_16.sched", "allgather")
    assert result.optimum == Fraction(14 * 2**30, 16 * 300 * 10**9)
    assert result.optimum <= at_zero_alpha(out, result.name) <= result.optimum * Fraction(101, 100)


def test_allreduce_is_reduce_scatter_then_allgather(tmp_path):
    seed = ROOT / "schedules" / "seed" / "nvlink_2x8.sched"
    out, result = written(tmp_path, seed, "allreduce")
    rs = optimum(seed, "reduce_scatter", size="V", tmp=tmp_path)
    ag = optimum(seed, "allgather", size="V", tmp=tmp_path)
    assert result.optimum == rs + ag
    assert rs + ag <= at_zero_alpha(out, result.name) <= (rs + ag) * Fraction(101, 100)
    # At the seed's α and 192 MiB, the α-optimal chunks beat the library's best (hierarchical).
    session = schedc.load(out, [f"chunks={result.alpha_chunks}"])
    mine = schedc.time(session, result.name).time
    library = schedc.load(seed)
    assert mine < min(t.time for t in schedc.compare(library))


def test_broadcast_and_reduce_from_the_root(tmp_path):
    torus = MACHINES / "torus_4x4.sched"
    for kind in ("broadcast", "reduce"):
        out, result = written(tmp_path, torus, kind, over="ranks", size="64 MiB",
                              root="ranks[5]")
        # By hand: V leaves (enters) the root over its 4 links of 50 GB/s.
        assert result.optimum == Fraction(64 * 2**20, 200 * 10**9)
        assert result.optimum <= at_zero_alpha(out, result.name) <= result.optimum * Fraction(101, 100)


def test_chunks_is_a_structural_param(tmp_path):
    out, result = written(tmp_path, MACHINES / "pcie_2x4.sched", "allgather", over="ranks",
                          size="1 GiB", chunks=4)
    assert result.chunks == 4 and "param chunks = 4" in result.text
    more = schedc.time(schedc.load(out, ["chunks=40"]), result.name)
    fewer = schedc.time(schedc.load(out), result.name)
    assert more.cost.rounds == fewer.cost.rounds + 36  # one round per chunk more


def test_deterministic(tmp_path):
    source = MACHINES / "rail_4x8.sched"
    first = schedc.synthesize(source, "allgather", over="ranks", size="1 GiB").text
    second = schedc.synthesize(source, "allgather", over="ranks", size="1 GiB").text
    assert first == second


def test_command_line(run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = MACHINES / "nvlink_2x8.sched"
    code, out, err = run("synthesize", str(source), "--collective", "allgather", "--over", "ranks",
                         "--size", "192 MiB", "-o", "ag.sched", "--json")
    assert code == 0, err
    document = json.loads(out)
    assert document["schema"] == "schedc.synthesize/1" and document["written"] == "ag.sched"
    assert 1 <= document["ratio"] <= 1.01
    text = (tmp_path / "ag.sched").read_text()
    assert "nvlink_2x8.sched" in next(line for line in text.splitlines() if line.startswith("import"))
    code, out, err = run("time", "ag.sched")
    assert code == 0, err
    # An existing output is not replaced without --force; bad options exit 2 before any work.
    code, _, err = run("synthesize", str(source), "--collective", "allgather", "--over", "ranks",
                       "--size", "1 GiB", "-o", "ag.sched")
    assert code == 2 and "--force" in err
    for bad in (["--chunks", "0"], ["--within", "0"], ["--chunks", "many"], ["--max-ranks", "8"]):
        code, _, err = run("synthesize", str(source), "--collective", "allgather", "--over",
                           "ranks", "--size", "1 GiB", *bad)
        assert code == 2, bad


def test_the_import_is_relative_to_the_output(tmp_path):
    (tmp_path / "deep").mkdir()
    out = tmp_path / "deep" / "x.sched"
    result = schedc.synthesize(FIXTURES / "mi250_16.sched", "allgather", output=out)
    line = next(line for line in result.text.splitlines() if line.startswith("import"))
    target = (out.parent / line.split('"')[1]).resolve()
    assert target == (FIXTURES / "mi250_16.sched").resolve()


@pytest.mark.parametrize("hostile", ["a\nlet pwned = 1", "x\rparam q = 1", "\x00\x1b[2J", "é\u2028z"])
def test_comments_cannot_start_a_statement(hostile):
    line = comment(hostile)
    assert "\n" not in line and "\r" not in line and line.startswith("# ")
    assert all(ch.isprintable() for ch in line)


def test_msccl_export_of_a_synthesized_allgather(tmp_path):
    # 8 units a shard keep the XML small: msccl-executor-nccl's parser rules (the limits
    # tests/test_msccl_executor_rules.py quotes from its source) accept it.
    out, result = written(tmp_path, ROOT / "schedules" / "seed" / "nvlink_2x8.sched", "allgather",
                          over="ranks", size="192 MiB", units=8, chunks=8)
    xml = tmp_path / "ag.xml"
    xml.write_text(schedc.export_msccl(schedc.load(out), result.name))
    assert "would load it" in schedc.validate_msccl(xml, "msccl-executor-nccl")


def test_tables_named_like_the_machines_names_are_prefixed(tmp_path):
    # The machine file defines `edge_tree` and `ag_tree_root`: the written tables take the
    # schedule's name as a prefix instead of redefining them (an error of the language).
    machine = tmp_path / "busy.sched"
    machine.write_text(f'import "{MACHINES / "flat_8.sched"}"\nlet edge_tree = 1\n'
                       'let ag_tree_root = 2\n')
    out, result = written(tmp_path, machine, "allreduce", over="ranks", size="1 MiB")
    assert "let synthesized_allreduce_ag_edge_tree = [" in result.text
    assert at_zero_alpha(out, result.name) == result.bandwidth_time
    machine.write_text(f'import "{MACHINES / "flat_8.sched"}"\nparam chunks = 2\n')
    with pytest.raises(schedc.SchedcError, match="already defines 'chunks'"):
        schedc.synthesize(machine, "allgather", over="ranks", size="1 MiB")


def test_msccl_refusal_names_the_chunks_that_fit(tmp_path):
    # At 192 chunks of 8 units a GPU's part of the XML passes the executors' 4,095 elements
    # (MAX_NODES, msccl_parser.h:23); the refusal names a chunk count that fits, and it does.
    out, result = written(tmp_path, ROOT / "schedules" / "seed" / "nvlink_2x8.sched", "allgather",
                          over="ranks", size="192 MiB", units=8, chunks=192)
    with pytest.raises(schedc.SchedcError, match=r"MAX_NODES.*with --set chunks=(\d+)") as refused:
        schedc.export_msccl(schedc.load(out), result.name)
    fewer = int(re.search(r"--set chunks=(\d+)", str(refused.value)).group(1))
    assert 8 <= fewer < 192  # 8 fits (the test above)
    xml = tmp_path / "fewer.xml"
    xml.write_text(schedc.export_msccl(schedc.load(out, sets=(f"chunks={fewer}",)), result.name))
    assert "would load it" in schedc.validate_msccl(xml, "msccl-executor-nccl")
    with pytest.raises(schedc.SchedcError):  # one more does not fit
        schedc.export_msccl(schedc.load(out, sets=(f"chunks={fewer + 1}",)), result.name)


def test_msccl_refusals_not_of_size_name_no_chunks(tmp_path):
    # A broadcast is not an MSCCL collective: no chunk count helps, so none is named (and the
    # file is not recompiled at other counts to find out).
    out, result = written(tmp_path, ROOT / "schedules" / "seed" / "nvlink_2x8.sched", "broadcast",
                          over="ranks", size="192 MiB", units=8, chunks=4)
    with pytest.raises(schedc.SchedcError) as refused:
        schedc.export_msccl(schedc.load(out), result.name)
    assert "MSCCL XML is written for" in str(refused.value)
    assert "chunks" not in str(refused.value)


@pytest.mark.parametrize("option, value, said", [
    ("--over", "[nonexistent]", "--over [nonexistent]: unknown name 'nonexistent'"),
    ("--size", "64 Mfoo", "--size 64 Mfoo: unexpected 'Mfoo'"),
    ("--over", "ranks\nlet pwned = 1", "--over is one expression on one line"),
    ("--over", "ranks; let pwned = 1", "--over is one expression on one line"),
])
def test_bad_options_are_said_at_the_option(run, option, value, said):
    args = ["synthesize", str(MACHINES / "rail_4x8.sched"), "--collective", "allgather",
            "--over", "ranks", "--size", "64 MiB", option, value]
    code, out, err = run(*args)
    assert code == 2 and said in err and "Traceback" not in err
    assert "schedc-synthesize-" not in err  # never a line of the temporary file


def test_a_refused_compile_writes_nothing(run, tmp_path):
    out = tmp_path / "x.sched"
    code, _, err = run("synthesize", str(MACHINES / "rail_4x8.sched"), "--collective",
                       "allgather", "--over", "ranks", "--size", "64 MiB", "--max-transfers",
                       "1000", "-o", str(out))
    assert code == 2 and "nothing written" in err and "--max-transfers" in err
    assert not out.exists()


def test_paths_schedc_does_not_route_are_pinned(tmp_path):
    # Three GPUs of one host, each with an NVLink and a PCIe port of B: a GPU receives the
    # other two shards, 2V/3, over 2B, so the optimum is V/(3B) (by hand). Routes inside a
    # host take NVLink alone (docs/routing.md), so unpinned trees get B, V·2/3/B: twice it.
    # The file pins one PCIe route per GPU (each sends once over each port) and reaches it.
    source = FIXTURES / "two_paths.sched"
    out, result = written(tmp_path, source, "allgather")
    assert result.optimum == Fraction(2**30, 3 * 100 * 10**9)  # V = 1 GiB, B = 100 GB/s
    assert result.pinned == 3
    assert result.text.count(" via node[0].plx") == 3
    assert at_zero_alpha(out, result.name) == result.optimum


def test_a_narrow_second_path_is_pinned_for_some_pairs_only(tmp_path):
    # The PCIe ports at B/18 (GB200's NIC beside its NVLink): a GPU receives 2V/3 over
    # B + B/18, so the optimum is 12V/(19B) (by hand); trees over schedc's routes reach 18/19
    # of it. Pinning a pair to the narrow path carries only B/18 for that pair, so only some
    # pairs take it (one into each GPU), the rest relay over NVLink.
    source = tmp_path / "narrow.sched"
    source.write_text((FIXTURES / "two_paths.sched").read_text().replace(
        "<-> plx bw B class", "<-> plx bw B/18 class"))
    out, result = written(tmp_path, source, "allgather")
    assert result.optimum == Fraction(12 * 2**30, 19 * 100 * 10**9)
    assert result.reached == pytest.approx(1.0)
    pinned = re.findall(r"route node\[0\]\.g\[(\d)\] -> node\[0\]\.g\[(\d)\] via node\[0\]\.plx",
                        result.text)
    assert len(pinned) == result.pinned and sorted(b for _, b in pinned) == ["0", "1", "2"]
    time = at_zero_alpha(out, result.name)
    assert result.optimum <= time <= result.optimum * Fraction(101, 100)


def test_one_host_of_a_shared_nic_machine_reaches_the_optimum(tmp_path):
    # Eight GPUs of one host of shared_nic_2x8: the optimum's cut (two GPUs behind one PCIe
    # switch and NIC) counts the pair's PCIe switch and paths out through the NICs and back,
    # which no route of schedc's own takes (routed trees reached 40.6 %). Pinned routes do.
    source = ROOT / "schedules" / "algorithms" / "nccl_one_host.sched"  # imports results named
    out, result = written(tmp_path, source, "allgather")               # after library functions
    assert result.reached >= 1 - 1e-6
    assert "route node[0].g[0] -> node[0].g[1] via node[0].pcie[0]" in result.text
    time = at_zero_alpha(out, result.name)
    assert result.optimum <= time <= result.optimum * Fraction(101, 100)


def test_the_machines_own_pins_stay_and_below_the_optimum_it_says_so(tmp_path):
    # The same three GPUs with every route pinned through the NVSwitch by the machine: the
    # trees get B, half the optimum's rate, and the output says so instead of claiming it.
    machine = tmp_path / "pinned.sched"
    pins = "\n".join(f"  route node[0].g[{i}] -> node[0].g[{j}] via node[0].nvs"
                      for i in range(3) for j in range(3) if i != j)
    machine.write_text(f'import "{FIXTURES / "two_paths.sched"}"\ntopology {{\n{pins}\n}}\n')
    out, result = written(tmp_path, machine, "allgather", over="ranks", size="V")
    assert result.reached == pytest.approx(0.5)
    assert result.pinned == 0
    assert "no single route per pair of ranks carries the cut's bandwidth" in result.text
    assert at_zero_alpha(out, result.name) >= result.optimum  # a lower bound all the same


def test_compare_lists_the_synthesized_schedule(run, monkeypatch):
    monkeypatch.chdir(ROOT)
    code, out, err = run("compare", "schedules/seed/nvlink_2x8.sched", "--with-synthesized",
                         "--set", "B_L=300GB/s", "--json")
    assert code == 0, err
    rows = {s["name"]: s["time_s"] for s in json.loads(out)["schedules"]}
    assert list(rows)[-1] == "synthesized_allreduce"
    # It beats the seed's schedules (hierarchical's best, 1.691 ms at B_L = 300 GB/s), and the
    # end-host bound 15/8 V / (B_L + B_N) at the same B_L holds below it.
    assert rows["synthesized_allreduce"] < rows["hierarchical"]
    assert rows["synthesized_allreduce"] > 15 / 8 * 192 * 2**20 / 350e9


def test_the_start_up_is_left_out_at_zero_alpha_even_as_a_number(tmp_path):
    # `startup 2 us` is a number, not a param: the time at α = 0 still leaves it out. On one
    # switch one round of direct copies is the optimum, 7/8 V over B exactly.
    path = tmp_path / "switch.sched"
    path.write_text("param V = 64 MiB\nparam B = 100 GB/s\nstartup 2 us\ntopology {\n  gpu g[8]\n"
                    "  switch s\n  link g[i] <-> s bw B for i in 0..7\n}\n"
                    "allgather V over [g[k] for k in 0..7]\n")
    result = schedc.synthesize(path, "allgather")
    assert result.optimum == Fraction(7 * 64 * 2**20, 8 * 100 * 10**9)
    assert result.bandwidth_time == result.optimum and result.ratio == 1.0
    assert result.time == result.optimum + Fraction(2, 10**6) * result.rounds


def test_chunks_auto_is_solved_not_searched(run):
    # 0.1 % of the optimum would take over 4,096 chunks on the GCDs: refused at once.
    code, _, err = run("synthesize", str(FIXTURES / "mi250_16.sched"), "--collective",
                       "allgather", "--within", "0.1%")
    assert code == 2 and "more than 4,096" in err


def test_the_fastest_chunk_count_counts_protocol_start_ups(tmp_path):
    # A protocol's α and the route latencies are not the file's `alpha` (0 here): the count
    # said to be fastest is read off the compiled time, so compiling the written file at
    # that count and at its neighbours, the count is the fastest of the three.
    source = ROOT / "schedules" / "calibration" / "ib_hosts_8xH100_ib400_allreduce.sched"
    sets = ("V=192MiB",)
    out, result = written(tmp_path, source, "allgather", sets=sets)
    k = result.alpha_chunks
    assert 1 < k < result.chunks  # start-ups of ~10 µs a round: far fewer than written

    def time_at(chunks: int) -> Fraction:
        session = schedc.load(out, sets=(*sets, f"chunks={chunks}"))
        return nominal_value(schedc.time(session, result.name).cost.formula,
                             session.program.nominal)

    assert time_at(k) <= min(time_at(k - 1), time_at(k + 1))

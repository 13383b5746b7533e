"""`schedc tune`: size ranges from exact crossovers, in the CSV of NCCL's example tuner."""

from __future__ import annotations

import json

from conftest import SCHEDULES, write

EXAMPLE = SCHEDULES / "examples" / "tuner_flat_8.sched"
# NCCL plugins/tuner/example/plugin.c: the names it parses (anything else silently becomes
# allreduce, ring or simple), and 8 to 10 comma-separated fields per line of < 256 chars.
COLLECTIVES = {"broadcast", "reduce", "allgather", "reducescatter", "allreduce"}
ALGORITHMS = {"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"}
PROTOCOLS = {"ll", "ll128", "simple"}


def plugin_rows(text: str) -> list[list[str]]:
    """The lines the example plugin loads, checked against its parser's rules."""
    rows = []
    for line in text.splitlines():
        assert len(line) < 256
        if not line or line.startswith("#"):
            continue
        fields = [f.strip() for f in line.split(",")]
        assert 8 <= len(fields) <= 10
        assert fields[0] in COLLECTIVES and fields[3] in ALGORITHMS and fields[4] in PROTOCOLS
        assert all(f.lstrip("-").isdigit() for f in fields[1:3] + fields[5:])
        rows.append(fields)
    # Within one (nNodes, nRanks), ranges rise and do not overlap: the plugin takes the first
    # line that matches the size and both counts.
    for a, b in zip(rows, rows[1:]):
        if a[6:8] == b[6:8]:
            assert int(a[2]) < int(b[1])
    return rows


def test_the_example_table(run, tmp_path):
    out = tmp_path / "nccl_tuner.conf"
    code, text, err = run("tune", EXAMPLE, "--collective", "allreduce", "--sizes", "8B:16GB",
                          "-o", out)
    assert (code, err) == (0, f"wrote {out}\n")
    # flat_8: alpha = 1 us, B = 25 GB/s. Ring 14 alpha + 7V/(4B), doubling 3 alpha + 3V/B,
    # tree (reduce then broadcast over a binomial tree) 6 alpha + 6V/B. Doubling = ring at
    # 11 alpha = 5V/(4B): V = 220 KB; tree = ring at 8 alpha = 17V/(4B): V = 47,058.8 B;
    # the tree is never the fastest (doubling beats it at every size).
    assert "V = 220 KB: time(ring) = time(doubling)" in text
    assert "V = 47.059 KB: time(ring) = time(tree)" in text
    assert "          8         220,000  doubling  none: not in the table" in text
    assert "never fastest in the range: tree" in text
    # Every band gets a row: the fastest of the labelled schedules (issue 21 item 5), the
    # tree below its crossover with the ring at 47,058.8 B, the ring above; channels 0 keeps
    # NCCL's own count.
    assert plugin_rows(out.read_text()) == [
        ["allreduce", "8", "47058", "tree", "simple", "0", "-1", "8"],
        ["allreduce", "47059", "16000000000", "ring", "simple", "0", "-1", "8"]]


def test_ring_and_tree_split_the_sizes(run, tmp_path):
    text = EXAMPLE.read_text().replace("schedule doubling = rd_allreduce(ranks)", "")
    text = "\n".join(line for line in text.splitlines() if "doubling" not in line)
    path = write(tmp_path, "t.sched", text.replace('"../', f'"{SCHEDULES}/'))
    code, out, err = run("tune", path, "--collective", "allreduce", "--sizes", "1KB:1GB",
                         "--channels", "4", "--json")
    assert code == 0, err
    document = json.loads(out)
    assert document["schema"] == "schedc.tune/1"
    # Below 47,058.8 B the tree's 6 rounds win, above it the ring's bandwidth.
    assert [(r["min_bytes"], r["max_bytes"], r["algorithm"]) for r in document["rows"]] == \
        [(1000, 47058, "tree"), (47059, 10**9, "ring")]
    assert document["crossovers"][0]["exact"] == "800000/17"


def test_an_unknown_nccl_name_is_refused_where_written(run, tmp_path):
    text = EXAMPLE.read_text().replace("as ring/simple", "as ring/fast")
    path = write(tmp_path, "t.sched", text.replace('"../', f'"{SCHEDULES}/'))
    code, out, err = run("tune", path, "--collective", "allreduce", "--sizes", "8B:1GB")
    assert (code, out) == (2, "")
    assert "t.sched:13:15: error: 'fast' is not an NCCL protocol the tuner knows " \
           "(ll, ll128, simple)" in err


def test_a_size_range_must_rise(run):
    code, out, err = run("tune", EXAMPLE, "--collective", "allreduce", "--sizes", "1GB:8B")
    assert (code, out) == (2, "")
    assert "the range must rise: 1GB is not below 8B" in err


def test_nodes_are_the_hosts_of_the_ranks(run, tmp_path):
    path = write(tmp_path, "t.sched", f'import "{SCHEDULES}/machines/nvlink_2x8.sched"\n'
                 f'import "{SCHEDULES}/lib/ring.sched"\nimport "{SCHEDULES}/lib/hierarchical.sched"\n'
                 "param V = 192 MiB\nallreduce V over ranks\n"
                 "schedule ring as ring/ll128 = ring_allreduce(ranks)\n"
                 "schedule hierarchical = hierarchical_allreduce([node[h].g for h in 0..1])\n")
    out = tmp_path / "nccl_tuner.conf"
    code, text, err = run("tune", path, "--collective", "allreduce", "--sizes", "1MB:1GB",
                          "-o", out)
    assert code == 0, err
    assert "(nRanks 16, nNodes 2)" in text
    # The seed's hierarchical beats the ring at every size on this machine (docs/tutorial.md,
    # seed §3), but it stands for no NCCL algorithm: every band still gets a row (issue 21
    # item 5), the fastest labelled schedule's, the ring's.
    assert "never fastest in the range: ring" in text
    assert plugin_rows(out.read_text()) == [
        ["allreduce", "1000000", "1000000000", "ring", "ll128", "0", "2", "16"]]


def test_a_table_per_node_count(run, tmp_path):
    # The seed's machine with `hosts` as a structural param: the hierarchical all-reduce beats
    # the ring at every size and host count (docs/scale.md: the seed's question, in hosts), so each
    # node count gets one line, the whole range, nNodes = n and nRanks = 8 n.
    path = write(tmp_path, "t.sched", f'import "{SCHEDULES}/machines/nvlink_hosts.sched"\n'
                 f'import "{SCHEDULES}/lib/ring.sched"\nimport "{SCHEDULES}/lib/hierarchical.sched"\n'
                 "param V = 192 MiB\nallreduce V over ranks\n"
                 "schedule ring as ring/simple = ring_allreduce(ranks)\n"
                 "schedule hier as tree/simple = "
                 "hierarchical_allreduce([node[h].g for h in 0..hosts-1])\n")
    out = tmp_path / "nccl_tuner.conf"
    code, text, err = run("tune", path, "--collective", "allreduce", "--sizes", "1MB:1GB",
                          "--nodes", "4,2,8", "-o", out)
    assert code == 0, err
    assert [line for line in text.splitlines() if line.startswith("tune ")] == [
        f"tune allreduce over V from 1 MB to 1 GB (nRanks {8 * n}, nNodes {n})" for n in (2, 4, 8)]
    assert plugin_rows(out.read_text()) == [
        ["allreduce", "1000000", "1000000000", "tree", "simple", "0", str(n), str(8 * n)]
        for n in (2, 4, 8)]
    assert out.read_text().count("# Format") == 1  # one header for the whole file
    code, text, _ = run("tune", path, "--collective", "allreduce", "--sizes", "1MB:1GB",
                        "--nodes", "2,4", "--json")
    document = json.loads(text)
    assert document["nodes_param"] == "hosts"
    assert [(t["nodes"], t["ranks"]) for t in document["tables"]] == [(2, 16), (4, 32)]


def test_nodes_needs_a_structural_param(run):
    code, _, err = run("tune", EXAMPLE, "--collective", "allreduce", "--sizes", "8B:16GB",
                       "--nodes", "1,2")
    assert code == 2
    assert "--nodes needs the file's host count as its one structural param" in err

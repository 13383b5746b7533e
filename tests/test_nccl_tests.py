"""The nccl-tests reader, against every real log in ../shared/data/nccl-tests and against
small files written to nccl-tests' own format (src/util.cu: writeResultHeader,
writeBenchmarkLinePreamble/Body, the JSON writer)."""

from __future__ import annotations

import json

import pytest
from conftest import SHARED_DATA, needs_shared_data

from schedc.errors import SchedcError
from schedc.measure.nccl_tests import LogError, read_log

LOGS = SHARED_DATA / "nccl-tests"
ALL_LOGS = sorted(LOGS.glob("*.txt")) if LOGS.is_dir() else []


def _log(name: str):
    return read_log(needs_shared_data("nccl-tests", name))


# Without the folder, one case that skips saying so (an empty parameter set would not name it).
@pytest.mark.parametrize("path", ALL_LOGS or [LOGS], ids=lambda p: p.name)
def test_every_real_log_reads_and_its_algbw_is_bytes_over_time(path):
    if not ALL_LOGS:
        needs_shared_data("nccl-tests")
        pytest.skip(f"{LOGS} holds no logs")
    log = read_log(path)
    assert log.tables
    for table in log.tables:
        for row in table.rows:
            assert row.type == "float"
            for m in (row.out_of_place, row.in_place):
                # algbw = count · 4 B / time (nccl-tests' size column is count · 4 B except in
                # the old 2-GPU excerpt, whose size is twice that); two decimals: check >= 1.
                if m.algbw >= 1:
                    assert row.count * 4 / (m.time_us * 1e-6) / 1e9 == \
                        pytest.approx(m.algbw, rel=0.01)


def test_empty_folder_is_skipped_not_passed():
    needs_shared_data("nccl-tests")
    if not ALL_LOGS:
        pytest.skip(f"{LOGS} holds no logs")
    assert len(ALL_LOGS) >= 4


def test_single_host_h100_rows_by_hand():
    table = _log("nvidia_dgxc_1node_8xH100_nvlink_allreduce.txt").table()
    # The log lists ranks 0..7 ('#  Rank  7 Group ...'); 32 sizes 8 B .. 16 GiB.
    assert table.ranks == 8 and len(table.rows) == 32
    assert (table.rows[0].size, table.rows[-1].size) == (8, 2**34)
    last = table.rows[-1]
    # '17179869184 4294967296 float sum -1 62648 274.23 479.90 0 62636 274.28 479.99 0'
    assert (last.count, last.type, last.redop, last.root) == (2**32, "float", "sum", -1)
    assert last.out_of_place.time_us == 62648 and last.in_place.time_us == 62636
    assert last.time_s() == pytest.approx(62648e-6)
    # busbw = algbw · 2(n-1)/n for an all-reduce of n = 8: 274.23 · 1.75 = 479.90.
    assert table.busbw_factor() is None  # the excerpt does not name its binary
    assert last.out_of_place.busbw == pytest.approx(last.out_of_place.algbw * 2 * 7 / 8, abs=0.01)
    # The newer header's extra fields are read as they stand.
    fields = dict(table.fields)
    assert fields["maxBytes"] == "17179869184" and fields["direction"] == "H2D"
    assert fields["warmup iters"] == "5" and fields["side_work"] == "0"


def test_busbw_factor_of_every_row_with_16_ranks():
    table = _log("oci_2node_16xA100-SXM4-40GB_rdma_allreduce.txt").table()
    assert table.ranks == 16 and len(table.rows) == 31
    for row in table.rows:  # busbw = algbw · 2·15/16, where two decimals show it
        m = row.out_of_place
        if m.algbw >= 1:
            assert m.busbw == pytest.approx(m.algbw * 30 / 16, rel=0.01)
    assert table.rows[-1].out_of_place.time_us == 67689


def test_launcher_prefixes_are_stripped():
    srun = _log("aws_2node_p4de_16xA100-80GB_efa_allreduce.txt").table()
    assert len(srun.rows) == 29 and srun.rows[-1].out_of_place.time_us == 51406  # '0: ' lines
    mpirun = _log("aws_2node_p5_16xH100_efa_allreduce_eks_nccl2.18.5_excerpt.txt").table()
    # '[1,0]<stdout>:' lines; the '...' elision is not a row.
    assert [r.size for r in mpirun.rows] == [0] + [2**k for k in range(26, 32)]
    assert mpirun.rows[-1].in_place.time_us == 9195.2


def test_old_format_and_hand_assembled_tables():
    tables = _log("issue_excerpts_partial.txt").tables
    # A: old format without redop/root, 'error' column, no header; B, C, D separately.
    assert [len(t.rows) for t in tables] == [13, 4, 10, 2]
    old = tables[0].rows[0]
    assert (old.size, old.redop, old.root, old.out_of_place.time_us, old.in_place.wrong) == \
        (32768, None, None, 13.39, 0.0)
    p4dn = _log("nccl_issue527_p4dn_1to4_nodes_1GiB.txt").table()
    # The user's extra 'p4dn' column is named by the header and not mistaken for the size.
    assert [r.out_of_place.time_us for r in p4dn.rows] == [8142.6, 35215, 64782, 70253]
    assert p4dn.rows[0].redop == "sum" and p4dn.rows[0].root is None


def test_several_tables_in_one_log():
    log = _log("llm_insights_intranode_A40-NV4_PCIe_DGXA100_DGXH100_4gpu.txt")
    assert len(log.tables) == 7 and all(len(t.rows) == 4 for t in log.tables)
    with pytest.raises(LogError, match="holds 7 nccl-tests tables"):
        log.table()


# ---- files in nccl-tests' formats, written here ---------------------------------------------

# writeResultHeader with -I (per-iteration columns), a broadcast_perf run with root 0, and
# '#wrong' N/A (-c 0); a launcher prefix and an NCCL INFO line around it.
PER_ITER = """\
# nccl-tests version 2.19.6 nccl-headers=22807 nccl-library=22807
# Collective test starting: broadcast_perf
# nThread 1 nGpus 4 minBytes 1024 maxBytes 2048 step: 2(factor) warmup iters: 1 iters: 5 agg iters: 1 validation: 0 graph: 0 unalign: 0
#
# Using devices
#  Rank  0 Group  0 Pid   1 on       host device  0 [0000:19:00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid   1 on       host device  1 [0000:2d:00] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid   1 on       host device  2 [0000:3f:00] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid   1 on       host device  3 [0000:66:00] NVIDIA H100 80GB HBM3
host:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 4 - Init COMPLETE
#
#                                                out-of-place (+ per-iteration)                                in-place (+ per-iteration)
#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)     (us)     (us)      (%)     (us)  (GB/s)  (GB/s)             (us)     (us)     (us)      (%)
        1024           256     float    none       0    10.00    0.10    0.10     N/A     9.50    11.00    11.00     5.00    12.00    0.09    0.09     N/A    11.00    13.00    13.00     4.00
        2048           512     float    none       0    20.00    0.10    0.10     N/A    19.00    21.00    21.00     3.00    22.00    0.09    0.09     N/A    21.00    23.00    23.00     2.00
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0.1
"""


def test_per_iteration_columns_and_another_binary(tmp_path):
    path = tmp_path / "bcast.txt"
    path.write_text(PER_ITER)
    table = read_log(path).table()
    assert (table.collective, table.ranks, table.busbw_factor()) == ("broadcast", 4, 1.0)
    row = table.rows[1]
    # The second time column is in-place, not i_min of out-of-place.
    assert (row.root, row.redop, row.out_of_place.time_us, row.in_place.time_us) == \
        (0, "none", 20.0, 22.0)
    assert row.out_of_place.wrong is None


# The JSON writer (util.cu) writes one line, keys in this order; 'root' is the "%6i" text.
JSON_DOC = {
    "version": 3, "start_time": "2026-01-01 00:00:00",
    "args": ["./build/all_reduce_perf", "-b", "8", "-e", "16", "-J", "out.json"],
    "env": ["HOME=/root"], "nccl_version": 22807,
    "config": {"nthreads": 1, "ngpus": 1, "minimum_bytes": 8, "maximum_bytes": 16,
               "step_factor": 2, "warmup_iters": 5, "iterations": 20,
               "aggregated_iterations": 1, "validation": 1, "graph": 0,
               "blocking_collectives": "false", "per_iter_timing": "false", "per_iter_skip": 0,
               "parallel_init": "false",
               "devices": [{"rank": 0, "group": 0, "pid": 7, "hostname": "a", "device": 0,
                            "device_hex": "0000:19:00", "device_info": "NVIDIA H100"},
                           {"rank": 8, "group": 0, "pid": 7, "hostname": "b", "device": 0,
                            "device_hex": "0000:19:00", "device_info": "NVIDIA H100"}]},
    "results": [
        {"size": 8, "count": 2, "type": "float", "redop": "sum", "root": "    -1",
         "out_of_place": {"time": 36.47, "alg_bw": 0.0, "bus_bw": 0.0, "nwrong": 0.0},
         "in_place": {"time": 34.74, "alg_bw": 0.0, "bus_bw": 0.0, "nwrong": 0.0},
         "actual_iterations": 20, "experiment_name": ""},
        {"size": 16, "count": 4, "type": "float", "redop": "sum", "root": "    -1",
         "out_of_place": None,
         "in_place": {"time": 35.65, "alg_bw": 0.0, "bus_bw": 0.0, "nwrong": None},
         "actual_iterations": 20, "experiment_name": ""}],
    "out_of_bounds": {"count": 0, "okay": "true"},
    "average_bus_bandwidth": {"bandwidth": 0.0, "okay": "unchecked"},
    "errors": [], "end_time": "2026-01-01 00:00:01",
}


def test_json_output(tmp_path):
    path = tmp_path / "out.json"
    path.write_text(json.dumps(JSON_DOC, separators=(",", ":")))
    log = read_log(path)
    table = log.table()
    # Two processes (one device entry each) × 1 thread × 1 GPU; the binary from args[0].
    assert (log.format, table.collective, table.ranks) == ("json", "all_reduce", 2)
    first, second = table.rows
    assert (first.size, first.root, first.out_of_place.time_us, first.in_place.time_us) == \
        (8, -1, 36.47, 34.74)
    assert second.out_of_place is None and second.time_s() == pytest.approx(35.65e-6)
    assert dict(table.fields)["step_factor"] == "2"


def _error(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(SchedcError) as exc:
        read_log(path)
    return exc.value.render()


def test_malformed_logs_point_at_line_and_column(tmp_path):
    header = ("#       size         count      type   redop    root     time   algbw   busbw #wrong"
              "     time   algbw   busbw #wrong\n")
    bad_time = header + "        1024           256     float    sum      -1    1x.0    0.10    0.10  0  12.00  0.09  0.09  0\n"
    message = _error(tmp_path, "a.txt", bad_time)
    assert message.startswith(f"{tmp_path / 'a.txt'}:2:56: error: expected a number for time")
    short = header + "        1024           256     float    sum      -1    10.0\n"
    assert ":2:" in _error(tmp_path, "b.txt", short) and "the row has 6 fields" in \
        _error(tmp_path, "b.txt", short)
    assert "without a header" in _error(tmp_path, "c.txt", "8 2 float 1.0 0.0\n")
    broken = json.dumps(JSON_DOC)[:-3]
    assert "not valid JSON" in _error(tmp_path, "d.json", broken)
    doc = json.loads(json.dumps(JSON_DOC))
    doc["results"][1]["size"] = "16"
    assert "results[1].size must be a whole number" in \
        _error(tmp_path, "e.json", json.dumps(doc))

"""nccl-tests logs as real runs print them, in the dialects a first reader missed: the old
`error` column (a largest difference, not a count), binaries built with a NAME_SUFFIX, old
all-to-all rows with an empty redop, tables pasted as Markdown quotes, `-d all` tables of
several datatypes, and tables that name no collective but whose busbw/algbw does; and two
things the same probe of real files found in `predict` and `calibrate` (an MSCCL file's
machine, an undetermined param's label).

Every log here is written by hand in nccl-tests' print format (the rule and its source line
beside each); none is copied from a real run."""

from __future__ import annotations

import pytest
from conftest import SCHEDULES, write

import schedc
from schedc.analysis.calibrate.calibration import check_table
from schedc.measure.nccl_tests import read_log

FLAT_8 = """\
import "{lib}"
param V = 1 GiB
param alpha = 5 us
param B = 100 GB/s
topology {{
  gpu g[8]
  switch sw
  link g[i] <-> sw bw B class nvlink for i in 0..7
}}
let ranks = [g[i] for i in 0..7]
{collective} V over ranks
schedule s = {call}
"""


def _machine(tmp_path, collective="allreduce", call="ring_allreduce(ranks)"):
    return write(tmp_path, "flat.sched", FLAT_8.format(lib=SCHEDULES / "lib" / "ring.sched",
                                                       collective=collective, call=call))


RANKS = "".join(f"#   Rank  {r} Pid    746 on host0 device  {r} [0x{r:02x}] Tesla V100\n"
                for r in range(8))
# nccl-tests before 2.13 (8274cb4): `%5.0le` of the largest difference in the `error` column.
OLD_HEADER = ("# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5"
              " iters: 20 validation: 1\n#\n# Using devices\n" + RANKS + "#\n"
              "#       size         count    type   redop     time   algbw   busbw  error"
              "     time   algbw   busbw  error\n"
              "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)       "
              "     (us)  (GB/s)  (GB/s)\n")


def _old_row(size: int, us: float, error: str, op: str = "sum", type_: str = "float") -> str:
    algbw = size / us / 1e3
    return (f"{size:>12} {size // 4:>13} {type_:>7} {op:>7} {us:>8.2f} {algbw:>7.2f} "
            f"{algbw * 1.75:>7.2f} {error:>6} {us:>8.2f} {algbw:>7.2f} {algbw * 1.75:>7.2f} "
            f"{error:>6}\n")


def test_the_old_error_column_is_judged_by_nccl_tests_own_tolerance(tmp_path):
    # src/common.cu:464 at 8274cb4: a row is wrong when maxDelta > DeltaMaxValue(type) ×
    # (nranks − 1); DeltaMaxValue(float) = 1e-5 (:116), so 7e-5 is the limit on 8 ranks.
    rows = _old_row(1 << 20, 60.0, "2e-07") + _old_row(1 << 22, 120.0, "6e-05") \
        + _old_row(1 << 24, 400.0, "8e-05")
    table = read_log(write(tmp_path, "old.txt", OLD_HEADER + rows)).table()
    assert [r.out_of_place.wrong for r in table.rows] == [0.0, 0.0, 1.0]


def test_an_old_log_with_float_rounding_predicts(run, tmp_path):
    rows = "".join(_old_row(1 << k, 40.0 + (1 << k) / 50e3, "2e-07") for k in range(16, 27, 2))
    log = write(tmp_path, "old.txt", OLD_HEADER + rows)
    code, out, err = run("predict", _machine(tmp_path), "--against", log)
    assert code == 0, err
    assert "6 measured rows" in out


def test_an_old_half_precision_error_uses_its_own_tolerance(tmp_path):
    # DeltaMaxValue(half) = 1e-2 (src/common.cu:112 at 8274cb4): 5e-3 is within it.
    rows = _old_row(1 << 20, 60.0, "5e-03", type_="half")
    table = read_log(write(tmp_path, "old.txt", OLD_HEADER + rows)).table()
    assert table.rows[0].out_of_place.wrong == 0.0


def test_an_old_alltoall_row_has_an_empty_redop(tmp_path):
    # Before d313d20, alltoall's op name was "" (src/alltoall.cu:111 at 464f038), printed
    # with %6s (src/common.cu:19): the row has one field fewer than the header.
    row = f"{1 << 20:>12} {1 << 18:>13} {'float':>7} {'':>7} {60.0:>8.2f} {17.48:>7.2f} " \
          f"{15.29:>7.2f} {'N/A':>6} {60.0:>8.2f} {17.48:>7.2f} {15.29:>7.2f} {'N/A':>6}\n"
    table = read_log(write(tmp_path, "a2a.txt", OLD_HEADER + row)).table()
    assert table.rows[0].redop == "none"
    assert table.rows[0].out_of_place.time_us == 60.0
    assert table.row_shape() == "no reduction"


NEW_HEADER = ("#  Rank  0 Group  0 Pid  11 on host0 device  0 [0000:04:00] NVIDIA H100\n"
              "#  Rank  1 Group  0 Pid  12 on host1 device  0 [0000:04:00] NVIDIA H100\n"
              "#\n#       size         count      type   redop    root     time   algbw   busbw"
              " #wrong     time   algbw   busbw #wrong\n")
NEW_ROW = "     1048576        262144     float    none      -1    60.00   17.48    8.74      0" \
          "    60.00   17.48    8.74      0\n"


@pytest.mark.parametrize("binary", ["all_gather_perf_mpi", "all_gather_perf_custom2"])
def test_a_binary_with_a_name_suffix_names_its_collective(tmp_path, binary):
    # nccl-tests' src/Makefile:38 (a0b82b2) appends NAME_SUFFIX (`make MPI=1 NAME_SUFFIX=_mpi`).
    log = write(tmp_path, "ag.txt", f"# Collective test starting: {binary}\n"
                f"mpirun -np 2 ./build/{binary} -b 8 -e 1G\n" + NEW_HEADER + NEW_ROW)
    assert read_log(log).table().collective == "all_gather"


def test_a_markdown_quoted_table_is_read(tmp_path):
    quoted = "".join("> " + line + "\n" for line in (NEW_HEADER + NEW_ROW).splitlines())
    table = read_log(write(tmp_path, "q.md", "Our run:\n\n" + quoted)).table()
    assert (table.ranks, len(table.rows), table.rows[0].size) == (2, 1, 1 << 20)


def test_a_table_of_several_datatypes_is_refused_at_the_second(run, tmp_path):
    half = NEW_ROW.replace("   float", "    half")
    log = write(tmp_path, "all.txt", NEW_HEADER + NEW_ROW + half)
    code, out, err = run("predict", _machine(tmp_path), "--against", log)
    assert (code, out) == (2, "")
    assert err.startswith(f"{log}:6:")
    assert "mixes datatypes: float (line 5), half (line 6)" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("factor, named", [(0.875, "all_gather or alltoall or reduce_scatter"),
                                           (1.0, "broadcast or reduce")])
def test_an_unnamed_table_whose_busbw_is_not_all_reduces_is_refused(run, tmp_path, factor, named):
    # 8 ranks: nccl-tests' factor is 2(n-1)/n = 1.75 for all-reduce, (n-1)/n = 0.875 for
    # all-gather, reduce-scatter and all-to-all, 1 for broadcast and reduce
    # (doc/PERFORMANCE.md); the redop column alone cannot tell reduce-scatter from all-reduce.
    algbw = 64.0  # (busbw 56.00 and 64.00: the ratios print exactly)
    rows = f"{1 << 24:>12} {1 << 22:>13} {'float':>7} {'sum':>7} {320.0:>8.2f} {algbw:>7.2f} " \
           f"{algbw * factor:>7.2f} {'0e+00':>6} {320.0:>8.2f} {algbw:>7.2f} " \
           f"{algbw * factor:>7.2f} {'0e+00':>6}\n"
    log = write(tmp_path, "rs.txt", OLD_HEADER + rows)
    code, out, err = run("predict", _machine(tmp_path), "--against", log)
    assert (code, out) == (2, "")
    assert f"busbw/algbw of {factor:.4f} is nccl-tests' factor for {named} on its 8 ranks" in err


def test_an_unnamed_all_reduce_table_says_its_busbw_fits(tmp_path):
    rows = "".join(_old_row(1 << k, 40.0 + (1 << k) / 50e3, "2e-07") for k in range(20, 27, 2))
    table = read_log(write(tmp_path, "ar.txt", OLD_HEADER + rows)).table()
    said = check_table(schedc.load(_machine(tmp_path)), "s", table, "ar.txt")
    assert said == ["ar.txt: collective: the log names none; its rows' redop/root and "
                    "busbw/algbw fit all_reduce, 8 ranks from its '#  Rank' lines, 8 ranks from "
                    "its busbw/algbw, 1 host from its '#  Rank' lines"]


def test_predict_times_an_msccl_algorithm_on_a_named_machine(run, tmp_path):
    # `predict FILE.xml` needs the machine, as `time FILE.xml --machine M.sched` does; the
    # hint it gives without one names an option predict has.
    xml = SCHEDULES.parent / "tests" / "fixtures" / "msccl-tools" / "allgather_ring_8_4_1.xml"
    machine = write(tmp_path, "m.sched", "param alpha = 1 us\nparam B = 50 GB/s\ntopology {\n"
                    "  gpu g[8]\n  switch sw\n  link g[i] <-> sw bw B class port for i in 0..7\n"
                    "}\nlet ranks = [g[i] for i in 0..7]\n")
    row = NEW_ROW.replace("    60.00   17.48    8.74", "    60.00   17.48   15.30")
    ranks = "".join(f"#  Rank {r:2d} Group  0 Pid  1{r} on host0 device {r:2d} [0000:04:00] "
                    "NVIDIA H100\n" for r in range(8))
    log = write(tmp_path, "ag.txt", "# Collective test starting: all_gather_perf\n" + ranks
                + NEW_HEADER.split("#\n", 1)[1] + row)
    code, out, err = run("predict", xml, "--against", log)
    assert code == 2 and "name one with --machine M.sched" in err
    code, out, err = run("predict", xml, "--machine", machine, "--against", log)
    assert code == 0, err
    assert "against 1 measured rows" in out
    code, out, err = run("calibrate", log, "--machine", xml)
    assert code == 2 and "`schedc predict FILE.xml --machine M.sched --against LOG`" in err


@pytest.mark.parametrize("value, flag", [
    (8.4e-6, "undetermined by the fit rows (they do not fit NCCL's value either: not held)"),
    (199.7e-6, "undetermined by the fit rows (pushed near its upper bound)"),
])
def test_an_undetermined_param_pushed_to_a_bound_is_not_held_by_its_prior(value, flag):
    # A param the fit rows cannot see (its Jacobian column is zero) that the other params
    # pushed to 199.7 us, near its 200 us bound, is undetermined, not "held by its prior"
    # of 8.4 us (a real two-log fit printed that); one not held at its prior (the fit refused
    # the hold, identify.py) says that the rows do not fit NCCL's value either.
    import math
    from types import SimpleNamespace

    import numpy as np

    from schedc.analysis.calibrate.fit import Unknown, _params
    from schedc.analysis.calibrate.roles import Role
    role = Role("startup", "the per-call latency", 1e-7, 200e-6, 8.4e-6, 1.0)
    unknowns = [Unknown("b_call", None, role, 8.4e-6, ()), Unknown("B", None, role, 1e-6, ())]
    jac = np.array([[0.0, 1.0], [0.0, 2.0], [0.0, 0.5]])
    best = SimpleNamespace(x=np.array([math.log(value), math.log(1e-6)]), jac=jac)
    lower, upper = [math.log(1e-7)] * 2, [math.log(200e-6)] * 2
    (b_call, _) = _params(unknowns, best, lambda x: np.zeros(3), [], lower, upper, 3)
    assert not b_call.determined
    assert b_call.flags == (flag,)


def test_a_collective_nccl_tests_does_not_measure_is_refused_at_its_declaration(run, tmp_path):
    # alltonext (msccl-tools' custom collective) has no nccl-tests binary: every route that
    # compares it with a log stops at the collective, exit 2, no traceback.
    machine = _machine(tmp_path, "alltonext", "shift_to_next(ranks)").read_text().replace(
        str(SCHEDULES / "lib" / "ring.sched"), str(SCHEDULES / "lib" / "neighbour.sched"))
    machine = write(tmp_path, "next.sched", machine)
    log = write(tmp_path, "ag.txt", "# Collective test starting: all_gather_perf\n"
                + NEW_HEADER + NEW_ROW)
    refused = f"{machine}:11:1: error: nccl-tests has no benchmark of alltonext"
    for args, message in ((("predict", machine, "--against", log), refused),
                          (("calibrate", log, "--machine", machine), refused),
                          (("predict", machine, "--against", log, "--nccl"),
                           "error: NCCL's tuning model has no collective 'alltonext'")):
        code, out, err = run(*args)
        assert (code, out) == (2, ""), (args, err)
        assert message in err, err
        assert "Traceback" not in err


def test_only_nccl_tests_binaries_name_a_collective(tmp_path):
    # BIN_FILES_LIST (src/Makefile:37 at a0b82b2): a job named nccl_perf_sweep is no binary.
    log = write(tmp_path, "job.txt", "Starting job nccl_perf_sweep on 1 node\n"
                + NEW_HEADER + NEW_ROW)
    assert read_log(log).table().collective is None


def test_the_runs_own_count_of_wrong_rows_outranks_the_judgement(tmp_path):
    # The column is printed to one digit (`%5.0le`), so a row near the limit can be judged
    # either way; the run's own footer (common.cu:1202 at 8274cb4) says whether any row was
    # wrong, and wins: 1e-04 on 2 ranks is above DeltaMaxValue(float) × 1 = 1e-5 by the rule,
    # not wrong by a footer of 0, still wrong by a footer that counts errors.
    header = OLD_HEADER.replace("nGpus 8", "nGpus 2").replace(RANKS, "")
    rows = _old_row(1 << 20, 60.0, "1e-04")
    judged = read_log(write(tmp_path, "a.txt", header + rows)).table()
    assert judged.rows[0].out_of_place.wrong == 1.0
    footer = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1.23\n"
    counted = read_log(write(tmp_path, "b.txt", header + rows + footer)).table()
    assert counted.rows[0].out_of_place.wrong == 0.0
    failed = read_log(write(tmp_path, "c.txt", header + rows
                            + "# Out of bounds values : 3 FAILED\n")).table()
    assert failed.rows[0].out_of_place.wrong == 1.0

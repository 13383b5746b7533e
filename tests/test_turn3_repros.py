"""One test per cause of the hostile-input campaign of issue 25 (../shared/repros/turn3, r01-r15),
each input re-created here: bad values in nccl-tests logs, a unitless param at 0 dividing a
bandwidth, `--fit` naming a param twice, outputs into missing folders, over an input or onto
special files, imports of any file, machines of too many devices, inputs too large, and values
beyond the float range. Each ends in its exact message and exit code."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest
from conftest import ROOT, write

from schedc.limits import MAX_DEVICES, MAX_INPUT_BYTES, MAX_LOG_ROWS

CALIBRATION = ROOT / "schedules" / "calibration"
DGX = CALIBRATION / "nvidia_dgxc_1node_8xH100_nvlink_allreduce.sched"
P5 = CALIBRATION / "aws_2node_p5_16xH100_efa_allreduce.sched"
FAT_TREE = ROOT / "schedules" / "algorithms" / "fat_tree_4x8.sched"
FLAT_8 = ROOT / "schedules" / "algorithms" / "flat_8.sched"
PCIE = ROOT / "schedules" / "seed" / "pcie_2x4.sched"

# ---- nccl-tests logs (r01-r04, r11) -----------------------------------------------------------

def _header(ranks: int = 8) -> list[str]:
    return [f"#  Rank {r:2d} Group  0 Pid 100{r} on node device {r % 8:2d} [0000:19:00] NVIDIA "
            "H100" for r in range(ranks)] + COLUMNS


COLUMNS = [
    "#",
    "#       size         count      type   redop    root     time   algbw   busbw #wrong"
    "     time   algbw   busbw #wrong",
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       "
    "     (us)  (GB/s)  (GB/s)"]
HEADER = _header()
WIDTHS = (12, 14, 10, 8, 8, 9, 8, 8, 7, 9, 8, 8, 7)  # nccl-tests' right-aligned columns


def _row(size: str, time: str = "14.92") -> tuple[str, dict[str, int]]:
    """A row of an 8-rank all-reduce and the column (from 1) where each of its fields starts."""
    fields = [size, "16", "float", "sum", "-1", time, "0.00", "0.01", "0", "14.72", "0.00",
              "0.01", "0"]
    text, starts = "", {}
    for name, value, width in zip(("size", "count", "type", "redop", "root", "time"), fields,
                                  WIDTHS):
        text += value.rjust(width)
        starts[name] = len(text) - len(value) + 1
    for value, width in zip(fields[6:], WIDTHS[6:]):
        text += value.rjust(width)
    return text, starts


def _log(tmp_path: Path, bad: str, name: str = "log.txt",
         ranks: int = 8) -> tuple[Path, int, str]:
    """A log whose second row is `bad`; (its path, that row's line number, the row)."""
    rows = [_row(str(8 * 2**k), f"{13.5 + k:.2f}")[0] for k in range(4)]
    rows[1] = bad
    header = _header(ranks)
    path = write(tmp_path, name, "\n".join([*header, *rows]) + "\n")
    return path, len(header) + 2, bad


def _diagnostic(err: str) -> tuple[str, str, str]:
    first, excerpt, caret = err.splitlines()[:3]
    return first, excerpt, caret


@pytest.mark.parametrize("time, message", [
    ("0", "time must be from 0.001 us to 10^12 us, got '0'"),  # r01: ZeroDivisionError before
    ("1e-300", "time must be from 0.001 us to 10^12 us, got '1e-300'"),  # r11: 300-digit errors
    ("2e12", "time must be from 0.001 us to 10^12 us, got '2e12'"),
    ("inf", "time must be a finite number, got 'inf'"),  # r03: accepted, "inf s", -100.0%
    ("1e400", "time must be a finite number, got '1e400'"),
    ("nan", "time must be a finite number, got 'nan'"),
    ("-3", "time must be from 0.001 us to 10^12 us, got '-3'"),
])
def test_a_log_time_out_of_range_is_refused_at_its_column(run, tmp_path, time, message):
    text, starts = _row("16", time)
    log, line, row = _log(tmp_path, text)
    code, out, err = run("predict", DGX, "--against", log)
    assert code == 2 and out == ""
    first, excerpt, caret = _diagnostic(err)
    assert first == f"{log}:{line}:{starts['time']}: error: {message}"
    assert excerpt == "  " + row
    assert caret == "  " + " " * (starts["time"] - 1) + "^" + "~" * (len(time) - 1)


def test_a_log_size_past_pythons_digit_limit_is_refused(run, tmp_path):
    # int() refuses strings of over 4,300 digits (a ValueError, exit 70, before the check)
    size = "1" + "0" * 5000
    log, line, _ = _log(tmp_path, _row(size)[0])
    code, _, err = run("predict", DGX, "--against", log)
    assert code == 2 and err.splitlines()[0] == (
        f"{log}:{line}:1: error: size must be at most 9,223,372,036,854,775,807 (nccl-tests "
        "counts in 64 bits), got 5001 digits")


def test_a_log_size_of_401_digits_is_refused_by_predict_and_calibrate(run, tmp_path):
    # r02: OverflowError (int too large to convert to float), exit 70
    size = "1" + "0" * 400
    log, line, _ = _log(tmp_path, _row(size)[0])
    expected = (f"{log}:{line}:1: error: size must be at most 9,223,372,036,854,775,807 "
                "(nccl-tests counts in 64 bits), got 401 digits")
    for args in (("predict", DGX, "--against", log), ("calibrate", log, "--machine", DGX)):
        code, _, err = run(*args)
        assert code == 2 and err.splitlines()[0] == expected


def test_a_negative_log_size_is_refused_not_dropped(run, tmp_path):
    # r04: the row was dropped silently (3 rows of 4 compared)
    text, starts = _row("-16")
    log, line, _ = _log(tmp_path, text)
    code, _, err = run("predict", DGX, "--against", log)
    assert code == 2
    assert err.splitlines()[0] == (f"{log}:{line}:{starts['size']}: error: size must be a whole "
                                   "number of bytes, got '-16'")


def test_a_json_log_with_a_zero_or_huge_value_is_refused(run, tmp_path):
    def document(time: str, size: str = "16") -> str:
        return ('{"config": {}, "results": [{"size": ' + size + ', "count": 4, "type": "float",'
                ' "redop": "sum", "root": -1, "out_of_place": {"time": ' + time + ', "alg_bw": 0,'
                ' "bus_bw": 0, "nwrong": 0}, "in_place": null}]}\n')
    for time, size, message in (
            ("0", "16", "results[0].out_of_place.time must be from 0.001 us to 10^12 us, got 0"),
            ("1e400", "16", "results[0].out_of_place.time must be a finite number, got inf"),
            ("13.0", "1" + "0" * 400, "results[0].size must be a whole number, got " + "1" + "0" * 400)):
        log = write(tmp_path, "log.json", document(time, size))
        code, _, err = run("predict", DGX, "--against", log)
        assert code == 2, err
        col = document(time, size).index('{"size"') + 1
        assert err.splitlines()[0] == f"{log}:1:{col}: error: {message}"


def test_a_log_of_too_many_rows_is_refused_at_the_first_row_beyond(run, tmp_path):
    # r14: a 10^6-row log was read and compared whole (84 s, 1.38 GB)
    rows = [_row(str(8 * (k + 1)))[0] for k in range(MAX_LOG_ROWS + 5)]
    log = write(tmp_path, "long.txt", "\n".join([*HEADER, *rows]) + "\n")
    code, _, err = run("predict", DGX, "--against", log)
    assert code == 2
    col = _row(str(8 * (MAX_LOG_ROWS + 1)))[1]["size"]
    assert err.splitlines()[0] == (f"{log}:{len(HEADER) + MAX_LOG_ROWS + 1}:{col}: error: row "
                                   f"{MAX_LOG_ROWS + 1:,}: a log is limited to {MAX_LOG_ROWS:,} rows")


# ---- values (r05, r06, r15) -------------------------------------------------------------------

def test_a_unitless_param_at_zero_dividing_a_bandwidth_is_refused_at_the_link(run):
    # r05: TypeError "Invalid comparison of non-real zoo", exit 70 (time, sweep, tune...)
    machine = ROOT / "schedules" / "machines" / "fat_tree_4x8.sched"
    line = next(k for k, text in enumerate(machine.read_text().splitlines(), 1)
                if "bw B_up" in text)
    col = machine.read_text().splitlines()[line - 1].index("B_up") + 1
    for args in (("time", FAT_TREE), ("sweep", FAT_TREE, "--vary", "V=1MB:1GB:3")):
        code, out, err = run(*args, "--set", "oversub=0")
        assert code == 2 and out == ""
        first = err.splitlines()[0]
        assert first.endswith(f"fat_tree_4x8.sched:{line}:{col}: error: 'bw' must be positive; "
                              "this one is not a finite number (a division by zero, at these "
                              "values of its params?)")


def test_fit_naming_a_param_twice_is_refused(run, tmp_path):
    # r06: SyntaxError from lambdify (duplicate argument), exit 70
    log, _, _ = _log(tmp_path, _row("16")[0], ranks=16)
    code, out, err = run("calibrate", log, "--machine", P5, "--fit", "a_LL,a_LL")
    assert code == 2 and out == ""
    assert err.strip() == "error: --fit names a_LL twice"


def test_a_value_beyond_the_float_range_times_exactly_and_is_refused_by_sweep_and_report(
        run, tmp_path):
    # r15: report and sweep ended in OverflowError (exit 70); time answers exactly
    code, out, _ = run("time", FLAT_8, "--set", "V=1e300TB", "-s", "ring_allreduce")
    assert code == 0 and "e+" in out
    code, out, err = run("report", FLAT_8, "--set", "V=1e300TB", "-o", tmp_path / "v.html")
    assert code == 2 and not (tmp_path / "v.html").exists()
    assert err.strip() == ("error: V in a sweep (or a report's curves) is 2.44e+308 in base "
                           "units, beyond the floating-point range (about 1.8e308) analyses "
                           "compute in")
    code, out, err = run("sweep", FLAT_8, "--vary", "V=1e299TB:1e300TB:3")
    assert code == 2 and out == ""
    assert err.splitlines()[0] == ("--vary V:1:1: error: an end of the range is 1.00e+311 in "
                                   "base units, beyond the floating-point range (about 1.8e308) "
                                   "analyses compute in")


# ---- outputs (r07, r08, r09) ------------------------------------------------------------------

def test_writing_into_a_missing_folder_is_refused_before_any_work(run, tmp_path):
    # r07: calibrate --write / predict --plot: FileNotFoundError on the temporary file, exit 70
    log, _, _ = _log(tmp_path, _row("16")[0])
    missing = tmp_path / "nodir" / "x"
    for args, target in ((("calibrate", log, "--machine", DGX, "--write"), missing / "fit.sched"),
                         (("predict", DGX, "--against", log, "--plot"), missing / "p.png"),
                         (("sweep", PCIE, "--vary", "V=1MB:1GB:3", "--csv"), missing / "s.csv")):
        code, out, err = run(*args, target)
        assert code == 2 and out == ""
        assert err.strip() == f"error: cannot write {target}: no such directory {missing}"
    assert not (tmp_path / "nodir").exists()


def test_writing_into_proc_is_a_clean_error(run, tmp_path):
    log, _, _ = _log(tmp_path, _row("16")[0])
    code, _, err = run("calibrate", log, "--machine", DGX, "--write", "/proc/fit.sched")
    assert code == 2
    assert err.splitlines()[-1].startswith("error: cannot write /proc/fit.sched: ")


@pytest.fixture
def tree(tmp_path):
    """A copy of the shipped files the commands may (wrongly) be told to overwrite."""
    import shutil
    shutil.copytree(ROOT / "schedules", tmp_path / "schedules",
                    ignore=shutil.ignore_patterns("scale"))
    return tmp_path / "schedules"


def _clobber_cases(tree: Path) -> list[tuple[list, Path]]:
    seed, flat, tuner = (tree / "seed" / "nvlink_2x8.sched", tree / "algorithms" / "flat_8.sched",
                         tree / "examples" / "tuner_flat_8.sched")
    pcie = tree / "seed" / "pcie_2x4.sched"
    return [(["report", seed, "-o"], seed),
            (["export", "msccl", flat, "-s", "ring_allreduce", "-o"], flat),
            (["tune", tuner, "--collective", "allreduce", "--sizes", "1KB:1GB", "-o"], tuner),
            (["sweep", pcie, "--vary", "V=1MB:1GB:3", "--csv"], pcie),
            (["sweep", pcie, "--vary", "V=1MB:1GB:3", "--plot"], pcie)]


def test_an_output_naming_the_input_is_refused_and_the_input_kept(run, tree):
    # r08: the input was overwritten, exit 0
    for args, target in _clobber_cases(tree):
        before = target.read_bytes()
        code, out, err = run(*args, target)
        assert code == 2 and out == "", args
        assert err.strip() == (f"error: refusing to write {target}: it is an input of this run; "
                               "name another output file")
        assert target.read_bytes() == before


def test_an_output_reaching_the_input_through_a_link_is_refused(run, tree, tmp_path):
    pcie = tree / "seed" / "pcie_2x4.sched"
    before = pcie.read_bytes()
    (tmp_path / "soft.csv").symlink_to(pcie)
    os.link(pcie, tmp_path / "hard.csv")
    for name in ("soft.csv", "hard.csv"):
        code, _, err = run("sweep", pcie, "--vary", "V=1MB:1GB:3", "--csv", tmp_path / name)
        assert code == 2
        assert err.strip() == (f"error: refusing to write {tmp_path / name}: it is an input of "
                               f"this run ({pcie}); name another output file")
    assert pcie.read_bytes() == before and (tmp_path / "soft.csv").is_symlink()


def test_an_output_naming_an_imported_file_is_refused_at_the_import(run, tree):
    seed = tree / "seed" / "nvlink_2x8.sched"
    ring = tree / "lib" / "ring.sched"
    before = ring.read_bytes()
    code, out, err = run("sweep", seed, "--vary", "V=1MB:1GB:3", "--csv", ring)
    assert code == 2 and out == ""
    line = next(k for k, text in enumerate(seed.read_text().splitlines(), 1)
                if "lib/ring.sched" in text)
    assert err.splitlines()[0] == (f"{seed}:{line}:1: error: refusing to write {ring}: it is an "
                                   "input of this run; name another output file")
    assert ring.read_bytes() == before


def test_calibrate_write_naming_its_machine_is_refused(run, tree, tmp_path):
    # r08: the machine file became ten lines of fitted params
    machine = tree / "calibration" / DGX.name
    before = machine.read_bytes()
    log, _, _ = _log(tmp_path, _row("16")[0])
    code, out, err = run("calibrate", log, "--machine", machine, "--write", machine)
    assert code == 2 and out == ""
    assert err.strip() == (f"error: refusing to write {machine}: it is an input of this run; "
                           "name another output file")
    assert machine.read_bytes() == before


def _tune(run, output) -> tuple[int, str]:
    code, _, err = run("tune", ROOT / "schedules" / "examples" / "tuner_flat_8.sched",
                       "--collective", "allreduce", "--sizes", "1KB:1GB", "-o", output)
    return code, err


def test_a_fifo_output_is_written_through_not_replaced(run, tmp_path):
    # r09: the FIFO was replaced by a regular file
    code, err = _tune(run, tmp_path / "plain.csv")
    assert code == 0, err
    fifo = tmp_path / "out.csv"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    code, err = _tune(run, fifo)
    reader.join(timeout=60)
    assert code == 0, err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert received == [(tmp_path / "plain.csv").read_bytes()]


def test_dev_null_stays_a_device_and_dev_full_is_a_clean_error(run):
    before = os.stat("/dev/null")
    code, err = _tune(run, "/dev/null")
    assert code == 0, err
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    code, err = _tune(run, "/dev/full")
    assert code == 2 and err.strip() == "error: cannot write /dev/full: No space left on device"
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_a_symlink_to_a_regular_file_has_its_target_replaced_and_is_kept(run, tmp_path):
    code, err = _tune(run, tmp_path / "plain.csv")
    assert code == 0, err
    target = write(tmp_path, "target.csv", "old\n")
    (tmp_path / "link.csv").symlink_to(target)
    code, err = _tune(run, tmp_path / "link.csv")
    assert code == 0, err
    assert (tmp_path / "link.csv").is_symlink()
    assert target.read_bytes() == (tmp_path / "plain.csv").read_bytes()


def test_standard_output_named_as_a_file_is_written_in_order(tmp_path):
    # /dev/fd/1 (as /dev/stdout) when stdout is a regular file: written through the process's
    # own stream, so the CSV and the summary printed after it are both there, in order
    import subprocess
    import sys
    out = tmp_path / "out.txt"
    with open(out, "wb") as handle:
        subprocess.run([sys.executable, "-m", "schedc", "sweep", PCIE, "--vary", "V=1MB:1GB:3",
                        "--csv", "/dev/fd/1"], stdout=handle, check=True, cwd=tmp_path,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    lines = out.read_text().splitlines()
    assert lines[0] == "V (B),ring (s),hierarchical (s)" and len(lines) == 6
    assert lines[4].startswith("wrote 3 points of V") and lines[4].endswith("to /dev/fd/1")


def test_a_directory_output_is_refused(run, tmp_path):
    code, err = _tune(run, tmp_path)
    assert code == 2 and "is a directory" in err


# ---- inputs (r10, r12, r13, r14) --------------------------------------------------------------

@pytest.mark.parametrize("target", ["/proc/self/environ", "../../../../../../etc/passwd",
                                    "/dev/zero"])
def test_an_import_of_a_file_that_is_not_sched_is_refused_unread(run, tmp_path, target):
    # r10: the first line of the file was echoed; /dev/zero was read until out of memory
    path = write(tmp_path, "a.sched", f'import "{target}"\n')
    code, out, err = run("time", path)
    assert code == 2 and out == ""
    assert err.splitlines()[0] == (f"{path}:1:1: error: import reads .sched files; {target!r} "
                                   "is not one")
    assert "root:" not in err and "PATH=" not in err


def test_an_import_of_a_special_file_named_sched_is_refused_before_reading(run, tmp_path):
    (tmp_path / "zero.sched").symlink_to("/dev/zero")
    os.mkfifo(tmp_path / "fifo.sched")
    (tmp_path / "environ.sched").symlink_to("/proc/self/environ")
    for name, what in (("zero", "a character device, not a .sched file: inputs are regular files"),
                       ("fifo", "a FIFO, not a .sched file: inputs are regular files"),
                       ("environ", "a pseudo-file whose size is not known, not a .sched file")):
        path = write(tmp_path, "a.sched", f'import "{name}.sched"\n')
        code, _, err = run("time", path)
        assert code == 2
        assert err.splitlines()[0] == f"{path}:1:1: error: {tmp_path / name}.sched is {what}"
        assert "PATH=" not in err


def test_a_special_file_as_the_main_input_is_refused(run):
    code, _, err = run("time", "/dev/zero")
    assert code == 2
    assert err.strip() == ("error: /dev/zero is a character device, not a .sched file: inputs "
                           "are regular files")


def test_a_sched_file_that_is_not_utf8_is_refused_by_position(run, tmp_path):
    # A file named as .sched text is shown as any bad input is (the bad bytes as U+FFFD), with
    # the caret under the first bad byte (tests/test_diagnostics.py has more of these).
    path = tmp_path / "a.sched"
    path.write_bytes(b"param V = 1 MiB\nparam \xff\xfe secret\n")
    code, _, err = run("time", path)
    assert code == 2
    assert err.splitlines() == [f"{path}:2:7: error: byte 0xff is not UTF-8 text (invalid start "
                                "byte); schedc reads UTF-8 text files",
                                "  param \ufffd\ufffd secret", "        ^"]


def test_an_input_over_the_size_cap_is_refused_before_reading(run, tmp_path):
    # r14: a 200 MiB MSCCL XML was parsed whole (104 s, 760 MB); a sparse file costs nothing
    big = tmp_path / "big.xml"
    with open(big, "wb") as handle:
        handle.truncate(200 * 2**20)
    code, out, err = run("verify", big, "--machine", FLAT_8)
    assert code == 2 and out == ""
    assert err.strip() == (f"error: {big} has {200 * 2**20:,} bytes; inputs are limited to "
                           f"{MAX_INPUT_BYTES // 2**20} MiB")


def test_a_machine_of_too_many_devices_is_refused_at_the_count(run, files_of_machines):
    # r12/r13: host node[65536] (under the per-family cap) ran emit loads 21 s / 2.3 GB and
    # bound past 60 s / 4.85 GB
    path, line, col = files_of_machines
    for args in (("emit", "loads", path), ("bound", path), ("time", path)):
        code, out, err = run(*args)
        assert code == 2 and out == ""
        assert err.splitlines()[0] == (f"{path}:{line}:{col}: error: the topology would have "
                                       f"{65536 * 8:,} devices; the limit is {MAX_DEVICES:,}")


@pytest.fixture
def files_of_machines(tmp_path):
    text = ("param V = 1 MiB\nparam B = 1 GB/s\n"
            "topology {\n  host node[65536] {\n    gpu g[8]\n    switch sw\n"
            "    link g[i] <-> sw bw B for i in 0..7\n  }\n}\n")
    path = write(tmp_path, "huge.sched", text)
    return path, 5, text.splitlines()[4].index("8") + 1


def test_real_world_machines_stay_under_the_device_cap(tmp_path):
    # 1,024 hosts of 8 GPUs, an NVSwitch and 8 NICs each, 8 rails and a spine: 17,417 devices
    from schedc.elaborate.loader import load_program
    path = write(tmp_path, "big.sched",
                 "param B = 1 GB/s\ntopology {\n  host node[1024] {\n    gpu g[8]\n"
                 "    nic n[8]\n    switch nvs\n    link g[i] <-> nvs bw B for i in 0..7\n"
                 "    link g[i] <-> n[i] bw B for i in 0..7\n  }\n  switch rail[8]\n"
                 "  switch spine\n  link node[h].n[i] <-> rail[i] bw B for h in 0..1023 "
                 "for i in 0..7\n  link rail[i] <-> spine bw B for i in 0..7\n}\n")
    assert len(load_program(path).topology.devices) == 1024 * 17 + 9 <= MAX_DEVICES


# ---- more of the policy -------------------------------------------------------------------------

def test_two_outputs_naming_one_file_are_refused(run, tmp_path):
    target = tmp_path / "o.svg"
    code, out, err = run("sweep", PCIE, "--vary", "V=1MB:1GB:3", "--csv", target, "--plot", target)
    assert code == 2 and out == "" and not target.exists()
    assert err.strip() == (f"error: {target} is named twice as an output ({target}); two "
                           "outputs cannot share a file")


def test_the_inputs_of_a_run_share_one_size_budget(tmp_path):
    from schedc.errors import LoadError
    from schedc.files import RUN, Run, read_input
    path = write(tmp_path, "a.sched", "param V = 1 MiB\n")  # 16 bytes
    token = RUN.set(Run(read=MAX_INPUT_BYTES - 10))
    try:
        with pytest.raises(LoadError) as caught:
            read_input(path, "a .sched file")
    finally:
        RUN.reset(token)
    assert caught.value.message == (f"{path}: the inputs of this run would exceed "
                                    f"{MAX_INPUT_BYTES // 2**20} MiB ({MAX_INPUT_BYTES - 10:,} "
                                    "bytes read before it, and it has 16 bytes)")
    assert read_input(path, "a .sched file") == b"param V = 1 MiB\n"  # outside a run: per file


def test_a_replaced_output_keeps_its_mode(run, tmp_path):
    # The temporary file that replaces an output takes the old file's permission bits: a
    # private file stays private, an executable one executable.
    import os
    import stat
    out = tmp_path / "out.xml"
    out.write_text("old")
    out.chmod(0o600)
    code, _, err = run("export", "msccl", PCIE, "-s", "ring", "-o", out, "--force")  # (issue 24)
    assert code == 0, err
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600 and out.read_text() != "old"


def test_a_device_may_be_named_by_two_outputs():
    from schedc.files import Run
    run = Run()
    run.add_output("/dev/null")
    run.add_output("/dev/null")  # written through twice: nothing to clobber
    assert list(run.outputs.values()) == ["/dev/null"]

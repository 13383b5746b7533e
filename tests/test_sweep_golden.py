"""`schedc sweep`'s output, every format, against stored files written by the per-number code
before the sweep's output was vectorized (commit fa862c1): the text table, the JSON (short
lists indented, long ones on a line), the CSV file and the summary printed with it; log and
linear grids, a zero, times of 1e-05 s to 1e+17 s, a structural param, `--set` and `-s`.
Each case is also run with tiny blocks, so that a few hundred points cross many blocks (on
threads when the cores are free).

SCHEDC_UPDATE_GOLDEN=1 writes differing outputs as `*.new` candidates beside the expected
files, never over them: review the diff, then move them (docs/contributing.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import SCHEDULES, golden

from schedc.render import floats

EXPECTED = Path(__file__).parent / "fixtures" / "sweep"
NVLINK, PCIE = "schedules/seed/nvlink_2x8.sched", "schedules/seed/pcie_2x4.sched"
HOSTS = "schedules/seed/nvlink_hosts.sched"
CASES = {  # name -> the command's arguments; a case with --csv writes out.csv
    "table": [NVLINK, "--vary", "V=1KB:16GB:25"],
    "table_linear": [PCIE, "--vary", "B_L=4GB/s:128GB/s:9", "--linear"],
    "json": [NVLINK, "--vary", "V=1KB:16GB:300", "--json"],
    "json_short": [NVLINK, "--vary", "V=1MiB:512MiB:4", "-s", "ring", "--json"],
    "json_from_zero": [NVLINK, "--vary", "V=0B:1000000000GB:240", "--linear", "--json"],
    "json_huge_times": [PCIE, "--vary", "B_L=1B/s:10B/s:40", "--set", "V=100000TB",
                        "--json"],
    "csv": [NVLINK, "--vary", "V=1KB:16GB:300", "--csv", "out.csv"],
    "csv_from_zero": [NVLINK, "--vary", "V=0B:1000000000GB:240", "--linear", "-s",
                      "hierarchical", "-s", "ring", "--csv", "out.csv"],
    "csv_huge_times": [PCIE, "--vary", "B_L=1B/s:10B/s:40", "--set", "V=100000TB", "--csv",
                       "out.csv"],
    "structural": [HOSTS, "--vary", "hosts=2:4"],
    "structural_json": [HOSTS, "--vary", "hosts=2:4", "--json"],
    "structural_csv": [HOSTS, "--vary", "hosts=2:4", "--csv", "out.csv"],
}


def sweep_output(run, monkeypatch, tmp_path: Path, name: str) -> tuple[str, str | None]:
    """stdout, and the CSV file's text if the case writes one, run in a folder where
    `schedules` is the repository's (paths print as given: keep them short and fixed)."""
    (tmp_path / "schedules").symlink_to(SCHEDULES, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    code, out, err = run("sweep", *CASES[name])
    assert code == 0, err
    csv = tmp_path / "out.csv"
    return out, csv.read_text() if "--csv" in CASES[name] else None


@pytest.mark.parametrize("name", sorted(CASES))
def test_sweep_output_is_the_stored_output(run, monkeypatch, tmp_path, name):
    out, csv = sweep_output(run, monkeypatch, tmp_path, name)
    golden(EXPECTED / f"{name}.out", out)
    if csv is not None:
        golden(EXPECTED / f"{name}.csv", csv)


@pytest.mark.parametrize("name", ["json", "json_from_zero", "csv", "csv_huge_times"])
@pytest.mark.parametrize("load", [0.0, 9.0])  # threads on free cores, or one thread
def test_many_small_blocks_write_the_same_bytes(run, monkeypatch, tmp_path, name, load):
    monkeypatch.setattr(floats, "BLOCK", 64)
    monkeypatch.setattr(floats.os, "getloadavg", lambda: (load, load, load), raising=False)
    monkeypatch.setattr(floats.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    out, csv = sweep_output(run, monkeypatch, tmp_path, name)
    assert out == (EXPECTED / f"{name}.out").read_text()
    if csv is not None:
        assert csv == (EXPECTED / f"{name}.csv").read_text()


def test_json_sweep_into_a_text_only_stdout():
    """`schedc.cli.main` called with stdout a StringIO (no binary buffer), as a library user or
    benchmarks/solve.py does: the JSON comes out as text, the same document."""
    import contextlib
    import io
    import json

    from schedc.cli import main
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exited:
        main(["sweep", str(SCHEDULES / "seed/nvlink_2x8.sched"), "--vary", "V=1KB:1MB:3",
              "--json"])
    assert exited.value.code == 0
    document = json.loads(out.getvalue())
    assert document["schema"] == "schedc.sweep/1"
    assert document["values"] == [1000.0, 31622.7766017, 1000000.0]  # 1 kB·1000^(k/2)

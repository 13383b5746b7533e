"""Issue 36's limit cases: each one `schedc` process on generated inputs (under /tmp), its
wall and CPU time, peak RSS and outcome, against the target: done within 30 s and 2 GiB, or
refused (exit 2) within 2 s of CPU.

    python benchmarks/limits.py [--only PREFIX ...] [--wall 120] [--json FILE]

Each case runs under /usr/bin/time with an 8 GiB address-space cap (so a runaway allocation
is a MemoryError, not the kernel's OOM killer) and a wall-time cap (killed past it). CPU time
is user + system: on a loaded machine wall time says little, CPU time is the figure to
compare. The cases are those of ../shared/repros/turn4 (r06-r12, r19, r22, fuzz_c11) and the
campaign's other limit cases, their inputs made as the repros' gen.py make them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
S = ROOT / "schedules"
CALIB = S / "calibration" / "nvidia_dgxc_1node_8xH100_nvlink_allreduce.sched"
RING1024 = S / "scale" / "ring_1024.sched"
SMI_DGX1 = ROOT / "tests" / "fixtures" / "topo" / "dgx1-nvidia-smi-msccl-tools.txt"
ADDRESS_SPACE = 8 * 2**30
sys.path.insert(0, str(ROOT / "tests"))  # r06's rail machine, which the tests build too
from repro_inputs import gather_round, smi  # noqa: E402
from repro_inputs import rail_machine as rail  # noqa: E402
MACHINE = """param alpha = 1 us
param B = 25 GB/s
param V = 64 MiB
topology {
  gpu g[8]
  switch sw
  link g[i] <-> sw bw B for i in 0..7
}
let ranks = [g[i] for i in 0..7]
"""


def gather(hosts: int) -> str:
    """Every GPU to its rail's GPU on node[0]: every NIC's failure changes a route."""
    return rail(hosts, gather_round(hosts))


LOG_HEAD = ("# nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 "
            "iters: 20\n# Collective test starting: all_reduce_perf\n#       size         count"
            "      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
            "#wrong\n#        (B)    (elements)                               (us)  (GB/s)  "
            "(GB/s)            (us)  (GB/s)  (GB/s)\n")


def text_log(rows: int) -> str:
    return LOG_HEAD + "".join(f"{8 * (k + 1)} {2 * (k + 1)} float sum -1 10.0 0.0 0.0 0 10.0 0.0 "
                              "0.0 0\n" for k in range(rows))


def large_sizes_log(rows: int, sizes: int = 4) -> str:
    """fuzz_c11: sizes 1-8 GiB repeated (the rows say nothing of the latencies); with
    `sizes` > 4 on to 2^(29 + sizes) B, each twice the time of the last."""
    times = {2**30: 278168.0, 2**31: 534127.0, 2**32: 1106007.0, 2**33: 2382474.0}
    for k in range(4, sizes):
        times[2 ** (30 + k)] = 2 * times[2 ** (29 + k)]
    return LOG_HEAD + "".join(f"{s} {s // 4} float sum -1 {times[s]} 0.0 0.0 0 {times[s]} 0.0 "
                              "0.0 0\n" for s in (2 ** (30 + k % sizes) for k in range(rows)))


def json_log(rows: int, one_line: bool = False) -> str:
    result = ('{"size": %d, "count": %d, "type": "float", "redop": "sum", "root": -1, '
              '"out_of_place": {"time": 10.0, "alg_bw": 0.0, "bus_bw": 0.0, "nwrong": 0}, '
              '"in_place": {"time": 10.0, "alg_bw": 0.0, "bus_bw": 0.0, "nwrong": 0}}')
    results = (", " if one_line else ",\n").join(result % (8 * (k + 1), 2 * (k + 1))
                                                  for k in range(rows))
    return ('{"version": 3, "args": ["./build/all_reduce_perf"], "config": {"nthreads": 1, '
            '"ngpus": 1, "devices": [' + ", ".join('{"rank": %d}' % i for i in range(8))
            + ']}, "results": [' + results + "]}")


def msccl_xml(steps: int) -> str:
    """Two GPUs, one thread block each of `steps` nop steps (r08)."""
    out = ['<algo name="big" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" '
           'coll="allreduce" inplace="1" outofplace="0" minBytes="0" maxBytes="0">']
    for g in range(2):
        out.append(f'<gpu id="{g}" i_chunks="2" o_chunks="0" s_chunks="0">')
        out.append(f'<tb id="0" send="{1 - g}" recv="{1 - g}" chan="0">')
        out += [f'<step s="{s}" type="nop" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" '
                'depid="-1" deps="-1" hasdep="0"/>' for s in range(steps)]
        out += ["</tb>", "</gpu>"]
    return "\n".join([*out, "</algo>"]) + "\n"


def cases() -> list[tuple[str, dict, list[str]]]:
    """(name, {file: text}, argv with {file} and {out:name} placeholders)."""
    c: list[tuple[str, dict, list[str]]] = []
    c.append(("r06_whatif_nic_100_hosts", {"m.sched": rail(100)},
              ["whatif", "{m.sched}", "--class", "nic", "--no-verify"]))
    c.append(("r06_whatif_nic_200_hosts", {"m.sched": rail(200)},
              ["whatif", "{m.sched}", "--class", "nic", "--no-verify"]))
    for hosts in (500, 4000, 7000):
        c.append((f"r06_whatif_nic_{hosts}_hosts", {"m.sched": rail(hosts)},
                  ["whatif", "{m.sched}", "--class", "nic", "--no-verify"]))
    c.append(("r06_whatif_nic_200_hosts_gather", {"m.sched": gather(200)},
              ["whatif", "{m.sched}", "--class", "nic", "--no-verify"]))
    c.append(("r19_whatif_uplink_7000_hosts", {"m.sched": rail(7000)},
              ["whatif", "{m.sched}", "--class", "uplink", "--no-verify"]))
    c.append(("r07_smi_1000_gpus", {"s.txt": smi(1000)},
              ["machine", "import", "--nvidia-smi", "{s.txt}", "--sm", "90", "--nvlinks", "18"]))
    direct = smi(400).replace("GPU0\t X \tNV18", "GPU0\t X \tNV12", 1) \
        .replace("GPU1\tNV18", "GPU1\tNV12", 1)  # NV cells not all equal: 79,800 direct links
    c.append(("campaign_smi_400_gpus_direct_nvlinks", {"s.txt": direct},
              ["machine", "import", "--nvidia-smi", "{s.txt}", "--sm", "90", "--nvlinks", "18",
               "-o", "{out:m.sched}"]))
    c.append(("r08_msccl_20000_steps_executor", {"b.xml": msccl_xml(20000)},
              ["verify", "{b.xml}", "--executor", "msccl"]))
    c.append(("r09_export_msccl_ring_1024", {},
              ["export", "msccl", str(RING1024), "-s", "ring", "-o", "{out:r.xml}"]))
    c.append(("r10_calibrate_10000_rows", {"l.txt": text_log(10000)},
              ["calibrate", "{l.txt}", "--machine", str(CALIB)]))
    c.append(("r10_calibrate_10000_rows_json", {"l.json": json_log(10000)},
              ["calibrate", "{l.json}", "--machine", str(CALIB)]))
    c.append(("c11_calibrate_1000_rows_4_sizes", {"l.txt": large_sizes_log(1000)},
              ["calibrate", "{l.txt}", "--machine", str(CALIB)]))
    c.append(("c11_calibrate_1000_rows_8_sizes", {"l.txt": large_sizes_log(1000, 8)},
              ["calibrate", "{l.txt}", "--machine", str(CALIB)]))
    c.append(("r11_predict_one_line_json", {"l.json": json_log(10000, one_line=True)},
              ["predict", str(CALIB), "--against", "{l.json}"]))
    c.append(("r12_long_expression", {"c.sched": MACHINE + "report y = " + "1 + " * 3_500_000 + "1\n"},
              ["eval", "{c.sched}"]))
    c.append(("r22_machine_show_1000_imported_hosts", {},
              ["machine", "import", "--nvidia-smi", str(SMI_DGX1), "--nic-speed", "400Gbit/s",
               "--sm", "90", "--nvlinks", "1", "--hosts", "1000", "-o", "{out:m.sched}", "&&",
               "machine", "show", "{out:m.sched}"]))
    c.append(("log_json_10001_rows", {"l.json": json_log(10001)},
              ["predict", str(CALIB), "--against", "{l.json}"]))
    c.append(("ring1024_whatif_nic", {}, ["whatif", str(RING1024), "--class", "nic"]))
    return c


def command(argv: list[str], files: dict[str, Path], folder: Path) -> list[list[str]]:
    """The argv's commands (split at `&&`), placeholders filled in."""
    def fill(arg: str) -> str:
        m = re.fullmatch(r"\{(out:)?([^{}]+)\}", arg)
        if m and m.group(1):
            return str(folder / ("out_" + m.group(2)))
        return str(files[m.group(2)]) if m else arg
    commands, current = [], []
    for arg in [*argv, "&&"]:
        if arg == "&&":
            commands.append([sys.executable, "-m", "schedc", *map(fill, current)])
            current = []
        else:
            current.append(arg)
    return commands


def measured(cmd: list[str], wall: float) -> dict:
    """Exit code, wall and CPU seconds, peak RSS (MiB) and stderr's first line of one run."""
    report = tempfile.mktemp(suffix=".time")
    limit = (lambda: resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE)))
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    start = time.monotonic()
    proc = subprocess.Popen(["/usr/bin/time", "-o", report, "-f", "%U %S %M", *cmd], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                            preexec_fn=limit, start_new_session=True)
    try:
        _, err = proc.communicate(timeout=wall)
        killed = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        killed = True
    elapsed = time.monotonic() - start
    try:
        user, system, rss = Path(report).read_text().split("\n")[-2].split()
        cpu, peak = float(user) + float(system), int(rss) / 1024
    except (OSError, ValueError, IndexError):
        cpu, peak = None, None
    Path(report).unlink(missing_ok=True)
    text = err.decode("utf-8", "replace").strip()
    return {"code": None if killed else proc.returncode, "wall_s": round(elapsed, 2),
            "cpu_s": cpu, "peak_mib": peak and round(peak), "said": text.splitlines()[0][:200]
            if text else ""}


def verdict(run: dict) -> str:
    if run["code"] is None:
        return "KILLED"
    if run["code"] == 2:
        return "refused" + (" ok" if (run["cpu_s"] or 0) <= 2 else " (past 2 s of CPU)")
    done = run["code"] in (0, 1) and (run["cpu_s"] or 0) <= 30 and (run["peak_mib"] or 0) <= 2048
    return "done ok" if done else f"exit {run['code']}" + ("" if done else " PAST A TARGET")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="cases whose name starts so")
    parser.add_argument("--wall", type=float, default=120.0, help="kill a case past this (s)")
    parser.add_argument("--json", type=Path, help="write the results here too")
    options = parser.parse_args()
    results = []
    print(f"{'case':<40} {'exit':>4} {'wall s':>7} {'CPU s':>7} {'peak MiB':>8}  outcome")
    for name, texts, argv in cases():
        if options.only and not any(name.startswith(p) for p in options.only):
            continue
        folder = Path(tempfile.mkdtemp(prefix=f"schedc-limits-{name}-"))
        try:
            files = {}
            for file, text in texts.items():
                files[file] = folder / file
                files[file].write_text(text, encoding="utf-8")
            for cmd in command(argv, files, folder):
                run = measured(cmd, options.wall)
                if run["code"] != 0:
                    break
            run["name"], run["outcome"] = name, verdict(run)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        results.append(run)
        cpu = "-" if run["cpu_s"] is None else f"{run['cpu_s']:.2f}"
        print(f"{name:<40} {run['code']!s:>4} {run['wall_s']:7.2f} {cpu:>7} "
              f"{run['peak_mib']!s:>8}  {run['outcome']}: {run['said'][:90]}", flush=True)
    if options.json:
        options.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

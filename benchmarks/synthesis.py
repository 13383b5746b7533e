"""Benchmark of `bound`'s exact optimum and `synthesize`, on ForestColl's A100 machine
(tests/fixtures/synthesize/forestcoll_a100.sched at 2, 8 hosts and, with 16 GPUs a host, 2)
and a 16-GPU switch, against a reference run in the same window (`schedc compare` on the seed).

Prints, per case: whole-process wall time (min and median of N runs, interpreter and imports
included) and its ratio to the reference; for `synthesize` also the in-process time, the
written schedule's time at α = 0 over the optimum (compiled again by `schedc time`), the
chunks, and the best library all-gather's ratio (rails then host, and the ring) on the same
machine.

    python benchmarks/synthesis.py [--repeat N]
    python benchmarks/synthesis.py --library   # issue 33's targets over the shipped files

`--library` checks instead, on every shipped file that declares a collective: all-gather and
reduce-scatter written within 1 % of the optimum at α = 0 (`synthesize --json`'s ratio, the
compiler's time of the written text), and, where the file has an all-reduce, whether the
synthesized one at the α-optimal chunk count (`compare --with-synthesized --set V=192MiB`)
is at least as fast as each library schedule of that collective.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import schedc  # noqa: E402

FORESTCOLL = ROOT / "tests" / "fixtures" / "synthesize" / "forestcoll_a100.sched"
REFERENCE = ["compare", str(ROOT / "schedules" / "seed" / "nvlink_2x8.sched")]


def machine(folder: Path, hosts: int, gpus: int) -> Path:
    """ForestColl's machine at `hosts` × `gpus`, with the library's all-gathers as schedules:
    rails then host (the ranks rail-major, so rail i holds part i of the buffer), the ring."""
    text = FORESTCOLL.read_text().replace("param hosts = 2", f"param hosts = {hosts}")
    text = text.replace("g[8]", f"g[{gpus}]").replace("n[8]", f"n[{gpus}]")
    text = text.replace("0..7", f"0..{gpus - 1}").replace("allgather V over ranks\n", "")
    last = gpus - 1
    text = f'import "{ROOT}/schedules/lib/ring.sched"\n' + text + (
        f"allgather V over [node[h].g[i] for i in 0..{last} for h in 0..hosts-1]\n"
        "schedule rails_then_host {\n"
        f"  parallel for i in 0..{last}: ring_allgather([node[h].g[i] for h in 0..hosts-1], "
        f"part(i of {gpus}))\n"
        "  parallel for h in 0..hosts-1: ring_allgather(node[h].g)\n}\n"
        "schedule ring = ring_allgather([node[h].g[i] for i in 0.."
        f"{last} for h in 0..hosts-1])\n")
    path = folder / f"forestcoll_{hosts}x{gpus}.sched"
    path.write_text(text)
    return path


def switch16(folder: Path) -> Path:
    path = folder / "switch_1x16.sched"
    path.write_text("param alpha = 0.83 us\nparam V = 1 GiB\nparam B = 300 GB/s\n"
                    "topology {\n  gpu g[16]\n  switch nvs\n"
                    "  link g[i] <-> nvs bw B class nvlink for i in 0..15\n}\n"
                    "allgather V over [g[k] for k in 0..15]\n")
    return path


def wall(args: list[str], repeat: int) -> tuple[float, float, str]:
    times, out = [], ""
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run(["schedc", *args], capture_output=True, text=True, check=True)
        times.append(time.perf_counter() - start)
        out = done.stdout
    return min(times), statistics.median(times), out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--library", action="store_true")
    parser.add_argument("--only", default="", help="with --library: files whose path has this")
    options = parser.parse_args()
    if options.library:
        return check_library(options.only)
    repeat = options.repeat
    folder = Path(tempfile.mkdtemp(prefix="schedc-synthesis-bench-"))
    ref, ref_median, _ = wall(REFERENCE, repeat)
    print(f"reference: schedc compare seed: min {ref:.2f} s, median {ref_median:.2f} s")
    cases = [("2x8", machine(folder, 2, 8)), ("8x8", machine(folder, 8, 8)),
             ("2x16", machine(folder, 2, 16))]
    print("\nbound (whole process):")
    for label, path in [*cases[:2], ("1x16", switch16(folder))]:
        low, median, out = wall(["bound", str(path), "--json"], repeat)
        optimum = json.loads(out)["optimum"]
        algbw = 2**30 / optimum["time_s"] / 1e9
        print(f"  {label:5} min {low:.2f} s, median {median:.2f} s ({low / ref:.2f}x ref); "
              f"optimum {optimum['time_s'] * 1e3:.4f} ms, algbw {algbw:.3f} GB/s")
    print("\nsynthesize allgather (whole process; in-process; the written schedule):")
    for label, path in cases:
        out = folder / f"synth_{label}.sched"
        low, median, text = wall(["synthesize", str(path), "--collective", "allgather",
                                  "-o", str(out), "--force", "--json"], repeat)
        start = time.perf_counter()
        schedc.synthesize(path, "allgather", output=out, force=True)
        inside = time.perf_counter() - start
        result = json.loads(text)
        timed = json.loads(subprocess.run(["schedc", "time", str(out), "--set", "alpha=0 s",
                                           "--json"], capture_output=True, text=True,
                                          check=True).stdout)
        ratio = timed["schedules"][0]["time_s"] / result["optimum_s"]
        library = json.loads(subprocess.run(["schedc", "time", str(path), "--set", "alpha=0 s",
                                             "--json"], capture_output=True, text=True,
                                            check=True).stdout)
        others = ", ".join(f"{s['name']} {s['time_s'] / result['optimum_s']:.2f}x"
                           for s in library["schedules"])
        print(f"  {label:5} min {low:.2f} s, median {median:.2f} s ({low / ref:.2f}x ref); "
              f"in-process {inside:.2f} s; {result['trees']} trees, depth {result['depth']}, "
              f"chunks {result['chunks']}; at alpha = 0 {ratio:.4f}x the optimum "
              f"(library: {others})")
    pinned(repeat, ref)


def check_library(only: str = "") -> None:
    """Issue 33's targets on each shipped file with a collective (those over --max-ranks are
    refused by synthesize, and said); `only`: the files whose path contains it."""
    folders = ["algorithms", "systems", "seed", "examples", "calibration"]
    files = sorted(p for f in folders for p in (ROOT / "schedules" / f).glob("*.sched")
                   if only in str(p))
    for path in files:
        name = path.relative_to(ROOT)
        text = path.read_text()
        if not re.search(r"^(allgather|reduce_scatter|allreduce|broadcast|reduce|alltoall) ",
                         text, re.M):
            continue  # a machine or constants file: nothing declared to synthesize
        for kind in ("allgather", "reduce_scatter"):
            done = subprocess.run(["schedc", "synthesize", str(path), "--collective", kind,
                                   "--json"], capture_output=True, text=True)
            result = json.loads(done.stdout or '{"errors": [{"message": "no output"}]}')
            said = (f"{result['ratio']:.4f}x the optimum at alpha = 0" if done.returncode == 0
                    else "refused: " + result["errors"][0]["message"][:90])
            print(f"{name} {kind}: {said}", flush=True)
        if not re.search(r"^allreduce ", text, re.M):
            continue
        done = subprocess.run(["schedc", "compare", str(path), "--with-synthesized", "--set",
                               "V=192MiB", "--json"], capture_output=True, text=True)
        if done.returncode:
            print(f"{name} allreduce at 192 MiB: {done.stderr.strip()[:100]}")
            continue
        rows = json.loads(done.stdout)["schedules"]
        ours = [s for s in rows if s["name"].startswith("synthesized_")]
        if not ours or ours[0]["collective"] != "allreduce":
            continue
        best = min((s["time_s"], s["name"]) for s in rows
                   if s["collective"] == "allreduce" and s is not ours[0])
        verdict = "at least as fast" if ours[0]["time_s"] <= best[0] else "SLOWER"
        print(f"{name} allreduce at 192 MiB: synthesized {ours[0]['time_s'] * 1e6:.2f} us, "
              f"best library {best[1]} {best[0] * 1e6:.2f} us: {verdict}", flush=True)


def pinned(repeat: int, ref: float) -> None:
    """Machines whose optimum counts paths schedc's own routes do not take: the packing on
    its routes, then with the routes `synthesize` pins."""
    print("\nsynthesize allgather where routes are pinned (whole process):")
    for label, path in [("one host of shared_nic_2x8",
                         ROOT / "schedules" / "algorithms" / "nccl_one_host.sched"),
                        ("3 GPUs, NVLink + PCIe", ROOT / "tests" / "fixtures" / "synthesize" /
                         "two_paths.sched")]:
        low, median, text = wall(["synthesize", str(path), "--collective", "allgather",
                                  "--json"], repeat)
        result = json.loads(text)
        print(f"  {label}: min {low:.2f} s, median {median:.2f} s ({low / ref:.2f}x ref); "
              f"{result['pinned_routes']} routes pinned, packing {result['packing_reached']:.4%} "
              f"of the optimum's rate, at alpha = 0 {result['ratio']:.4f}x the optimum")


if __name__ == "__main__":
    main()

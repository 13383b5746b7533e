"""benchmarks/astra.py (schedc against ASTRA-sim): its behaviour, not its timings.

No ASTRA-sim binary is at hand, so the ASTRA-sim side runs a test double: a script that takes
ASTRA-sim's four arguments, checks the inputs as ASTRA-sim's parsers would (the rules of
astra-network-analytical's NetworkParser::check_validity, Sys::initialize_sys and
Workload.cc's PREFIX.<npu>.et) and prints its "sys[N] finished, C cycles" lines. The Chakra
traces come from a double of ASTRA-sim's generator_scripts/all_reduce.py, with its command line
and output layout; the real generator's files were compared with ASTRA-sim's shipped examples
when the script was written (they are byte-identical), which no test here can repeat.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

SCRIPT = ROOT / "benchmarks" / "astra.py"

FAKE_ASTRA = '''#!{python}
"""Test double of AstraSim_Analytical_Congestion_Unaware: checks its inputs, prints the end."""
import json, os, sys, time
args = dict(a[2:].split("=", 1) for a in sys.argv[1:])
assert sorted(args) == ["network-configuration", "remote-memory-configuration",
                        "system-configuration", "workload-configuration"], sys.argv
network = {{}}
for line in open(args["network-configuration"]):
    key, _, rest = line.partition("#")[0].partition(":")
    if key.strip():
        rest = rest.strip()
        assert rest.startswith("[") and rest.endswith("]"), line
        network[key.strip()] = [v.strip() for v in rest[1:-1].split(",")]
try:
    import yaml  # the real parser is yaml-cpp; PyYAML reads the same flow lists
    assert yaml.safe_load(open(args["network-configuration"])) == {{
        k: [v if k == "topology" else float(v) for v in vs] for k, vs in network.items()}}
except ImportError:
    pass
dims = len(network["topology"])
assert all(t in ("Ring", "FullyConnected", "Switch") for t in network["topology"])
assert [len(network[k]) for k in ("npus_count", "bandwidth", "latency")] == [dims] * 3
assert all(int(n) > 1 for n in network["npus_count"])
assert all(float(b) > 0 for b in network["bandwidth"])
assert all(float(l) >= 0 for l in network["latency"])
system = json.load(open(args["system-configuration"]))
assert system["scheduling-policy"] in ("LIFO", "FIFO", "EXPLICIT")
assert system["collective-optimization"] in ("baseline", "localBWAware")
assert len(system["all-reduce-implementation"]) == dims
# The first message events come endpoint-delay ns after time 0, and the event queue must move
# forward (EventQueue.cpp:33 asserts it): a delay of 0 aborts the run. (Sys.cc's default: 10.)
assert system.get("endpoint-delay", 10) >= 1, system
assert json.load(open(args["remote-memory-configuration"])) == {{
    "memory-type": "NO_MEMORY_EXPANSION"}}
npus = 1
for n in network["npus_count"]:
    npus *= int(n)
for npu in range(npus):
    assert os.path.getsize(f"{{args['workload-configuration']}}.{{npu}}.et") > 0
with open(os.environ["FAKE_ASTRA_LOG"], "a") as log:
    log.write(json.dumps({{"network": network, "system": system, "npus": npus}}) + "\\n")
time.sleep(0.05)
for npu in range(npus):
    cycles = 1000 + npu
    print(f"[2026-01-01T00:00:00+0000] [I] <workload>: sys[{{npu}}] finished, {{cycles}} cycles, "
          f"exposed communication {{cycles}} cycles.")
'''

FAKE_GENERATOR = '''
"""Test double of ASTRA-sim's generator_scripts/all_reduce.py: its arguments and file layout."""
import argparse, os, sys
parser = argparse.ArgumentParser()
parser.add_argument("--npus-count", type=int)
parser.add_argument("--coll-size", type=int)
args = parser.parse_args()
checkout = os.path.abspath(os.path.join(os.path.dirname(__file__), *[".."] * 4))
assert checkout in os.environ["PYTHONPATH"].split(os.pathsep)  # for `import extern...`
path = os.path.join("all_reduce", f"{args.npus_count}npus_{args.coll_size}MB")
os.makedirs(path)
for npu in range(args.npus_count):
    with open(os.path.join(path, f"all_reduce.{npu}.et"), "wb") as et:
        et.write(b"test double, not a Chakra trace")
'''


def _benchmark(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True,
                          text=True, env=env, timeout=300)


@pytest.fixture
def fakes(tmp_path: Path) -> tuple[Path, Path, Path]:
    astra = tmp_path / "AstraSim_Analytical_Congestion_Unaware"
    astra.write_text(FAKE_ASTRA.format(python=sys.executable), encoding="utf-8")
    astra.chmod(0o755)
    scripts = tmp_path / "astra-sim" / "examples" / "workload" / "microbenchmarks" / \
        "generator_scripts"
    scripts.mkdir(parents=True)
    (tmp_path / "astra-sim" / "extern").mkdir()
    generator = scripts / "all_reduce.py"
    generator.write_text(FAKE_GENERATOR, encoding="utf-8")
    return astra, generator, tmp_path / "astra.log"


def test_without_astra_it_prints_schedc_figures_alone():
    done = _benchmark("--repeat", "1", "--only", "seed ring")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "ASTRA-sim not given" in out
    # The seed's ring: 2·15 rounds of 16 transfers = 480; its time is the seed's 7.5746 ms.
    row = next(line for line in out.splitlines() if line.startswith("seed ring 2x8"))
    assert row.split()[3] == "480" and "|" not in row
    assert re.search(r"seed ring 2x8 +7\.5746 ms +-", out)
    assert "seed hierarchical" not in out and "target (" not in out


def test_with_astra_it_runs_both_and_prints_the_ratio(fakes):
    astra, generator, log = fakes
    env = dict(os.environ, FAKE_ASTRA_LOG=str(log))
    done = _benchmark("--repeat", "1", "--no-verify", "--only", "seed hierarchical",
                      "ring 128x8", "--astra", str(astra), "--astra-workload-generator",
                      str(generator), env=env)
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    rows = {line.split("  ")[0]: line for line in out if "|" in line and "M " in line}
    assert sorted(rows) == ["ring 128x8", "seed hierarchical 2x8"]
    for row in rows.values():
        schedc_min = float(row.split("|")[0].split()[4].rstrip("s"))
        astra_min = float(row.split("|")[1].split()[0].rstrip("s"))
        # the printed walls are rounded to 1 ms
        assert float(row.split()[-1]) == pytest.approx(schedc_min / astra_min, rel=0.05)
    # transfers: hierarchical 2x8 = 2·7·16 + 2·1·16 = 256; ring 128x8 = 2·1023·1024.
    assert rows["seed hierarchical 2x8"].split()[3] == "256"
    assert rows["ring 128x8"].split()[2] == "2,095,104"
    # The double's last NPU ends at 1000 + 15 and 1000 + 1023 cycles, printed in time units.
    assert any(re.match(r"seed hierarchical 2x8 +1\.2995 ms +1\.015 µs$", line) for line in out)
    assert any(re.match(r"ring 128x8 +9\.7434 ms +2\.023 µs$", line) for line in out)
    # Only the ring has more than 100,000 transfers; the double takes far less than schedc.
    assert out[-1].startswith("target (schedc's wall <= ASTRA-sim's for every case over "
                              "100,000 transfers): NOT met: ring 128x8")
    # The floor, measured as often as the cases: schedc's libraries imported without schedc.
    floor = next(line for line in out if line.startswith("schedc's start-up floor"))
    assert "import lark, networkx, numpy, sympy" in floor
    floor_min = float(re.search(r"min ([0-9.]+) s, median [0-9.]+ s$", floor).group(1))
    astra_min = float(rows["ring 128x8"].split("|")[1].split()[0].rstrip("s"))
    below = f"shorter than importing schedc's libraries ({floor_min:.3f} s) for ring 128x8"
    assert (below in out[-1]) == (astra_min < floor_min), (out[-1], astra_min)
    # One run of each case: ASTRA-sim's inputs, as the double read them.
    seen = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(seen) == 2
    hierarchical, ring = seen
    assert hierarchical["network"] == {
        "topology": ["Switch", "Switch"], "npus_count": ["8", "2"],
        # 450 GB/s and 400 Gbit/s in ASTRA-sim's GB/s of 2^30 B/s; alpha = 830 ns over 2 hops
        "bandwidth": [repr(450e9 / 2**30), repr(50e9 / 2**30)], "latency": ["415.0", "415.0"]}
    assert hierarchical["system"]["all-reduce-implementation"] == ["ring", "ring"]
    assert hierarchical["system"]["collective-optimization"] == "localBWAware"
    assert ring["network"] == {"topology": ["Ring"], "npus_count": ["1024"],
                               "bandwidth": [repr(50e9 / 2**30)], "latency": ["830.0"]}
    assert ring["npus"] == 1024 and ring["system"]["all-reduce-implementation"] == ["ring"]


def test_astra_without_a_way_to_write_chakra_traces_is_refused(fakes):
    import importlib.util
    if importlib.util.find_spec("chakra") is not None:
        pytest.skip("the chakra package is installed here: the traces can be written")
    astra, _, _ = fakes
    done = _benchmark("--only", "seed", "--astra", str(astra))
    assert done.returncode == 2 and done.stdout == ""
    assert "Chakra's protobuf bindings" in done.stderr and "Traceback" not in done.stderr


def test_bad_options_are_refused(fakes, tmp_path):
    astra, _, _ = fakes
    for args, message in [(["--only", "torus"], "--only matches no case"),
                          (["--astra", str(tmp_path)], "not an executable file"),
                          (["--astra", str(astra), "--astra-workload-generator",
                            str(tmp_path / "none.py")], "no such file"),
                          (["--astra-workload-generator", str(tmp_path)], "needs --astra"),
                          (["--repeat", "0"], "at least 1")]:
        done = _benchmark(*args)
        assert done.returncode == 2 and message in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr

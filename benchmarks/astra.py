"""schedc against ASTRA-sim's analytical backend on the same all-reduces: wall time, peak memory
and transfers per second of fresh processes, and the ratio of wall times.

    python benchmarks/astra.py [--repeat N] [--only NAME ...] [--no-verify] [--no-formula]
        [--astra PATH/AstraSim_Analytical_Congestion_Unaware [--astra-workload-generator SCRIPT]]

Every case is a 192 MiB all-reduce on the seed's machine with `hosts` × 8 GPUs, compiled from
ONE file, schedules/seed/nvlink_hosts.sched, with `--set hosts=H` (a structural param) and
`-s ring` or `-s hierarchical`. Without --astra the script prints schedc's figures alone.

With --astra it writes ASTRA-sim's four inputs for each case into a temporary directory (once,
untimed) and runs schedc and ASTRA-sim alternately, --repeat times each:
- network (YAML): the hierarchical case is 2 dimensions, [Switch of 8 NPUs (NVLink, B_L),
  Switch of H NPUs (the rail of NICs, B_N)]; the ring case is one Ring of 8·H NPUs at the NIC's
  B_N, the slower link, which paces every round of schedc's ring too. ASTRA-sim's "GB/s" is
  2^30 B/s (astra-network-analytical's bw_GBps_to_Bpns), so B is written as B / 2^30. A Switch
  is 2 hops and a Ring neighbour 1, so the per-hop latency is alpha / 2 or alpha, in ns: one
  message costs alpha + bytes / B, as one round does in schedc.
- system (JSON): ring in every dimension, "localBWAware" (reduce-scatter in dimension 0,
  all-reduce in dimension 1, all-gather in dimension 0: the hierarchical schedule), one chunk
  ("preferred-dataset-splits": 1, as schedc's schedules do not pipeline), endpoint-delay 1 (ns:
  ASTRA-sim's event queue must move forward from time 0, so 0 aborts it, EventQueue.cpp:33).
- remote memory (JSON): {"memory-type": "NO_MEMORY_EXPANSION"}.
- workload: one Chakra execution trace per NPU, PREFIX.<npu>.et, each a single COMM_COLL_NODE
  with comm_type ALL_REDUCE and comm_size V bytes, as ASTRA-sim's
  examples/workload/microbenchmarks/generator_scripts/all_reduce.py writes them. They are
  protobuf, written by Chakra's own bindings: either pass that ASTRA-sim script as
  --astra-workload-generator (it needs the et_def_pb2.py that ASTRA-sim's build.sh compiles
  into extern/graph_frontend/chakra) or have the `chakra` package of mlcommons/chakra
  importable (with `protobuf`). Without either, --astra is refused.
Use the Congestion_Unaware binary: astra-network-analytical's congestion-aware backend accepts
1-dimensional networks only. Params (alpha, B_L, B_N, V) are read from the .sched file.

ASTRA-sim's transfers/s counts schedc's transfers of the same collective (with one chunk, its
ring sends as many messages). ASTRA-sim's simulated finish time ("sys[N] finished, C cycles";
a cycle is 1 ns in the analytical backend) is printed beside schedc's predicted time, as
information only.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from processes import (
    LIBRARIES_ALONE,
    LIBRARIES_CODE,
    NUMBERS_ALONE,
    NUMBERS_CODE,
    ROOT,
    Run,
    arguments,
    chosen,
    recorded,
    run_once,
    schedc,
    summary,
)

sys.path.insert(0, str(ROOT))  # this checkout's schedc in-process too (its children run from ROOT)

FILE = "schedules/seed/nvlink_hosts.sched"
BIG = ("--max-transfers", "40000000")  # above the default limit of 20,000,000
TARGET_TRANSFERS = 100_000  # the target: schedc's wall <= ASTRA-sim's above this many transfers
FINISHED = re.compile(r"sys\[(\d+)\] finished, (\d+) cycles")


@dataclass(frozen=True)
class Case:
    name: str
    schedule: str  # "ring" or "hierarchical", a result schedule of FILE
    hosts: int

    def schedc_args(self, verify: bool, formula: bool = True) -> list[str]:
        return ["time", FILE, "-s", self.schedule, "--set", f"hosts={self.hosts}", "--json",
                *BIG, *([] if verify else ["--no-verify"]), *([] if formula else ["--no-formula"])]


CASES = (
    Case("seed ring 2x8", "ring", 2),
    Case("seed hierarchical 2x8", "hierarchical", 2),
    Case("ring 128x8", "ring", 128),
    Case("hierarchical 128x8", "hierarchical", 128),
    Case("ring 512x8", "ring", 512),
    Case("hierarchical 512x8", "hierarchical", 512),
    Case("hierarchical 1024x8", "hierarchical", 1024),
)


@dataclass(frozen=True)
class Machine:
    """The file's nominal params, in base units (s, B/s, B)."""

    alpha: Fraction
    B_L: Fraction
    B_N: Fraction
    V: Fraction


def machine() -> Machine:
    import schedc as api
    params = api.load(ROOT / FILE).program.params
    return Machine(*(params[name].nominal for name in ("alpha", "B_L", "B_N", "V")))


# ---- ASTRA-sim's inputs -------------------------------------------------------------------------

def network_yaml(case: Case, m: Machine) -> str:
    def gbps(bandwidth: Fraction) -> str:  # ASTRA-sim's GB/s: 2^30 B/s
        return repr(float(bandwidth / 2**30))

    def ns(seconds: Fraction) -> str:
        return repr(float(seconds * 10**9))

    if case.schedule == "ring":
        topology, npus = ["Ring"], [8 * case.hosts]
        bandwidth, latency = [gbps(min(m.B_L, m.B_N))], [ns(m.alpha)]  # a neighbour: 1 hop
    else:
        topology, npus = ["Switch", "Switch"], [8, case.hosts]
        bandwidth, latency = [gbps(m.B_L), gbps(m.B_N)], [ns(m.alpha / 2)] * 2  # 2 hops
    rows = {"topology": topology, "npus_count": [str(n) for n in npus],
            "bandwidth": bandwidth, "latency": latency}
    units = {"bandwidth": "  # GB/s (2^30 B/s)", "latency": "  # ns per hop"}
    return "".join(f"{key}: [ {', '.join(values)} ]{units.get(key, '')}\n"
                   for key, values in rows.items())


def system_json(dims: int) -> str:
    ring = ["ring"] * dims  # one implementation per dimension
    return json.dumps({
        "scheduling-policy": "LIFO",
        "endpoint-delay": 1,
        "active-chunks-per-dimension": 1,
        "preferred-dataset-splits": 1,
        "all-reduce-implementation": ring,
        "all-gather-implementation": ring,
        "reduce-scatter-implementation": ring,
        "all-to-all-implementation": ring,
        "collective-optimization": "localBWAware",
        "local-mem-bw": 1600,
        "boost-mode": 0,
    }, indent=4) + "\n"


REMOTE_MEMORY = json.dumps({"memory-type": "NO_MEMORY_EXPANSION"}, indent=4) + "\n"


def chakra_bindings():
    """Chakra's protobuf bindings (et_def_pb2) and its length-prefixed writer, or None."""
    try:
        from chakra.schema.protobuf import et_def_pb2  # type: ignore[import-not-found]
        from chakra.src.third_party.utils.protolib import (  # type: ignore[import-not-found]
            encodeMessage,
        )
    except ImportError:
        return None
    return et_def_pb2, encodeMessage


def write_chakra_workload(directory: Path, npus: int, size: int, bindings) -> str:
    """PREFIX.<npu>.et for every NPU, as ASTRA-sim's generator_scripts/all_reduce.py writes
    them (its metadata version, node names and ids); returns PREFIX."""
    et_def, encode = bindings
    megabytes = size // 2**20
    name = f"all_reduce_{npus}npus_{megabytes}MB"
    prefix = directory / "all_reduce"
    for npu in range(npus):
        with open(f"{prefix}.{npu}.et", "wb") as out:
            encode(out, et_def.GlobalMetadata(version="0.0.4"))
            node = et_def.Node(id=npu, name=name, type=et_def.COMM_COLL_NODE)
            node.attr.append(et_def.AttributeProto(name="is_cpu_op", bool_val=False))
            node.attr.append(et_def.AttributeProto(name="comm_type", int64_val=et_def.ALL_REDUCE))
            node.attr.append(et_def.AttributeProto(name="comm_size", int64_val=size))
            encode(out, node)
    return str(prefix)


def run_workload_generator(script: Path, directory: Path, npus: int, size: int) -> str:
    """Run ASTRA-sim's generator_scripts/all_reduce.py (--npus-count N --coll-size MB; it writes
    ./all_reduce/<N>npus_<MB>MB/all_reduce.<npu>.et and imports `extern.graph_frontend.chakra`
    from the ASTRA-sim checkout it lives in); returns the prefix it wrote."""
    megabytes = size // 2**20
    env = dict(os.environ)
    checkout = next((p for p in script.resolve().parents if (p / "extern").is_dir()), None)
    if checkout is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(checkout),
                                                          env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, str(script), "--npus-count", str(npus),
                           "--coll-size", str(megabytes)], cwd=directory, env=env,
                          capture_output=True, text=True)
    prefix = directory / "all_reduce" / f"{npus}npus_{megabytes}MB" / "all_reduce"
    missing = [i for i in range(npus) if not Path(f"{prefix}.{i}.et").is_file()]
    if done.returncode != 0 or missing:
        raise SystemExit(f"{script} did not write {prefix}.<0..{npus - 1}>.et "
                         f"(exit {done.returncode}): {done.stderr.strip()}")
    return str(prefix)


def astra_inputs(case: Case, m: Machine, directory: Path, generator: Path | None) -> list[str]:
    """Write the case's inputs into `directory`; the ASTRA-sim arguments that name them."""
    directory.mkdir(parents=True)
    npus, size = 8 * case.hosts, int(m.V)
    network, system, memory = (directory / n for n in ("network.yml", "system.json",
                                                       "remote_memory.json"))
    network.write_text(network_yaml(case, m), encoding="utf-8")
    system.write_text(system_json(1 if case.schedule == "ring" else 2), encoding="utf-8")
    memory.write_text(REMOTE_MEMORY, encoding="utf-8")
    if generator is not None:
        prefix = run_workload_generator(generator, directory, npus, size)
    else:
        bindings = chakra_bindings()
        assert bindings is not None  # main() refuses --astra without a way to write the trace
        prefix = write_chakra_workload(directory, npus, size, bindings)
    return [f"--workload-configuration={prefix}", f"--system-configuration={system}",
            f"--remote-memory-configuration={memory}", f"--network-configuration={network}"]


def astra_finish(stdout: str) -> int | None:
    """The simulated end in cycles: the last NPU's "sys[N] finished, C cycles", if any."""
    cycles = [int(c) for _, c in FINISHED.findall(stdout)]
    return max(cycles) if cycles else None


# ---- the benchmark ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Measured:
    case: Case
    transfers: int
    predicted: float  # schedc's time of the schedule, seconds
    schedc: list[Run]
    astra: list[Run]
    astra_cycles: int | None


def measure(case: Case, repeat: int, verify: bool, astra: list[str] | None,
            astra_dir: Path | None, formula: bool = True) -> Measured:
    """schedc, then ASTRA-sim, `repeat` times, alternately (the same load on the machine for
    both); the first run of each is captured for its figures."""
    schedc_runs: list[Run] = []
    astra_runs: list[Run] = []
    for i in range(repeat):
        schedc_runs.append(run_once(schedc(*case.schedc_args(verify, formula)), capture=i == 0))
        if astra is not None and astra_dir is not None:
            astra_runs.append(run_once(astra, cwd=astra_dir, capture=i == 0))
    timing = json.loads(schedc_runs[0].stdout)["schedules"][0]
    return Measured(case, timing["transfers"], timing["time_s"], schedc_runs, astra_runs,
                    astra_finish(astra_runs[0].stdout) if astra_runs else None)


def figures(runs: list[Run], transfers: int) -> str:
    fastest, median, peak = summary(runs)
    return (f"{fastest:>7.3f}s {median:>7.3f}s {peak / 2**20:>6.0f} MiB "
            f"{transfers / fastest / 1e6:>9.2f} M")


def report_row(row: Measured) -> str:
    line = f"{row.case.name:<24} {row.transfers:>11,} {figures(row.schedc, row.transfers)}"
    if row.astra:
        ratio = summary(row.schedc)[0] / summary(row.astra)[0]
        line += f" | {figures(row.astra, row.transfers)} {ratio:>12.2f}"
    return line


def predictions(rows: list[Measured]) -> list[str]:
    from schedc.units import format_seconds
    out = ["", "predicted all-reduce time (information only: the models differ; the target is "
           "about wall time)", f"{'case':<24} {'schedc':>12} {'ASTRA-sim':>12}"]
    for row in rows:
        simulated = "-" if row.astra_cycles is None else format_seconds(row.astra_cycles * 1e-9)
        out.append(f"{row.case.name:<24} {format_seconds(row.predicted):>12} {simulated:>12}")
    return out


def verdict(rows: list[Measured], floor: float) -> str:
    """The target, on the min walls; `floor`: the min wall of importing schedc's libraries."""
    big = [r for r in rows if r.transfers > TARGET_TRANSFERS]
    slower = [r for r in big if summary(r.schedc)[0] > summary(r.astra)[0]]
    target = f"schedc's wall <= ASTRA-sim's for every case over {TARGET_TRANSFERS:,} transfers"
    if not big:
        return f"target ({target}): no such case run"
    if slower:
        below = [r.case.name for r in slower if summary(r.astra)[0] < floor]
        why = (f"; ASTRA-sim's whole run is shorter than importing schedc's libraries "
               f"({floor:.3f} s) for {', '.join(below)}" if below else "")
        return f"target ({target}): NOT met: {', '.join(r.case.name for r in slower)}{why}"
    return f"target ({target}): met ({len(big)} cases)"


def main() -> None:
    parser = arguments(__doc__, "cases")
    parser.add_argument("--no-verify", action="store_true",
                        help="Pass --no-verify to schedc (ASTRA-sim does not verify).")
    parser.add_argument("--no-formula", action="store_true",
                        help="Pass --no-formula to schedc (the time without formulas: no SymPy).")
    parser.add_argument("--astra", type=Path, help="An ASTRA-sim analytical binary "
                        "(AstraSim_Analytical_Congestion_Unaware).")
    parser.add_argument("--astra-workload-generator", type=Path, metavar="SCRIPT",
                        help="ASTRA-sim's examples/workload/microbenchmarks/generator_scripts/"
                        "all_reduce.py, to write the Chakra traces (else the chakra package).")
    options = parser.parse_args()
    with recorded(options.results, "astra.py"):
        _compare(parser, options)


def _compare(parser, options) -> None:
    cases = [c for c in CASES if chosen(c.name, options.only)]
    if not cases:
        parser.error(f"--only matches no case; the cases: {', '.join(c.name for c in CASES)}")
    if options.astra is not None:
        if not os.access(options.astra, os.X_OK) or options.astra.is_dir():
            parser.error(f"--astra {options.astra}: not an executable file")
        generator = options.astra_workload_generator
        if generator is not None and not generator.is_file():
            parser.error(f"--astra-workload-generator {generator}: no such file")
        if generator is None and chakra_bindings() is None:
            parser.error("--astra needs Chakra's protobuf bindings to write the workload: "
                         "install mlcommons/chakra (pip, with protobuf) or pass ASTRA-sim's "
                         "generator_scripts/all_reduce.py as --astra-workload-generator")
    elif options.astra_workload_generator is not None:
        parser.error("--astra-workload-generator needs --astra")

    m = machine() if options.astra is not None else None
    if m is not None and m.V % 2**20:
        parser.error("V must be a whole number of MiB (the Chakra generator's --coll-size)")
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "schedc")], check=True)
    columns = f"{'min':>8} {'median':>8} {'peak':>10} {'transfers/s':>11}"
    title, head = f"{'':<36} {'schedc':<41}", f"{'case':<24} {'transfers':>11} {columns}"
    if options.astra is not None:
        title += f" | {'ASTRA-sim':<41}"
        head += f" | {columns} {'schedc/ASTRA':>12}"
    else:
        print("ASTRA-sim not given (--astra PATH): schedc's figures alone")
    print(f"schedc {'--no-verify' if options.no_verify else 'verified'}"
          f"{', --no-formula' if options.no_formula else ''}; {options.repeat} "
          f"runs each: min and median wall, peak RSS, transfers/s at the min wall")
    print(title.rstrip(), head, sep="\n", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="schedc-astra-") as tmp:
        for number, case in enumerate(cases):
            astra, directory = None, None
            if options.astra is not None and m is not None:
                directory = Path(tmp) / f"case{number}"
                astra = [str(options.astra.resolve()),
                         *astra_inputs(case, m, directory, options.astra_workload_generator)]
            rows.append(measure(case, options.repeat, not options.no_verify, astra, directory,
                                not options.no_formula))
            print(report_row(rows[-1]), flush=True)
    print("\n".join(predictions(rows)))
    floor, code = (NUMBERS_ALONE, NUMBERS_CODE) if options.no_formula else \
        (LIBRARIES_ALONE, LIBRARIES_CODE)
    fastest, median, _ = summary([run_once(floor) for _ in range(options.repeat)])
    print(f"\nschedc's start-up floor, its libraries alone (`python -c \"{code}\"`): "
          f"min {fastest:.3f} s, median {median:.3f} s")
    if options.astra is not None:
        print(verdict(rows, fastest))


if __name__ == "__main__":
    main()

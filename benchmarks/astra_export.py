"""`schedc export astra` of the 1,024-rank ring (issue 24: ≤ 10 s whole process and ≤ 1 GB):
whole processes, min and median of --repeat runs, against `schedc verify` of the same file in
the same window (the compile and verification that export does first); then in-process, the
phases of one export (load, verify, the node plan, encoding and writing the 2,051 files), and
what Chakra's protobuf bindings take per node, for comparison.

    python benchmarks/astra_export.py [--repeat N] [--results benchmarks/RESULTS.md]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from processes import ROOT, arguments, recorded, run_once, schedc, summary

FILE = "schedules/scale/ring_1024.sched"


def whole(repeat: int) -> None:
    exports, verifies = [], []
    with tempfile.TemporaryDirectory() as scratch:
        for k in range(repeat):  # alternately, so both see the same load
            out = Path(scratch) / f"out{k}"
            exports.append(run_once(schedc("export", "astra", FILE, "-s", "ring", "-o", str(out))))
            verifies.append(run_once(schedc("verify", FILE)))
    for label, runs in (("export astra", exports), ("verify (reference)", verifies)):
        low, median, peak = summary(runs)
        print(f"{label:20} min {low:6.2f} s  median {median:6.2f} s  peak {peak / 2**20:6.0f} MiB")
    print(f"ratio export / verify: min {min(r.wall for r in exports) / min(r.wall for r in verifies):.2f}"
          f"  median {summary(exports)[1] / summary(verifies)[1]:.2f}")


def phases() -> None:
    sys.path.insert(0, str(ROOT))
    import schedc as api
    from schedc.analysis.verify.verdict import verdict
    from schedc.files import write_folder
    marks = [time.perf_counter()]
    session = api.load(ROOT / FILE)
    marks.append(time.perf_counter())
    assert verdict(session, "ring").ok
    marks.append(time.perf_counter())
    astra = api.export_astra(session, "ring", verify=False)
    marks.append(time.perf_counter())
    with tempfile.TemporaryDirectory() as scratch:
        names = write_folder(Path(scratch) / "out", astra.files(), force=False)
        size = sum(p.stat().st_size for p in (Path(scratch) / "out").iterdir())
    marks.append(time.perf_counter())
    steps = [b - a for a, b in zip(marks, marks[1:])]
    print(f"in-process: load {steps[0]:.2f} s, verify {steps[1]:.2f} s, plan "
          f"{steps[2]:.2f} s ({astra.node_count:,} nodes), encode and write {steps[3]:.2f} s "
          f"({len(names)} files, {size / 2**20:.0f} MiB, {astra.node_count / steps[3] / 1e6:.2f} "
          "M nodes/s)")


def protobuf_cost(count: int = 100_000) -> None:
    """What Chakra's own bindings take per node (why schedc encodes the nodes itself)."""
    try:
        from chakra.schema.protobuf.et_def_pb2 import COMM_SEND_NODE, AttributeProto, Node
    except ImportError:
        print("protobuf: mlc-chakra is not installed here; not measured")
        return
    start = time.perf_counter()
    for i in range(2, count + 2):
        Node(id=i, name=f"r{i} reduce to 5 (line 10)", type=COMM_SEND_NODE,
             data_deps=[i - 1, i - 2],
             attr=[AttributeProto(name="comm_size", int64_val=98304),
                   AttributeProto(name="comm_dst", int32_val=5),
                   AttributeProto(name="comm_tag", int32_val=i)]).SerializeToString()
    each = (time.perf_counter() - start) / count
    print(f"protobuf (Chakra's et_def_pb2): {each * 1e6:.2f} us a node, "
          f"{each * 4_190_208:.1f} s for the 1,024-rank ring's 4,190,208 nodes")


def main() -> None:
    options = arguments(__doc__, "runs").parse_args()
    with recorded(options.results, "astra_export.py"):
        whole(options.repeat)
        phases()
        protobuf_cost()


if __name__ == "__main__":
    main()

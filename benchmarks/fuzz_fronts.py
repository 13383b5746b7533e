"""The fuzz campaign's other front ends (imported by benchmarks/fuzz.py): MSCCL XML algorithms,
NCCL topology-like XML, nccl-tests logs (text and JSON), `machine import` of NCCL topology
files and `nvidia-smi topo -m` matrices, the argument vectors behind issue 36's causes, and
command lines that write files — to the input itself, through a link to it, to a FIFO,
/dev/null, a missing folder or a directory.

Each case is (how, input name, input text, argv with "{input}" and "{out}" placeholders, the
kind of output target). `prepare` makes the target in the run's folder and `violations` says
what a run broke: an input changed, a special file replaced, a file left in a missing folder.
"""

from __future__ import annotations

import json
import os
import re
import stat
import threading
from pathlib import Path

from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
SCHEDULES = ROOT / "schedules"
DATA = ROOT.parent / "shared" / "data"

# (XML, machine, extra arguments): the shipped and published algorithms with their machines
XML_CASES = [(SCHEDULES / "examples" / "pair_allreduce.xml", "machines/flat_8.sched",
              ["--ranks", "[g[0], g[1]]"]),
             (ROOT / "tests" / "fixtures" / "hierarchical.xml", "machines/nvlink_2x8.sched", [])]
XML_CASES += [(p, f"machines/{p.name.split('_')[0]}.sched", [])
              for p in sorted((DATA / "msccl").glob("*.xml"))
              if (SCHEDULES / "machines" / f"{p.name.split('_')[0]}.sched").exists()]
# (log, the calibration file of the same machine) when the published logs are here
LOG_CASES = [(p, f"calibration/{p.stem}.sched") for p in sorted((DATA / "nccl-tests").glob("*.txt"))
             if (SCHEDULES / "calibration" / f"{p.stem}.sched").exists()]
LOG_FALLBACK = "\n".join(  # a log of the DGX file's 8 ranks when no published log is here
    [f"#  Rank {r} Group  0 Pid 1 on node device {r} [0000:19:00] NVIDIA H100" for r in range(8)]
    + ["#       size         count      type   redop    root     time   algbw   busbw #wrong"
       "     time   algbw   busbw #wrong"]
    + [f"{8 << k:>12} {2 << k:>13}     float     sum      -1 {13.5 * 1.3 ** k:8.2f}    0.00"
       "    0.00      0    13.03    0.00    0.00      0" for k in range(24)]) + "\n"

VALUES = ["0", "-1", "-16", "inf", "-inf", "nan", "1e400", "1e-300", "1e308", "1" + "0" * 400,
          "0.0", "N/A", "", "x", "99999999999999999999", "2e12"]
XML_VALUES = ["0", "-1", "1e9", "99999999999999999999", "", "x", "&amp;", "]]>", "&ent;",
              "2147483648", "\x00", "é"]
TOPOLOGY_XML = [  # what NCCL_TOPO_DUMP_FILE writes: not an MSCCL algorithm
    '<system version="1">\n  <cpu numaid="0" affinity="ff" arch="x86_64" vendor="GenuineIntel">\n'
    '    <pci busid="0000:19:00.0" class="0x030200" link_speed="32.0 GT/s" link_width="16">\n'
    '      <gpu dev="0" sm="90" rank="0" gdr="1">\n        <nvlink target="0000:2d:00.0" '
    'count="18" tclass="0x068000"/>\n      </gpu>\n    </pci>\n    <nic>\n      <net name="mlx5_0"'
    ' dev="0" speed="400000" port="1" gdr="1" maxconn="131072"/>\n    </nic>\n  </cpu>\n</system>\n',
    '<!DOCTYPE system [<!ENTITY e "eeeeeeeeee"><!ENTITY f "&e;&e;&e;&e;&e;&e;">]>\n<system>&f;</system>\n',
    '<graphs version="1">\n  <graph id="0" pattern="4" crossnic="0" nchannels="2" speedintra="40" '
    'speedinter="40" latencyinter="0" typeintra="NVL" typeinter="PIX" samechannels="0">\n'
    '    <channel><net dev="0"/><gpu dev="0"/><gpu dev="1"/><net dev="0"/></channel>\n'
    '  </graph>\n</graphs>\n']

TARGETS = ["input", "symlink", "hardlink", "fifo", "devnull", "missing", "directory", "fresh",
           "import"]


def _mutate(draw, text: str, values: list[str], pattern: str) -> str:
    spots = [m.span() for m in re.finditer(pattern, text)]
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.integers(0, 3))
        if kind <= 1 and spots:
            lo, hi = draw(st.sampled_from(spots))
            text = text[:lo] + draw(st.sampled_from(values)) + text[hi:]
            spots = [m.span() for m in re.finditer(pattern, text)]
        elif kind == 2:
            lines = text.split("\n")
            k = draw(st.integers(0, len(lines) - 1))
            lines.insert(k, lines[k] if draw(st.booleans()) else lines[k][:draw(st.integers(0, 40))])
            text = "\n".join(lines)
        else:
            at = draw(st.integers(0, len(text)))
            text = text[:at] + text[at + draw(st.integers(1, 60)):]
    return text


@st.composite
def xml_cases(draw):
    """An MSCCL algorithm mutated (attribute values, lines), or an NCCL topology dump."""
    if draw(st.integers(0, 3)) == 0:
        text, machine, extra = draw(st.sampled_from(TOPOLOGY_XML)), "machines/flat_8.sched", []
        how = "topology-xml"
    else:
        path, machine, extra = draw(st.sampled_from(XML_CASES))
        text = _mutate(draw, path.read_text(encoding="utf-8"), XML_VALUES, r'(?<==")[^"]*')
        how = "msccl-xml"
    command = draw(st.sampled_from(["time", "verify", "compare", "bound", "emit"]))
    argv = ([command] + (["ir"] if command == "emit" else []) + ["{input}", "--machine",
            f"{{schedules}}/{machine}", *extra])
    return how, "input.xml", text, argv, None


@st.composite
def log_cases(draw):
    """An nccl-tests log mutated (numbers replaced by zero, inf, 401 digits...), with predict
    or calibrate on its machine's file."""
    if LOG_CASES:
        log, machine = draw(st.sampled_from(LOG_CASES))
        text = log.read_text(encoding="utf-8")
    else:
        text, machine = LOG_FALLBACK, "calibration/nvidia_dgxc_1node_8xH100_nvlink_allreduce.sched"
    text = _mutate(draw, text, VALUES, r"(?<=\s)-?\d+(\.\d+)?(?=\s)")
    if draw(st.booleans()):
        argv = ["predict", f"{{schedules}}/{machine}", "--against", "{input}"]
    else:
        argv = ["calibrate", "{input}", "--machine", f"{{schedules}}/{machine}",
                *(["--fit", draw(st.sampled_from(["alpha", "a_LL,a_LL", "nothing", "V"]))]
                  if draw(st.booleans()) else [])]
    return "nccl-tests-log", "input.txt", text, argv, None


# ---- issue 36's front ends: machine import (NCCL topology, nvidia-smi), JSON logs, argv

TOPO = ROOT / "tests" / "fixtures" / "topo"
TOPOLOGIES = sorted(TOPO.glob("*.xml"))
SMI_FILES = sorted(TOPO.glob("*nvidia-smi*.txt"))
HOSTILE_NAMES = ["mlx5_0&#10;let pwned = 1&#10;#", "a&#13;param q = 1", "\u2028x", "&#x2028;",
                 '"', "&lt;script&gt;", "x" * 300]
# argv values of the causes issue 36 found
NUMBERS = ["inf", "nan", "1e308", "-1", "0", "1e-9", "2", "1e6", "1e7", "3e38", "3.5e38",
           "1" + "0" * 400, "x"]


def _sometimes(draw, options: list[str]) -> list[str]:
    return options if draw(st.integers(0, 2)) == 0 else []


@st.composite
def topology_cases(draw):
    """`machine import` of an NCCL topology file mutated: attribute values (hostile names
    among them), an element renamed (a GPU's <pci> as <nic>), lines; with --hosts/--fabric."""
    text = draw(st.sampled_from(TOPOLOGIES)).read_text(encoding="utf-8")
    text = _mutate(draw, text, XML_VALUES + HOSTILE_NAMES, r'(?<==")[^"]*')
    if draw(st.booleans()):
        tags = [m.start() for m in re.finditer(r"<(pci|gpu|nic|net|cpu) ", text)]
        if tags:
            at = draw(st.sampled_from(tags))
            name = re.match(r"<(\w+)", text[at:]).group(1)
            new = draw(st.sampled_from(["pci", "nic", "gpu", "cpu", "net", "nvlink"]))
            text = text[:at + 1] + new + text[at + 1 + len(name):]
    argv = ["machine", "import", "{input}",
            *_sometimes(draw, ["--nic-speed", draw(st.sampled_from(["200Gbit/s", "0GB/s"]))]),
            *_sometimes(draw, ["--hosts", draw(st.sampled_from(["2", "64", "1000", "4096",
                                                               "0", "5000"]))]),
            *_sometimes(draw, ["--fabric", draw(st.sampled_from(
                ["rail", "single-switch", "fat-tree:", "fat-tree:spines=4,oversub=2", "x"]))]),
            *_sometimes(draw, ["--sm", draw(st.sampled_from(["90", "80", "12"])), "--nvlinks",
                               draw(st.sampled_from(["12", "1", "0"]))]),
            "-o", "{out}"]
    return "topology", "input.xml", text, argv, None


def smi_matrix(gpus: int, nics: int = 0) -> str:
    head = "\t" + "\t".join(f"GPU{g}" for g in range(gpus)) + \
        "".join(f"\tNIC{i}" for i in range(nics)) + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID"
    rows = [f"GPU{g}\t" + "\t".join(" X " if h == g else "NV18" for h in range(gpus))
            + "".join("\tPIX" for _ in range(nics)) + "\t0-47\t0\t\tN/A" for g in range(gpus)]
    rows += [f"NIC{i}\t" + "\t".join("PIX" for _ in range(gpus))
             + "".join("\t X " if j == i else "\tSYS" for j in range(nics)) for i in range(nics)]
    legend = "".join(f"  NIC{i}: mlx5_{i}\n" for i in range(nics))
    return head + "\n" + "\n".join(rows) + "\n\nLegend:\n\n  X    = Self\n" + \
        (f"\nNIC Legend:\n\n{legend}" if nics else "")


@st.composite
def smi_cases(draw):
    """`machine import --nvidia-smi` of a captured matrix with cells mutated, or a generated
    one of up to 400 GPUs (the import must stay linear in the cells)."""
    if draw(st.integers(0, 3)) == 0:
        text = smi_matrix(draw(st.sampled_from([2, 8, 64, 400])), draw(st.sampled_from([0, 4])))
    else:
        text = draw(st.sampled_from(SMI_FILES)).read_text(encoding="utf-8")
    text = _mutate(draw, text, ["NV99", "X", "SYS", "", "garbage", "NV0", "NV18", "PIX",
                                "mlx5_0\nlet x = 1"], r"(?<=\s)(X|NV\d+|PIX|PXB|PHB|NODE|SYS)(?=\s)")
    argv = ["machine", "import", "--nvidia-smi", "{input}", "--sm",
            draw(st.sampled_from(["90", "80", "12"])), "--nvlinks",
            draw(st.sampled_from(["18", "1", "0"])),
            *_sometimes(draw, ["--nic-speed", "400Gbit/s"]),
            *_sometimes(draw, ["--hosts", draw(st.sampled_from(["2", "1000"]))]), "-o", "{out}"]
    return "smi", "input.txt", text, argv, None


@st.composite
def json_log_cases(draw):
    """An nccl-tests -J log: its numbers replaced (huge integers, floats past the range, other
    types), its nesting deepened, ngpus/nthreads 0, on one line or many."""
    rows = [{"size": 8 << k, "count": 2 << k, "type": "float", "redop": "sum", "root": -1,
             "out_of_place": {"time": round(13.5 * 1.3 ** k, 2), "alg_bw": 0.0, "bus_bw": 0.0,
                              "nwrong": 0},
             "in_place": {"time": 13.0, "alg_bw": 0.0, "bus_bw": 0.0, "nwrong": 0}}
            for k in range(draw(st.sampled_from([4, 24, 2000])))]
    config = {"nthreads": draw(st.sampled_from([1, 0, -1])), "ngpus": draw(st.sampled_from(
        [1, 8, 0])), "devices": [{"rank": r} for r in range(8)]}
    text = json.dumps({"version": 3, "args": ["./build/all_reduce_perf"], "config": config,
                       "results": rows}, indent=draw(st.sampled_from([None, 1])))
    text = _mutate(draw, text, VALUES + ["1" + "0" * 400, "1e999", "-0", "null", '"x"', "true",
                                         "[" * 3000 + "]" * 3000],
                   r"(?<=: )-?\d+(\.\d+)?(?=[,}])")
    machine = "calibration/nvidia_dgxc_1node_8xH100_nvlink_allreduce.sched"
    argv = (["predict", f"{{schedules}}/{machine}", "--against", "{input}"]
            if draw(st.booleans()) else
            ["calibrate", "{input}", "--machine", f"{{schedules}}/{machine}"])
    return "json-log", "input.json", text, argv, None


@st.composite
def argv_cases(draw):
    """The argument vectors behind issue 36's causes, their values drawn: --timeout past
    what an alarm holds, NCCL inputs past a C float, scale of an MSCCL file, whatif and
    machine show limits, a directory as FILE, export msccl's channels."""
    kind = draw(st.integers(0, 6))
    if kind == 0:
        command = draw(st.sampled_from(["check", "eval", "sensitivity", "solve"]))
        argv = [command, "{input}", *(["time(ring) = 1 ms", "--for", "V"]
                                      if command == "solve" else []),
                "--timeout", draw(st.sampled_from(NUMBERS))]
    elif kind == 1:
        field = draw(st.sampled_from(["ring.bwIntra", "tree.bwInter", "ring.latencyInter",
                                      "ring.nChannels", "nNodes"]))
        argv = ["nccl", "{input}", "--input", f"{field}={draw(st.sampled_from(NUMBERS))}",
                *_sometimes(draw, ["--json"])]
    elif kind == 2:
        return "argv", "examples/pair_allreduce.xml", None, [
            "scale", "{input}", "--machine", "{schedules}/machines/flat.sched", "--ranks",
            "[g[0],g[1]]", "--in", draw(st.sampled_from(["p", "hosts", "x"]))], None
    elif kind == 3:
        argv = ["whatif", "{input}", "--class", draw(st.sampled_from(["nic", "nvlink", "switch",
                                                                     "rail", "x"])),
                *_sometimes(draw, ["--max-failure-work", draw(st.sampled_from(["1", "100000"]))]),
                *_sometimes(draw, ["--json"])]
    elif kind == 4:
        argv = ["machine", "show", "{input}", "--max-routes",
                draw(st.sampled_from(["1", "3", "1000", "0"])), *_sometimes(draw, ["--json"])]
    elif kind == 5:
        argv = [draw(st.sampled_from(["time", "eval", "whatif", "report", "bound"])),
                "{schedules}/" + draw(st.sampled_from(["seed", "machines", ""])), "--set",
                "V=1MiB", "--machine", "{input}"]
    else:
        argv = ["export", "msccl", "{input}", "-s", "ring", "--channels",
                draw(st.sampled_from(["1", "8", "64", "0"])), "-o", "{out}", "--force"]
    file = draw(st.sampled_from(["seed/pcie_2x4.sched", "seed/nvlink_2x8.sched",
                                 "seed/nvlink_hosts.sched"]))
    return "argv", file, None, argv, None


WRITERS = [  # (argv before the output option, the option); {file} is a shipped .sched
    (["report", "{file}"], "-o"),
    (["sweep", "{file}", "--vary", "V=1MB:1GB:3"], "--csv"),
    (["sweep", "{file}", "--vary", "V=1MB:1GB:3"], "--plot"),
    (["export", "msccl", "{file}", "-s", "ring"], "-o"),
    (["tune", "{file}", "--collective", "allreduce", "--sizes", "1KB:1GB"], "-o")]


@st.composite
def output_cases(draw):
    """A command that writes a file, its output a hostile target (see TARGETS)."""
    before, option = draw(st.sampled_from(WRITERS))
    target = draw(st.sampled_from(TARGETS))
    argv = [a.replace("{file}", "{input}") for a in before] + [option, "{out}"]
    return "output:" + target, "seed/nvlink_2x8.sched", None, argv, target


def prepare(target: str | None, work: Path, input_path: Path, out: str) -> tuple[str, dict]:
    """Make the output target `target` at `out` (a path in `work`); (the path to pass, state
    to check afterwards)."""
    state: dict = {"inputs": {p: p.read_bytes() for p in _inputs(input_path)}}
    path = Path(out)  # with the suffix its option wants
    if target is None or target == "fresh":
        return str(path), state
    if target == "input":
        return str(input_path), state
    if target == "import":
        return str(input_path.parent.parent / "lib" / "ring.sched"), state
    if target == "symlink":
        path.symlink_to(input_path)
    elif target == "hardlink":
        os.link(input_path, path)
    elif target == "fifo":
        os.mkfifo(path)
        state["reader"] = _drain(path)
    elif target == "devnull":
        return os.devnull, state
    elif target == "missing":
        return str(work / "no_such_folder" / path.name), state
    elif target == "directory":
        path.mkdir()
    state["kind"] = stat.S_IFMT(os.lstat(path).st_mode)
    return str(path), state


def violations(target: str | None, code: object, shown: str, state: dict) -> list[str]:
    """What the run broke, by the file policy of schedc.files."""
    found = [f"input {p} changed" for p, data in state["inputs"].items()
             if not p.exists() or p.read_bytes() != data]
    if "kind" in state and stat.S_IFMT(os.lstat(shown).st_mode) != state["kind"]:
        found.append(f"{target} output {shown} was replaced")
    if target == "devnull" and not stat.S_ISCHR(os.stat(os.devnull).st_mode):
        found.append("/dev/null is no longer a device")
    if target in ("input", "symlink", "hardlink", "missing", "directory", "import") and code == 0:
        found.append(f"an output onto {target} was not refused")
    if target == "missing" and Path(shown).parent.exists():
        found.append("a missing folder was made")
    if "reader" in state:
        _stop(Path(shown), state["reader"])
    return found


def _inputs(path: Path) -> list[Path]:
    """The input and the files it imports directly (enough for the shipped files here)."""
    found = [path]
    for m in re.finditer(r'^import "([^"]+)"', path.read_text(encoding="utf-8"), re.M):
        imported = (path.parent / m.group(1)).resolve()
        if imported.exists():
            found.append(imported)
    return found


def _drain(path: Path) -> threading.Thread:
    """A reader that empties the FIFO until it is told to stop (by an empty write)."""
    def read() -> None:
        while True:
            with open(path, "rb") as handle:
                if not handle.read():
                    return
    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def _stop(path: Path, reader: threading.Thread) -> None:
    fd = os.open(path, os.O_WRONLY)  # opened and closed without a byte: the reader's signal
    os.close(fd)
    reader.join(timeout=5)

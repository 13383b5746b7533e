"""The fuzz campaign's other front ends (imported by benchmarks/fuzz.py): MSCCL XML algorithms,
NCCL topology-like XML, nccl-tests logs, and command lines that write files — to the input
itself, through a link to it, to a FIFO, /dev/null, a missing folder or a directory.

Each case is (how, input name, input text, argv with "{input}" and "{out}" placeholders, the
kind of output target). `prepare` makes the target in the run's folder and `violations` says
what a run broke: an input changed, a special file replaced, a file left in a missing folder.
"""

from __future__ import annotations

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

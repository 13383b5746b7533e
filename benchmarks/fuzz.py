"""Fuzz every subcommand in-process: grammar-generated programs, mutations of the shipped
`schedules/` files and random arguments, through `schedc.cli.main` with small work limits;
and the other front ends (benchmarks/fuzz_fronts.py): MSCCL XML, NCCL topology-like XML,
nccl-tests logs, and outputs onto the input, links to it, FIFOs, /dev/null, missing folders.

Each input is one command on one file; the run is classified by its exit code and checked:
- exit 70 (an internal error): recorded with the innermost schedc frame that raised it;
- a run longer than --time-limit seconds (wall), or stopped after 6× that in CPU time;
- a diagnostic `FILE:LINE:COL: error: ...` about the fuzzed file whose excerpt is not line
  LINE of the file, or whose caret is not under the character or token the message names
  (a wrong-line caret);
- an "out of memory" or "nested too deeply" message (bad input reported without a position);
- a file broken by a run: an input changed, a FIFO or device replaced, an output onto an
  input or into a missing folder not refused (a clobber).

    python benchmarks/fuzz.py --examples 100000 [--seed 1] [--out DIR] [--time-limit 10]
    python benchmarks/fuzz.py --replay DIR/internal_000123   # one finding again, traceback on

Hypothesis draws the inputs (generation only: nothing here fails, so nothing is shrunk).
The process caps its own address space (--memory-gb) so that a runaway allocation is a
MemoryError, not the kernel's OOM killer. The topology limit is lowered to 50,000 items for
the run (as --max-transfers and --max-rounds are), so one input takes seconds, not minutes.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import os
import re
import resource
import shutil
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import hypothesis  # noqa: E402
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import schedc.elaborate.topology as topology_stage  # noqa: E402
from schedc.cli import main  # noqa: E402
from schedc.errors import EXCERPT_WIDTH  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
import fuzz_fronts as fronts  # noqa: E402

SCHEDULES = ROOT / "schedules"
SMALL_LIMITS = ["--max-transfers", "20000", "--max-rounds", "2000"]
TOPOLOGY_ITEMS = 50_000

# ---- inputs: pieces of the language ----------------------------------------------------------

NUMBERS = ["0", "1", "2", "3", "4", "7", "8", "16", "0.5", "1.25", "1e3", "1e18", "1e300",
           "1e400", "1e-300", "99999999999999999999", "4611686018427387904", "1e4000",
           "1e40099999999999999999999", "0.000000000000000000001"]
UNITS = ["", "", "B", "KiB", "MiB", "GB", "GB/s", "Gbit/s", "Gbps", "B/s", "s", "ms", "us", "ns",
         "%", "PB/s", "TiB"]
NAMES = ["V", "B", "B_L", "alpha", "a", "b", "g", "h", "i", "j", "k", "n", "x", "ranks", "node",
         "sw", "ring", "hosts", "p"]
OPERATORS = ["+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^", "==", "<", ">=",
             "and", "or", ".."]
STRANGE = ["\x0c", "\r", "\r\n", "\x85", "\u2028", "\u2029", "\t", "\x0b", "\x00", "\ufeff", "é"]
TOKENS = ["param", "let", "topology", "host", "gpu", "switch", "nic", "link", "shared", "bw",
          "class", "via", "half", "latency", "window", "for", "in", "round", "parallel", "if",
          "else", "reduce", "copy", "send", "from", "to", "into", "part", "of", "all", "schedule",
          "allreduce", "allgather", "broadcast", "reduce_scatter", "alltoall", "root", "over",
          "import", "startup", "expect", "report", "budget", "within", "time", "solve", "none",
          "not", "error", "len", "min", "max", "log2", "ceil_log2", "abs", "(", ")", "[", "]",
          "{", "}", ",", ":", ";", ".", "=", "<->", "->", "\n", '"../lib/ring.sched"',
          *NUMBERS, *UNITS[2:], *NAMES, *OPERATORS]


def _number(draw) -> str:
    return draw(st.sampled_from(NUMBERS)) + " " + draw(st.sampled_from(UNITS))


def _expr(draw, depth: int = 0) -> str:
    """A random expression: numbers with units, names, calls, lists, parts, operators."""
    kind = draw(st.integers(0, 9 if depth < 3 else 2))
    if kind == 0:
        return _number(draw)
    if kind <= 2:
        return draw(st.sampled_from(NAMES)) + draw(st.sampled_from(["", "", "[0]", "[i]", "[1e300]"]))
    if kind <= 5:
        return f"{_expr(draw, depth + 1)} {draw(st.sampled_from(OPERATORS))} {_expr(draw, depth + 1)}"
    if kind == 6:
        func = draw(st.sampled_from(["len", "min", "max", "log2", "ceil_log2", "abs", "ceil"]))
        return f"{func}({_expr(draw, depth + 1)})"
    if kind == 7:
        return (f"[{_expr(draw, depth + 1)} for {draw(st.sampled_from(NAMES))} in "
                f"{_expr(draw, depth + 1)}..{_expr(draw, depth + 1)}]")
    if kind == 8:
        return f"part({_expr(draw, depth + 1)} of {_expr(draw, depth + 1)})"
    return f"({_expr(draw, depth + 1)})"


@st.composite
def programs(draw) -> str:
    """A program built from the grammar's statements: half of them tame (every value sensible,
    so they reach verification, bounds and solving), half with extreme values mixed in."""
    tame = draw(st.booleans())

    def pick(sensible: list[str], extreme: list[str]) -> str:
        return draw(st.sampled_from(sensible if tame else sensible + extreme))

    def expr() -> str:
        return pick(["1", "2", "p - 1"], [_expr(draw)])

    p = draw(st.integers(2 if tame else 1, 9))
    lines = [f"let p = {p}",
             f"param V = {pick(['64 MiB', '1 B', '3 KiB'], ['1e300 MiB', '1e-300 MiB', '0 B'])}",
             f"param B = {pick(['25 GB/s', '1 B/s'], ['1e400 KB/s', '0 B/s'])}",
             f"param alpha = {pick(['1 us', '0 s'], ['1e400 ns', '1e-300 s'])}"]
    if tame or draw(st.booleans()):
        lines.append('import "../lib/ring.sched"')
    lines += ["topology {",
              f"  gpu g[{pick(['p'], ['0', '1e300', '2**62', '1000000000'])}]",
              "  switch sw",
              f"  link g[i] <-> sw bw {pick(['B', 'B * 2'], ['1e400 GB/s', 'V'])}"
              f" for i in 0..{pick(['p - 1', 'len(g) - 1'], ['-1', '1e300'])}"]
    if draw(st.booleans()):
        lines.append(f"  link g[i] -> g[j] bw B for i in 0..p - 1 for j in {expr()}..p - 1"
                     " if i != j")
    lines.append("}")
    if not tame and draw(st.booleans()):
        lines.append(f"let {draw(st.sampled_from(NAMES))} = {_expr(draw)}")
    kind = draw(st.sampled_from(["allreduce", "allgather", "reduce_scatter", "broadcast", "reduce",
                                 "alltoall"]))
    root = " root g[0]" if kind in ("broadcast", "reduce") else ""
    lines.append(f"{kind} V over [g[i] for i in 0..p - 1]{root}")
    for s in range(draw(st.integers(1, 3))):
        body = []
        for _ in range(draw(st.integers(1, 4))):
            op = draw(st.sampled_from(["copy", "reduce"]))
            k = int(pick(["2", "4", str(p)], ["0"]))
            a = draw(st.integers(0, p - 1 if tame else p))
            b = (a + draw(st.integers(1, p - 1))) % p if tame else draw(st.integers(0, p))
            part = draw(st.integers(0, max(k - 1, 0) if tame else 4))
            into = f" into part({draw(st.integers(0, max(k - 1, 0)))} of {k})" \
                if draw(st.booleans()) else ""
            transfer = f"{op} part({part} of {k}) from g[{a}] to g[{b}]{into}"
            shape = draw(st.integers(0, 5))
            if shape == 0:
                transfer = f"for t in 0..{expr()} round {{ {transfer} }}"
            elif shape == 1:
                transfer = (f"round {{ for j in 0..p - 1: {op} part(j of p) from g[j] "
                            "to g[(j + 1) % p] }")
            elif shape == 2:
                transfer = "ring_allreduce([g[i] for i in 0..p - 1])"
            elif shape == 3:
                transfer = f"if {pick(['p > 2', 'p == 2'], [_expr(draw)])}: {transfer}"
            body.append("  " + transfer)
        lines += [f"schedule s{s} {{", *body, "}"]
    for _ in range(draw(st.integers(0, 2))):
        lines.append(draw(st.sampled_from([f"report r = {pick(['V / B', 'p * 2'], [_expr(draw)])}",
                                           f"expect time(s0) <= {_number(draw)}",
                                           f"expect {expr()} = {expr()}"])))
    return "\n".join(lines) + "\n"


SOURCES = sorted(p for p in SCHEDULES.rglob("*.sched") if "scale" not in p.parts)


@st.composite
def mutations(draw) -> tuple[str, str]:
    """(the shipped file's path relative to schedules/, its text mutated 1-4 times)."""
    source = draw(st.sampled_from(SOURCES))
    text = source.read_text(encoding="utf-8")
    numbers = [m.span() for m in re.finditer(r"\d+(\.\d+)?([eE][+-]?\d+)?", text)]
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        size = draw(st.integers(1, 40))
        kind = draw(st.integers(0, 7))
        if kind == 0 and numbers:  # an extreme value where a number was
            lo, hi = draw(st.sampled_from(numbers))
            text = text[:lo] + draw(st.sampled_from(NUMBERS)) + text[hi:]
            numbers = []  # positions are stale now
        elif kind == 1:
            text = text[:at] + draw(st.sampled_from(STRANGE)) + text[at:]
        elif kind == 2:
            text = text[:at] + text[at + size:]
        elif kind == 3:
            text = text[:at] + " " + draw(st.sampled_from(TOKENS)) + " " + text[at:]
        elif kind == 4:
            text = text[:at] + text[at:at + size] + text[at:]
        elif kind == 5:
            text = text[:at] + _expr(draw) + text[at + size:]
        elif kind == 6:
            lines = text.split("\n")
            k = draw(st.integers(0, len(lines) - 1))
            lines.insert(draw(st.integers(0, len(lines))), lines[k])
            text = "\n".join(lines)
        else:
            text = text[:at] + draw(st.sampled_from(STRANGE)) + "\n" + text[at:]
    return str(source.relative_to(SCHEDULES)), text


def _arguments(draw, command: str) -> list[str]:
    """The options of one command, with random values some of the time."""
    def sometimes(options: list[str]) -> list[str]:
        return options if draw(st.integers(0, 3)) == 0 else []
    value = f"{draw(st.sampled_from(NAMES))}={_number(draw)}"
    args = sometimes(["--set", value]) + sometimes(["-s", draw(st.sampled_from(["s0", "ring", "x"]))])
    if command in ("time", "compare", "verify", "solve", "sensitivity", "sweep", "bound", "eval"):
        args += sometimes(["--json"])
    if command in ("time", "compare", "solve", "sensitivity", "sweep", "bound"):
        args += sometimes(["--no-verify"])
    if command in ("solve", "sensitivity", "eval", "check"):
        args += ["--timeout", "2"]
    if command == "solve":
        left = draw(st.sampled_from(["time(s0)", "time(ring)", "2 * time(s0)", _number(draw)]))
        right = draw(st.sampled_from(["time(s1)", "time(hierarchical)", "time(s0) + 1 us",
                                      _expr(draw)]))
        args = [f"{left} {draw(st.sampled_from(['=', '<=', '<']))} {right}",
                "--for", draw(st.sampled_from(["V", "B", "alpha", "B_L", "x"]))] + args
    if command == "sweep":
        lo, hi = _number(draw), _number(draw)
        args += ["--vary", f"{draw(st.sampled_from(['V', 'B', 'alpha']))}={lo}:{hi}:"
                           f"{draw(st.sampled_from(['3', '5', '0']))}"] + sometimes(["--linear"])
    if command == "bound":
        args += ["--max-cuts", "40"]
    if command == "emit":
        args = [draw(st.sampled_from(["ast", "ir", "loads", "formula"]))] + args + \
            ["--max-lines", "20000"]
    return args


COMMANDS = ["emit", "time", "compare", "verify", "solve", "sensitivity", "sweep", "bound",
            "eval", "check"]


@st.composite
def cases(draw) -> tuple[str, str, str, list[str]]:
    """(how it was made, file path relative to schedules/, text, command line after FILE)."""
    how = draw(st.sampled_from(["output", "grammar", "mutation", "mutation", "tokens", "xml",
                                "log", "output", "log", "grammar", "topology", "smi",
                                "json-log", "argv", "argv"]))
    others = {"xml": fronts.xml_cases, "log": fronts.log_cases, "output": fronts.output_cases,
              "topology": fronts.topology_cases, "smi": fronts.smi_cases,
              "json-log": fronts.json_log_cases, "argv": fronts.argv_cases}
    if how in others:  # (how, name, text, argv with placeholders, target)
        return draw(others[how]())
    if how == "grammar":
        relative, text = "seed/fuzz_input.sched", draw(programs())
    elif how == "mutation":
        relative, text = draw(mutations())
    else:
        relative = "seed/fuzz_input.sched"
        text = " ".join(draw(st.lists(st.sampled_from(TOKENS), max_size=60)))
    command = draw(st.sampled_from(COMMANDS))
    return how, relative, text, [command] + _arguments(draw, command), None


# ---- running and checking ---------------------------------------------------------------------


class _CpuLimit(BaseException):
    """The run used more CPU time than allowed (a hang)."""


@dataclass
class Tally:
    runs: int = 0
    by_how: collections.Counter = field(default_factory=collections.Counter)
    exit_codes: collections.Counter = field(default_factory=collections.Counter)
    internal: collections.Counter = field(default_factory=collections.Counter)
    slow: list = field(default_factory=list)
    wrong_line: list = field(default_factory=list)
    unlocated: collections.Counter = field(default_factory=collections.Counter)
    clobbered: list = field(default_factory=list)
    slowest: float = 0.0
    seconds: float = 0.0

    def summary(self) -> dict:
        return {"inputs": self.runs, "by_source": dict(self.by_how),
                "exit_codes": {str(k): v for k, v in sorted(self.exit_codes.items(), key=str)},
                "internal_errors": len(sum(([k] * v for k, v in self.internal.items()), [])),
                "internal_error_sites": dict(self.internal.most_common()),
                "past_time_limit": len(self.slow), "wrong_line_carets": len(self.wrong_line),
                "unlocated_memory_or_depth": dict(self.unlocated),
                "files_broken": len(self.clobbered),
                "slowest_run_s": round(self.slowest, 2), "total_s": round(self.seconds, 1)}


def _site(exc: BaseException) -> str:
    """The innermost frame in schedc's own code, as Type@module:line(function)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/schedc/" in f.filename]
    where = frames[-1] if frames else traceback.extract_tb(exc.__traceback__)[-1]
    short = where.filename.split("/schedc/")[-1]
    return f"{type(exc).__name__}@{short}:{where.lineno}({where.name})"


def run_one(argv: list[str], cpu_seconds: float) -> tuple[object, str, str, float, str | None]:
    """(exit code or 'cpu-limit'/'internal', stdout, stderr, wall seconds, internal site)."""
    out, err = io.StringIO(), io.StringIO()
    site = None

    def _expire(signum, frame):
        raise _CpuLimit

    previous = signal.signal(signal.SIGPROF, _expire)
    signal.setitimer(signal.ITIMER_PROF, cpu_seconds)
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main(argv)
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    except _CpuLimit:
        code = "cpu-limit"
    except Exception as exc:  # SCHEDC_DEBUG=1 lets internal errors through, to find their site
        code, site = 70, _site(exc)
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
    return code, out.getvalue(), err.getvalue(), time.perf_counter() - start, site


_DIAGNOSTIC = re.compile(r"^(?P<file>[^\n]+?):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>[^\n]*)\n"
                         r"  (?P<excerpt>[^\n]*)\n  (?P<caret> *)\^", re.M)
_SHOWN_AS_SPACE = {c: " " for c in [*range(32), 0x7f, 0x85, 0x2028, 0x2029]}


def _excerpt(line: str, col: int) -> tuple[str, int]:
    """The excerpt of `line` and the caret's column in it: a line longer than EXCERPT_WIDTH
    is cut to that many columns around `col`, '...' where it is cut (errors.Span.excerpt)."""
    if len(line) <= EXCERPT_WIDTH:
        return line.translate(_SHOWN_AS_SPACE), col
    first = max(0, min(col - 1 - EXCERPT_WIDTH // 2, len(line) - EXCERPT_WIDTH))
    before = "..." if first else ""
    after = "..." if first + EXCERPT_WIDTH < len(line) else ""
    cut = before + line[first:first + EXCERPT_WIDTH] + after
    return cut.translate(_SHOWN_AS_SPACE), col - first + len(before)


def wrong_lines(stderr: str, shown_path: str, text: str) -> list[str]:
    """Diagnostics about the fuzzed file whose excerpt or caret is not where they say.

    The file's lines are counted here as Python reads a source file (universal newlines, then
    only '\\n' breaks a line); the caret must sit under the character or token named by an
    'unexpected ...' message."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    bad = []
    for m in _DIAGNOSTIC.finditer(stderr):
        if m["file"] != shown_path:
            continue
        number, col = int(m["line"]), int(m["col"])
        expected, at = _excerpt(lines[number - 1], col) if number <= len(lines) else (None, 0)
        if expected is None or m["excerpt"] != expected or len(m["caret"]) != at - 1:
            bad.append(f"{m['file']}:{number}:{col}: excerpt {m['excerpt']!r} "
                       f"but line {number} is {expected!r}")
            continue
        named = re.match(r"unexpected (?:character )?'(.*)'; expected", m["msg"])
        source_line = lines[number - 1]
        if named and not named[1].startswith("\\"):
            token = named[1]
            if source_line[col - 1:col - 1 + len(token)] != token:
                bad.append(f"{m['file']}:{number}:{col}: caret not under {token!r} "
                           f"in {source_line!r}")
    return bad


def fuzz(examples: int, seed: int, time_limit: float, out: Path | None,
         memory_gb: float = 4.0, progress: bool = True) -> Tally:
    """Run `examples` inputs; write the findings' inputs under `out` if given. The process's
    settings changed for the run (SCHEDC_DEBUG, the topology limit, the memory cap) are
    restored at the end."""
    saved = (os.environ.get("SCHEDC_DEBUG"), topology_stage.MAX_TOPOLOGY_ITEMS,
             resource.getrlimit(resource.RLIMIT_AS), topology_stage.MAX_DEVICES)
    os.environ["SCHEDC_DEBUG"] = "1"
    if memory_gb:
        cap = int(memory_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, saved[2][1]))
    topology_stage.MAX_TOPOLOGY_ITEMS = topology_stage.MAX_DEVICES = TOPOLOGY_ITEMS
    try:
        return _campaign(examples, seed, time_limit, out, progress)
    finally:
        if saved[0] is None:
            os.environ.pop("SCHEDC_DEBUG", None)
        else:
            os.environ["SCHEDC_DEBUG"] = saved[0]
        topology_stage.MAX_TOPOLOGY_ITEMS, topology_stage.MAX_DEVICES = saved[1], saved[3]
        resource.setrlimit(resource.RLIMIT_AS, saved[2])


def _campaign(examples: int, seed: int, time_limit: float, out: Path | None,
              progress: bool) -> Tally:
    tally = Tally()
    work = Path(tempfile.mkdtemp(prefix="schedc-fuzz-"))
    tree = work / "schedules"
    shutil.copytree(SCHEDULES, tree, ignore=shutil.ignore_patterns("scale"))
    began = time.perf_counter()

    def keep(kind: str, relative: str, text: str, argv: list[str], detail: str) -> None:
        if out is None:
            return
        folder = out / f"{kind}_{tally.runs:06d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "input.sched").write_text(text, encoding="utf-8")
        (folder / "case.json").write_text(json.dumps(
            {"file": relative, "argv": argv, "detail": detail}, indent=2, ensure_ascii=True))

    @settings(max_examples=examples, deadline=None, database=None, phases=[Phase.generate],
              derandomize=False, suppress_health_check=list(HealthCheck))
    @given(cases())
    def one(case):
        how, relative, text, args, target = case
        if "{input}" in args:  # another front end: placeholders in the arguments
            path, scratch = _front_input(work, tree, relative, text)
            suffix = ".svg" if "--plot" in args else ".csv"
            out, state = fronts.prepare(target, scratch, path, str(scratch / f"out{suffix}"))
            argv = [a.replace("{input}", str(path)).replace("{schedules}", str(tree))
                    .replace("{out}", out) for a in args]
            argv += SMALL_LIMITS if args[:2] != ["machine", "import"] else []  # (no such options)
            text = text if text is not None else path.read_text(encoding="utf-8")
        else:
            path = tree / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path = path.with_name("fuzz_input.sched")
            path.write_text(text, encoding="utf-8")
            argv = [args[0], *(args[1:2] if args[0] == "emit" else []), str(path),
                    *(args[2:] if args[0] == "emit" else args[1:])]
            if args[0] != "emit" or args[1] != "ast":
                argv += SMALL_LIMITS
            state = None
        code, _, stderr, wall, site = run_one(argv, cpu_seconds=6 * time_limit)
        if state is not None:
            for problem in fronts.violations(target, code, out, state):
                tally.clobbered.append(problem)
                keep("clobbered", relative, text, argv, problem)
        tally.runs += 1
        tally.by_how[how] += 1
        tally.exit_codes[code] += 1
        tally.slowest = max(tally.slowest, wall)
        if site:
            tally.internal[site] += 1
            keep("internal", relative, text, argv, site)
        if code == "cpu-limit" or wall > time_limit:
            tally.slow.append((round(wall, 1), argv[0]))
            keep("slow", relative, text, argv, f"{wall:.1f} s")
        for problem in wrong_lines(stderr, str(path), text):
            tally.wrong_line.append(problem)
            keep("wrong_line", relative, text, argv, problem)
        for marker in ("out of memory", "nested too deeply"):
            if marker in stderr:
                tally.unlocated[marker] += 1
                keep("unlocated", relative, text, argv, marker)
        if progress and tally.runs % 500 == 0:
            print(json.dumps(tally.summary()), flush=True)

    hypothesis.seed(seed)(one)()  # the same inputs for the same seed
    tally.seconds = time.perf_counter() - began
    shutil.rmtree(work, ignore_errors=True)
    return tally


def _front_input(work: Path, tree: Path, relative: str, text: str | None) -> tuple[Path, Path]:
    """(the input file, an empty scratch folder for outputs) of one front-end case: the
    shipped file itself when `text` is None (an output case), else `text` in a new file."""
    scratch = Path(tempfile.mkdtemp(dir=work, prefix="case-"))
    if text is None:
        return tree / relative, scratch
    path = scratch / relative
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    return path, scratch


def replay(folder: Path) -> None:
    """Run one finding again (its input in a fresh copy of schedules/), showing tracebacks."""
    case = json.loads((folder / "case.json").read_text())
    with tempfile.TemporaryDirectory(prefix="schedc-replay-") as work:
        tree = Path(work) / "schedules"
        shutil.copytree(SCHEDULES, tree, ignore=shutil.ignore_patterns("scale"))
        path = (tree / case["file"]).with_name("fuzz_input.sched")
        shutil.copy(folder / "input.sched", path)
        argv = [str(path) if a.endswith("/fuzz_input.sched") else a for a in case["argv"]]
        print("schedc", " ".join(argv), file=sys.stderr)
        os.environ["SCHEDC_DEBUG"] = "1"
        main(argv)


def _main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-limit", type=float, default=10.0,
                        help="seconds of wall time one run may take (default 10)")
    parser.add_argument("--memory-gb", type=float, default=4.0)
    parser.add_argument("--out", type=Path, help="write each finding's input here")
    parser.add_argument("--replay", type=Path, metavar="FINDING", help="run one finding again")
    args = parser.parse_args()
    if args.replay:
        replay(args.replay)
    tally = fuzz(args.examples, args.seed, args.time_limit, args.out, args.memory_gb)
    print(json.dumps(tally.summary(), indent=2))
    for problem in tally.wrong_line[:20]:
        print("wrong line:", problem)
    for problem in tally.clobbered[:20]:
        print("file broken:", problem)
    for wall, command in tally.slow[:20]:
        print(f"slow: {command} {wall} s")


if __name__ == "__main__":
    _main()

"""Each executor's rules for an MSCCL file, every one with the source line that applies it.

Two executors read MSCCL XML, with different rules:

- `msccl-executor-nccl`: Azure/msccl-executor-nccl at c6f6b36d1a4c7ae44916fcc5c8e32c95cce2ae54,
  `src/misc/msccl/msccl_parser.cc` (`mscclGetAlgoFromXmlFile`, `mscclGetAlgoMetaFromXmlFile`),
  its limits in `src/include/msccl/msccl_struct.h` and `makefiles/common.mk`;
- `msccl`: microsoft/msccl at b23e9cd5dd63f82ee1c5aae7e0a2042079be903a, `src/graph/topo.cc`
  (`mscclGetAlgoFromXMLAndSetAlgo`), its limits in `src/include/msccl.h`.

Their limits, required attributes and the line of every rule are executors.py's. A rule is
refused by the parser (the file does not load) or misread (it loads and the kernel
does something else: a thread-block id that does not fit `int8_t`, an offset past `int16_t`).
`violations` lists every one in a file for one executor, without stopping at the first;
schedc's own reader (`document`) is a separate, stricter concern (what the schedule means).
"""

from __future__ import annotations

from collections import defaultdict

from dataclasses import dataclass
from functools import cache, lru_cache

from ..choices import NCCL_PROTOCOLS
from ..errors import ElaborationError, Span
from ..limits import MAX_CHANNELS  # MAXCHANNELS: src/include/device.h:65 / devcomm.h:51
from ..xmltree import Element
from .executors import (
    ALGO_REQUIRED,
    BUFFER_NAMES,
    CHECK_DST,
    CHECK_SRC,
    COLLS,
    GPU_REQUIRED,
    LINES,
    MAX_COUNT,
    MAX_DEPENDED_TB,
    MAX_NODES,
    MAX_OFFSET,
    MAX_PER_CHANNEL,
    MAX_STEPS,
    MAX_SUBS,
    MAX_THREAD_BLOCKS,
    MSCCL,
    NCCL,
    PARSER,
    RECEIVES,
    SENDS,
    STEP_REQUIRED,
    STEP_TYPES,
    TB_REQUIRED,
)
from .tokens import TokenProblem, scan


@dataclass(frozen=True)
class Violation:
    executor: str
    message: str
    span: Span
    source: str  # "msccl_parser.cc:485": where the executor applies the rule
    misread: bool = False  # loads, but the kernel does something else

    def render(self) -> str:
        how = "misreads" if self.misread else "refuses"
        return (f"{self.span}: error: {self.message} ({self.executor} {how} it: {self.source})\n"
                f"{self.span.excerpt()}")


class ExecutorRulesError(ElaborationError):
    """A file that one executor refuses or misreads: every violation, each at its place."""

    def __init__(self, executor: str, found: list[Violation]) -> None:
        super().__init__(f"{executor} would not run this file as written: {len(found)} "
                         "problem" + "s" * (len(found) != 1), found[0].span)
        self.violations = found

    def render(self) -> str:
        """Every violation, but at most SHOWN_PER_RULE of one rule (20,000 steps past the
        256th are one problem for the reader, not 20,000 excerpts); the total counts all."""
        shown: dict[str, int] = defaultdict(int)
        lines = []
        for v in self.violations:
            shown[v.source] += 1
            if shown[v.source] <= SHOWN_PER_RULE:
                lines.append(v.render())
        lines += [f"... and {n - SHOWN_PER_RULE:,} more of the rule at {source}, not shown"
                  for source, n in shown.items() if n > SHOWN_PER_RULE]
        return "\n".join(lines) + f"\n{self.violations[0].executor}: {len(self.violations):,} " \
            "problem" + "s" * (len(self.violations) != 1)


SHOWN_PER_RULE = 20


def _where(executor: str, rule: str) -> str:
    line = LINES[rule][executor]
    if isinstance(line, str):
        return line if ":" in line else f"{PARSER[executor].split()[-1]}:{line}"
    return f"{PARSER[executor].split('/')[-1]}:{line}"


@lru_cache(maxsize=4096)  # (the same few numbers, thousands of times a file)
def _int(text: str | None) -> int | None:
    """As strtol(str, NULL, 0) reads a whole number (None when it is not one)."""
    if text is None:
        return None
    if text.isdigit() and text.isascii() and (text[0] != "0" or len(text) == 1):
        return int(text)  # (the common case, first: a file has thousands of steps)
    try:
        return int(text.strip(), 0)
    except ValueError:
        return None


@cache
def _keys_of(table: tuple) -> frozenset[str]:
    return frozenset(key for key, _ in table)


def _keys(table: dict, executor: str) -> frozenset[str]:
    """The attributes a table of required ones names for `executor`."""
    return _keys_of(table[executor])


def violations(root: Element, text: str, source, executor: str,
               max_steps: int | None = None, tokens: tuple[TokenProblem | None] | None = None
               ) -> list[Violation]:
    """Every rule of `executor` that the file breaks, in file order (`tokens`: what
    `scan(text)` gave, when known)."""
    found: list[Violation] = []
    steps_limit = max_steps or MAX_STEPS[executor]

    def add(rule: str, message: str, span: Span, misread: bool = False) -> None:
        if executor in LINES[rule] or rule == "required":
            found.append(Violation(executor, message, span, _where(executor, rule), misread))

    def required(element: Element, table: dict, place: str) -> None:
        if element.attrs.keys() >= _keys(table, executor):
            return
        for key, line in table[executor]:
            if key not in element.attrs:
                found.append(Violation(executor, f"{place}: <{element.name}> has no '{key}' "
                                       "attribute", element.span,
                                       f"{PARSER[executor].split('/')[-1]}:{line}"))

    problem = scan(text) if tokens is None else tokens[0]
    if problem is not None:
        line, col = source.position(problem.offset)
        found.append(Violation(executor, problem.message, Span(source, line, col, line, col + 1),
                               ("msccl_parser.cc" if executor == NCCL else "xml.cc")
                               + f":{problem.line if executor == NCCL else 'xmlGetNode'}"))
    if root.name != "algo":
        add("root", f"the root element is <{root.name}>, not <algo>", root.span)
        return found
    _algo(root, executor, add, required)
    a = root.attrs
    ngpus = _int(a.get("ngpus")) or 0
    chunks = _int(a.get("nchunksperloop"))
    coll = a.get("coll", "")
    gpus = [e for e in root.children if e.name == "gpu"]
    if len(root.children) > MAX_SUBS:
        add("subs", f"<algo> has {len(root.children)} child elements; the parser's table "
            f"holds {MAX_SUBS} and overflows", root.span, misread=True)
    ids = {_int(g.attrs.get("id")) for g in gpus}
    missing = [k for k in range(ngpus) if k not in ids]
    if missing:
        add("ngpus", f"ngpus={ngpus} but there is no <gpu id=\"{missing[0]}\">"
            + (f" (nor for {len(missing) - 1} more rank{'s' if len(missing) > 2 else ''})"
               if len(missing) > 1 else ""),
            root.span, misread=True)
    for gpu in gpus:
        _gpu(gpu, executor, steps_limit, ngpus, chunks, coll, len(gpus), add, required)
    return found


def _algo(root: Element, executor: str, add, required) -> None:
    """The rules on <algo>'s own attributes: required ones, protocol, collective, the size
    range, threads and channels."""
    a = root.attrs
    required(root, ALGO_REQUIRED, "algo")
    if a.get("proto") is not None and a["proto"] not in NCCL_PROTOCOLS:
        add("proto", f"protocol \"{a['proto']}\" is not Simple, LL128 or LL", root.span)
    if a.get("coll") is not None and a["coll"] not in COLLS[executor]:
        add("coll", f"coll \"{a['coll']}\" is not one it knows ({', '.join(COLLS[executor])})",
            root.span)
    low, high = _int(a.get("minBytes")), _int(a.get("maxBytes"))
    low = 0 if low is None else low
    high = (1 << 27) if high is None and "maxBytes" not in a else high
    if high is not None and (low > high or low < 0 or high < 0):
        add("bytes", f"minBytes={low} is more than maxBytes={high}" if low > high else
            "minBytes and maxBytes must not be negative", root.span)
    threads = _int(a.get("nthreads"))
    if threads is not None and threads % 32:
        add("nthreads", f"nthreads={threads} is not a multiple of 32", root.span)
    channels = _int(a.get("nchannels"))
    if channels is not None and channels > MAX_CHANNELS:
        add("nchannels", f"nchannels={channels}: more than the {MAX_CHANNELS} channels NCCL has",
            root.span)


def _gpu(gpu: Element, executor: str, steps_limit: int, ngpus: int, chunks: int | None,
         coll: str, ngpu_nodes: int, add, required) -> None:
    g = gpu.attrs
    gid = _int(g.get("id"))
    place = f"gpu {g.get('id', '?')}"
    required(gpu, GPU_REQUIRED, place)
    sizes = {"i": _int(g.get("i_chunks")), "o": _int(g.get("o_chunks")),
             "s": _int(g.get("s_chunks"))}
    if sizes["s"] is not None and sizes["s"] < 0:
        add("s_chunks", f"{place}: s_chunks is negative", gpu.span)
    if chunks is not None:
        for buffer, multiple in (("i", coll == "allgather"), ("o", coll == "reduce_scatter")):
            n = sizes[buffer]
            if n and n * (ngpus if multiple else 1) != chunks:
                add("chunks", f"{place}: {buffer}_chunks={n} is not nchunksperloop={chunks}"
                    + (f" / ngpus={ngpus}" if multiple else ""), gpu.span)
    tbs = [e for e in gpu.children if e.name == "tb"]
    nodes = 1 + ngpu_nodes + len(tbs) + sum(len([s for s in t.children if s.name == "step"])
                                            for t in tbs)
    if nodes >= MAX_NODES:
        add("nodes", f"{place}: its parse keeps {nodes} elements (the algo, every gpu, its "
            f"thread blocks and steps); the parser holds {MAX_NODES - 1}", gpu.span)
    if len(gpu.children) > MAX_SUBS:
        add("subs", f"{place}: {len(gpu.children)} child elements; the parser's table holds "
            f"{MAX_SUBS} and overflows", gpu.span, misread=True)
    seen: set[int] = set()
    senders: dict[int, int] = {}
    receivers: dict[int, int] = {}
    for tb in tbs:
        send, recv, chan, here = _tb(tb, place, gid, ngpus, executor, seen, add, required)
        _steps(tb, here, executor, steps_limit, send, recv, sizes, add, required,
               senders.get(chan or 0, 0), receivers.get(chan or 0, 0))
        if send is not None and send >= 0:
            senders[chan or 0] = senders.get(chan or 0, 0) + 1
        if recv is not None and recv >= 0:
            receivers[chan or 0] = receivers.get(chan or 0, 0) + 1
    present = sorted(seen)
    gap = next((k for k in range(len(present)) if present[k] != k), None)
    if gap is not None and present:
        add("tb_gap", f"{place}: thread block {gap} is missing (ids must be 0, 1, ...)", gpu.span)


def _tb(tb: Element, place: str, gid: int | None, ngpus: int, executor: str, seen: set[int],
        add, required) -> tuple[int | None, int | None, int | None, str]:
    """The rules on a <tb>'s own attributes (its id among `seen`, its peers, its channel);
    its send and receive peers, channel and place."""
    t = tb.attrs
    required(tb, TB_REQUIRED, place + ", a tb")
    bid, send, recv, chan = (_int(t.get(k)) for k in ("id", "send", "recv", "chan"))
    here = f"{place}, tb {t.get('id', '?')}"
    if bid is not None:
        if bid < 0:
            add("tb_negative", f"{here}: a negative thread-block id", tb.span)
        elif bid >= MAX_THREAD_BLOCKS[executor]:
            add("tb_id", f"{here}: thread-block id {bid}; at most "
                f"{MAX_THREAD_BLOCKS[executor]} thread blocks per gpu", tb.span)
        elif bid in seen:
            add("tb_duplicate", f"{here}: a duplicate thread-block id", tb.span)
        seen.add(bid)
    if gid is not None and gid in (send, recv):
        add("own_peer", f"{here}: a peer that is the gpu itself", tb.span)
    if (send is not None and send < -1) or (recv is not None and recv < -1):
        add("peer_low", f"{here}: a peer below -1", tb.span)
    if (send is not None and send >= ngpus) or (recv is not None and recv >= ngpus):
        add("peer_range", f"{here}: a peer past ngpus={ngpus}", tb.span)
    if chan is not None and not 0 <= chan < MAX_CHANNELS:
        add("chan", f"{here}: channel {chan} (channels are 0..{MAX_CHANNELS - 1})", tb.span,
            misread=chan == MAX_CHANNELS)
    return send, recv, chan, here


class _Place:
    """`gpu 0, tb 3, step 2`, made only when a message needs it."""

    def __init__(self, here: str, attrs: dict[str, str]) -> None:
        self.here, self.attrs = here, attrs

    def __str__(self) -> str:
        return f"{self.here}, step {self.attrs.get('s', '?')}"


def _steps(tb: Element, here: str, executor: str, steps_limit: int, send: int | None,
           recv: int | None, sizes: dict, add, required, senders: int, receivers: int) -> None:
    step_keys = _keys(STEP_REQUIRED, executor)
    pending = 0  # dependencies of nops waiting for the next instruction (cc:458-620)
    last_reduce: tuple | None = None
    for step in (e for e in tb.children if e.name == "step"):
        s = step.attrs
        if not s.keys() >= step_keys:
            required(step, STEP_REQUIRED, here + ", a step")
        index, cnt, depid, deps = _int(s.get("s")), _int(s.get("cnt")), _int(s.get("depid")), \
            _int(s.get("deps"))
        kind = s.get("type", "")
        at = _Place(here, s)
        if index is not None and not 0 <= index < steps_limit:
            add("steps", f"{at}: step number {index}; at most {steps_limit} steps per thread "
                "block" + (" (MSCCL_MAX_NUM_STEPS of the default build, makefiles/common.mk:19)"
                           if executor == NCCL and steps_limit == MAX_STEPS[NCCL] else ""),
                step.span)
        if kind not in STEP_TYPES[executor]:
            add("type", f"{at}: step type \"{kind}\" is not one it knows", step.span)
            continue
        for key in ("srcbuf", "dstbuf"):
            if s.get(key, "i") not in BUFFER_NAMES:
                add("buffer", f"{at}: {key}=\"{s[key]}\" is not i, o or s", step.span)
        if depid is not None and depid >= 0:
            pending += 1
            if depid > MAX_DEPENDED_TB:
                add("depid", f"{at}: depends on thread block {depid}, which int8_t "
                    f"dependentBid stores as {(depid + 128) % 256 - 128}", step.span, misread=True)
            if deps is not None and deps > MAX_OFFSET:
                add("offset16", f"{at}: deps={deps} does not fit int16_t", step.span,
                    misread=True)
        if kind == "nop":
            continue
        _moves(step, at, kind, cnt, send, recv, sizes, senders, receivers, add)
        reduce_key = (s.get("dstbuf"), s.get("dstoff"), s.get("srcbuf"))
        continuing = kind == "re" and last_reduce == reduce_key and (depid is None or depid < 0)
        if not continuing:
            if pending > 0 and (depid is None or depid < 0):
                add("chain", f"{at}: nops before it wait for other thread blocks, but it has no "
                    "depid of its own (the last dependency must be on the instruction itself)",
                    step.span)
            pending = 0
        last_reduce = reduce_key if kind == "re" and s.get("hasdep") != "1" else None
        if s.get("hasdep") not in (None, "0", "1"):
            add("hasdep", f"{at}: hasdep=\"{s['hasdep']}\" is not 0 or 1", step.span)


def _moves(step: Element, at: _Place, kind: str, cnt: int | None, send: int | None,
           recv: int | None, sizes: dict, senders: int, receivers: int, add) -> None:
    """The rules on what a step that moves data moves: its count, its peers, the thread
    blocks per channel, and its offsets within the buffers."""
    s = step.attrs
    if cnt is not None and not 0 <= cnt < MAX_COUNT:
        add("count", f"{at}: cnt={cnt}; a step moves fewer than {MAX_COUNT} chunks "
            "(MSCCL_MAX_COUNT)", step.span)
    if kind in SENDS and send is not None and send < 0:
        add("send_peer", f"{at}: a '{kind}' in a thread block without a send peer",
            step.span)
    if kind in RECEIVES and recv is not None and recv < 0:
        add("recv_peer", f"{at}: a '{kind}' in a thread block without a receive peer",
            step.span)
    if kind in SENDS and senders >= MAX_PER_CHANNEL:
        add("per_channel_send", f"{at}: the {senders + 1}th thread block sending on its "
            f"channel; at most {MAX_PER_CHANNEL}", step.span)
    if kind in RECEIVES and receivers >= MAX_PER_CHANNEL:
        add("per_channel_recv", f"{at}: the {receivers + 1}th thread block receiving on its "
            f"channel; at most {MAX_PER_CHANNEL}", step.span)
    for key, bufkey, used in (("srcoff", "srcbuf", kind in CHECK_SRC),
                              ("dstoff", "dstbuf", kind in CHECK_DST)):
        buf, off = s.get(bufkey), _int(s.get(key))
        size = sizes.get(buf) if buf else None
        if used and off is not None and size is not None and not -1 <= off < size:
            add("bounds", f"{at}: {key}={off} is outside the {buf} buffer "
                f"({buf}_chunks={size})", step.span)
        if off is not None and off > MAX_OFFSET:
            add("offset16", f"{at}: {key}={off} does not fit int16_t", step.span,
                misread=True)

"""MSCCL XML → `Algo`: the document with a position for every element, checked against the
rules of the executors' readers.

The reader of record is Azure/msccl-executor-nccl `src/misc/msccl/msccl_parser.cc`
(`mscclGetAlgoFromXmlFile`): it requires every attribute read below, rejects a thread block
whose peer is its own GPU, thread-block ids with gaps, unknown step types and buffers, and
offsets past a buffer. Checked here too, because the schedule means nothing otherwise: a
`cnt` that runs past a buffer (the executor checks only the first chunk), steps numbered out
of order (dependencies name steps by their `s`), and dependencies on steps that do not exist.
Everything else (matching sends and receives, cycles) is `rounds`' business.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.parsers import expat

from ..errors import ElaborationError, LoadError, ParseError, SourceFile, Span, decode_source
from ..files import read_input

STEP_TYPES = ("s", "r", "rcs", "rrs", "rrc", "rrcs", "cpy", "re", "nop")
BUFFERS = {"i": "input", "o": "output", "s": "scratch"}
PROTOCOLS = ("Simple", "LL", "LL128")
# Both executors' names (msccl-tools writes reduce_scatter, the executor reads reducescatter)
# → schedc's collective.
COLLECTIVES = {"allreduce": "allreduce", "allgather": "allgather", "alltoall": "alltoall",
               "reducescatter": "reduce_scatter", "reduce_scatter": "reduce_scatter"}
MAX_THREAD_BLOCKS = 32 * 32  # MSCCL_MAX_NUM_THREAD_BLOCKS: 32 per channel × MAXCHANNELS
MAX_CHANNELS = 32

# Which buffers a step type reads (src) and writes or forwards from (dst).
USES_SRC = {"s", "rrs", "rrc", "rrcs", "cpy", "re"}
USES_DST = {"r", "rcs", "rrc", "rrcs", "cpy", "re"}
SENDS = {"s", "rcs", "rrs", "rrcs"}
RECEIVES = {"r", "rcs", "rrs", "rrc", "rrcs"}


@dataclass(frozen=True)
class Step:
    index: int  # `s`
    type: str
    srcbuf: str
    srcoff: int
    dstbuf: str
    dstoff: int
    cnt: int
    depid: int
    deps: int
    hasdep: int
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True)
class ThreadBlock:
    id: int
    send: int
    recv: int
    chan: int
    steps: tuple[Step, ...]
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True)
class Gpu:
    id: int
    i_chunks: int
    o_chunks: int
    s_chunks: int
    tbs: tuple[ThreadBlock, ...]
    span: Span = field(compare=False, repr=False)

    def chunks(self, buffer: str) -> int:
        return {"i": self.i_chunks, "o": self.o_chunks, "s": self.s_chunks}[buffer]


@dataclass(frozen=True)
class Algo:
    name: str
    proto: str
    nchannels: int
    nchunksperloop: int
    ngpus: int
    coll: str  # as written
    inplace: bool
    outofplace: bool
    min_bytes: int
    max_bytes: int
    gpus: tuple[Gpu, ...]  # by id
    span: Span = field(compare=False, repr=False)

    @property
    def collective(self) -> str:
        """schedc's name of the collective."""
        return COLLECTIVES[self.coll]


def where(gpu: int, tb: int | None = None, step: int | None = None) -> str:
    """`gpu 0, tb 3, step 2`: how messages name a place in the XML."""
    parts = [f"gpu {gpu}"] + ([f"tb {tb}"] if tb is not None else []) + \
        ([f"step {step}"] if step is not None else [])
    return ", ".join(parts)


# ---- reading ----------------------------------------------------------------------------------


@dataclass
class _Element:
    name: str
    attrs: dict[str, str]
    span: Span
    children: list[_Element] = field(default_factory=list)


def read_algo(path: str | Path) -> Algo:
    data = read_input(path, "an MSCCL XML file")
    source = decode_source(str(path), data, LoadError)
    return _algo(_parse(source, data), source)


def _parse(source: SourceFile, data: bytes) -> _Element:
    """The element tree, each element with its position (expat reports where a tag starts)."""
    parser = expat.ParserCreate()
    stack: list[_Element] = []
    roots: list[_Element] = []

    def start(name: str, attrs: dict[str, str]) -> None:
        line, col = parser.CurrentLineNumber, parser.CurrentColumnNumber + 1
        element = _Element(name, attrs, Span(source, line, col, line, col + len(name) + 1))
        (stack[-1].children if stack else roots).append(element)
        stack.append(element)

    parser.StartElementHandler = start
    parser.EndElementHandler = lambda name: stack.pop()
    try:
        parser.Parse(data, True)
    except expat.ExpatError as exc:
        line, col = exc.lineno, exc.offset + 1
        message = expat.ErrorString(exc.code)
        raise ParseError(f"malformed XML: {message}", Span(source, line, col, line, col + 1)) \
            from None
    algos = [e for e in roots if e.name == "algo"]
    if not algos:
        raise ParseError("no <algo> element: not an MSCCL algorithm",
                         roots[0].span if roots else Span(source, 1, 1, 1, 2))
    return algos[0]


class _Attributes:
    """An element's attributes, read as the executor reads them; errors name the element."""

    def __init__(self, element: _Element, place: str) -> None:
        self.element, self.place = element, place

    def text(self, key: str) -> str:
        value = self.element.attrs.get(key)
        if value is None:
            raise ElaborationError(f"{self.place}: <{self.element.name}> has no '{key}' "
                                   "attribute (the executor's parser requires it)", self.element.span)
        return value

    def integer(self, key: str, low: int | None = None, high: int | None = None) -> int:
        value = self.text(key)
        try:
            number = int(value.strip())
        except ValueError:
            raise ElaborationError(f"{self.place}: {key}=\"{value}\" is not an integer",
                                   self.element.span) from None
        if (low is not None and number < low) or (high is not None and number > high):
            bounds = f"at least {low}" if high is None else f"between {low} and {high}"
            raise ElaborationError(f"{self.place}: {key}={number} must be {bounds}",
                                   self.element.span)
        return number

    def choice(self, key: str, options) -> str:
        value = self.text(key)
        if value not in options:
            raise ElaborationError(f"{self.place}: unknown {key} \"{value}\" (one of "
                                   f"{', '.join(options)})", self.element.span)
        return value


def _algo(element: _Element, source: SourceFile) -> Algo:
    a = _Attributes(element, "algo")
    coll = a.text("coll")
    if coll not in COLLECTIVES:
        raise ElaborationError(f"algo: coll \"{coll}\" is not supported by schedc (one of "
                               f"{', '.join(COLLECTIVES)})", element.span)
    ngpus = a.integer("ngpus", 1)
    fields: dict[str, Any] = dict(name=element.attrs.get("name", Path(source.path).stem), proto=a.choice(
        "proto", PROTOCOLS), nchannels=a.integer("nchannels", 1, MAX_CHANNELS),
        nchunksperloop=a.integer("nchunksperloop", 1), ngpus=ngpus, coll=coll,
        inplace=bool(a.integer("inplace", 0, 1)), outofplace=bool(a.integer("outofplace", 0, 1)),
        min_bytes=a.integer("minBytes", 0), max_bytes=a.integer("maxBytes", 0))
    if fields["max_bytes"] < fields["min_bytes"]:
        raise ElaborationError("algo: maxBytes is less than minBytes", element.span)
    if not fields["inplace"] and not fields["outofplace"]:
        raise ElaborationError("algo: neither inplace nor outofplace is 1: the executor never "
                               "uses this algorithm", element.span)
    gpus: dict[int, Gpu] = {}
    for child in element.children:
        if child.name == "gpu":
            gpu = _gpu(child, ngpus)
            if gpu.id in gpus:
                raise ElaborationError(f"gpu {gpu.id} is given twice (first at "
                                       f"{gpus[gpu.id].span})", child.span)
            gpus[gpu.id] = gpu
    missing = [g for g in range(ngpus) if g not in gpus]
    if missing:
        raise ElaborationError(f"algo: ngpus=\"{ngpus}\" but there is no <gpu id=\"{missing[0]}\">",
                               element.span)
    algo = Algo(**fields, gpus=tuple(gpus[g] for g in range(ngpus)), span=element.span)
    for gpu in algo.gpus:
        _check_dependencies(gpu)
    return algo


def _gpu(element: _Element, ngpus: int) -> Gpu:
    a = _Attributes(element, "gpu")
    gid = a.integer("id", 0, ngpus - 1)
    a.place = where(gid)
    chunks = [a.integer(k, 0) for k in ("i_chunks", "o_chunks", "s_chunks")]
    tbs: dict[int, ThreadBlock] = {}
    for child in element.children:
        if child.name == "tb":
            tb = _tb(child, gid, ngpus, chunks)
            if tb.id in tbs:
                raise ElaborationError(f"{where(gid, tb.id)}: duplicate thread block id",
                                       child.span)
            tbs[tb.id] = tb
    gap = next((t for t in range(len(tbs)) if t not in tbs), None)
    if gap is not None:
        raise ElaborationError(f"{where(gid)}: thread block {gap} is missing (ids must be "
                               f"0..{len(tbs) - 1})", element.span)
    return Gpu(gid, chunks[0], chunks[1], chunks[2], tuple(tbs[t] for t in range(len(tbs))),
               element.span)


def _tb(element: _Element, gid: int, ngpus: int, chunks: list[int]) -> ThreadBlock:
    a = _Attributes(element, f"{where(gid)}, a tb")
    tid = a.integer("id", 0, MAX_THREAD_BLOCKS - 1)
    a.place = where(gid, tid)
    send, recv = a.integer("send", -1, ngpus - 1), a.integer("recv", -1, ngpus - 1)
    if gid in (send, recv):
        raise ElaborationError(f"{a.place}: a thread block's peer cannot be its own gpu",
                               element.span)
    chan = a.integer("chan", 0, MAX_CHANNELS - 1)
    steps = [_step(child, gid, tid, chunks) for child in element.children if child.name == "step"]
    for position, step in enumerate(steps):
        if step.index != position:
            raise ElaborationError(f"{where(gid, tid, step.index)}: is step number {position} of "
                                   "its thread block (steps are numbered 0, 1, ... in order)",
                                   step.span)
        if step.type in SENDS and send < 0:
            raise ElaborationError(f"{where(gid, tid, step.index)}: a '{step.type}' step in a "
                                   "thread block without a send peer (send=\"-1\")", step.span)
        if step.type in RECEIVES and recv < 0:
            raise ElaborationError(f"{where(gid, tid, step.index)}: a '{step.type}' step in a "
                                   "thread block without a receive peer (recv=\"-1\")", step.span)
    return ThreadBlock(tid, send, recv, chan, tuple(steps), element.span)


def _step(element: _Element, gid: int, tid: int, chunks: list[int]) -> Step:
    a = _Attributes(element, f"{where(gid, tid)}, a step")
    index = a.integer("s", 0)
    a.place = where(gid, tid, index)
    kind = a.text("type")
    if kind not in STEP_TYPES:
        raise ElaborationError(f"{a.place}: unknown step type \"{kind}\" (one of "
                               f"{', '.join(STEP_TYPES)})", element.span)
    step = Step(index, kind, a.choice("srcbuf", BUFFERS), a.integer("srcoff", -1),
                a.choice("dstbuf", BUFFERS), a.integer("dstoff", -1),
                a.integer("cnt", 0), a.integer("depid", -1), a.integer("deps", -1),
                a.integer("hasdep", 0, 1), element.span)
    if kind == "nop":
        return step
    if step.cnt < 1:
        raise ElaborationError(f"{a.place}: cnt must be at least 1", element.span)
    sizes = dict(zip("ios", chunks))
    for used, buf, off, side in ((kind in USES_SRC, step.srcbuf, step.srcoff, "src"),
                                 (kind in USES_DST, step.dstbuf, step.dstoff, "dst")):
        if used and not 0 <= off <= sizes[buf] - step.cnt:
            raise ElaborationError(
                f"{a.place}: {side}off={off} cnt={step.cnt} runs past the {BUFFERS[buf]} buffer "
                f"({buf}_chunks=\"{sizes[buf]}\")", element.span)
    return step


def _check_dependencies(gpu: Gpu) -> None:
    for tb in gpu.tbs:
        for step in tb.steps:
            if step.depid < 0 and step.deps < 0:
                continue
            place = where(gpu.id, tb.id, step.index)
            if not 0 <= step.depid < len(gpu.tbs):
                raise ElaborationError(f"{place}: depends on thread block {step.depid}, which "
                                       f"gpu {gpu.id} does not have", step.span)
            if not 0 <= step.deps < len(gpu.tbs[step.depid].steps):
                raise ElaborationError(f"{place}: depends on step {step.deps} of tb {step.depid}, "
                                       "which does not exist", step.span)

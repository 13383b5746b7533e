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

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..choices import EXECUTORS, NCCL_PROTOCOLS
from ..errors import ElaborationError, LoadError, ParseError, SourceFile, Span, decode_source
from ..files import read_input
from ..limits import MAX_CHANNELS
from ..xmltree import Element, start_of
from ..xmltree import parse as parse_xml
from .custom import CUSTOM, custom_collective
from .rules import NCCL, Violation, violations
from .tokens import scan

STEP_TYPES = ("s", "r", "rcs", "rrs", "rrc", "rrcs", "cpy", "re", "ra", "nop")  # ra: see stops
BUFFERS = {"i": "input", "o": "output", "s": "scratch"}
# Both executors' names (msccl-tools writes reduce_scatter, the executor reads reducescatter)
# → schedc's collective.
COLLECTIVES = {"allreduce": "allreduce", "allgather": "allgather", "alltoall": "alltoall",
               "reducescatter": "reduce_scatter", "reduce_scatter": "reduce_scatter"}
MAX_THREAD_BLOCKS = 32 * 32  # MSCCL_MAX_NUM_THREAD_BLOCKS: 32 per channel × MAXCHANNELS

# Which buffers a step type reads (src) and writes or forwards from (dst).
USES_SRC = {"s", "rrs", "rrc", "rrcs", "cpy", "re", "ra"}
USES_DST = {"r", "rcs", "rrc", "rrcs", "cpy", "re", "ra"}
SENDS = {"s", "rcs", "rrs", "rrcs"}
RECEIVES = {"r", "rcs", "rrs", "rrc", "rrcs"}


# microsoft/msccl's defaults for what msccl-tools leaves out (src/graph/topo.cc, b23e9cd5dd63)
DEFAULTS = ("outofplace", "minBytes", "maxBytes")
DEFAULT_MAX_BYTES = 1 << 27  # topo.cc:805
MSCCL_COMMIT = "b23e9cd5dd63f82ee1c5aae7e0a2042079be903a"


@dataclass(frozen=True)
class ReadWarning:
    """Something the file leaves to a default, or that one executor would refuse."""

    message: str
    span: Span = field(compare=False)

    def render(self) -> str:
        return f"{self.span}: warning: {self.message}\n{self.span.excerpt()}"


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
    max_bytes: int  # 0: no limit
    gpus: tuple[Gpu, ...]  # by id
    span: Span = field(compare=False, repr=False)
    warnings: tuple[ReadWarning, ...] = field(default=(), compare=False, repr=False)

    @property
    def collective(self) -> str:
        """schedc's name of the collective (a `custom` one: by its name, see `custom`)."""
        return CUSTOM[self.name] if self.coll == "custom" else COLLECTIVES[self.coll]


def where(gpu: int, tb: int | None = None, step: int | None = None) -> str:
    """`gpu 0, tb 3, step 2`: how messages name a place in the XML."""
    parts = [f"gpu {gpu}"] + ([f"tb {tb}"] if tb is not None else []) + \
        ([f"step {step}"] if step is not None else [])
    return ", ".join(parts)


# ---- reading ----------------------------------------------------------------------------------


def read_algo(path: str | Path) -> Algo:
    """The algorithm, read as either executor or msccl-tools' output allows, with a warning
    for each default taken and for each executor that would refuse or misread the file."""
    data = read_input(path, "an MSCCL XML file")
    source = decode_source(str(path), data, LoadError)
    root = _parse(source, data)
    algo = _algo(root, source)
    warnings = list(algo.warnings)
    tokens = (scan(source.text),)
    for executor in EXECUTORS:
        found = [v for v in violations(root, source.text, source, executor, tokens=tokens)
                 if not (executor == NCCL and any(f"'{k}'" in v.message for k in DEFAULTS)
                         and v.message.startswith("algo: <algo> has no"))]
        if found:
            first = found[0]
            how = "misread" if all(v.misread for v in found) else "refuse"
            more = f"; {len(found)} problems in all" if len(found) > 1 else ""
            warnings.append(ReadWarning(
                f"{executor} would {how} this file: {first.message} ({first.source}, at "
                f"{first.span.line}:{first.span.col}){more} (`schedc verify {path} "
                f"--executor {executor}` lists them)", first.span))
    return replace(algo, warnings=tuple(warnings))


def check_file(path: str | Path, executor: str, max_steps: int | None = None
               ) -> tuple[list[Violation], tuple[int, int, int]]:
    """Every rule of `executor` the file breaks, without importing it (malformed XML and a
    root that is not <algo> are errors), and its size: gpus, the most thread blocks of a
    gpu, the most steps of a thread block."""
    data = read_input(path, "an MSCCL XML file")
    source = decode_source(str(path), data, LoadError)
    root = _parse(source, data)
    gpus = [g for g in root.children if g.name == "gpu"]
    tbs = [[t for t in g.children if t.name == "tb"] for g in gpus]
    steps = max((len(t.children) for group in tbs for t in group), default=0)
    return (violations(root, source.text, source, executor, max_steps),
            (len(gpus), max(map(len, tbs), default=0), steps))


def _parse(source: SourceFile, data: bytes) -> Element:
    """The <algo> element, each element with its position (schedc.xmltree: no entities)."""
    roots = parse_xml(source, data)
    if not roots or roots[0].name != "algo":
        span = roots[0].span if roots else start_of(source)
        raise ParseError(_not_msccl(roots[0].name if roots else None), span)
    return roots[0]


def _not_msccl(root: str | None) -> str:
    """What an XML file whose root is not <algo> looks like, and where it belongs."""
    if root == "system":
        return ("this is an NCCL topology file (root element <system>, as NCCL_TOPO_FILE and "
                "NCCL_TOPO_DUMP_FILE have it), not an MSCCL algorithm: use `schedc machine "
                "import`")
    if root == "graphs":
        return ("this is an NCCL graph file (root element <graphs>, as NCCL_GRAPH_DUMP_FILE "
                "writes: the rings and trees NCCL chose), not an MSCCL algorithm")
    if root == "msccl_algos":
        return ("this is a microsoft/msccl configuration (root element <msccl_algos>, the "
                "MSCCL_CONFIG file): it names algorithm files in <load path=...>; give one of "
                "those")
    if root is None:
        return "no element at all: not an MSCCL algorithm"
    return (f"the root element is <{root}>, not <algo>: not an MSCCL algorithm (an MSCCL "
            "file is one <algo> of <gpu>s of <tb>s of <step>s)")


class _Attributes:
    """An element's attributes, read as the executor reads them; errors name the element."""

    def __init__(self, element: Element, label: str, *ids: int) -> None:
        self.element, self.label, self.within = element, label, ids  # "gpu 0, tb 3, a step"
        self.ids: tuple[int, ...] = ()

    @property
    def place(self) -> str:  # (made only for a message: a file has thousands of steps)
        if self.ids:
            return where(*self.ids)
        return f"{where(*self.within)}, {self.label}" if self.within else self.label

    def text(self, key: str) -> str:
        value = self.element.attrs.get(key)
        if value is None:
            raise ElaborationError(f"{self.place}: <{self.element.name}> has no '{key}' "
                                   "attribute (the executor's parser requires it)", self.element.span)
        return value

    def integer(self, key: str, low: int | None = None, high: int | None = None) -> int:
        value = self.text(key)
        try:
            number = int(value)  # (int() takes surrounding whitespace, as strtol does)
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


def _algo(element: Element, source: SourceFile) -> Algo:
    a = _Attributes(element, "algo")
    coll = a.text("coll")
    if coll == "custom":
        custom_collective(element.attrs.get("name", ""), element.span)
    elif coll not in COLLECTIVES:
        raise ElaborationError(f"algo: coll \"{coll}\" is not supported by schedc (one of "
                               f"{', '.join(COLLECTIVES)}, or msccl-tools' custom "
                               f"{', '.join(CUSTOM)})", element.span)
    ngpus = a.integer("ngpus", 1)
    inplace = bool(a.integer("inplace", 0, 1))
    absent = [key for key in DEFAULTS if key not in element.attrs]
    warnings: list[ReadWarning] = []
    if absent:
        warnings.append(_defaults_warning(absent, inplace, element.span))
    fields: dict[str, Any] = dict(name=element.attrs.get("name", Path(source.path).stem), proto=a.choice(
        "proto", NCCL_PROTOCOLS), nchannels=a.integer("nchannels", 1, MAX_CHANNELS),
        nchunksperloop=a.integer("nchunksperloop", 1), ngpus=ngpus, coll=coll, inplace=inplace,
        outofplace=bool(a.integer("outofplace", 0, 1)) if "outofplace" in element.attrs
        else not inplace,
        min_bytes=a.integer("minBytes", 0) if "minBytes" in element.attrs else 0,
        max_bytes=a.integer("maxBytes", 0) if "maxBytes" in element.attrs else DEFAULT_MAX_BYTES)
    # maxBytes=0 is "no limit" (msccl-executor-nccl msccl_struct.h:105, msccl_lifecycle.cc:335)
    if fields["max_bytes"] and fields["max_bytes"] < fields["min_bytes"]:
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
    algo = Algo(**fields, gpus=tuple(gpus[g] for g in range(ngpus)), span=element.span,
                warnings=tuple(warnings))
    for gpu in algo.gpus:
        _check_dependencies(gpu)
    return algo


def _defaults_warning(missing: list[str], inplace: bool, span: Span) -> ReadWarning:
    """One warning for every missing attribute that microsoft/msccl gives a default."""
    values = {"outofplace": f"outofplace={int(not inplace)} (it reads only `inplace` and runs "
                            "an algorithm in place or out of place as that says: topo.cc:847-853, "
                            "tuning.cc:368)",
              "minBytes": "minBytes=0 (topo.cc:796)",
              "maxBytes": f"maxBytes={DEFAULT_MAX_BYTES} = 128 MiB (topo.cc:805; it picks the "
                          "algorithm below that size)"}
    names = ", ".join(f"'{m}'" for m in missing)
    return ReadWarning(
        f"<algo> has no {names} attribute{'s' * (len(missing) > 1)} (msccl-tools does not write "
        f"{'them' if len(missing) > 1 else 'it'}); read as microsoft/msccl does "
        f"(src/graph/topo.cc at {MSCCL_COMMIT[:12]}): " + "; ".join(values[m] for m in missing)
        + ". msccl-executor-nccl requires every one (msccl_parser.cc:376-389) and refuses the "
        "file", span)


def _gpu(element: Element, ngpus: int) -> Gpu:
    a = _Attributes(element, "gpu")
    gid = a.integer("id", 0, ngpus - 1)
    a.ids = (gid,)
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


def _tb(element: Element, gid: int, ngpus: int, chunks: list[int]) -> ThreadBlock:
    a = _Attributes(element, "a tb", gid)
    tid = a.integer("id", 0, MAX_THREAD_BLOCKS - 1)
    a.ids = (gid, tid)
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


def _step(element: Element, gid: int, tid: int, chunks: list[int]) -> Step:
    a = _Attributes(element, "a step", gid, tid)
    index = a.integer("s", 0)
    a.ids = (gid, tid, index)
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

"""Thread-block steps → timed operations: how an MSCCL algorithm becomes rounds.

Matching. A thread block sends to its `send` peer and receives from its `recv` peer on its
channel `chan`; the executor sets up one connection per (sender, receiver, channel). The k-th
send-type step (s, rcs, rrs, rrcs) of gpu a's thread block on the connection a → b, chan c
pairs with the k-th receive-type step (r, rcs, rrs, rrc, rrcs) of gpu b's thread block on it;
the pair is one transfer of `cnt` chunks: a copy, or a reduction for rrc/rrcs (into the
destination when source and destination are one chunk, else via the step's temporary).

Rounds. A step starts when the previous step of its thread block and the step it depends on
(`depid`/`deps`) are done. A send runs in the first round after its step starts (round = 1 +
the latest round among what it waits for); it does not wait for its receiver, since the
connection buffers it (as NCCL's FIFO does). The receiving step takes the chunk in when both
it has started and the transfer has arrived: in the transfer's own round if it had started
by then (the transfer lands in place), else later, from the connection's buffer (the step's
temporary). A step that receives and then sends (rcs, rrs, rrcs) sends in a later round.
Local work (cpy, re, taking a buffered chunk in, combining through a temporary) runs between
rounds, right after what it waits for, and costs nothing; `nop` only waits. So the time is Σ
over rounds of α plus the round's most loaded resource: every thread block waits at every
round for the slowest transfer of the round, as in the synchronous model of the `.sched`
language. The executor instead lets each thread block run ahead as its own data arrives and
pipelines slices of each chunk, so the rounds are the algorithm's dependency depth and the
time is that of a lock-step execution; the bytes are exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from graphlib import CycleError, TopologicalSorter

from ..errors import ElaborationError, Span
from .document import RECEIVES, SENDS, Algo, Step, ThreadBlock, where
from .layout import Layout

Time = tuple[int, int]  # (round, phase): phase 0 is the round's transfers, 1, 2, ... after


@dataclass
class Operation:
    """One copy or reduction: between gpus (a transfer, phase 0) or within one (local)."""

    op: str  # copy | reduce
    src_gpu: int
    src: int  # first chunk of the laid-out buffer
    dst_gpu: int
    dst: int
    cnt: int
    span: Span = field(repr=False)
    origin: str = ""
    time: Time = (0, 0)


@dataclass
class _Node:
    kind: str  # join | transfer | local | take (a receive taking its chunk in)
    preds: list[int] = field(default_factory=list)
    operation: Operation | None = None
    step: tuple[int, int, int] | None = None  # (gpu, tb, step), for messages
    receiver: tuple | None = None  # transfer and take nodes: (step, gpu, transfer node)


def schedule_operations(algo: Algo, layout: Layout) -> list[Operation]:
    """Every operation of the algorithm with its (round, phase), in a deterministic order."""
    nodes: list[_Node] = []

    def node(kind: str, step=None, operation=None) -> int:
        nodes.append(_Node(kind, [], operation, step))
        return len(nodes) - 1

    start: dict[tuple[int, int, int], int] = {}
    done: dict[tuple[int, int, int], int] = {}
    for gpu in algo.gpus:
        for tb in gpu.tbs:
            for step in tb.steps:
                key = (gpu.id, tb.id, step.index)
                start[key], done[key] = node("join", key), node("join", key)
    incoming, outgoing = _match(algo, layout, node, nodes)
    for gpu in algo.gpus:
        for tb in gpu.tbs:
            for k, step in enumerate(tb.steps):
                key = (gpu.id, tb.id, step.index)
                first = start[key]
                if k:
                    nodes[first].preds.append(done[(gpu.id, tb.id, k - 1)])
                if step.depid >= 0:
                    nodes[first].preds.append(done[(gpu.id, step.depid, step.deps)])
                nodes[done[key]].preds.append(_wire(step, key, gpu.id, tb, layout, first,
                                                    incoming, outgoing, node, nodes))
    return _times(nodes, algo, layout)


def _match(algo: Algo, layout: Layout, node, nodes):
    """Pair sends with receives per connection; a transfer node per pair (where it lands is
    decided once the times are known)."""
    sends: dict[tuple[int, int, int], tuple[ThreadBlock, list[Step]]] = {}
    receives: dict[tuple[int, int, int], tuple[ThreadBlock, list[Step]]] = {}
    for gpu in algo.gpus:
        for tb in gpu.tbs:
            for table, peer, kinds, key in ((sends, tb.send, SENDS, (gpu.id, tb.send, tb.chan)),
                                            (receives, tb.recv, RECEIVES, (tb.recv, gpu.id, tb.chan))):
                steps = [s for s in tb.steps if s.type in kinds]
                if peer < 0 or not steps:
                    continue
                if key in table:
                    other = table[key][0]
                    verb = "send to" if table is sends else "receive from"
                    raise ElaborationError(
                        f"{where(gpu.id, tb.id)}: thread blocks {other.id} and {tb.id} both "
                        f"{verb} gpu {peer} on channel {tb.chan}; which transfer pairs with "
                        "which is ambiguous", tb.span)
                table[key] = (tb, steps)
    incoming: dict[tuple[int, int, int], int] = {}
    outgoing: dict[tuple[int, int, int], int] = {}
    for key in sorted(set(sends) | set(receives)):
        a, b, chan = key
        stb, out = sends.get(key, (None, []))
        rtb, into = receives.get(key, (None, []))
        for k in range(max(len(out), len(into))):
            if k >= len(out) or k >= len(into):
                if k >= len(into):
                    step, at_gpu, holder, peer, what = out[k], a, stb, b, "receive on"
                else:
                    step, at_gpu, holder, peer, what = into[k], b, rtb, a, "send from"
                assert holder is not None  # the side that has a k-th step has its thread block
                have = len(into) if k >= len(into) else len(out)
                raise ElaborationError(
                    f"{where(at_gpu, holder.id, step.index)}: '{step.type}' has no matching {what} gpu "
                    f"{peer} on channel {chan} (it is the {_ordinal(k + 1)} there; gpu {peer} "
                    f"has {have})", step.span)
            s, r = out[k], into[k]
            assert stb is not None and rtb is not None  # both sides have a k-th step
            if s.cnt != r.cnt:
                raise ElaborationError(
                    f"{where(b, rtb.id, r.index)}: receives cnt={r.cnt} from "
                    f"{where(a, stb.id, s.index)}, which sends cnt={s.cnt}", r.span)
            operation = Operation("copy", a, _sent_from(s, a, layout, (a, stb.id, s.index)), b,
                                  -1, s.cnt, r.span, f"{where(a, stb.id, s.index)} '{s.type}' → "
                                  f"{where(b, rtb.id, r.index)} '{r.type}'")
            x = node("transfer", (a, stb.id, s.index), operation)
            outgoing[(a, stb.id, s.index)] = x
            incoming[(b, rtb.id, r.index)] = x
    return incoming, outgoing


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _sent_from(step: Step, gpu: int, layout: Layout, key) -> int:
    """The chunk a send-type step sends from: its source (s), what it received (rcs, and
    rrcs into its destination) or its temporary (rrs, rrcs through one)."""
    if step.type == "s":
        return layout.position(gpu, step.srcbuf, step.srcoff)
    if layout.through_temporary(step, gpu):
        return layout.temps[key]
    return layout.position(gpu, step.dstbuf, step.dstoff)


def _wire(step: Step, key, gpu: int, tb: ThreadBlock, layout: Layout, first: int,
          incoming, outgoing, node, nodes) -> int:
    """Connect one step's operations after `first` (its start); the node it is done at."""
    here = where(gpu, tb.id, step.index) + f" '{step.type}'"

    def local(op: str, src: int, dst: int, after: int) -> int:
        n = node("local", key, Operation(op, gpu, src, gpu, dst, step.cnt, step.span, here))
        nodes[n].preds.append(after)
        return n

    last = first
    if step.type in RECEIVES:
        x = incoming[key]
        take = node("take", key)
        nodes[take].preds += [x, first]
        nodes[take].receiver = nodes[x].receiver = (step, gpu, x, here)
        last = take
        if layout.through_temporary(step, gpu):
            temp = layout.temps[key]
            last = local("reduce", layout.position(gpu, step.srcbuf, step.srcoff), temp, last)
            if step.type != "rrs":
                last = local("copy", temp, layout.position(gpu, step.dstbuf, step.dstoff), last)
    if step.type in SENDS:
        x = outgoing[key]
        nodes[x].preds.append(last)
        last = x
    if step.type in ("cpy", "re"):
        last = local("copy" if step.type == "cpy" else "reduce",
                     layout.position(gpu, step.srcbuf, step.srcoff),
                     layout.position(gpu, step.dstbuf, step.dstoff), first)
    return last


def _topological(nodes: list[_Node]) -> list[int] | None:
    """The nodes in an order where each comes after its predecessors (Kahn's algorithm:
    graphlib's searches for a cycle first, which costs more than the sort), or None if
    there is a cycle."""
    waiting = [len(n.preds) for n in nodes]
    users: list[list[int]] = [[] for _ in nodes]
    for k, n in enumerate(nodes):
        for p in n.preds:
            users[p].append(k)
    ready = [k for k, w in enumerate(waiting) if not w]
    order = []
    while ready:
        k = ready.pop()
        order.append(k)
        for u in users[k]:
            waiting[u] -= 1
            if not waiting[u]:
                ready.append(u)
    return order if len(order) == len(nodes) else None


def _times(nodes: list[_Node], algo: Algo, layout: Layout) -> list[Operation]:
    graph = {k: n.preds for k, n in enumerate(nodes)}
    try:
        order = _topological(nodes)
        if order is None:  # graphlib names the cycle
            list(TopologicalSorter(graph).static_order())
            raise AssertionError("graphlib finds the cycle Kahn's algorithm found")
    except CycleError as exc:
        cycle = [nodes[k].step for k in exc.args[1] if nodes[k].step is not None]
        steps: list[tuple[int, int, int]] = []
        for s in cycle:
            if not steps or steps[-1] != s:
                steps.append(s)
        first = steps[0]
        span = algo.gpus[first[0]].tbs[first[1]].steps[first[2]].span
        chain = " → ".join(where(*s) for s in reversed(steps))
        raise ElaborationError(f"{where(*first)}: a dependency cycle: {chain} (each waits for "
                               "the next: through thread-block order, depid/deps, and sends "
                               "that wait for their receive)", span) from None
    time: list[Time] = [(0, 0)] * len(nodes)
    for k in order:
        n = nodes[k]
        latest = max((time[p] for p in n.preds), default=(0, 0))
        if n.kind == "join":
            time[k] = latest
        elif n.kind == "transfer":
            time[k] = (latest[0] + 1, 0)
        elif n.kind == "local":
            time[k] = (latest[0], latest[1] + 1)
        else:
            time[k] = _take(n, nodes, time, layout)
    operations = []
    for k, n in enumerate(nodes):
        if n.operation is not None:
            n.operation.time = time[k]
            operations.append(n.operation)
    return operations


def _take(n: _Node, nodes: list[_Node], time: list[Time], layout: Layout) -> Time:
    """A receiving step takes its chunk in: in place, in the transfer's round, if the step
    had started before it; else from its temporary, after both. Sets where the transfer
    lands; returns when the chunk is in."""
    assert n.receiver is not None and n.step is not None  # a take node has both
    step, gpu, x, here = n.receiver
    arrives, ready = time[x], time[n.preds[1]]
    key = n.step
    transfer = nodes[x].operation
    assert transfer is not None  # x is the receive's transfer node
    reduces = step.type in ("rrc", "rrcs")
    destination = layout.position(gpu, step.dstbuf, step.dstoff)
    if layout.through_temporary(step, gpu):
        transfer.op, transfer.dst = "copy", layout.temps[key]
        return max(arrives, ready)
    if ready < arrives:
        transfer.op, transfer.dst = "reduce" if reduces else "copy", destination
        return arrives
    transfer.op, transfer.dst = "copy", layout.temps[key]
    n.operation = Operation("reduce" if reduces else "copy", gpu, layout.temps[key], gpu,
                            destination, step.cnt, step.span,
                            f"{here} takes in what {transfer.origin.split(' → ')[0]} sent")
    latest = max(arrives, ready)
    return (latest[0], latest[1] + 1)

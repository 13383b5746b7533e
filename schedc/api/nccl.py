"""`schedc nccl`: NCCL's own tuning model on the machine of a file (schedc.nccl), its table,
its choice for every size, and, with `explain`, why at one size, next to schedc's time of
the schedules that stand for NCCL's algorithms."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from ..limits import MAX_SIZE
from .options import Options, byte_size, count, text

if TYPE_CHECKING:
    from ..analysis.nccl_model import Against, Explanation
    from ..nccl.comm import Comm
    from ..session import Session

DEFAULT_MAX_BYTES = 16 * 2**30


@dataclass(frozen=True)
class NcclModel:
    source: str
    comm: Comm
    table: object  # schedc.nccl.tuning.Table
    collectives: tuple[str, ...]
    bands: dict  # collective → tuple[Band, ...]
    max_bytes: int
    explained: tuple[Explanation, ...]
    formulas: dict  # collective → tuple[schedc.nccl.formulas.Boundary, ...] (nNodes ≥ 3)
    # what NCCL's inputs do not see of the machine (a --fail or --derate elsewhere than its
    # GPUs, their links and NIC rates), one note each
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class NcclOptions(Options):
    """`schedc nccl`'s options (`predict --nccl` takes `sm`). Which compute capabilities NCCL
    knows and its channel limit are said by `schedc.nccl.inputs`, with NCCL's words."""

    collective: str | None = text(None, "--collective")  # (one of NCCL's functions)
    nodes: int | None = count(None, "--nodes")
    sm: int | None = count(None, "--sm", None)
    channels: int | None = count(None, "--channels", None)
    # NCCL's sizes are size_t; schedc counts them in 64-bit integers (bytes, or text with a
    # unit: "192MiB")
    max_bytes: int = byte_size(DEFAULT_MAX_BYTES, "--max-bytes", 1, MAX_SIZE)


def nccl_model(session: Session, *, collective: str | None = NcclOptions.collective,
               nodes: int | None = NcclOptions.nodes, sm: int | None = NcclOptions.sm,
               channels: int | None = NcclOptions.channels, inputs: tuple[str, ...] = (),
               explain: str | Iterable[str] | None = None,
               max_bytes: int | str = NcclOptions.max_bytes,
               verify: bool = True) -> NcclModel:
    """NCCL's inputs derived from the file's machine (each overridable), its latency and
    bandwidth table and its choice for every size from 1 byte to `max_bytes`.

        >>> model = schedc.nccl_model(schedc.load("schedules/seed/nvlink_2x8.sched"),
        ...                     collective="allreduce")
        >>> model.comm["nNodes"], model.comm["localRanks"], model.comm["ring.nChannels"]
        (2, 8, 10)
        >>> [b.choice.name for b in model.bands["allreduce"]][:3]
        ['tree/ll', 'tree/ll128', 'nvls_tree/simple']
    """
    from ..analysis.nccl_model import compute_capability
    from ..analysis.nccl_model import explain as explain_choice
    from ..errors import TopologyError, UsageError
    from ..nccl import constants as K
    from ..nccl.choice import bands
    from ..nccl.derive import derive
    from ..nccl.inputs import override
    from ..nccl.tuning import tune_model
    from .compiling import verified_timings
    if collective is not None and collective not in K.FUNCTIONS:
        raise UsageError(f"NCCL's tuning model has no collective '{collective}' (its "
                         f"functions: {', '.join(K.FUNCTIONS)}; src/graph/tuning.cc:288)")
    # (max_bytes may be text with a unit, "16GiB": the field reads it into an int)
    o = NcclOptions(collective, nodes, sm, channels, max_bytes)  # type: ignore[arg-type]
    nodes, sm, channels, max_bytes = o.nodes, o.sm, o.channels, o.max_bytes
    program = session.program
    ranks = program.results[0].collective.ranks if program.results else tuple(
        d.id for d in program.topology.devices if d.kind == "gpu")
    sm, sm_from = compute_capability(program.topology, ranks, sm)
    try:
        comm = derive(program.topology, ranks, program.nominal, sm, sm_from, nodes)
    except TopologyError as error:  # (a route NCCL's inputs need: said at the ranks' source)
        if error.span is not None or not program.results:
            raise
        raise TopologyError(f"{error.message}, which NCCL's inputs for these ranks need",
                            program.results[0].collective.span, error.notes) from None
    comm = override(comm, tuple(inputs), channels)
    table = tune_model(comm)
    chosen = (collective,) if collective else K.FUNCTIONS
    found = {c: tuple(bands(comm, table, K.FUNCTIONS.index(c), max_bytes)) for c in chosen}
    from ..nccl.formulas import boundaries
    formulas = {c: tuple(boundaries(comm, table, K.FUNCTIONS.index(c), list(found[c])))
                for c in chosen}
    # Each --explain size in the order given (a size given twice is explained once).
    texts = [explain] if isinstance(explain, str) else list(explain or ())
    sizes = list(dict.fromkeys(parse_size(text) for text in texts))
    explained: tuple[Explanation, ...] = tuple(
        explain_choice(session, comm, table, c, size,
                       lambda names: verified_timings(session, names, verify))
        for size in sizes for c in chosen)
    return NcclModel(program.path, comm, table, chosen, found, max_bytes, explained, formulas,
                     _unseen(program.topology.notes))


def _unseen(changes) -> tuple[str, ...]:
    """A note per --fail or --derate: NCCL's inputs may not see it."""
    return tuple(f"{note}; NCCL's inputs above come from the hosts' GPUs, their links and NIC "
                 "rates (schedc/nccl/derive.py): a change elsewhere, or a route it breaks, is "
                 "not seen by them" for note in changes)


def parse_size(text: str) -> int:
    """`V=64MiB`, `64MiB` or `67108864` → whole bytes, 1 .. 2^63 − 1 (NCCL's size_t range
    that the choice covers)."""
    from ..errors import UsageError
    from ..units import BYTES, unit
    name_given, _, value = text.rpartition("=")
    if name_given.strip() not in ("", "V"):
        raise UsageError(f"--explain takes the collective's size V (V=64MiB), not "
                         f"{name_given.strip()!r}")
    match = re.fullmatch(r"\s*(\d{1,30}(?:\.\d{1,30})?)\s*([A-Za-z]*)\s*", value)
    if not match:
        raise UsageError(f"--explain expects a size like V=64MiB, got {text!r}")
    number, name = Fraction(match[1]), match[2] or "B"
    try:
        factor, dim = unit(name)
    except KeyError:
        dim = None
    if dim != BYTES:
        raise UsageError(f"--explain {text}: '{name}' is not a unit of bytes")
    size = number * factor
    if size.denominator != 1 or not 1 <= size <= MAX_SIZE:
        raise UsageError(f"--explain {text}: NCCL's sizes are whole bytes, 1 to 2^63 - 1")
    return int(size)


def against_nccl(session: Session, table, collective: str, margin: float,
                 verify: bool = True) -> tuple[tuple[Against, ...], tuple[str, ...]]:
    """The `tune --against-nccl` rows for one tuned table (`TunedTable`), and notes on the
    ranges that could not be compared: where, by schedc's model, a schedule standing for
    another NCCL pair beats the one standing for NCCL's own pick by more than `margin`
    (`schedc.analysis.nccl_model.against`)."""
    from ..analysis.nccl_model import against
    model = nccl_model(session, collective=collective, verify=verify)
    return against(session, table, model.bands[collective], collective, margin)



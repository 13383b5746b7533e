"""Work limits and defaults that the command line shows before any stage runs.

They live apart from the stages that enforce them so that `schedc --help` and option parsing
import nothing heavy (no NumPy, SymPy, networkx or Lark).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .units import format_bytes

MAX_LANES = 20_000_000  # the default limit on transfers (and lanes) of one schedule
MAX_CUTS = 2_000  # max-flow problems one bound may take
DEFAULT_POINTS = 20  # sweep points when --vary gives no count


def memory_bytes() -> int:
    """The memory a run may fill: the machine's physical memory, or its control group's limit
    (a container's) when that is lower. Read once, so one machine refuses alike every time."""
    try:
        found = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # not a POSIX system: assume 16 GiB
        found = 16 * 2**30
    try:
        with open("/sys/fs/cgroup/memory.max") as limit:
            text = limit.read().strip()
        if text.isdigit():
            found = min(found, int(text))
    except OSError:
        pass
    return found


# Verification and compiles are limited by what fits in memory, not by a fixed count (issue 38).
# The verifier's state is 40 B a (rank, piece) cell: two 64-bit fingerprint words, the
# multiplicity, the displacement and a scratch stamp, 8 B each (analysis/verify/state.py).
# A compile holds ~30 B a transfer at its peak, verified: hierarchical 2,048 × 8 GPUs, 67,305,472
# transfers, peaked at 1,938,056 KiB resident (29.5 B a transfer, imports included; issue 38
# measured 7.9 GiB for 4,352 × 8, 27.9 B): benchmarks/RESULTS.md, 2026-12-07, "The
# verification cap".
BYTES_PER_CELL = 40
BYTES_PER_TRANSFER = 30
MEMORY = memory_bytes()
MAX_CELLS = MEMORY // BYTES_PER_CELL  # (rank, segment) cells of a verification; more are refused
# An MSCCL algorithm's start state and postcondition are filled chunk by chunk in Python
# (msccl/layout.py loops over the chunks), so its (gpu, chunk) cells keep the fixed bound.
MAX_LAYOUT_CELLS = 2**26
MEMORY_TRANSFERS = MEMORY // BYTES_PER_TRANSFER  # transfers that fit; more are refused


def cells_memory(cells: int, limit: int) -> str:
    """What `cells` cells of the verifier's state take, against the memory `limit` stands for."""
    return (f" (about {format_bytes(cells * BYTES_PER_CELL)} at {BYTES_PER_CELL} B a cell, "
            f"against {format_bytes(limit * BYTES_PER_CELL)} of memory)")
# Inputs: the bytes of all the files one run reads (the largest shipped or published input,
# an MSCCL XML of 48 ranks, has 127 KB), the rows of one nccl-tests log (a run prints ~30),
# and the devices of one machine (1,024 hosts of 8 GPUs, NVSwitches and NICs are ~18,000;
# each device costs elaboration and `bound` about a millisecond).
MAX_INPUT_BYTES = 16 * 2**20
MAX_LOG_ROWS = 10_000
MAX_DEVICES = 65_536
# The largest size in bytes: sizes are 64-bit (NCCL's size_t, an MSCCL file's maxBytes, an
# nccl-tests row), and an exported MSCCL algorithm's maxBytes without a limit.
MAX_SIZE = 2**63 - 1
# MSCCL XML's ranges (each executor's rules are in schedc.msccl.rules): NCCL's channels,
# MAXCHANNELS (src/include/device.h:65 / devcomm.h:51), and the most steps a build may allow
# a thread block (MSCCL_MAX_NUM_STEPS), whose step ids are int16_t.
MAX_CHANNELS = 32
MAX_STEP_IDS = 2**15
# `machine show` routes from the first GPU to at most this many others, evenly spread: each
# target costs a search of the whole fabric, so all 7,999 of 1,000 hosts took 30 s and 4.6 GB.
MAX_ROUTES = 128
# `whatif`: failures timed × (devices + links + transfers), each failure a copy of the machine
# routed and timed anew, and collected; about 6 µs a unit (800 NICs of 100 rail hosts: 3.3 M, 18 s).
MAX_FAILURE_WORK = 3_500_000
# `calibrate`: per evaluation of the model (over every start, refit and profile of one fit)
# its fit rows + 100, about a µs each; a fit that does not settle within it is refused, in
# about 25 s: 1,000 rows of four repeated sizes took 194 s, 10,000 rows 70 s.
MAX_FIT_WORK = 20_000_000
# `synthesize`: the units a shard is cut into and the pipelined chunks (`analysis.synthesize`).
MAX_UNITS = 4096
MAX_CHUNKS = 4096


@dataclass(frozen=True)
class Limits:
    """How much work one schedule may take before schedc refuses it."""

    transfers: int = MAX_LANES
    steps: int = 200_000  # rounds, loop iterations and calls

    @property
    def held(self) -> int:
        """The transfers allowed: the limit, or what memory holds when that is fewer."""
        return min(self.transfers, MEMORY_TRANSFERS)

    def transfers_message(self, count: int) -> str:
        if self.transfers <= MEMORY_TRANSFERS:
            return (f"{count:,} transfers; the limit is {self.transfers:,} "
                    "(raise it with --max-transfers)")
        return (f"{count:,} transfers, about {format_bytes(count * BYTES_PER_TRANSFER)} at "
                f"{BYTES_PER_TRANSFER} B a transfer; this machine's {format_bytes(MEMORY)} of "
                f"memory holds {MEMORY_TRANSFERS:,}")

    def steps_message(self, count: int) -> str:
        return (f"{count:,} rounds and loop iterations; the limit is {self.steps:,} "
                "(raise it with --max-rounds)")

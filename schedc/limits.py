"""Work limits and defaults that the command line shows before any stage runs.

They live apart from the stages that enforce them so that `schedc --help` and option parsing
import nothing heavy (no NumPy, SymPy, networkx or Lark).
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_LANES = 20_000_000  # the default limit on transfers (and lanes) of one schedule
MAX_CUTS = 2_000  # max-flow problems one bound may take
DEFAULT_POINTS = 20  # sweep points when --vary gives no count
MAX_CELLS = 2**26  # (rank, segment) cells of a verification; more are refused
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

    def transfers_message(self, count: int) -> str:
        return (f"{count:,} transfers; the limit is {self.transfers:,} "
                "(raise it with --max-transfers)")

    def steps_message(self, count: int) -> str:
        return (f"{count:,} rounds and loop iterations; the limit is {self.steps:,} "
                "(raise it with --max-rounds)")

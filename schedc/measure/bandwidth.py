"""nccl-tests' two bandwidths, so a schedc time can stand beside a log's row.

nccl-tests (NVIDIA/nccl-tests at a0b82b2) prints each row's size S as
`max(args->sendBytes, args->expectedBytes)` (src/common.cu:938), and computes, per collective,
`algBw = S / 1e9 / t` and `busBw = algBw × factor` (the `*GetBw` functions):

| collective     | S (the size column)                    | busbw/algbw | src/, at a0b82b2    |
|----------------|----------------------------------------|-------------|---------------------|
| all_reduce     | the buffer (send = receive)            | 2(n − 1)/n  | all_reduce.cu:63    |
| reduce_scatter | the send buffer: n × each rank's part  | (n − 1)/n   | reduce_scatter.cu:41 |
| all_gather     | the receive buffer: n × a rank's part  | (n − 1)/n   | all_gather.cu:42    |
| alltoall       | each rank's send buffer: n parts       | (n − 1)/n   | alltoall.cu:52      |
| broadcast      | the buffer                             | 1           | broadcast.cu:38     |
| reduce         | the buffer                             | 1           | reduce.cu:39        |

(For all_gather, reduce_scatter and alltoall the `*GetBw` functions are handed the count of
one rank's part and multiply it by n, `count * typesize * nranks`, so algbw is S/t there too.)
n is every rank of the run (`nProcs*nThreads*nGpus`, src/common.cu:796). A collective of a
`.sched` file is its whole buffer V (`allgather V`: rank j holds part j of V), which is S in
every row above; so algbw = V/t and busbw = algbw × the factor, at V's nominal value.

Bandwidths are GB/s (10^9 B/s) as nccl-tests prints them, `%6.2f` (then fewer decimals when
wider: getFloatStr, src/util.cu:487).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

# nccl-tests' busbw = algbw × this factor, n ranks, by binary (the table above).
BUSBW_FACTORS: dict[str, Callable[[int], float]] = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
}
# The factor as nccl-tests writes it, for the notes beside a table.
FACTOR_TEXT = {"all_reduce": "2(n-1)/n", "reduce_scatter": "(n-1)/n", "all_gather": "(n-1)/n",
               "alltoall": "(n-1)/n", "broadcast": "1", "reduce": "1"}
# nccl-tests' binary for each collective of the language (alltonext / alltoprev have none).
KIND_BINARIES = {"allreduce": "all_reduce", "reduce_scatter": "reduce_scatter",
                 "allgather": "all_gather", "broadcast": "broadcast", "reduce": "reduce",
                 "alltoall": "alltoall"}
GB = 1e9  # GB/s = 10^9 B/s


def busbw_factor(kind: str, ranks: int) -> float | None:
    """busbw / algbw for a collective of the language (`allreduce`, ...) over `ranks` ranks;
    None for a collective nccl-tests does not measure."""
    binary = KIND_BINARIES.get(kind)
    return BUSBW_FACTORS[binary](ranks) if binary and ranks > 0 else None


def factor_text(kind: str, ranks: int) -> str:
    """`busbw = algbw × 2(n-1)/n = 1.875 (all_reduce, n = 16)`, or why there is none."""
    factor = busbw_factor(kind, ranks)
    if factor is None:
        return f"busbw: nccl-tests has no {kind} test, so no bus bandwidth"
    binary = KIND_BINARIES[kind]
    return (f"algbw = size / time; busbw = algbw × {FACTOR_TEXT[binary]} = {factor:.6g} "
            f"(nccl-tests' {binary} factor, n = {ranks})")


@dataclass(frozen=True)
class Bandwidths:
    """A time in nccl-tests' terms: algbw and busbw in GB/s (busbw None: no factor)."""

    algbw: float
    busbw: float | None
    factor: float | None


def bandwidths(kind: str, ranks: int, size: int | float | Fraction,
               seconds: float | Fraction) -> Bandwidths | None:
    """S/t and S/t × factor in GB/s; None when the time is not positive, or the bandwidth
    is beyond the float range (1e400 MiB: the ratio is taken exactly first)."""
    if not seconds > 0:
        return None
    try:
        algbw = float(Fraction(size) / Fraction(seconds)) / GB
    except (OverflowError, ValueError):  # (ValueError: an infinite or NaN float time)
        return None
    if not math.isfinite(algbw):
        return None
    factor = busbw_factor(kind, ranks)
    return Bandwidths(algbw, None if factor is None else algbw * factor, factor)


def format_gbps(value: float | None) -> str:
    """As nccl-tests prints a bandwidth (getFloatStr at width 6: two decimals, fewer when
    wider), without its padding; `-` for none."""
    if value is None:
        return "-"
    for spec in (".2f", ".1f", ".0f"):
        text = format(value, spec)
        if len(text) <= 6:
            return text
    return format(value, ".0e")

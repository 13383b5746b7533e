"""What `schedc.synthesize` returns: the written schedule and what the compiler says of it."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True)
class Synthesis:
    """A written schedule and what the compiler says of it."""

    text: str  # the file, as written
    name: str
    kind: str
    chunks: int
    alpha_chunks: int  # the K minimising the time at the machine's α (the file's param)
    optimum: Fraction  # the exact optimum at α = 0 (all-reduce: reduce-scatter + all-gather)
    optimum_formula: object  # SymPy
    optimum_cuts: tuple[str, ...]  # each optimal cut's sides, named
    bandwidth_time: Fraction  # the written schedule at α = 0, compiled
    time: Fraction  # the written schedule at the nominal point, compiled
    formula: object  # its time as a formula (SymPy)
    rounds: int
    trees: int
    units: int
    depth: int
    reached: float  # the packing LP's rate over the optimum's (1.0: the optimum)
    iterations: int  # rounds of pricing the LP took
    pinned: int = 0  # `route` statements the file adds (paths schedc's own routes do not take)
    # "trees": packed trees (all-reduce: reduce-scatter's, then all-gather's); "in-network":
    # through switches that reduce, where `optimum` is all-reduce's own cut bound (a lower
    # bound) and `depth` the stages a chunk goes through.
    method: str = "trees"
    unsearched: str = ""  # why other paths were not searched (past the bound on work), if not

    @property
    def ratio(self) -> float:
        """The written schedule's bandwidth term over the optimum (≥ 1)."""
        return float(self.bandwidth_time / self.optimum) if self.optimum else 1.0

"""Every library schedule verifies on every machine, for random groups (hypothesis), and the
algorithms that need a power-of-two group refuse others at the call."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from conftest import SCHEDULES, examples, flat_machine, write
from hypothesis import given, settings
from hypothesis import strategies as st

import schedc
from schedc.errors import ElaborationError
from schedc.render.verdict import failure_lines

LIB = SCHEDULES / "lib"
LIBRARY = ("ring", "recursive", "tree", "alltoall", "hierarchical", "neighbour")

# machine file -> (its group of all ranks, a two-level grouping of them)
MACHINES = {
    "flat_8": ("ranks", "hosts"),
    "flat_16": ("ranks", "hosts"),
    "nvlink_2x8": ("ranks", "[node[h].g for h in 0..1]"),
    "pcie_2x4": ("ranks", "[node[h].g for h in 0..1]"),
    "rail_4x8": ("ranks", "hosts"),
}

# Library schedules that compute no collective of their own: checked inside another.
INNER = {"binomial_scatter": "scatter_allgather_broadcast"}


def _imports() -> str:
    return "".join(f'import "{LIB / name}.sched"\n' for name in LIBRARY)


def _suite(group: str, grid: str | None, pow2: bool, chunks: int = 3) -> str:
    """Every applicable library algorithm over `group` (and `grid`), one collective each."""
    lines = [f"let G = {group}", "allreduce V over G",
             "schedule ring_allreduce = ring_allreduce(G)"]
    if pow2:
        lines += ["schedule rd_allreduce = rd_allreduce(G)",
                  "schedule rabenseifner_allreduce = rabenseifner_allreduce(G)"]
    if grid:
        lines += [f"let grid = {grid}",
                  "schedule hierarchical_allreduce = hierarchical_allreduce(grid)",
                  "schedule ring2d_allreduce = ring2d_allreduce(grid)"]
    lines += ["allgather V over G", "schedule ring_allgather = ring_allgather(G)"]
    lines += ["schedule rd_allgather = rd_allgather(G)"] if pow2 else []
    lines += ["reduce_scatter V over G", "schedule ring_reduce_scatter = ring_reduce_scatter(G)"]
    lines += ["schedule rh_reduce_scatter = rh_reduce_scatter(G)"] if pow2 else []
    lines += ["broadcast V over G root G[0]",
              "schedule binomial_broadcast = binomial_broadcast(G)",
              f"schedule pipelined_chain_broadcast = pipelined_chain_broadcast(G, {chunks})",
              f"schedule pipelined_binomial_broadcast = pipelined_binomial_broadcast(G, {chunks})"]
    lines += ["schedule scatter_allgather_broadcast = scatter_allgather_broadcast(G)"] if pow2 else []
    lines += ["reduce V over G root G[0]", "schedule binomial_reduce = binomial_reduce(G)",
              "alltoall V over G", "schedule pairwise_alltoall = pairwise_alltoall(G)",
              "alltonext V over G", "schedule shift_to_next = shift_to_next(G)",
              "alltoprev V over G", "schedule shift_to_previous = shift_to_previous(G)"]
    return "\n".join(lines) + "\n"


def _failures(session) -> list[str]:
    return [f"{v.name}: " + "\n".join(failure_lines(v.failure)) for v in schedc.verify(session) if not v.ok]


def test_the_suite_covers_the_whole_library():
    defined = {m.group(1) for name in LIBRARY
               for m in re.finditer(r"^schedule (\w+)\(", (LIB / f"{name}.sched").read_text(), re.M)}
    suite = set(re.findall(r"schedule (\w+) =", _suite("ranks", "hosts", True)))
    assert defined - set(INNER) == suite
    assert set(INNER.values()) <= suite


@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_every_library_schedule_verifies_on(tmp_path, machine):
    group, grid = MACHINES[machine]
    text = f'import "{SCHEDULES}/machines/{machine}.sched"\n' + _imports() + "param V = 64 MiB\n"
    session = schedc.load(write(tmp_path, "suite.sched", text + _suite(group, grid, True)))
    assert len(session.program.results) == 17
    assert _failures(session) == []


def _flat_session(directory: Path, n: int, body: str):
    text = flat_machine(n) + _imports() + body
    return schedc.load(write(directory, "case.sched", text))


def _group(devices: list[int]) -> str:
    return "[" + ", ".join(f"g[{d}]" for d in devices) + "]"


@settings(max_examples=examples(25), deadline=None)
@given(st.data())
def test_random_groups_verify(data):
    """Any group size, any order of any devices: every algorithm that takes it verifies."""
    size = data.draw(st.integers(1, 12), label="size")
    members = data.draw(st.permutations(range(12)), label="order")[:size]
    rows = data.draw(st.sampled_from([r for r in range(1, size + 1) if size % r == 0]), label="rows")
    grid = "[" + ", ".join(_group(members[r * (size // rows):(r + 1) * (size // rows)])
                           for r in range(rows)) + "]"
    chunks = data.draw(st.integers(1, 5), label="chunks")
    body = _suite(_group(members), grid, size & (size - 1) == 0, chunks)
    with tempfile.TemporaryDirectory() as directory:
        assert _failures(_flat_session(Path(directory), 12, body)) == []


@pytest.mark.parametrize("algorithm", ["rd_allreduce", "rabenseifner_allreduce", "rd_allgather",
                                       "rh_reduce_scatter", "scatter_allgather_broadcast"])
def test_power_of_two_algorithms_refuse_other_sizes(tmp_path, algorithm):
    collective = {"rd_allgather": "allgather V over G", "rh_reduce_scatter": "reduce_scatter V over G",
                  "scatter_allgather_broadcast": "broadcast V over G root G[0]"}.get(
                      algorithm, "allreduce V over G")
    body = f"let G = [g[i] for i in 0..5]\n{collective}\nschedule x = {algorithm}(G)\n"
    session = _flat_session(tmp_path, 6, body)
    with pytest.raises(ElaborationError) as exc:
        schedc.time(session, "x")
    error = exc.value
    assert re.fullmatch(r"(recursive doubling|recursive halving|binomial scatter) needs a "
                        r"power-of-two group, not 6 ranks", error.message)
    source = error.span.source.text.splitlines()[error.span.line - 1]
    assert source == f"schedule x = {algorithm}(G)"  # the call the user wrote
    assert (error.span.col, error.span.end_col) == (14, 15 + len(algorithm) + 2)

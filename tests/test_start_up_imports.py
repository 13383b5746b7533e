"""A compile imports no more of NumPy than it uses: `np.unique` imports numpy.ma on its first
call (11 ms) and `np.random` numpy.random (11 ms), so the compile path has its own two
helpers, checked here against NumPy's own functions and the reference generator."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import imported_by
from hypothesis import given
from hypothesis import strategies as st

from schedc.model.ir import distinct, random_words

MASK = 2**64 - 1


def splitmix64(seed: int, count: int) -> list[int]:
    """Steele, Lea and Flood's SplitMix64 as published (next(): state += golden gamma, then
    the three xor-shift-multiply steps), on Python integers."""
    out, state = [], seed
    for _ in range(count):
        state = (state + 0x9E3779B97F4A7C15) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        out.append(z ^ (z >> 31))
    return out


def test_the_words_are_splitmix64():
    # Seed 0's first output is the generator's well-known first value.
    assert int(random_words(1)[0]) == 0xE220A8397B1DCDAF
    for seed in (0, 1, 12345, 2**63 + 7):
        assert random_words(50, seed).tolist() == splitmix64(seed, 50)


@given(st.lists(st.integers(-2**62, 2**62), max_size=60))
def test_distinct_is_numpys_unique(values):
    array = np.array(values, dtype=np.int64)
    assert np.array_equal(distinct(array), np.unique(array))


def test_distinct_of_large_integers():
    array = np.array([2**80, 3, 2**80, -1, 3], dtype=object)
    assert distinct(array).tolist() == [-1, 3, 2**80]


@pytest.mark.parametrize("args", [
    ["compare", "schedules/seed/nvlink_2x8.sched"],
    ["time", "schedules/seed/nvlink_hosts.sched", "--set", "hosts=16", "-s", "hierarchical"],
])
def test_a_compile_imports_neither_numpy_ma_nor_numpy_random(args):
    assert imported_by(args, ("numpy.ma", "numpy.random")) == (0, [])


@pytest.mark.parametrize("args", [
    ["time", "schedules/seed/nvlink_2x8.sched", "--json"],
    ["time", "schedules/seed/nvlink_hosts.sched", "--set", "hosts=16", "-s", "hierarchical"],
    ["sweep", "schedules/seed/nvlink_2x8.sched", "--vary", "V=1KB:16GB:4"],
])
def test_timing_and_sweeping_import_no_networkx(args):
    """Routing runs on the machine's own arrays (schedc.model.topology); networkx (0.12 s to
    import) is left to the max-flows of `bound` and `synthesize`."""
    assert imported_by(args, ("networkx",)) == (0, [])


def test_help_imports_no_library_but_click():
    """Nor any stage of schedc: the readers (nccl-tests logs: 64 ms under load, its patterns),
    the compiler, the analyses."""
    heavy = ("numpy", "sympy", "networkx", "lark", "scipy", "matplotlib",
             "schedc.measure.nccl_tests", "schedc.language.parser", "schedc.elaborate",
             "schedc.session", "schedc.analysis.verify")
    assert imported_by(["--help"], heavy) == (0, [])


@pytest.mark.parametrize("args", [
    ["time", "schedules/seed/nvlink_2x8.sched", "--json", "--no-formula"],
    ["compare", "schedules/seed/nvlink_2x8.sched", "--no-formula"],
    ["time", "schedules/seed/nvlink_hosts.sched", "--set", "hosts=16", "-s", "hierarchical",
     "--json", "--no-formula"],
    # protocols (the least over them, per-class shares), latencies and an in-flight window
    ["time", "schedules/calibration/ib_hosts_8xH100_ib400_allreduce.sched", "--json",
     "--no-formula"],
    ["time", "schedules/examples/window_2gpu.sched", "--json", "--no-formula"],
    # a structural param's sweep: compiled at each point, timed from the loads
    ["sweep", "schedules/seed/nvlink_hosts.sched", "--vary", "hosts=2:8:x2", "--json",
     "--no-formula"],
])
def test_no_formula_imports_neither_sympy_nor_networkx(args):
    """`--no-formula` compiles with every param its value (schedc.model.scalars): SymPy
    (0.22-0.24 s to import, issue 38) is left to the commands that build formulas."""
    assert imported_by(args, ("sympy", "networkx")) == (0, [])


def _modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running `code` (from the root)."""
    import os
    import subprocess
    import sys

    from conftest import ROOT
    probe = f"{code}\nimport sys\nprint(' '.join(sys.modules), file=sys.stderr)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    return set(done.stderr.split())


def test_help_imports_only_click_and_the_command_lines_skeleton():
    """`schedc --help` lists the commands from their first sentences (schedc.cli.group), so it
    imports click, the standard library and the skeleton of schedc.cli: no command's module
    (they import the API, ~25 ms, and build ~200 options), not schedc.errors (issue 38:
    `--help` ≤ 0.15 s)."""
    import sys
    clicks = _modules_after("import click")
    helped = _modules_after("from schedc.cli import main\ntry:\n    main(['--help'])\n"
                            "except SystemExit:\n    pass")
    extra = helped - clicks
    ours = {m for m in extra if m == "schedc" or m.startswith("schedc.")}
    assert ours == {"schedc", "schedc.cli", "schedc.cli.group", "schedc.cli.state",
                    "schedc.cli.progress"}
    others = {m for m in extra - ours if m.split(".")[0].lstrip("_") not in sys.stdlib_module_names
              and m.split(".")[0] not in sys.stdlib_module_names and not m.startswith("click.")}
    assert others == set()


def test_the_help_lists_each_commands_own_first_sentence():
    """The group's list (from the sentences written in schedc.cli.group.LAZY) is the one
    click writes from the loaded commands (click.Group.format_commands), at every width."""
    import click
    from click.utils import make_default_short_help

    from schedc.cli import cli
    from schedc.cli.group import LAZY

    loaded = dict(cli.commands)  # every command, imported
    assert sorted(loaded) == sorted(LAZY)
    for name, command in loaded.items():
        assert command.callback.__module__ == f"schedc.cli.{LAZY[name][0]}", name
        for limit in range(10, 400, 7):
            assert make_default_short_help(LAZY[name][1], limit) == \
                command.get_short_help_str(limit), (name, limit)
    eager = click.Group("schedc", commands=loaded, help=cli.help, params=cli.params,
                        context_settings=cli.context_settings)
    for width in (40, 80, 120, 200):
        lazy_help, eager_help = (group.get_help(click.Context(
            group, info_name="schedc", terminal_width=width, **group.context_settings))
            for group in (cli, eager))
        assert lazy_help == eager_help and "bound" in lazy_help

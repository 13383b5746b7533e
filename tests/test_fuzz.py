"""Random and mutated `.sched` text through the whole pipeline: only schedc's errors come out."""

from __future__ import annotations

import shutil

import pytest
from conftest import SCHEDULES, examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import schedc
from schedc.analysis.bound.bounds import bound_all
from schedc.analysis.check import check_program
from schedc.analysis.solve.equations import Equations
from schedc.analysis.solve.sweep import Vary, sweep
from schedc.elaborate.loader import load_program
from schedc.elaborate.schedule import Limits
from schedc.errors import SchedcError, SourceFile
from schedc.language.parser import parse_equation
from schedc.session import Session

SMALL = Limits(transfers=20_000, steps=2_000)
SOURCES = sorted(SCHEDULES.rglob("*.sched"))

TOKENS = [
    "param", "let", "topology", "host", "gpu", "switch", "nic", "link", "shared", "bw", "class",
    "via", "half", "latency", "window", "for", "in", "round", "parallel", "if", "else", "reduce",
    "copy", "send", "from", "to", "into", "part", "of", "all", "schedule", "allreduce",
    "allgather", "broadcast", "root", "over", "import", "startup", "len", "min", "log2", "V", "g",
    "x", "node", "r", "k", "j", "0", "1", "2", "7", "-1", "0.5", "1e300", "10000000000000",
    "MiB", "GB/s", "us", "Gbps", "%", "+", "-", "*", "/", "//", "**", "^", "<<", "..", "==", "=",
    "<->", "->", "<", "(", ")", "[", "]", "{", "}", ",", ":", ";", ".", "\n", " ", '"x.sched"',
]


def _compile(path) -> None:
    """Everything a user can run on a file: only schedc's own errors may come out."""
    try:
        session = Session(load_program(path, limits=SMALL))
        program = session.program
        names = session.selected(required=False)
        timings = [session.timing(n) for n in names]
        schedc.verify(session)
        bound_all(session, names, max_cuts=40)
        check_program(session, timeout=2)
        if timings and program.params:
            param = next(iter(program.params.values()))
            equations = Equations(session, timeout=2)
            relation = parse_equation(SourceFile("fuzz", f"time({names[0]}) = 2 * time({names[0]})"))
            equations.solve(relation, param.name, relation.span)
            low, high = param.nominal / 2, param.nominal * 2 + 1
            sweep(program, timings, Vary(param, min(low, high), max(low, high), 3), "linear")
    except SchedcError as error:
        assert error.render()  # renders without failing, whatever the span


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A copy of schedules/, so mutated files import the real library and machines."""
    root = tmp_path_factory.mktemp("fuzz")
    shutil.copytree(SCHEDULES, root / "schedules")
    return root / "schedules"


FUZZ = settings(max_examples=examples(150), deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=60))
def test_token_soup(tree, tokens):
    path = tree / "seed" / "soup.sched"
    path.write_text(" ".join(tokens))
    _compile(path)


@st.composite
def mutations(draw, sources=tuple(SOURCES)):
    source = draw(st.sampled_from(sources))
    text = source.read_text()
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["delete", "insert", "replace", "duplicate"]))
        span = draw(st.integers(1, 12))
        if kind == "delete":
            text = text[:at] + text[at + span:]
        elif kind == "insert":
            text = text[:at] + draw(st.sampled_from(TOKENS)) + text[at:]
        elif kind == "replace":
            text = text[:at] + draw(st.sampled_from(TOKENS)) + text[at + span:]
        else:
            text = text[:at] + text[at:at + span] + text[at:]
    return source.relative_to(SCHEDULES), text


# The mutations are the slowest fuzz test (226 s of CI's examples on a loaded machine, one
# test holding one worker): split by source file into shards that the workers share, with
# the same number of examples in all (each shard a quarter, of a quarter of the files).
SHARDS = 4


@pytest.mark.parametrize("shard", range(SHARDS))
def test_mutated_files(tree, shard):
    @settings(FUZZ, max_examples=max(1, examples(150) // SHARDS))
    @given(mutations(tuple(SOURCES[shard::SHARDS])))
    def mutated(mutation):
        relative, text = mutation
        path = tree / relative.parent / f"mutated_{shard}.sched"
        path.write_text(text)
        _compile(path)

    mutated()


@FUZZ
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=80))
def test_arbitrary_text(tree, text):
    path = tree / "seed" / "text.sched"
    path.write_text(text, encoding="utf-8")
    _compile(path)


# ---- the fuzz campaign of benchmarks/fuzz.py, in a short version -------------------------------

def _campaign_module():
    """benchmarks/fuzz.py (a script, not a package) as a module."""
    import importlib.util
    import sys

    from conftest import ROOT
    if "schedc_fuzz" not in sys.modules:
        spec = importlib.util.spec_from_file_location("schedc_fuzz",
                                                      ROOT / "benchmarks" / "fuzz.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["schedc_fuzz"] = module  # its dataclasses look their module up
        spec.loader.exec_module(module)
    return sys.modules["schedc_fuzz"]


def test_the_fuzz_campaign_finds_nothing():
    """20 inputs of every kind (grammar, mutations, tokens) over every subcommand: no internal
    error, no hang (CPU limit), no wrong-line caret, no unlocated out-of-memory or depth error.
    The long mode is `python benchmarks/fuzz.py --examples 100000`."""
    fuzz = _campaign_module()
    tally = fuzz.fuzz(examples=20, seed=0, time_limit=30.0, out=None, memory_gb=0, progress=False)
    assert tally.runs == 20
    assert not tally.internal, tally.internal
    assert "cpu-limit" not in tally.exit_codes
    assert not tally.wrong_line and not tally.unlocated
    assert set(tally.exit_codes) <= {0, 1, 2}


def test_the_wrong_line_oracle():
    """The campaign's check of a caret: the excerpt must be line LINE of the file as Python
    reads it, and the caret under the token an 'unexpected' message names."""
    wrong_lines = _campaign_module().wrong_lines
    text = "param a = 1 # \u2028\nparam b = 2 +\n"
    right = "f.sched:2:14: error: unexpected new line; expected an expression\n  param b = 2 +\n" \
            "               ^\n"
    assert wrong_lines(right, "f.sched", text) == []
    shifted = right.replace("  param b = 2 +\n", "  \n")  # what str.splitlines() showed
    assert len(wrong_lines(shifted, "f.sched", text)) == 1
    caret = "f.sched:2:9: error: unexpected '+'; expected an expression\n  param b = 2 +\n" \
            "          ^\n"
    assert len(wrong_lines(caret, "f.sched", text)) == 1  # column 9 is '=', not '+'
    assert wrong_lines(caret, "other.sched", text) == []

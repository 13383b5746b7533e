"""Random and mutated `.sched` text through the whole pipeline: only schedc's errors come out."""

from __future__ import annotations

import shutil

import pytest
from conftest import SCHEDULES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedc.elaborate import load_program
from schedc.elaborate_schedule import Limits
from schedc.errors import SchedcError
from schedc.pipeline import time_schedule

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
    try:
        program = load_program(path, limits=SMALL)
        for result in program.results:
            time_schedule(program, result.name)
    except SchedcError as error:
        assert error.render()  # renders without failing, whatever the span


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A copy of schedules/, so mutated files import the real library and machines."""
    root = tmp_path_factory.mktemp("fuzz")
    shutil.copytree(SCHEDULES, root / "schedules")
    return root / "schedules"


FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=60))
def test_token_soup(tree, tokens):
    path = tree / "seed" / "soup.sched"
    path.write_text(" ".join(tokens))
    _compile(path)


@st.composite
def mutations(draw):
    source = draw(st.sampled_from(SOURCES))
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


@FUZZ
@given(mutations())
def test_mutated_files(tree, mutation):
    relative, text = mutation
    path = tree / relative.parent / "mutated.sched"
    path.write_text(text)
    _compile(path)


@FUZZ
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=80))
def test_arbitrary_text(tree, text):
    path = tree / "seed" / "text.sched"
    path.write_text(text, encoding="utf-8")
    _compile(path)

"""Generated `.sched` source is safe (issue 36, r15): whatever text reaches a file schedc
writes — a <net name> of a topology file, the topology file's own path, a log's path — the
file parses to exactly the statements its writer meant. `schedc.language.quote` is the one
place that makes text safe; these tests check it alone and through `machine import` and
`calibrate --write`, by comparing the parsed statements (`emit ast`, which has no positions)
with those of the same file written from harmless names."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from conftest import ROOT, examples
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import schedc
from schedc.errors import SchedcError, SourceFile, UsageError
from schedc.language.parser import parse_module
from schedc.language.quote import comment, name, string
from schedc.render.emit import emit_ast

TOPOLOGY = ROOT / "tests" / "fixtures" / "topo" / "hgx-h100-dump-constructed.xml"
HOSTILE = ["mlx5_0\nlet pwned = 1\n#", "a\rparam pwned = 1 GB/s\r", 'x\nimport "secret.sched"',
           "\u2028let pwned = 1", "\x00\x1b[2J", "back\\slash\\n", "\udcff surrogate"]


# Text that is often hostile: line breaks, a comment sign, quotes and the words of statements.
NASTY = st.one_of(st.sampled_from([*"\n\r#\"= \u2028\x0b\x85", "let x = 1", "param q = 1", "import"]),
                  st.characters(blacklist_categories=("Cs",)))


def statements(text: str) -> str:
    """The statements a .sched text parses to, without positions."""
    return emit_ast(parse_module(SourceFile("generated.sched", text)))


# ---- the functions themselves ---------------------------------------------------------------

@settings(max_examples=examples(300))
@given(st.text())
def test_a_comment_never_ends_its_line(text):
    source = f"let a = 1  # {comment(text)}\nlet b = 2\n"
    assert comment(text).isprintable()  # (no line break, control or separator character)
    assert statements(source) == statements("let a = 1\nlet b = 2\n")


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_comments_are_escaped_visibly(text):
    escaped = comment(text)
    assert escaped.isprintable()
    assert statements(f"# {escaped}\nlet b = 2\n") == statements("let b = 2\n")


def test_comment_escapes_are_unambiguous():
    # a backslash is doubled, so the text '\n' (two characters) and a newline differ
    assert comment("\\n") == "\\\\n" and comment("\n") == "\\n"


@settings(max_examples=examples(300))
@given(st.text())
def test_a_string_is_the_same_path_or_refused(text):
    try:
        literal = string(text)
    except UsageError as exc:
        assert '"' in text or not all(c == " " or c.isprintable() for c in text)
        assert "\n" not in exc.message  # (the refusal quotes the text escaped)
        return
    [stmt] = parse_module(SourceFile("g.sched", f"import {literal}\n")).body
    assert stmt.path == text


@settings(max_examples=examples(300))
@given(st.one_of(st.text(), st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True)))
@example("none")  # a name's shape, but the literal `none`: refused (CI found it)
@example("ranks")
def test_a_name_is_that_one_name_or_refused(text):
    try:
        written = name(text)
    except UsageError:  # not a name's shape, or a word the grammar reads otherwise (`none`)
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text):
            with pytest.raises((SchedcError, AssertionError, AttributeError)):
                [stmt] = parse_module(SourceFile("g.sched", f"let {text} = {text}\n")).body
                assert stmt.name == text and stmt.value.id == text  # (a literal has no id)
        return
    [stmt] = parse_module(SourceFile("g.sched", f"let {written} = 1\n")).body
    assert stmt.name == text


# ---- through the writers ----------------------------------------------------------------------

def _with_net_name(text: str) -> str:
    """The fixture with its first <net name> replaced by `text`, every character a character
    reference (as the repro wrote `&#10;`)."""
    escaped = "".join(f"&#x{ord(c):x};" for c in text)
    return TOPOLOGY.read_text().replace('name="mlx5_0"', f'name="{escaped}"', 1)


@pytest.fixture(scope="module")
def benign() -> str:
    return statements(schedc.import_machine(TOPOLOGY))


@pytest.mark.parametrize("text", HOSTILE[:4])
def test_machine_import_of_hostile_net_names(tmp_path, benign, text):
    """r15: the name's newlines became statements (`let pwned = 1` compiled)."""
    path = tmp_path / "inject.xml"
    path.write_text(_with_net_name(text))
    generated = schedc.import_machine(path)
    assert comment(text) in generated  # the name is there, escaped, in a comment
    assert statements(generated) == benign
    assert not any(line.startswith(("let pwned", "param pwned", "import"))
                   for line in generated.splitlines())


@settings(max_examples=examples(40), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(NASTY, max_size=12).map("".join))
def test_machine_import_of_any_net_name(tmp_path, benign, text):
    path = tmp_path / "any.xml"
    path.write_text(_with_net_name(text), encoding="utf-8")
    try:
        generated = schedc.import_machine(path)
    except SchedcError:  # (XML refuses control characters even as references)
        return
    assert statements(generated) == benign


@settings(max_examples=examples(30), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(NASTY, min_size=1, max_size=12).map("".join).map(
    lambda t: t.replace("/", "_").replace("\x00", "_")))
def test_machine_import_from_a_hostile_path(tmp_path, benign, text):
    """r15: a topology file whose name holds a newline injected through `# from PATH`."""
    if text in (".", "..") or len(text.encode()) > 200:
        return
    folder = tmp_path / "p"
    folder.mkdir(exist_ok=True)
    path = folder / text
    shutil.copyfile(TOPOLOGY, path)
    try:
        generated = schedc.import_machine(path)  # (its provenance names the file)
    finally:
        path.unlink()
    assert statements(generated) == benign


def test_machine_import_from_a_path_with_newlines_on_the_command_line(run, tmp_path, benign):
    path = tmp_path / 't\nlet pwned = 1\nparam q = 1\nimport "x.sched"\n.xml'
    shutil.copyfile(TOPOLOGY, path)
    out = tmp_path / "m.sched"
    code, _, err = run("machine", "import", path, "-o", out)
    assert code == 0, err
    text = out.read_text()
    assert "pwned" in text  # in the header's comment, escaped
    assert not any(line.startswith(("let pwned", "param q", "import")) for line in text.splitlines())
    assert statements(text) == benign
    assert "q" not in schedc.load(out).program.params

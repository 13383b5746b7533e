"""An answer must not depend on a variable's spelling (issue 37, item 3): every loop variable
of every shipped file is renamed, in the source, to a name of its own per top-level
statement (so two loops that both say `i` no longer share a spelling), and `scale --in PARAM`
and `verify --for-all PARAM` give the same answers, note for note, on the renamed copy.

The renaming here is written from the source's spans, independently of the compiler's own
pass (`schedc/language/scopes.py`): within one top-level statement (one topology statement,
one schedule) every `Name` spelled as a loop variable of that statement is that loop's
variable (no shipped file shadows a global name with a loop variable; checked below), so
renaming them all, and the `for VAR in` that binds them, changes no meaning."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import SCHEDULES

import schedc
from schedc.language import statements as st
from schedc.language import syntax as ast
from schedc.language.parser import parse_module
from schedc.files import read_sched

SUFFIX = "_rn"


def _statements(module: ast.Module):
    """The units a loop variable cannot leave: each schedule, each topology statement (host
    bodies' statements one by one), each other top-level statement."""
    for stmt in module.body:
        if isinstance(stmt, ast.Topology):
            for inner in stmt.body:
                yield from (inner.body if isinstance(inner, ast.HostDecl) else (inner,))
        else:
            yield stmt


def _loop_vars(stmt: object) -> set[str]:
    return {x.var for x in ast.walk(stmt) if isinstance(x, (st.For, st.RoundFor,
                                                            st.ParallelFor, ast.CompFor))}


def _renamed(path: Path) -> tuple[str, int]:
    """The file's text with its loop variables renamed, and how many names were renamed."""
    module = parse_module(read_sched(path, shown=str(path)))
    lines = path.read_text().splitlines(keepends=True)
    globals_ = {s.name for s in module.body if isinstance(s, (ast.Let, ast.ParamDecl))}
    edits: list[tuple[int, int, int, str]] = []  # (line, col, end col, text), 1-based
    for k, stmt in enumerate(_statements(module)):
        names = _loop_vars(stmt)
        assert not names & globals_, (path, names & globals_)  # no shadowed global
        for x in ast.walk(stmt):
            if isinstance(x, ast.Name) and x.id in names:
                edits.append((x.span.line, x.span.col, x.span.end_col, f"{x.id}{SUFFIX}{k}"))
            elif isinstance(x, (st.For, st.RoundFor, st.ParallelFor, ast.CompFor)):
                text = lines[x.span.line - 1]
                found = re.compile(rf"\bfor\s+({re.escape(x.var)})\s+in\b").search(
                    text, x.span.col - 1)
                assert found is not None, (path, x.span.line, x.var)
                edits.append((x.span.line, found.start(1) + 1, found.end(1) + 1,
                              f"{x.var}{SUFFIX}{k}"))
    for line, col, end, text in sorted(set(edits), reverse=True):
        row = lines[line - 1]
        lines[line - 1] = row[:col - 1] + text + row[end - 1:]
    return "".join(lines), len(set(edits))


def _shipped() -> list[tuple[Path, str]]:
    """(file, param) for every shipped file with schedules and a structural param that sizes
    a family of copies (`host node[hosts]`, `gpu g[p]`; not a chunk count, not `spine[spines]`)."""
    out = []
    for path in sorted(SCHEDULES.rglob("*.sched")):
        session = schedc.load(path)
        if not session.selected((), required=False):
            continue
        for param in session.structural():
            # The families of copies: hosts and top-level GPU families (not switches).
            counts = [d.count for m in session.modules for b in m.body
                      if isinstance(b, ast.Topology) for s in b.body
                      for d in ([s.name] if isinstance(s, ast.HostDecl) else s.names
                                if isinstance(s, ast.DeviceDecl) and s.kind == "gpu" else [])
                      if d.count is not None]
            if any(isinstance(c, ast.Name) and c.id == param for c in counts):
                out.append((path, param))
    return out


@pytest.fixture(scope="module")
def copies(tmp_path_factory) -> tuple[Path, Path, int]:
    """The shipped schedules/ tree twice: as is and renamed (imports resolve alike)."""
    base = tmp_path_factory.mktemp("renaming")
    plain, renamed = base / "plain" / "schedules", base / "renamed" / "schedules"
    shutil.copytree(SCHEDULES, plain)
    shutil.copytree(SCHEDULES, renamed)
    total = 0
    for path in renamed.rglob("*.sched"):
        text, count = _renamed(path)
        path.write_text(text)
        total += count
    return plain, renamed, total


def _answer(run, root: Path, relative: Path, *args: str) -> str:
    code, out, err = run(*args[:1], root / relative, *args[1:])
    text = f"exit {code}\n{out}\n{err}"
    # The renamed copy quotes its own source lines in notes: its names, spelt back.
    return re.sub(rf"{SUFFIX}\d+", "", text).replace(str(root), "ROOT")


CASES = _shipped()


def test_the_shipped_files_with_a_structural_family_are_found():
    found = {(p.relative_to(SCHEDULES).as_posix(), param) for p, param in CASES}
    assert {("seed/nvlink_hosts.sched", "hosts"), ("algorithms/flat_p.sched", "p")} <= found


def test_every_loop_variable_is_renamed(copies):
    _, renamed, total = copies
    assert total > 100  # the library's loops alone bind well over a hundred names
    text = (renamed / "lib" / "ring.sched").read_text()
    assert f"for s{SUFFIX}" in text and re.search(r"\bfor s in\b", text) is None


@pytest.mark.parametrize("path, param", CASES, ids=[f"{p.name}-{q}" for p, q in CASES])
def test_renaming_changes_no_answer(run, copies, path, param):
    plain, renamed, _ = copies
    relative = path.relative_to(SCHEDULES)
    for args in (("scale", "--in", param, "--no-bound", "--json"),
                 ("verify", "--for-all", param, "--json")):
        assert _answer(run, renamed, relative, *args) == _answer(run, plain, relative, *args)


PLX = """\
import "{lib}/ring.sched"
import "{lib}/hierarchical.sched"
param alpha = 0.83 us
param B_L = 32 GB/s
param B_N = 400 Gbit/s
param V = 64 MiB
param hosts = 2
topology {{
  host node[hosts] {{
    gpu g[4]
    switch plx[2]
    link g[VAR] <-> plx[VAR // 2] bw B_L class pcie for VAR in 0..3
  }}
  switch rail
  link node[h].plx[j] <-> rail bw B_N class nic for h in 0..hosts-1 for j in 0..1
}}
let ranks = [node[h].g[i] for h in 0..hosts-1 for i in 0..3]
allreduce V over ranks
schedule ring = ring_allreduce(ranks)
schedule hier = hierarchical_allreduce([node[h].g for h in 0..hosts-1])
"""


def test_a_loop_variable_named_like_a_library_loop_is_not_read_as_it(run, tmp_path):
    """`link g[i] <-> plx[i // 2] ... for i in 0..3` beside the library's hierarchical
    all-reduce, whose `parallel for i in 0..n-1` runs over a group size that varies with
    hosts: the link's `i` is not that `i`, so `i // 2` is no period in hosts (before the
    fix: `for hosts = 0 mod 2` pieces), and renaming it to `q` changes nothing."""
    text = PLX.format(lib=SCHEDULES / "lib")
    answers = []
    for var in ("i", "q"):
        case = tmp_path / f"plx_{var}.sched"
        case.write_text(text.replace("VAR", var))
        code, out, err = run("scale", case, "--in", "hosts", "--no-bound", "--json")
        assert code == 0, err
        document = json.loads(out)
        for piece in document["schedules"]:  # one piece over all the integers each
            assert piece["family"] == "integers", piece["family"]
        assert [p["name"] for p in document["schedules"]] == ["ring", "hier"]
        answers.append(json.dumps(document["schedules"]).replace(str(case), "CASE"))
    assert answers[0] == answers[1]

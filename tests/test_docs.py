"""The documentation shows real output: every example of README.md and docs/*.md is run, each
its own test (`-k PAGE` selects a page's), and every relative link resolves.

The convention (docs/contributing.md, "Examples in the documentation"):

- A fenced block whose first line starts with `$ ` is an example. `$ schedc ARGS` runs
  `schedc ARGS` in-process; the lines up to the next `$ ` line are exactly what it prints
  (stdout, then stderr). A line `...` (spaces around it allowed) stands for any number of
  lines, none included.
- `$ cat NAME` shows the file NAME (a plain name, or DIR/NAME in a folder DIR that an
  earlier command of the block wrote): when no earlier command of the block wrote it, the
  test first creates it with the lines that follow. A block with a `$ cat`
  runs in a fresh folder holding links to the repository's `schedules/` and `tests/`; any
  other block runs in the repository's root.
- The exit status of every command is 0, unless the block's info string says otherwise
  (```` ``` exit=2 ````).
- A ```` ```python ```` block holding `>>> ` is a doctest (ELLIPSIS on), run in the root; a
  page's doctests share one namespace, in order.
- A block opened with ```` ```excerpt PATH ```` shows lines of the file PATH (from the root),
  in order: each line's code, the text before a `#`, is a line's code in PATH; blank lines
  and comments are the page's own.

`SCHEDC_UPDATE_DOCS=1 pytest tests/test_docs.py` (or `python tests/test_docs.py --update`)
rewrites the expected output of every command example from what the commands print now,
keeping the `...` lines where the new output allows; doctests are reported, not rewritten.
"""

from __future__ import annotations

import doctest
import os
import re
import shlex
import sys
from dataclasses import dataclass, field
from difflib import SequenceMatcher, unified_diff
from pathlib import Path

import pytest
from conftest import ROOT, needs_shared_data

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
ELLIPSIS = "..."
UPDATE = bool(os.environ.get("SCHEDC_UPDATE_DOCS"))
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)


@dataclass
class Step:
    command: str  # after "$ "
    lines: list[str] = field(default_factory=list)  # what follows it


@dataclass
class Block:
    line: int  # of the opening fence, 1-based
    info: str
    body: str  # between the fences, ending in a newline
    span: tuple[int, int]  # of the whole block, fences included, in the page's text

    @property
    def exit_code(self) -> int:
        found = re.search(r"\bexit=(\d+)\b", self.info)
        return int(found.group(1)) if found else 0

    def steps(self) -> list[Step]:
        steps: list[Step] = []
        for text in self.body.splitlines():
            if text.startswith("$ "):
                steps.append(Step(text[2:]))
            else:
                steps[-1].lines.append(text)
        return steps


def blocks(text: str) -> list[Block]:
    return [Block(text.count("\n", 0, m.start()) + 1, m.group(1).strip(), m.group(2),
                  (m.start(), m.end())) for m in FENCE.finditer(text)]


def examples(text: str) -> list[Block]:
    return [b for b in blocks(text) if b.body.startswith("$ ")]


def doctests(text: str) -> list[Block]:
    return [b for b in blocks(text) if b.info.split()[:1] == ["python"] and ">>> " in b.body]


def matches(expected: list[str], actual: list[str]) -> bool:
    pattern = "".join(r"(?:.*\n)*?" if line.strip() == ELLIPSIS else re.escape(line) + r"\n"
                      for line in expected)
    return re.fullmatch(pattern, "".join(line + "\n" for line in actual)) is not None


def updated(expected: list[str], actual: list[str]) -> list[str]:
    """The actual lines, with `...` kept where the expected lines had it over lines that
    differ (so a long output stays elided as it was)."""
    if matches(expected, actual):
        return expected
    result: list[str] = []
    opcodes = SequenceMatcher(None, expected, actual, autojunk=False).get_opcodes()
    for tag, i1, i2, j1, j2 in opcodes:
        shown, printed = expected[i1:i2], actual[j1:j2]
        elided = [i for i, line in enumerate(shown) if line.strip() == ELLIPSIS]
        if tag == "equal" or not elided:
            result += printed
            continue
        # as many lines as were shown before the first `...` and after the last one
        head = min(elided[0], len(printed))
        tail = min(len(shown) - 1 - elided[-1], len(printed) - head)
        result += printed[:head] + [shown[elided[0]]] + printed[len(printed) - tail:]
    return result


def _workdir(tmp_path: Path, block: Block) -> Path:
    if not any(s.command.startswith("cat ") for s in block.steps()):
        return ROOT
    folder = tmp_path / f"line{block.line}"
    folder.mkdir()
    for name in ("schedules", "tests"):
        (folder / name).symlink_to(ROOT / name)
    return folder


def _run_example(block: Block, run, monkeypatch, tmp_path) -> tuple[str, str | None]:
    """Run one example: (the block as it should read, a failure message or None)."""
    folder = _workdir(tmp_path, block)
    monkeypatch.chdir(folder)
    written: set[str] = set()
    body: list[str] = []
    failures: list[str] = []
    codes: set[int] = set()
    for step in block.steps():
        body.append("$ " + step.command)
        words = shlex.split(step.command)
        if words[0] == "cat" and len(words) == 2:
            # a plain name, or a file in a folder the block wrote: a path through the
            # folder's links would write into the repository
            top = words[1].split("/")[0]
            assert "/" not in words[1] or top in written, \
                f"line {block.line}: `$ cat` names a file of the folder or of one it wrote"
            path = folder / words[1]
            if top not in written:
                path.write_text("".join(line + "\n" for line in step.lines))
            actual = path.read_text().splitlines()
        elif words[0] == "schedc":
            before = {p.name for p in folder.iterdir()}
            code, out, err = run(*words[1:])
            codes.add(code)
            written |= {p.name for p in folder.iterdir()} - before
            actual = (out + err).splitlines()
            if code != block.exit_code:
                failures.append(f"`$ {step.command}` exited {code}, not {block.exit_code}:\n{err}")
        else:
            raise AssertionError(f"line {block.line}: an example runs `schedc` or `cat`, "
                                 f"not `{words[0]}`")
        if not matches(step.lines, actual):
            diff = unified_diff(step.lines, actual, "shown", "printed", lineterm="")
            failures.append(f"`$ {step.command}` printed otherwise:\n" + "\n".join(diff))
        body += updated(step.lines, actual)
    info = re.sub(r"\s*\bexit=\d+\b", "", block.info)
    if len(codes) == 1 and codes != {0}:
        info = f"{info} exit={codes.pop()}".strip()
    text = "".join(line + "\n" for line in [f"```{' ' if info else ''}{info}", *body, "```"])
    return text, ("\n".join(failures) or None)


def _example_cases() -> list:
    """(page, index of the example on the page): one test per example, not per page, so that
    the workers share a page's examples (docs/scale.md's twelve took 41 s on one worker)."""
    return [pytest.param(page, index, id=f"{page.relative_to(ROOT).as_posix()}:{block.line}")
            for page in PAGES for index, block in enumerate(examples(page.read_text()))]


def _rewrite_example(page: Path, index: int, body: str) -> None:
    """Put the example's new text in place of example `index` of the page. Workers may
    rewrite examples of one page at once: the page is locked, and read again, meanwhile."""
    import fcntl
    with open(page, "r+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        text = handle.read()
        start, end = examples(text)[index].span
        handle.seek(0)
        handle.write(text[:start] + body.rstrip("\n") + text[end:])
        handle.truncate()


@pytest.mark.parametrize(("page", "index"), _example_cases())
def test_the_examples_print_what_they_show(page, index, run, monkeypatch, tmp_path,
                                           reuse_shipped):
    block = examples(page.read_text())[index]
    if "../shared/data/" in block.body:
        needs_shared_data()
    body, failure = _run_example(block, run, monkeypatch, tmp_path)
    if failure and UPDATE:
        _rewrite_example(page, index, body)
        return
    assert not failure, f"{page.name}:{block.line}: {failure}"


@pytest.mark.parametrize("page", [p for p in PAGES if doctests(p.read_text())],
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_the_python_examples_run(page, monkeypatch):
    monkeypatch.chdir(ROOT)
    globs: dict = {}
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for block in doctests(page.read_text()):
        test = doctest.DocTestParser().get_doctest(block.body, globs, page.name, str(page),
                                                   block.line)
        runner.run(test)
        globs = test.globs
    assert runner.failures == 0 and runner.tries > 0


def _code(line: str) -> str:
    return line.split("#")[0].rstrip()


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_the_excerpts_are_the_files(page):
    for block in blocks(page.read_text()):
        if block.info.split()[:1] != ["excerpt"]:
            continue
        (path,) = block.info.split()[1:]
        remaining = iter([_code(line) for line in (ROOT / path).read_text().splitlines()])
        for shown in filter(None, map(_code, block.body.splitlines())):
            where = f"{page.name}:{block.line}"
            assert shown in remaining, f"{where}: not in {path}, in order: {shown!r}"


def test_there_are_examples_on_the_pages_that_show_output():
    counts = {p.relative_to(ROOT).as_posix(): len(examples(p.read_text())) for p in PAGES}
    assert sum(counts.values()) >= 30, counts
    assert all(counts[f"docs/{name}.md"] for name in (
        "tutorial", "language", "model", "commands", "verification", "library", "bounds",
        "routing", "msccl-and-tuner", "reports", "scale")), counts


def test_the_readme_starts_with_the_commands_ci_runs():
    first = (ROOT / "README.md").read_text().splitlines()[2:4]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert [line.strip() for line in first] == [
        "pip install . && schedc compare schedules/seed/nvlink_2x8.sched",
        "pip install '.[test]' && pytest"]
    assert all(line.strip() in ci for line in first)


# ---- the matcher, on its own --------------------------------------------------------------

def test_an_ellipsis_stands_for_any_lines_and_nothing_else_is_loose():
    assert matches(["a", "...", "d"], ["a", "b", "c", "d"])
    assert matches(["a", "...", "b"], ["a", "b"])
    assert not matches(["a", "b"], ["a", "b", "c"])
    assert not matches(["a", "...", "d"], ["a", "b", "c", "d "])
    assert updated(["a", "...", "z"], ["a", "b", "c", "y"]) == ["a", "...", "y"]
    assert updated(["a", "b"], ["a", "c"]) == ["a", "c"]


# ---- links --------------------------------------------------------------------------------

def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*_]|<[^>]*>", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    seen: dict[str, int] = {}
    found = set()
    for heading in re.findall(r"^#{1,6} (.*)$", text, re.M):
        slug = _slug(heading)
        found.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return found


def links(page: Path) -> list[str]:
    text = re.sub(r"`[^`\n]*`", "", FENCE.sub("", page.read_text()))
    return re.findall(r"\]\(([^)\s]+)\)", text) + re.findall(r'<img src="([^"]+)"', text)


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_relative_link_resolves(page):
    broken = []
    for target in links(page):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and (file.suffix != ".md" or anchor not in anchors(file)):
            broken.append(f"{target}: no heading with that anchor")
    assert not broken, broken


def test_every_page_of_docs_is_reachable_from_the_index():
    index = ROOT / "docs" / "index.md"
    linked = {(index.parent / t.partition("#")[0]).resolve() for t in links(index)}
    assert set((ROOT / "docs").glob("*.md")) - {index} <= linked


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python tests/test_docs.py --update")
    import subprocess
    command = [sys.executable, "-m", "pytest", "-q", __file__, "-k", "examples_print"]
    environment = {**os.environ, "SCHEDC_UPDATE_DOCS": "1"}
    sys.exit(subprocess.run(command, cwd=ROOT, env=environment).returncode)

"""The README shows real output: every `$ schedc ...` example is run from the repository root
and its lines (except `...`) must appear in that order; its `expect` block must hold."""

from __future__ import annotations

import re
import shlex

import pytest
from conftest import ROOT, SCHEDULES, needs_shared_data, write

import schedc
from schedc.analysis.check import check_program

README = (ROOT / "README.md").read_text()
SECTION = README.split("## Equations, thresholds and self-checking files")[1].split("\n## ")[0]
EXAMPLES = [block for block in re.findall(r"```\n(.*?)```", README, re.S)
            if block.startswith("$ schedc ")]


def test_the_readme_has_examples():
    assert len(EXAMPLES) >= 12


@pytest.mark.parametrize("block", EXAMPLES, ids=[b.splitlines()[0][9:60] for b in EXAMPLES])
def test_example_output_is_real(run, monkeypatch, reuse_shipped, block):
    monkeypatch.chdir(ROOT)
    command, *shown = block.rstrip("\n").splitlines()
    if "../shared/data/" in command:
        needs_shared_data()
    code, out, err = run(*shlex.split(command)[2:])  # drop "$ schedc"
    expected_code = 1 if "broken" in command else 0  # a broken fixture fails verification
    assert code == expected_code, err
    lines = iter(out.splitlines())
    for expected in shown:
        if expected.strip() == "...":  # lines left out
            continue
        assert any(line == expected for line in lines), f"not in the output (in order): {expected!r}"


def test_the_expect_block_holds(tmp_path):
    block = SECTION.split("In a file:\n\n```\n")[1].split("```")[0]
    head = (SCHEDULES / "seed" / "nvlink_2x8.sched").read_text().split("# The seed's figures")[0]
    head = head.replace('"../', f'"{SCHEDULES}/')
    outcomes = check_program(schedc.load(write(tmp_path, "readme.sched", head + block))).outcomes
    assert len(outcomes) == 6 and all(o.passed for o in outcomes)

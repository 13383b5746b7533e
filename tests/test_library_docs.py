"""The library's page, docs/library.md, shows what the compiler computes, not typed-in
numbers."""

from __future__ import annotations

import re

from conftest import ROOT, SCHEDULES, timings

PAGE = (ROOT / "docs" / "library.md").read_text()


def test_library_table_formulas_come_from_the_compiler():
    compiled = {}
    for file in ("flat_16.sched", "flat_16_composed.sched"):
        _, times = timings(SCHEDULES / "algorithms" / file)
        compiled.update({name: str(t.cost.formula) for name, t in times.items()})
    rows = re.findall(r"^\| `(\w+)\([^`]*\)` \|[^|]*\|[^|]*\|[^|]*\| ([^|]*) \|", PAGE, re.M)
    shown = {name: re.search(r"`([^`]*)`", cell).group(1) for name, cell in rows if "`" in cell}
    assert len(rows) == 18 and len(shown) == 17
    assert shown == compiled


def test_rail_comparison_is_the_compilers(run, monkeypatch, reuse_shipped):
    monkeypatch.chdir(ROOT)
    code, out, _ = run("compare", "schedules/algorithms/rail_4x8.sched")
    assert code == 0
    table = out.split("\n\n")[0]
    assert f"```\n$ schedc compare schedules/algorithms/rail_4x8.sched\n{table}\n...\n```" in PAGE

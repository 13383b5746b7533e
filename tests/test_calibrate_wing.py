"""The calibrate wing without import cycles (issue 35, item 3): its modules' imports, the
lazy ones inside functions too, form no cycle among the wing's modules (`fit` ran
`splits.leave_one_out`, which imported `fit.calibrate_runs` back; it is now given it), and
none imports another module's private name (`splits` read `fit._shared`)."""

from __future__ import annotations

import ast

from conftest import ROOT

WING = ROOT / "schedc" / "analysis" / "calibrate"


def _imports(path) -> list[tuple[str, list[str]]]:
    """(module of the wing, names) of every `from .X import ...` in the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            found.append((node.module, [a.name for a in node.names]))
    return found


def _graph() -> dict[str, set[str]]:
    modules = {p.stem for p in WING.glob("*.py") if p.stem != "__init__"}
    return {p.stem: {m for m, _ in _imports(p) if m in modules}
            for p in WING.glob("*.py") if p.stem in modules}


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """A cycle of the graph (its modules in order), or []."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node], path[len(path):] = 1, [node]
        for after in sorted(graph[node]):
            if state.get(after) == 1:
                return path[path.index(after):] + [after]
            if after not in state and (found := visit(after)):
                return found
        state[node] = 2
        path.pop()
        return []
    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return []


def test_the_wing_has_no_import_cycle():
    assert _cycle(_graph()) == []


def test_no_module_of_the_wing_imports_a_private_name():
    private = [(p.name, m, n) for p in WING.glob("*.py") for m, names in _imports(p)
               for n in names if n.startswith("_")]
    assert private == []


def test_a_cycle_is_found():
    """(what the test above reads for: fit -> splits -> fit, as it was)"""
    assert _cycle({"fit": {"splits", "records"}, "splits": {"fit"}, "records": set()}) == \
        ["fit", "splits", "fit"]
    assert _cycle({"fit": {"splits"}, "splits": {"records"}, "records": set()}) == []

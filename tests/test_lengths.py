"""Functions of at most about 60 lines and modules of at most 400 (issue 35, item 3:
"functions over ~60 lines split by phase"; ten modules sat at 404-446 lines, under
tests/test_layout.py's hard 450): every function of the package, its `def` to its last line,
docstring included, is at most LIMIT lines, and every module at most MODULE_LIMIT, except
those listed with the wing that owns them; a new long one fails here."""

from __future__ import annotations

import ast

from conftest import ROOT

LIMIT = 60

# module:function -> why it is longer (none since the wings split prove, port_rule,
# round_classes and pack)
LONGER: dict[str, str] = {}

MODULE_LIMIT = 400
LONGER_MODULES: dict[str, str] = {}  # module -> why it is longer (none)


def _long_functions(where: str, source: str) -> list[str]:
    return [f"{where}:{node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for node in ast.walk(ast.parse(source))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > LIMIT
            and f"{where}:{node.name}" not in LONGER]


def test_no_function_is_longer_than_the_limit():
    found = [f for path in sorted((ROOT / "schedc").rglob("*.py"))
             for f in _long_functions(path.relative_to(ROOT).as_posix(),
                                      path.read_text(encoding="utf-8"))]
    assert found == []


def test_no_module_is_longer_than_the_limit():
    found = [f"{where} ({count} lines)" for path in sorted((ROOT / "schedc").rglob("*.py"))
             if (where := path.relative_to(ROOT).as_posix()) not in LONGER_MODULES
             and (count := len(path.read_text(encoding="utf-8").splitlines())) > MODULE_LIMIT]
    assert found == []


def test_a_long_function_is_found():
    body = "".join(f"    x{k} = {k}\n" for k in range(LIMIT))
    assert _long_functions("schedc/x.py", f"def f():\n{body}") == ["schedc/x.py:f (61 lines)"]
    assert _long_functions("schedc/x.py", f"def f():\n{body[:-len('    x59 = 59')-1]}") == []

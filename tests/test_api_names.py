"""`schedc.api` names its result types twice — imported for type checkers, and looked up
lazily at run time (`RESULT_TYPES`, so that `import schedc` loads no SymPy): the two lists
must agree, type by type and module by module."""

from __future__ import annotations

import ast

from conftest import ROOT

import schedc.api


def test_result_types_are_the_type_checking_imports():
    tree = ast.parse((ROOT / "schedc" / "api" / "__init__.py").read_text(encoding="utf-8"))
    guarded = next(node for node in tree.body if isinstance(node, ast.If)
                   and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
    imported = {alias.name: "schedc." + node.module.lstrip(".")
                for node in guarded.body if isinstance(node, ast.ImportFrom)
                for alias in node.names}
    assert imported == schedc.api.RESULT_TYPES
    for name, module in imported.items():
        assert getattr(schedc.api, name).__module__ == module

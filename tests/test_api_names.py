"""`schedc.api` names its result types twice — imported for type checkers, and looked up
lazily at run time (`RESULT_TYPES`, so that `import schedc` loads no SymPy): the two lists
must agree, type by type and module by module."""

from __future__ import annotations

import ast

import pytest
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


def _type_checking_names(path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    guarded = next(node for node in tree.body if isinstance(node, ast.If)
                   and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
    return {alias.name for node in guarded.body if isinstance(node, ast.ImportFrom)
            for alias in node.names}


def test_the_root_package_is_the_whole_api():
    """`schedc.X` for every name of `schedc.api.__all__` (issue 35: `schedc.calibrate_logs`,
    `schedc.predict_nccl` and the result types were missing), each the API's own object, and
    one list of names: the root's `__all__` is the API's and the version, and type checkers
    see the API's names through one star import, not a second list."""
    import schedc
    assert len(set(schedc.api.__all__)) == len(schedc.api.__all__)
    assert schedc.__all__ == ["__version__", *schedc.api.__all__]
    for name in schedc.api.__all__:
        assert getattr(schedc, name) is getattr(schedc.api, name), name
    assert _type_checking_names(ROOT / "schedc" / "__init__.py") == {"*"}
    tree = ast.parse((ROOT / "schedc" / "__init__.py").read_text(encoding="utf-8"))
    listed = [node for node in ast.walk(tree) if isinstance(node, ast.List)
              and any(isinstance(e, ast.Constant) and e.value == "load" for e in node.elts)]
    assert listed == [], "the root package lists the API's names again"
    assert schedc.calibrate_logs is schedc.api.calibrating.calibrate_logs
    assert isinstance(schedc.Session, type) and isinstance(schedc.MachineSummary, type)
    assert "load" in dir(schedc)
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        schedc.no_such_name  # noqa: B018


def test_import_schedc_imports_no_stage():
    """`import schedc` looks names up in `schedc.api` on first use only."""
    import subprocess
    import sys
    probe = ("import sys, schedc; print(sorted(m for m in sys.modules "
             "if m.startswith('schedc.')))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, cwd=ROOT)
    assert done.stdout.strip() == "[]"


def test_the_architecture_page_lists_every_function():
    """docs/architecture.md's Python API tables name every function of `schedc` (as
    `name(...)`), and no function that is not one."""
    import re

    import schedc
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Python API", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `(\w+)\(", section, re.M))
    functions = {n for n in schedc.__all__ if n[0].islower() and callable(getattr(schedc, n))}
    assert listed == functions


def test_the_architecture_pages_signatures_are_the_functions():
    """Each row of docs/architecture.md's Python API tables spells its function's signature:
    every argument it lists is a parameter, a default it shows is the function's default,
    and a row not ending in `...` lists every parameter (issue 35: the table had fallen
    behind the functions)."""
    import ast
    import inspect
    import re

    import schedc
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Python API", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)\(([^`]*)\)`", section, re.M)
    assert len(rows) > 30
    for name, args in rows:
        params = inspect.signature(getattr(schedc, name)).parameters
        listed = [a.strip() for a in args.split(",") if a.strip() not in ("*", "...", "")]
        for item in listed:
            key, _, shown = item.partition("=")
            assert key in params, f"{name}: no parameter {key}"
            if shown:
                assert params[key].default == ast.literal_eval(shown), f"{name}({item})"
        if "..." not in args:
            assert set(params) == {a.partition("=")[0] for a in listed}, name


def test_the_architecture_page_names_every_name_of_the_api():
    """Every name of `schedc.__all__` (the result types, errors and constants too, not only
    the functions the tables list) is named in docs/architecture.md's Python API section, as
    code (`name`, `list[Name]`), and the section names no `schedc.X` that is not one."""
    import re

    import schedc
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Python API", 1)[1].split("\n## ", 1)[0]
    named = {word for code in re.findall(r"`([^`]+)`", section)
             for word in re.findall(r"\w+", code)}
    assert [n for n in schedc.__all__ if n not in named] == []
    assert {n for n in re.findall(r"\bschedc\.(\w+)", section)} - {*schedc.__all__, "__all__",
                                                                     "api", "render", "export"} == set()


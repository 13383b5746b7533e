"""The package layout: one subpackage per pipeline stage, imports only pointing down the
pipeline (every import, lazy ones inside functions too), and modules of a readable size."""

from __future__ import annotations

import ast
import doctest
import re
from pathlib import Path

import pytest
from conftest import ROOT

PACKAGE = ROOT / "schedc"
MAX_LINES = 450

WINGS = ("schedc.analysis.verify", "schedc.analysis.bound", "schedc.analysis.solve",
         "schedc.analysis.calibrate")

# Lowest first; a module may import its own layer and the layers before it.
LAYERS = (
    ("schedc.errors", "schedc.units", "schedc.deadline", "schedc.limits", "schedc.progress",
     "schedc.magnitude", "schedc.files", "schedc.xmltree", "schedc.choices", "schedc.words"),
    ("schedc.language", "schedc.measure",  # readers: .sched text, nccl-tests logs,
     "schedc.hardware"),  # NCCL topology files, nvidia-smi topo -m
    ("schedc.model",),
    ("schedc.elaborate", "schedc.msccl"),  # .sched programs and MSCCL XML algorithms → IR
    ("schedc.cost", "schedc.nccl"),  # schedc's cost model; NCCL's own (tuning.cc), beside it
    ("schedc.session",),
    WINGS,  # the analyses, side by side: none imports another
    # closed forms in n, from compiled instances and their bounds; verification for every n
    ("schedc.analysis.scale", "schedc.analysis.forall"),
    ("schedc.analysis",),  # the drivers above the wings: `check`, `report`'s overview
    ("schedc.render",),  # presentation only: text, JSON, Markdown, LaTeX, HTML, plots
    ("schedc.export",),  # files for other tools: MSCCL XML, tuner tables
    ("schedc.api", "schedc"),  # the public API, and the root package that re-exports it
    ("schedc.cli", "schedc.__main__"),  # the command line, over the public API
)

# What the command line may import: the public API, presentation, the writers of files for
# other tools, and the errors it turns into messages (and its own modules).
CLI_IMPORTS = ("schedc", "schedc.api", "schedc.render", "schedc.export", "schedc.errors",
               "schedc.cli")


def _name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _layer(module: str) -> int:
    """The layer of the longest prefix naming the module (`schedc` itself is the API)."""
    found = [(len(p), depth) for depth, prefixes in enumerate(LAYERS) for p in prefixes
             if module == p or (p != "schedc" and module.startswith(p + "."))]
    assert found, f"{module} is in no layer"
    return max(found)[1]


def _imports(module: str, path: Path) -> list[tuple[str, int]]:
    """(imported schedc module, line) of every import in a module, made absolute."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            for alias in node.names:  # `from . import syntax` imports a module
                full = f"{base}.{alias.name}"
                if base == "schedc" and alias.name == "__version__":
                    continue  # a constant of the root package, which imports nothing eagerly
                found.append((full if full in MODULES else base, node.lineno))
    return [(name, line) for name, line in found if name == "schedc" or name.startswith("schedc.")]


def test_every_module_is_in_a_layer():
    assert [_layer(m) for m in ("schedc.units", "schedc.language.parser", "schedc.model.ir",
                                "schedc.elaborate.program", "schedc.cost.lower", "schedc.session",
                                "schedc.analysis.bound.cuts", "schedc.analysis.scale.forms",
                                "schedc.analysis.check", "schedc.render.text",
                                "schedc.export.tuner", "schedc.api.compiling",
                                "schedc.cli")] == list(range(len(LAYERS)))
    assert _layer("schedc") == _layer("schedc.api")
    for module in MODULES:
        _layer(module)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down_the_pipeline(module):
    here = _layer(module)
    upward = [f"line {line}: {name}" for name, line in _imports(module, MODULES[module])
              if _layer(name) > here]
    assert upward == [], f"{module} (layer {LAYERS[here][0]}) imports from above it"


def _wing(module: str) -> str | None:
    return next((w for w in WINGS if module == w or module.startswith(w + ".")), None)


@pytest.mark.parametrize("wing", WINGS)
def test_wings_never_import_each_other(wing):
    crossing = [f"{module} line {line}: {name}" for module, path in MODULES.items()
                if _wing(module) == wing for name, line in _imports(module, path)
                if _wing(name) not in (None, wing)]
    assert crossing == []


def test_analysis_never_imports_render():
    for module, path in MODULES.items():
        if module.startswith("schedc.analysis"):
            assert not [n for n, _ in _imports(module, path) if n.startswith("schedc.render")], module


def test_the_check_sees_relative_and_lazy_imports():
    """The parser of imports finds what the layering rests on (so the tests above can fail)."""
    found = dict(_imports("schedc.api.analysing", MODULES["schedc.api.analysing"]))
    assert "schedc.analysis.solve.equations" in found  # `from ..analysis.solve.equations import ...` in a function
    assert "schedc.language.syntax" in dict(_imports("schedc.language.parser",
                                                     MODULES["schedc.language.parser"]))
    api = dict(_imports("schedc.api.compiling", MODULES["schedc.api.compiling"]))
    assert "schedc.analysis.verify.verdict" in api  # the API's lazy imports are seen
    assert _layer("schedc.api") < _layer("schedc.cli")


def _allowed_in_cli(name: str) -> bool:
    return any(name == p or (p != "schedc" and name.startswith(p + ".")) for p in CLI_IMPORTS)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("schedc.cli")))
def test_the_command_line_imports_only_the_public_api(module):
    """Every policy a command applies lives in the API (`schedc.api`), so a script gets what
    the command line gets; cli only parses options, calls the API and presents the result."""
    stages = [f"line {line}: {name}" for name, line in _imports(module, MODULES[module])
              if not _allowed_in_cli(name)]
    assert stages == [], f"{module} reaches past the public API"


def test_the_cli_check_can_fail():
    assert not _allowed_in_cli("schedc.analysis.verify.verdict")
    assert not _allowed_in_cli("schedc.session") and not _allowed_in_cli("schedc.limits")
    assert _allowed_in_cli("schedc.api.compiling") and _allowed_in_cli("schedc")


@pytest.mark.parametrize("module", sorted(MODULES))
def test_modules_stay_readable(module):
    lines = MODULES[module].read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"{module} has {lines} lines; split it (at most {MAX_LINES})"


ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text()


def test_the_architecture_page_names_every_stage():
    packages = sorted({p.parent.relative_to(ROOT).as_posix() for p in PACKAGE.glob("*/__init__.py")})
    assert packages and all(f"`{p}/`" in ARCHITECTURE for p in packages), packages


def test_the_architecture_pages_api_example_runs(monkeypatch):
    monkeypatch.chdir(ROOT)  # its paths are relative to the repository root
    (block,) = re.findall(r"```python\n(.*?)```", ARCHITECTURE, re.S)
    test = doctest.DocTestParser().get_doctest(block, {}, "architecture", "docs/architecture.md", 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.failures == 0 and runner.tries >= 10


def test_the_command_line_starts_without_the_heavy_libraries():
    # `schedc --help` and option parsing import no stage: every command imports what it needs
    # when it runs (start-up time; see benchmarks/targets.py).
    import subprocess
    import sys
    probe = ("import sys, schedc.cli; heavy = ('sympy', 'numpy', 'networkx', 'lark', "
             "'matplotlib', 'scipy'); print(sorted(m for m in heavy if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, cwd=ROOT)
    assert done.stdout.strip() == "[]"

"""One place per constant (issue 35, item 3): the names an option chooses among and the
no-limit size are written once, in `schedc/choices.py` and `schedc/limits.py`, and every
other module imports them. This reads every module's syntax tree for a second spelling:
a tuple, list or set of literals that is NCCL's protocols, the MSCCL executors, the
`emit` stages or the export layouts (in any letter case), the string literal of the
msccl-executor-nccl executor (the other, "msccl", is also the format `export msccl` writes),
and the number 2^63 - 1 (or `2**63`)."""

from __future__ import annotations

import ast

from conftest import ROOT

from schedc.api.compiling import STAGES
from schedc.choices import EXECUTORS, LAYOUTS, NCCL_EXECUTOR, NCCL_PROTOCOLS
from schedc.limits import MAX_SIZE

# name -> (the set of names, the module that defines it)
NAME_SETS = {
    "NCCL's protocols": ({n.lower() for n in NCCL_PROTOCOLS}, "schedc/choices.py"),
    "the MSCCL executors": ({n.lower() for n in EXECUTORS}, "schedc/choices.py"),
    "the export layouts": (set(LAYOUTS), "schedc/choices.py"),
    "the emit stages": (set(STAGES), "schedc/api/compiling.py"),
}


def _literal_strings(node: ast.AST) -> set[str] | None:
    """The strings of a tuple, list or set made of string literals only, lower-cased."""
    if not isinstance(node, (ast.Tuple, ast.List, ast.Set)) or not node.elts:
        return None
    if not all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return None
    return {e.value.lower() for e in node.elts}


def _is_no_limit(node: ast.AST) -> bool:
    """2**63 - 1 written as a number, or any expression of `2 ** 63`."""
    if isinstance(node, ast.Constant) and node.value == MAX_SIZE and \
            not isinstance(node.value, bool):
        return True
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and \
        isinstance(node.left, ast.Constant) and node.left.value == 2 and \
        isinstance(node.right, ast.Constant) and node.right.value == 63


def _second_spellings(where: str, source: str) -> list[str]:
    """What `source` (the module `where`, relative to the root) spells again."""
    found = []
    for node in ast.walk(ast.parse(source)):
        at = f"{where}:{getattr(node, 'lineno', 0)}"
        strings = _literal_strings(node)
        for what, (names, home) in NAME_SETS.items():
            if strings == names and where != home:
                found.append(f"{at}: {what} again")
        if isinstance(node, ast.Constant) and node.value == NCCL_EXECUTOR and \
                where != "schedc/choices.py":
            found.append(f"{at}: the executor name {node.value!r}")
        if _is_no_limit(node) and where != "schedc/limits.py":
            found.append(f"{at}: the no-limit size again")
    return found


def test_each_constant_is_written_once():
    found = [line for path in sorted((ROOT / "schedc").rglob("*.py"))
             for line in _second_spellings(path.relative_to(ROOT).as_posix(),
                                           path.read_text(encoding="utf-8"))]
    assert found == []


def test_the_check_finds_each_kind_of_second_spelling():
    """What issue 35 found (so the test above can fail): protocol names in another case
    and order, an executor's name, `2**63 - 1`, the stages."""
    source = ('PROTOCOLS = ("ll", "ll128", "simple")\n'
              'OK = ("Simple", "LL128", "LL")\n'
              'DEFAULT = "msccl-executor-nccl"\n'
              'NO_LIMIT = 2**63 - 1\n'
              'LIMIT = 9223372036854775807\n'
              'STAGES = ["ast", "ir", "loads", "formula", "routes"]\n')
    found = _second_spellings("schedc/x.py", source)
    assert sorted(found) == [
        "schedc/x.py:1: NCCL's protocols again", "schedc/x.py:2: NCCL's protocols again",
        "schedc/x.py:3: the executor name 'msccl-executor-nccl'",
        "schedc/x.py:4: the no-limit size again", "schedc/x.py:5: the no-limit size again",
        "schedc/x.py:6: the emit stages again"]
    assert _second_spellings("schedc/choices.py", source.split("\n")[0]) == []

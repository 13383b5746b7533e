"""Hypothesis (H2) of the proof for every n (proof.py, docs/scale.md): the machine is built
uniformly in n, read from the topology's source. n is only the size of one top-level family
(the copies) and the bound of `for v in 0..n-1` clauses whose variable only indexes that
family in a link's ends; no host body, bandwidth or other statement mentions n; no pinned
route, no shared resource. `uniform_copies` names the copies, or raises `Unproved` naming
the line that fails.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass

from ...errors import Span
from ...language import syntax as ast
from ...language.scopes import unique_bindings
from ...session import Session
from .portloads import Unproved


def where(span: Span | None) -> str:
    """`file:line: ` of a refusal's span, or nothing."""
    return f"{span.source.path}:{span.line}: " if span is not None else ""


def syntax_nodes(node: object):
    """Every syntax node under `node` (spans left out)."""
    if isinstance(node, (tuple, list)):
        for item in node:
            yield from syntax_nodes(item)
    elif is_dataclass(node) and not isinstance(node, type) and not isinstance(node, Span):
        yield node
        for f in fields(node):
            if f.name != "span":
                yield from syntax_nodes(getattr(node, f.name))


def _mentions(node: object, names: set[str]) -> bool:
    return any(isinstance(x, ast.Name) and x.id in names for x in syntax_nodes(node))


def _dependent(modules: tuple[ast.Module, ...], param: str) -> set[str]:
    """The param and every top-level `let` computed from it."""
    lets = {s.name: s.value for m in modules for s in m.body if isinstance(s, ast.Let)}
    found = {param}
    while True:
        more = {name for name, value in lets.items() if name not in found
                and _mentions(value, found)}
        if not more:
            return found
        found |= more


def uniform_copies(session: Session, param: str) -> str:
    """(H2): the name of the family of copies; raises Unproved naming the line that fails.
    Read with every local name unique (`language.scopes`): a link's loop variable is not a
    top-level `let` of the same spelling."""
    modules = unique_bindings(tuple(session.modules))
    dep = _dependent(modules, param)
    copies: str | None = None
    for module in modules:
        for block in (s for s in module.body if isinstance(s, ast.Topology)):
            for stmt in block.body:
                decls = [stmt.name] if isinstance(stmt, ast.HostDecl) else list(
                    stmt.names) if isinstance(stmt, ast.DeviceDecl) else []
                for decl in decls:
                    if decl.count is not None and _mentions(decl.count, dep):
                        if not (isinstance(decl.count, ast.Name) and decl.count.id == param) \
                                or copies is not None:
                            raise Unproved(f"{where(decl.span)}a family sized by {param} other "
                                           f"than one family of {param} copies")
                        copies = decl.name
                if isinstance(stmt, ast.HostDecl):
                    if _mentions(stmt.body, dep):
                        raise Unproved(f"{where(stmt.span)}a host body depends on {param}")
                elif isinstance(stmt, ast.LinkDecl):
                    _uniform_link(stmt, param, dep)
                elif isinstance(stmt, (ast.RouteDecl, ast.SharedDecl)):
                    raise Unproved(f"{where(stmt.span)}pinned routes and shared resources are "
                                   "not covered")
                elif not isinstance(stmt, ast.DeviceDecl) and _mentions(stmt, dep):
                    raise Unproved(f"{where(stmt.span)}this statement depends on {param}")
    if copies is None:
        raise Unproved(f"no family of the topology is sized by {param}")
    for module in modules:  # the links' copy variables index that family only
        for block in (s for s in module.body if isinstance(s, ast.Topology)):
            for stmt in block.body:
                if isinstance(stmt, ast.LinkDecl):
                    _indexes_only(stmt, copies, param, dep)
    return copies


def _copy_vars(stmt: ast.LinkDecl, param: str, dep: set[str]) -> set[str]:
    out = set()
    for clause in stmt.clauses:
        if not _mentions(clause, dep):
            continue
        it = clause.iter
        if not (clause.cond is None and isinstance(it, ast.Range) and isinstance(it.lo, ast.Number)
                and it.lo.value == 0 and it.lo.unit is None and isinstance(it.hi, ast.BinOp)
                and it.hi.op == "-" and isinstance(it.hi.left, ast.Name)
                and it.hi.left.id == param and isinstance(it.hi.right, ast.Number)
                and it.hi.right.value == 1 and it.hi.right.unit is None):
            raise Unproved(f"{where(clause.span)}a link loop over something other than 0..{param}-1")
        out.add(clause.var)
    return out


def _uniform_link(stmt: ast.LinkDecl, param: str, dep: set[str]) -> None:
    _copy_vars(stmt, param, dep)
    if _mentions((stmt.a, stmt.b, stmt.attrs), dep):
        raise Unproved(f"{where(stmt.span)}a link's ends or attributes depend on {param}")


def _indexes_only(stmt: ast.LinkDecl, copies: str, param: str, dep: set[str]) -> None:
    """Each copy variable occurs only as `copies[v]` in the link's ends — never in its
    attributes (`bw B / max(1, i - 60)`), another clause's range or any clause's `if` (`for k
    in 0..0 if i >= 60`), which would join the copies differently — and `copies` is indexed
    only so."""
    loop = _copy_vars(stmt, param, dep)
    rest = (stmt.attrs, *(c.iter for c in stmt.clauses if c.var not in loop),
            *(c.cond for c in stmt.clauses if c.cond is not None))
    if _mentions(rest, loop):
        raise Unproved(f"{where(stmt.span)}a link whose bandwidth, class or loops depend on "
                       f"which copy of {copies} it joins (each copy must be joined the same way)")
    for end in (stmt.a, stmt.b):
        nodes = list(syntax_nodes(end))
        allowed = {id(x.index) for x in nodes if isinstance(x, ast.Index)
                   and isinstance(x.base, ast.Name) and x.base.id == copies
                   and isinstance(x.index, ast.Name) and x.index.id in loop}
        bases = {id(x.base) for x in nodes if isinstance(x, ast.Index) and id(x.index) in allowed}
        for x in nodes:
            if isinstance(x, ast.Name) and ((x.id in loop and id(x) not in allowed)
                                            or (x.id == copies and id(x) not in bases)):
                raise Unproved(f"{where(stmt.span)}a link not uniform in the copies of "
                               f"{copies} (each copy must be joined the same way)")

"""Every local name made unique, so that a name's meaning is what it is bound to, never its
spelling: a pass over parsed modules (AST -> AST, spans kept).

A loop variable (`for`, `round`/`parallel for`, a comprehension's or a link's clause) and a
`let` inside a schedule body each get a name of their own, `i@3`; a schedule's formals get
`g@ring_allgather` (one per schedule name, so that a call's keyword arguments find them).
Top-level `let`s, params, devices and schedule names are global and keep their names. The
`@` cannot occur in a source name, so a renamed name never meets one of the file's own.

    >>> unique_bindings((parse_module(...),))   # `for i in 0..3` twice -> i@1 and i@2

Readers that go by names (`elaborate.structure`, `analysis.scale.proof`) work on the result,
so two loops that both call their variable `i` are two variables to them, as they are to
the elaborator.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass, replace
from itertools import count
from typing import Any

from . import statements as st
from . import syntax as ast

_LOOPS = (st.For, st.RoundFor, st.ParallelFor)


class _Renamer:
    def __init__(self, functions: set[str]) -> None:
        self._next = count(1)
        self.functions = functions  # schedules with formals: their keyword arguments

    def fresh(self, name: str) -> str:
        return f"{name}@{next(self._next)}"

    def node(self, node: Any, env: dict[str, str]) -> Any:
        if isinstance(node, tuple):
            return self.sequence(node, env)
        if isinstance(node, ast.Name):
            return replace(node, id=env.get(node.id, node.id))
        if isinstance(node, _LOOPS):
            var = self.fresh(node.var)
            inner = {**env, node.var: var}
            return replace(node, var=var, iter=self.node(node.iter, env),
                           body=self.node(node.body, inner))
        if isinstance(node, ast.ListComp):
            clauses, inner = self.clauses(node.clauses, env)
            return replace(node, clauses=clauses, element=self.node(node.element, inner))
        if isinstance(node, (ast.LinkDecl, ast.RouteDecl)):
            clauses, inner = self.clauses(node.clauses, env)
            changed = {f.name: self.node(getattr(node, f.name), inner) for f in fields(node)
                       if f.name not in ("clauses", "span") and not f.name.endswith("span")}
            return replace(node, clauses=clauses, **changed)
        if isinstance(node, ast.ScheduleDef):
            return self.schedule(node, env)
        if isinstance(node, ast.Call):
            return replace(node, args=self.node(node.args, env), kwargs=tuple(
                replace(k, name=_formal(k.name, node.func) if node.func in self.functions
                        else k.name, value=self.node(k.value, env)) for k in node.kwargs))
        if is_dataclass(node) and not isinstance(node, type) and isinstance(
                node, (ast.Node, ast.LinkAttrs)):
            changed = {f.name: self.node(getattr(node, f.name), env) for f in fields(node)
                       if not f.name.endswith("span")}
            return replace(node, **changed)
        return node

    def sequence(self, items: tuple, env: dict[str, str]) -> tuple[Any, ...]:
        """Statements in order: a local `let` binds the name for the statements after it."""
        out = []
        for item in items:
            if isinstance(item, ast.Let) and env.get("@local") == "yes":
                value = self.node(item.value, env)
                name = self.fresh(item.name)
                env = {**env, item.name: name}
                out.append(replace(item, name=name, value=value))
            else:
                out.append(self.node(item, env))
        return tuple(out)

    def clauses(self, clauses: tuple[ast.CompFor, ...], env: dict[str, str]):
        """Each clause sees the variables of the clauses before it, and its own in its `if`."""
        out = []
        for clause in clauses:
            var = self.fresh(clause.var)
            iter_ = self.node(clause.iter, env)
            env = {**env, clause.var: var}
            cond = None if clause.cond is None else self.node(clause.cond, env)
            out.append(replace(clause, var=var, iter=iter_, cond=cond))
        return tuple(out), env

    def schedule(self, node: ast.ScheduleDef, env: dict[str, str]) -> ast.ScheduleDef:
        inner = {**env, "@local": "yes"}
        formals: list[ast.Formal] = []
        for formal in node.formals or ():  # a default sees the formals before it
            default = None if formal.default is None else self.node(formal.default, inner)
            inner = {**inner, formal.name: _formal(formal.name, node.name)}
            formals.append(replace(formal, name=inner[formal.name], default=default))
        return replace(node, formals=None if node.formals is None else tuple(formals),
                       body=self.node(node.body, inner))


def _formal(name: str, schedule: str) -> str:
    return f"{name}@{schedule}"


def unique_bindings(modules: tuple[ast.Module, ...]) -> tuple[ast.Module, ...]:
    """`modules` with every local name unique (see the module doc)."""
    renamer = _Renamer({s.name for m in modules for s in m.body
                        if isinstance(s, ast.ScheduleDef) and s.formals is not None})
    return tuple(replace(m, body=renamer.node(m.body, {})) for m in modules)


__all__ = ["unique_bindings"]

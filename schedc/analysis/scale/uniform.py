"""(H2) of `proof`: is the machine built uniformly in n, read from the topology's source?

n must be the size of one top-level family (the copies: `host node[hosts]`, `gpu g[p]`)
and the bound of `for v in 0..n-1` clauses whose variable only indexes that family in a
link's ends; no host body or other statement may mention n. The source is first read as the
elaborator would read it, so that the answer depends on what a name is bound to, never on
how the file spells it:

- every local name is made unique (`language.scopes`);
- a top-level list of one item per copy, `let ports = [node[h].g for h in 0..hosts-1]`, is
  inlined where it is indexed: `ports[h][p]` is `node[h].g[p]`, and `len(ports[0])` is
  `len(node[0].g)`, which does not depend on n;
- a link clause's condition that depends on neither n nor a loop variable (`if fabric ==
  1`, a structural param's choice) is decided at the file's values: a false one leaves no
  link, a true one is dropped.

Then a family sized by n that no link mentions (a switch family declared for another
choice, `switch leaf[hosts]`) is a set of isolated devices, which no route crosses; and a
link between two devices outside every copy (a fabric link: rail switch to spine) may have
a bandwidth n^k times a bandwidth that does not depend on n (`hosts * B_port / spines`,
read through `let`s: a product and quotient of factors, each either n or free of it), which
`ports` reads at an instance n0 and scales by (n / n0)^k.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass, replace
from fractions import Fraction

from ...errors import Span
from ...language import syntax as ast
from ...language.scopes import unique_bindings
from ...session import Session
from .portloads import Unproved


@dataclass(frozen=True)
class Uniform:
    copies: str  # the family of copies
    scaled: dict[str, int]  # a fabric link's statement (`path:line:col`) -> k: bandwidth ∝ n^k


def where(span: Span | None) -> str:
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


def _rebuild(node, change):
    """`node` with every sub-node x for which change(x) is not None replaced by it."""
    new = change(node)
    if new is not None:
        return new
    if isinstance(node, tuple):
        return tuple(_rebuild(x, change) for x in node)
    if is_dataclass(node) and not isinstance(node, (type, Span)):
        return replace(node, **{f.name: _rebuild(getattr(node, f.name), change)
                                for f in fields(node) if f.init and not f.name.endswith("span")})
    return node


def _over_copies(clause: ast.CompFor, param: str) -> bool:
    """`for v in 0..n-1`, without a condition."""
    it = clause.iter
    return (clause.cond is None and isinstance(it, ast.Range) and isinstance(it.lo, ast.Number)
            and it.lo.value == 0 and it.lo.unit is None and isinstance(it.hi, ast.BinOp)
            and it.hi.op == "-" and isinstance(it.hi.left, ast.Name)
            and it.hi.left.id == param and isinstance(it.hi.right, ast.Number)
            and it.hi.right.value == 1 and it.hi.right.unit is None)


def _inline_copy_lists(modules: tuple[ast.Module, ...], param: str) -> tuple[ast.Module, ...]:
    lists = {s.name: (s.value.clauses[0].var, s.value.element) for m in modules for s in m.body
             if isinstance(s, ast.Let) and isinstance(s.value, ast.ListComp)
             and len(s.value.clauses) == 1 and _over_copies(s.value.clauses[0], param)}

    def inline(x):
        if isinstance(x, ast.Index) and isinstance(x.base, ast.Name) and x.base.id in lists:
            var, element = lists[x.base.id]
            index = _rebuild(x.index, inline)
            return _rebuild(element, lambda y: index if isinstance(y, ast.Name) and y.id == var
                            else None)
        return None
    return tuple(_rebuild(m, inline) for m in modules)


def _static(expr: ast.Expr, values: dict[str, int]) -> Fraction | bool | None:
    """The value of a condition built of numbers, the names in `values`, comparisons, `and`,
    `or`, `not` (None: something else)."""
    if isinstance(expr, ast.Number):
        return expr.value if expr.unit is None else None
    if isinstance(expr, ast.Name):
        return Fraction(values[expr.id]) if expr.id in values else None
    if isinstance(expr, ast.Not):
        inner = _static(expr.operand, values)
        return None if inner is None else not inner
    if isinstance(expr, (ast.Compare, ast.BoolOp)):
        a, b = _static(expr.left, values), _static(expr.right, values)
        if a is None or b is None:
            return None
        return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b,
                "and": bool(a) and bool(b), "or": bool(a) or bool(b)}.get(expr.op)
    return None


def _decide_conditions(modules, values: dict[str, int]):
    """Each link whose clauses' conditions are decided: None where one is false."""
    def decide(x):
        if not isinstance(x, ast.LinkDecl):
            return None
        clauses = []
        for clause in x.clauses:
            value = None if clause.cond is None else _static(clause.cond, values)
            if value is False:
                return ()  # no link at these values
            clauses.append(clause if value is None else replace(clause, cond=None))
        return replace(x, clauses=tuple(clauses))
    out = []
    for module in modules:
        body = []
        for stmt in module.body:
            if isinstance(stmt, ast.Topology):
                kept = [t if d is None else d for t, d in ((t, decide(t)) for t in stmt.body)]
                stmt = replace(stmt, body=tuple(t for t in kept if t != ()))
            body.append(stmt)
        out.append(replace(module, body=tuple(body)))
    return tuple(out)


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


def _power_of_n(expr: ast.Expr, param: str, dep: set[str], lets: dict[str, ast.Expr]
                ) -> int | None:
    """k when `expr` is n^k times something free of n (a product and quotient of factors,
    each n or free of it, read through `let`s); None otherwise."""
    if not _mentions(expr, dep):
        return 0
    if isinstance(expr, ast.Name):
        return 1 if expr.id == param else _power_of_n(lets[expr.id], param, dep, lets) \
            if expr.id in lets else None
    if isinstance(expr, ast.BinOp) and expr.op in ("*", "/"):
        a = _power_of_n(expr.left, param, dep, lets)
        b = _power_of_n(expr.right, param, dep, lets)
        return None if a is None or b is None else a + b if expr.op == "*" else a - b
    return None


def _topology_statements(modules):
    for module in modules:
        for block in (s for s in module.body if isinstance(s, ast.Topology)):
            yield from block.body


def _source(session: Session, param: str) -> tuple[tuple[ast.Module, ...], set[str]]:
    """The modules as the elaborator reads them (see the module doc), and the names
    computed from n."""
    modules = unique_bindings(tuple(session.modules))
    modules = _inline_copy_lists(modules, param)
    values = {k: v for k, v in session.structural().items() if k != param}
    modules = _decide_conditions(modules, values)
    return modules, _dependent(modules, param)


def uniform_machine(session: Session, param: str) -> Uniform:
    """(H2): the family of copies and the fabric links whose bandwidth scales with n; raises
    Unproved naming the line that fails. Read once per session and param."""
    return session.memo("scale-uniform", param, lambda: _uniform(session, param))


def _uniform(session: Session, param: str) -> Uniform:
    modules, dep = _source(session, param)
    lets = {s.name: s.value for m in modules for s in m.body if isinstance(s, ast.Let)}
    links = [s for s in _topology_statements(modules) if isinstance(s, ast.LinkDecl)]
    sized: list[ast.DeclName] = []
    for stmt in _topology_statements(modules):
        decls = [stmt.name] if isinstance(stmt, ast.HostDecl) else list(
            stmt.names) if isinstance(stmt, ast.DeviceDecl) else []
        sized += [d for d in decls if d.count is not None and _mentions(d.count, dep)]
        if isinstance(stmt, ast.HostDecl) and _mentions(stmt.body, dep):
            raise Unproved(f"{where(stmt.span)}a host body depends on {param}")
        if isinstance(stmt, (ast.RouteDecl, ast.SharedDecl)):
            raise Unproved(f"{where(stmt.span)}pinned routes and shared resources are "
                           "not covered")
        if not isinstance(stmt, (ast.DeviceDecl, ast.HostDecl, ast.LinkDecl)) \
                and _mentions(stmt, dep):
            raise Unproved(f"{where(stmt.span)}this statement depends on {param}")
    # Families sized by n that some link joins: exactly one, the copies, sized by n itself.
    linked = [d for d in sized if _mentions(links, {d.name})]
    if not sized:
        raise Unproved(f"no family of the topology is sized by {param}")
    copies = (linked or sized)[0]
    if len(linked) > 1 or not (isinstance(copies.count, ast.Name) and copies.count.id == param):
        other = linked[-1] if len(linked) > 1 else copies
        raise Unproved(f"{where(other.span)}a family sized by {param} other than one "
                       f"family of {param} copies")
    scaled = {}
    for stmt in links:
        k = _uniform_link(stmt, param, dep, lets)
        if k:
            scaled[str(stmt.span)] = k
        _indexes_only(stmt, copies.name, param, dep)
    return Uniform(copies.name, scaled)


def uniform_copies(session: Session, param: str) -> str:
    """(H2) with every bandwidth free of n: the family of copies."""
    found = uniform_machine(session, param)
    if found.scaled:
        raise Unproved(f"{next(iter(found.scaled))}: a fabric link whose bandwidth is written in {param}")
    return found.copies


def _copy_vars(stmt: ast.LinkDecl, param: str, dep: set[str]) -> set[str]:
    out = set()
    for clause in stmt.clauses:
        if not _mentions(clause, dep):
            continue
        if not _over_copies(clause, param):
            raise Unproved(f"{where(clause.span)}a link loop over something other than "
                           f"0..{param}-1")
        out.add(clause.var)
    return out


def _uniform_link(stmt: ast.LinkDecl, param: str, dep: set[str], lets) -> int:
    """0, or k for a fabric link (no copy variable, ends free of n) whose bandwidth is n^k
    times one free of n."""
    loop = _copy_vars(stmt, param, dep)
    if not _mentions((stmt.a, stmt.b, stmt.attrs), dep):
        return 0
    attrs = stmt.attrs
    k = None if loop or _mentions((stmt.a, stmt.b, replace(attrs, bw=None)), dep) \
        or attrs.bw is None else _power_of_n(attrs.bw, param, dep, lets)
    if not k:
        raise Unproved(f"{where(stmt.span)}a link's ends or attributes depend on {param}")
    return k


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

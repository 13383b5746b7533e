"""Where a structural param enters a schedule in ways a fit in n cannot see: read from the
source, not sampled.

The regular case is a param (or a name computed from it: a `let`, a loop variable over a
range in it, a schedule's formal given it, `len` of a group sized by it) in loop bounds,
group sizes, part counts and index arithmetic, with `%` by a group size. Every other use is
a *dependence*, recorded with its source line, and has a consequence for `analysis.scale`:

- a comparison (or `min`/`max`) of an affine function of n alone with a constant: a piece
  boundary at the exact n where its truth (or the argument chosen) changes (`p > 48`: 49);
- `x % q`, `x // q`, `ceil(x/q)`, `floor(x/q)` of a value depending on n, q a constant: a
  period q in n (the time is quasi-polynomial), fitted residue class by residue class when
  q <= MAX_PERIOD, else, for x affine in n alone, a boundary at every n where it steps;
- `log2`, `ceil_log2`, shifts, xor and bitwise and: the powers of two are the family;
- anything else (a comparison involving loop indices, a product of two values depending on
  n, a call of a function not listed): a note naming the line, and the result is `checked`.

An `if` whose only statement is an `error` is a precondition, not a dependence. The analysis
over-approximates: a name is taken to depend on n wherever any of its bindings does.
"""

from __future__ import annotations

from dataclasses import fields
from fractions import Fraction
from math import lcm

import sympy

from ..language import statements as st
from ..language import syntax as ast
from ..language.scopes import unique_bindings
from .structure_records import Dependence
from .structure_records import Structure as Structure  # (analysis.scale reads it here)

MAX_PERIOD = 12  # a larger period is not fitted residue by residue (too many compiles)
MAX_BOUNDARY = 10**6  # boundaries are listed up to this n
POWERS_OPS = {"<<", ">>", "^", "&", "|"}


def dependence(modules: tuple[ast.Module, ...], param: str,
               roots: tuple[ast.ScheduleDef, ...] = ()) -> Structure:
    """The dependences on `param` of the topology, the global names and the schedules
    reachable from `roots` (all schedules if none are given). Read with every local name
    made unique (`language.scopes`): what a name is bound to decides, not its spelling."""
    renamed = unique_bindings(tuple(modules))
    counterpart = {id(old): new for m, r in zip(modules, renamed)
                   for old, new in zip(m.body, r.body)}
    found = tuple(counterpart[id(root)] for root in roots)
    return _Reader(renamed, param).read(tuple(r for r in found if isinstance(r, ast.ScheduleDef)))


class _Reader:
    def __init__(self, modules: tuple[ast.Module, ...], param: str) -> None:
        self.param = param
        self.n = sympy.Symbol(param, positive=True, integer=True)
        self.modules = modules
        # By name, every definition: a result may share its name with the library function
        # it calls (`schedule rd_allreduce = rd_allreduce(ranks)`).
        self.schedules: dict[str, list[ast.ScheduleDef]] = {}
        for m in modules:
            for stmt in m.body:
                if isinstance(stmt, ast.ScheduleDef):
                    self.schedules.setdefault(stmt.name, []).append(stmt)
        self.lets: dict[str, ast.Expr] = {s.name: s.value for m in modules for s in m.body
                                          if isinstance(s, ast.Let)}
        self.tainted = self._taint()
        self.found: list[Dependence] = []
        self.boundaries: set[int] = set()
        self.periods: list[int] = []
        self.powers = False

    # ---- which names depend on the param

    def _bindings(self) -> list[tuple[str, object]]:
        out: list[tuple[str, object]] = []
        for node in ast.walk(tuple(self.modules)):
            if isinstance(node, ast.Let):
                out.append((node.name, node.value))
            elif isinstance(node, (st.For, st.RoundFor, st.ParallelFor, ast.CompFor)):
                out.append((node.var, node.iter))
            elif isinstance(node, ast.Call) and node.func in self.schedules:
                for definition in self.schedules[node.func]:
                    formals = definition.formals or ()
                    out += [(f.name, a) for f, a in zip(formals, node.args)]
                out += [(k.name, k.value) for k in node.kwargs]
            elif isinstance(node, ast.Formal) and node.default is not None:
                out.append((node.name, node.default))
        return out

    def _taint(self) -> set[str]:
        tainted = {self.param}
        bindings = self._bindings()
        grew = True
        while grew:
            grew = False
            for name, value in bindings:
                if name not in tainted and self._depends(value, tainted):
                    tainted.add(name)
                    grew = True
        return tainted

    def _depends(self, node: object, tainted: set[str] | None = None) -> bool:
        names = self.tainted if tainted is None else tainted
        return any(isinstance(x, ast.Name) and x.id in names for x in ast.walk(node))

    # ---- an affine function of n alone

    def _affine(self, node: ast.Expr, depth: int = 0) -> sympy.Expr | None:
        if depth > 50:
            return None
        if isinstance(node, ast.Number) and node.unit is None:
            return sympy.Rational(node.value.numerator, node.value.denominator)
        if isinstance(node, ast.Name):
            if node.id == self.param:
                return self.n
            value = self.lets.get(node.id)
            return None if value is None else self._affine(value, depth + 1)
        if isinstance(node, ast.UnaryOp) and node.op == "-":
            inner = self._affine(node.operand, depth + 1)
            return None if inner is None else -inner
        if isinstance(node, ast.BinOp) and node.op in "+-*/":
            a, b = self._affine(node.left, depth + 1), self._affine(node.right, depth + 1)
            if a is None or b is None:
                return None
            found = {"+": a + b, "-": a - b, "*": a * b,
                     "/": a / b if b.is_number and b != 0 else None}[node.op]
            return found if found is not None and sympy.Poly(found, self.n).degree() <= 1 \
                and found.is_polynomial(self.n) else None
        return None

    # ---- reading

    def read(self, roots: tuple[ast.ScheduleDef, ...]) -> Structure:
        scope: list[object] = [s for m in self.modules for s in m.body
                               if isinstance(s, (ast.Topology, ast.Let, ast.CollectiveDecl))]
        scope += self._reachable(roots) if roots else [
            d for defs in self.schedules.values() for d in defs]
        for node in scope:
            self._visit(node)
        period = lcm(*self.periods) if self.periods else 1
        if period > MAX_PERIOD:
            period = 1
        if self.powers:  # the powers of two are fitted: a period of theirs plays no part
            self.found = [Dependence(d.kind, d.line, d.text, d.detail.split(":")[0]
                                     + ": the powers of two are fitted instead")
                          if d.kind == "period" else d for d in self.found]
        found = tuple(sorted(set(self.found), key=lambda d: (_line_key(d.line), d.detail)))
        return Structure(self.param, found, tuple(sorted(self.boundaries)),
                         1 if self.powers else period, self.powers)

    def _reachable(self, roots: tuple[ast.ScheduleDef, ...]) -> list[ast.ScheduleDef]:
        seen: dict[int, ast.ScheduleDef] = {}
        todo = list(roots)
        while todo:
            definition = todo.pop()
            if id(definition) in seen:
                continue
            seen[id(definition)] = definition
            todo += [d for c in ast.walk(definition.body)
                     if isinstance(c, ast.Call) and c.func in self.schedules
                     for d in self.schedules[c.func] if id(d) not in seen]
        return list(seen.values())

    def _visit(self, node: object) -> None:
        for x in _nodes(node):
            if isinstance(x, (st.If, ast.Conditional, ast.CompFor)):
                if x.cond is not None:
                    self._condition(x.cond)
            elif isinstance(x, ast.BinOp):
                self._binop(x)
            elif isinstance(x, ast.Call) and x.func not in self.schedules:
                self._call(x)

    def _record(self, node: ast.Node, kind: str, detail: str) -> None:
        span = node.span
        text = span.source.line(span.line).strip()
        self.found.append(Dependence(kind, f"{span.source.path}:{span.line}", text, detail))

    def _condition(self, cond: ast.Expr) -> None:
        for x in ast.walk(cond):
            if isinstance(x, ast.Compare) and (self._depends(x.left) or self._depends(x.right)):
                self._compare(x)

    def _compare(self, x: ast.Compare) -> None:
        a, b = self._affine(x.left), self._affine(x.right)
        if a is None or b is None:
            moduli: list[int] = []
            left, right = self._quasi(x.left, moduli), self._quasi(x.right, moduli)
            period = lcm(*moduli) if moduli else 1
            if left is None or right is None or period > MAX_PERIOD:
                self._record(x, "checked", f"a comparison depending on {self.param} (not of "
                                           f"a quasi-affine function of {self.param} alone): "
                                           "not solved")
                return
            self._residue_boundaries(x, lambda m: left(m) - right(m), period)
            return
        difference = sympy.expand(a - b)  # c·n + d, compared with 0
        c = difference.coeff(self.n)
        if c == 0:
            return
        root = -difference.subs(self.n, 0) / c
        relation = {"<": sympy.Lt, "<=": sympy.Le, ">": sympy.Gt, ">=": sympy.Ge,
                    "==": sympy.Eq, "!=": sympy.Ne}[x.op]
        # Its truth can change only next to the root: where it does, a piece starts.
        near = range(int(sympy.floor(root)) - 1, int(sympy.floor(root)) + 3)
        truth = {m: bool(relation(difference.subs(self.n, m), 0)) for m in near}
        self._boundaries(x, [m for m in near if m - 1 in truth and truth[m] != truth[m - 1]],
                         "a comparison")

    def _quasi(self, node: ast.Expr, moduli: list[int], depth: int = 0):
        """`node` as a function of n, if it is built from n, constants, + - and `*` by a
        constant, `%` and `//` by a constant (whose moduli go to `moduli`); else None."""
        if depth > 50:
            return None
        affine = self._affine(node)
        if affine is not None:
            return lambda m: Fraction(str(affine.subs(self.n, m)))
        if isinstance(node, ast.Name) and node.id in self.lets:
            return self._quasi(self.lets[node.id], moduli, depth + 1)
        if isinstance(node, ast.BinOp) and node.op in ("%", "//", "+", "-", "*"):
            a = self._quasi(node.left, moduli, depth + 1)
            q = _constant(node.right)
            if node.op in ("%", "//"):
                if a is None or q is None or q.denominator != 1 or q < 1:
                    return None
                moduli.append(int(q))
                return (lambda m: a(m) % q) if node.op == "%" else (lambda m: a(m) // q)
            b = self._quasi(node.right, moduli, depth + 1)
            if a is None or b is None:
                return None
            if node.op == "*" and not (_constant(node.left) or q):
                return None
            return {"+": lambda m: a(m) + b(m), "-": lambda m: a(m) - b(m),
                    "*": lambda m: a(m) * b(m)}[node.op]
        return None

    def _residue_boundaries(self, x: ast.Compare, difference, period: int) -> None:
        """On each residue class mod `period` a quasi-affine difference is affine: where the
        comparison's truth changes from one member of the class to the next, a piece starts."""
        relation = {"<": lambda v: v < 0, "<=": lambda v: v <= 0, ">": lambda v: v > 0,
                    ">=": lambda v: v >= 0, "==": lambda v: v == 0, "!=": lambda v: v != 0}[x.op]
        cuts = []
        for r in range(period):
            first = 2 * period + r
            c = (difference(first + period) - difference(first)) / period
            d = difference(first) - c * first
            if difference(first + 2 * period) != c * (first + 2 * period) + d:
                self._record(x, "checked", "a comparison not affine on a residue class: "
                                           "not solved")
                return
            if c == 0:
                continue
            k = int((-d / c - r) // period)
            members = [r + period * j for j in range(max(k - 2, 0), k + 3)]
            truth = [relation(c * m + d) for m in members]
            cuts += [m for m, before, now in zip(members[1:], truth, truth[1:]) if before != now]
        self._boundaries(x, sorted(cuts), f"a comparison (period {period})")

    def _boundaries(self, node: ast.Node, cuts: list[int], what: str) -> None:
        cuts = [c for c in cuts if 1 < c <= MAX_BOUNDARY]
        if cuts:
            self.boundaries.update(cuts)
            listed = ", ".join(f"{self.param} = {c}" for c in cuts)
            self._record(node, "boundary", f"{what}: a piece starts at {listed}")

    def _binop(self, x: ast.BinOp) -> None:
        left, right = self._depends(x.left), self._depends(x.right)
        if not (left or right):
            return
        if x.op in POWERS_OPS:
            self.powers = True
            self._record(x, "powers of two", f"`{x.op}` of a value depending on {self.param}: "
                                             "fitted over the powers of two")
        elif x.op in ("%", "//") and left and not right:
            self._period(x, x.left, x.right)
        elif x.op in ("*", "/", "**") and left and right:
            self._record(x, "checked", f"`{x.op}` of two values depending on {self.param} "
                                       f"(not affine)")
        elif x.op == "/" and right:
            self._record(x, "checked", f"a division by a value depending on {self.param}")

    def _period(self, node: ast.Node, x: ast.Expr, q_node: ast.Expr) -> None:
        q = _constant(q_node)
        if q is None or q.denominator != 1 or q < 2:
            self._record(node, "checked", f"a `%`, `//` or rounding of a value depending on "
                                          f"{self.param} by something else than an integer")
            return
        period = int(q)
        if period <= MAX_PERIOD:
            self.periods.append(period)
            self._record(node, "period", f"period {period} in {self.param}: fitted residue "
                                         f"class by residue class")
            return
        affine = self._affine(x)
        if affine is None:
            self._record(node, "checked", f"period {period} in {self.param} (of a value not "
                                          f"affine in {self.param} alone): not fitted")
            return
        c = affine.coeff(self.n)
        d = affine.subs(self.n, 0)
        # floor(x/q), x // q and x % q step where x = c·n + d reaches a multiple of q, ceil(x/q)
        # just after: n = (q·m + step - d)/c; the first few past 1.
        step = 1 if isinstance(node, ast.Call) and node.func == "ceil" else 0
        if c <= 0:
            self._record(node, "checked", f"period {period} of a value decreasing in "
                                          f"{self.param}: not fitted")
            return
        cuts = sorted({int(sympy.ceiling((period * m + step - d) / c)) for m in range(0, 64)})
        self._boundaries(node, [c_ for c_ in cuts if c_ > 1][:8], f"period {period}")

    def _call(self, x: ast.Call) -> None:
        if not any(self._depends(a) for a in x.args):
            return
        if x.func in ("log2", "ceil_log2"):
            self.powers = True
            self._record(x, "powers of two", f"{x.func} of a value depending on {self.param}: "
                                             "fitted over the powers of two")
        elif x.func in ("ceil", "floor") and len(x.args) == 1:
            inner = x.args[0]
            if isinstance(inner, ast.BinOp) and inner.op == "/":
                self._period(x, inner.left, inner.right)
            else:
                self._record(x, "checked", f"{x.func} of a value depending on {self.param}")
        elif x.func in ("min", "max") and len(x.args) == 2:
            a, b = (self._affine(arg) for arg in x.args)
            if a is None or b is None:
                self._record(x, "checked", f"{x.func} of values depending on {self.param}")
                return
            difference = sympy.expand(a - b)
            c = difference.coeff(self.n)
            if c != 0:
                root = -difference.subs(self.n, 0) / c
                self._boundaries(x, [int(sympy.floor(root)) + 1], x.func)
        elif x.func not in ("len", "abs"):
            self._record(x, "checked", f"{x.func}() of a value depending on {self.param}")


def _line_key(line: str) -> tuple[str, int]:
    path, _, number = line.rpartition(":")
    return path, int(number)


def _nodes(node: object):
    """Every node, depth first, except inside the condition of an `if` whose only statements
    are `error`s: a precondition (`if k & (k - 1) != 0: error ...`) leaves the time alone."""
    if isinstance(node, st.If) and node.then and all(isinstance(s, st.Fail) for s in node.then):
        yield from _nodes(node.orelse)
        return
    if isinstance(node, tuple):
        for item in node:
            yield from _nodes(item)
    elif isinstance(node, (ast.Node, ast.LinkAttrs)):
        yield node
        for f in fields(node):
            if not f.name.endswith("span"):
                yield from _nodes(getattr(node, f.name))


def _constant(node: ast.Expr) -> Fraction | None:
    if isinstance(node, ast.Number) and node.unit is None:
        return node.value
    return None

"""The expressions of the affine class, read with one structural param kept a symbol
(symbolic.py reads the statements over them): integers affine in the param and loop
variables, ranges, topology families, lists by comprehension, parts of regions, ranks. See
symbolic.py's docstring for the class; anything else raises `Outside` with its span.
"""

from __future__ import annotations

from ...errors import Span
from ...language import statements as st
from ...language import syntax as ast
from .affine import (
    Lin,
    Outside,
    Piece,
    SymInt,
    combine,
    const,
    constant_of,
    floor_div,
    ge,
    lin_int,
    modulo_size,
    multiply,
    single,
)
from .model import (
    Case,
    Device,
    Domain,
    Opaque,
    RankOrder,
    Region,
    Scope,
    Symbolic,
    SymList,
    SymRange,
    TopoFamily,
    device,
    merge,
)

MAX_UNROLLED = 256  # the pieces a comprehension's unrolled loops may make


class Expressions:
    """Reads expressions of the affine class (`out` collects what they require)."""


    def __init__(self, functions: dict[str, ast.ScheduleDef], lets: dict[str, ast.Expr],
                 constants: dict[str, object], topology: list[ast.Topology]) -> None:
        self.out = Symbolic()
        self.functions, self.lets, self.values = functions, lets, dict(constants)
        self.stack: list[str] = []
        for block in topology:
            self._topology(block.body, (), self.values)

    def _topology(self, body, path: tuple[str, ...], into: dict) -> None:
        for stmt in body:
            if isinstance(stmt, ast.DeviceDecl):
                for decl in stmt.names:
                    into[decl.name] = self._family(decl, path, {})
            elif isinstance(stmt, ast.HostDecl):
                members: dict[str, TopoFamily] = {}
                family = self._family(stmt.name, path, members)
                self._topology(stmt.body, path + (stmt.name.name,), members)
                into[stmt.name.name] = family

    def _family(self, decl: ast.DeclName, path, members) -> TopoFamily:
        count = None if decl.count is None else single(
            self.integer(decl.count, Scope({}, Domain())), decl.count.span, "a family's size")
        return TopoFamily(path + (decl.name,), count, members)

    # ---- expressions

    def integer(self, expr: ast.Expr, scope: Scope) -> SymInt:
        value = self.eval(expr, scope)
        if not isinstance(value, tuple):
            raise Outside(f"expected an integer here, found {type(value).__name__}", expr.span)
        return value

    def eval(self, e: ast.Expr, scope: Scope) -> object:
        if isinstance(e, ast.Number):
            if e.unit is not None or e.value.denominator != 1:
                return Opaque("a quantity")
            return lin_int(const(int(e.value)))
        if isinstance(e, ast.Name):
            return self.lookup(e.id, e.span, scope)
        if isinstance(e, ast.UnaryOp) and e.op == "-":
            return tuple(Piece(Lin() - p.expr, p.guard) for p in self.integer(e.operand, scope))
        if isinstance(e, ast.BinOp):
            return self._binop(e, scope)
        if isinstance(e, ast.Range):
            return SymRange(self.integer(e.lo, scope), self.integer(e.hi, scope))
        if isinstance(e, ast.Index):
            return self._index(self.eval(e.base, scope), self.integer(e.index, scope), scope, e.span)
        if isinstance(e, ast.Attr):
            return self._member(self.eval(e.base, scope), e.name, e.span)
        if isinstance(e, ast.Call) and e.func == "len" and len(e.args) == 1 and not e.kwargs:
            value = self.eval(e.args[0], scope)
            if isinstance(value, SymList):
                return lin_int(value.length)
        if isinstance(e, ast.ListComp):
            return self._comprehension(e, scope)
        if isinstance(e, ast.AllRegion):
            return Region()
        if isinstance(e, ast.Part):
            return self._part(e, scope)
        raise Outside(f"{described(e)} is outside the affine class", e.span)

    def lookup(self, name: str, span: Span, scope: Scope) -> object:
        if name in scope.local:
            return scope.local[name]
        if name not in self.values and name in self.lets:
            self.values[name] = self.eval(self.lets[name], Scope({}, Domain()))
        if name in self.values:
            value = self.values[name]
            if isinstance(value, TopoFamily) and value.count is not None and not value.members:
                return self._family_list(value)
            return value
        raise Outside(f"'{name}' is not read by the symbolic elaboration", span)

    def _binop(self, e: ast.BinOp, scope: Scope) -> SymInt:
        a, b = self.integer(e.left, scope), self.integer(e.right, scope)
        if e.op == "+":
            return combine(a, b, lambda x, y: x + y)
        if e.op == "-":
            return combine(a, b, lambda x, y: x - y)
        if e.op == "*":
            return multiply(a, b, e.span)
        if e.op == "//" and constant_of(b) is not None:
            return floor_div(a, b, self.out.names, e.span, remainder=False)
        if e.op == "%":
            k = single(b, e.right.span, "a modulus")
            self.out.require(scope.domain, [(ge(k, const(1)),)], "the modulus is at least 1", e.span)
            out: list[Piece] = []
            for p in a:
                cases = modulo_size((p,), k)
                self.out.require(scope.domain.guarded(p.guard),
                                 [c.guard[len(p.guard):] for c in cases],
                                 "this '%' has a bounded quotient", e.span)
                out += cases
            return tuple(out)
        raise Outside(f"the operator '{e.op}' is outside the affine class", e.span)

    def _in_range(self, index: SymInt, length: Lin, domain: Domain, span: Span, what: str) -> None:
        for p in index:
            self.out.require(domain.guarded(p.guard),
                             [(ge(p.expr, const(0)), ge(length - const(1), p.expr))],
                             f"{what} is in range", span)

    def _index(self, base: object, index: SymInt, scope: Scope, span: Span) -> object:
        if isinstance(base, SymList):
            self._in_range(index, base.length, scope.domain, span, "the index")
            return base.at(index, scope.domain, span)
        if isinstance(base, TopoFamily) and base.count is not None:
            self._in_range(index, base.count, scope.domain, span, "the index")
            if base.members:
                return TopoFamily(base.path, None, base.members, base.prefix + (index,))
            return device(base.path, base.prefix + (index,))
        raise Outside("indexing this value is outside the affine class", span)

    def _member(self, base: object, name: str, span: Span) -> object:
        if isinstance(base, TopoFamily) and base.count is None and name in base.members:
            member = base.members[name]
            member = TopoFamily(member.path, member.count, member.members, base.prefix)
            if member.count is None:
                return device(member.path, member.prefix) if not member.members else member
            return self._family_list(member) if not member.members else member
        raise Outside(f"'.{name}' is outside the affine class here", span)

    def _family_list(self, family: TopoFamily) -> SymList:
        def at(index: SymInt, domain: Domain, span: Span) -> object:
            return device(family.path, family.prefix + (index,))
        assert family.count is not None
        order = RankOrder(family.path, (1,), (Lin(),), (family.count - const(1),)) \
            if not family.prefix else None
        return SymList(family.count, at, order)

    def _comprehension(self, e: ast.ListComp, scope: Scope) -> SymList:
        """The list as an affine function of the index: its loops (`_loops`), the strides of
        the loops not unrolled, and each element at an index from its digits."""
        bounds, counts, split, values = self._loops(e, scope)
        rest = bounds[split:]
        strides = [1] * len(rest)
        for m in range(len(rest) - 2, -1, -1):
            strides[m] = strides[m + 1] * counts[split + m + 1].const
        block = counts[split].scale(strides[0])  # one unrolled piece's length
        length = block.scale(len(values))

        def digits(index: SymInt, local: Scope, span: Span) -> object:
            # digit m = floor(index / stride m) - count m · floor(index / stride m-1): the
            # quotients telescope, so the rank of the element is `index` again, exactly.
            quotients = [index if s == 1 else floor_div(index, lin_int(const(s)), self.out.names,
                                                        span, remainder=False) for s in strides]
            for m, (var, lo, _) in enumerate(rest):
                digit = quotients[m] if not m else combine(
                    quotients[m], quotients[m - 1],
                    lambda a, b, k=counts[split + m].const: a - b.scale(k))
                local = local.bind(var, combine(digit, lin_int(lo), lambda x, y: x + y))
            return self.eval(e.element, local)

        def at(index: SymInt, domain: Domain, span: Span) -> object:
            if len(index) > 1:  # piece by piece, so that each piece's digits stay together
                return merge([at((p,), domain, span) for p in index], span)
            local = scope.within(domain)
            if len(values) == 1:
                for (var, _, _), k in zip(bounds, values[0]):
                    local = local.bind(var, lin_int(const(k)))
                return digits(index, local, span)
            (p,) = index
            found, cases = [], []
            for u, fixed in enumerate(values):
                start = block.scale(u)
                guard = (ge(p.expr, start), ge(start + block - const(1), p.expr))
                cases.append(guard)
                inner = local
                for (var, _, _), k in zip(bounds, fixed):
                    inner = inner.bind(var, lin_int(const(k)))
                found.append(digits((Piece(p.expr - start, p.guard + guard),), inner, span))
            self.out.require(domain.guarded(p.guard), cases, "an unrolled loop's pieces cover "
                             "the index", span)
            return merge(found, span)

        return SymList(length, at, self._order(e, scope, bounds, strides, split))

    def _loops(self, e: ast.ListComp, scope: Scope):
        """The comprehension's loops (var, lo, hi) and lengths, how many outer ones are
        unrolled (`split`), and the values those take (one tuple per unrolled piece)."""
        bounds: list[tuple[str, Lin, Lin]] = []
        for clause in e.clauses:
            if clause.cond is not None or not isinstance(clause.iter, ast.Range):
                raise Outside("a comprehension over a range without 'if' is affine; this one is not",
                              clause.span)
            lo = single(self.integer(clause.iter.lo, scope), clause.iter.span, "a bound")
            hi = single(self.integer(clause.iter.hi, scope), clause.iter.span, "a bound")
            bounds.append((clause.var, lo, hi))
        counts = [hi - lo + const(1) for _, lo, hi in bounds]
        for count in counts:
            self.out.require(scope.domain, [(ge(count, const(0)),)], "a range is not reversed", e.span)
        # Loops outside the innermost one whose length varies are unrolled (their bounds must
        # be constants): the list is then the concatenation of affine lists, one per value.
        split = max([m for m in range(1, len(bounds)) if not counts[m].is_const], default=0)
        for m, (_, lo, hi) in enumerate(bounds[:split]):
            if not (lo.is_const and hi.is_const):
                raise Outside("a comprehension whose inner loops' lengths vary is not affine "
                              "(its outer loops' bounds are not constants to unroll)",
                              e.clauses[m + 1].span)
        values: list[tuple[int, ...]] = [()]
        for _, lo, hi in bounds[:split]:
            values = [v + (k,) for v in values for k in range(lo.const, hi.const + 1)]
        if len(values) > MAX_UNROLLED:
            raise Outside(f"unrolling this comprehension makes more than {MAX_UNROLLED} pieces",
                          e.span)
        return bounds, counts, split, values

    def _order(self, e: ast.ListComp, scope: Scope, bounds, strides: list[int],
               split: int) -> RankOrder | None:
        """The order of the ranks when the element is a device whose coordinates are the loop
        variables (in any order); strides only when nothing was unrolled."""
        probe = scope
        for var, _, _ in bounds:
            probe = probe.bind(var, lin_int(Lin.var("probe_" + var)))
        element = self.eval(e.element, probe)
        if not (isinstance(element, Device) and len(element.cases) == 1
                and not element.cases[0][0]):
            return None
        coords = element.cases[0][1]
        variables = [Lin.var("probe_" + var) for var, _, _ in bounds]
        if sorted(map(str, coords)) != sorted(map(str, variables)) or \
                len(set(coords)) != len(coords):
            return None
        major = tuple(coords.index(v) for v in variables)  # coordinate of each loop, outer first
        by_coord = [major.index(m) for m in range(len(coords))]  # loop of each coordinate
        return RankOrder(element.path,
                         tuple(strides[k] for k in by_coord) if split == 0 else (),
                         tuple(bounds[k][1] for k in by_coord),
                         tuple(bounds[k][2] for k in by_coord),
                         () if major == tuple(range(len(coords))) else major)

    def _part(self, e: ast.Part, scope: Scope) -> Region:
        whole = Region() if e.whole is None else self.eval(e.whole, scope)
        if not isinstance(whole, Region):
            raise Outside("a part of something that is not a region", e.span)
        index = self.integer(e.index, scope)
        count = single(self.integer(e.count, scope), e.count.span, "the number of parts")
        self.out.require(scope.domain, [(ge(count, const(1)),)], "there is at least one part",
                         e.count.span)
        self._in_range(index, count, scope.domain, e.index.span, "the part")
        return Region(whole.chain + ((index, count),))

    def rank(self, found: object, scope: Scope, span: Span) -> tuple[Case, ...]:
        """A rank's coordinates in the collective's device family (each checked in range)."""
        order = self.out.ranks
        if not isinstance(found, Device) or order is None or found.path != order.path:
            raise Outside("a transfer between devices that are not ranks of the collective", span)
        for guard, coords in found.cases:
            self.out.require(scope.domain.guarded(guard),
                             [tuple(c for x, lo, hi in zip(coords, order.lows, order.highs)
                                    for c in (ge(x, lo), ge(hi, x)))],
                             "the device is a rank of the collective", span)
        return found.cases

    # ---- statements: each returns how many rounds it makes, starting at `time`


def described(node: object) -> str:
    """What `node` is, in the words of an `Outside` refusal."""
    names = {ast.Compare: "a comparison", ast.BoolOp: "'and'/'or'", ast.Not: "'not'",
             ast.Conditional: "a conditional expression", ast.Call: "this call",
             st.If: "'if'", st.Fail: "'error'", ast.ListLit: "a list literal"}
    return names.get(type(node), type(node).__name__)

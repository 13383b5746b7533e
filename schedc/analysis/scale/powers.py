"""A power-of-two family proved in m, for every n = 2^m, m >= 1 (issue 37, item 5): the
recursive doubling and halving exchanges (and Rabenseifner's composition of them) read
from the source with the exponents kept symbols.

The class read (`schedules/lib/recursive.sched`): a schedule (or what it calls, in
sequence) made of round loops `for s in A..B round { for j in 0..k-1: OP R from g[j] to
g[j ^ E] }` over the collective's ranks g, k = len(g) = 2^m, where A and B are affine in
m = log2(k), E is a power of two 2^e with e affine in s and m, and R is the whole region or
`part(X of Y)` with Y = 2^y and X a value below Y (built from j by `^ 2^e`, `>> a` and
`// 2^a`, whose bounds follow: j < 2^m, j ^ 2^e < 2^m for e < m, v >> a < 2^(b-a) when
v < 2^b); the precondition `if k & (k - 1) != 0: error ...` is false for k = 2^m.

Lemma: for 0 <= e < m, j -> j ^ 2^e is an involution of 0..2^m-1 without a fixed point,
so in round s every rank sends exactly one transfer and receives exactly one, each of
V / 2^y(s). A binomial tree's step s < m (`Reader._tree_step`: j -> j + 2^s for j < 2^s,
or j -> j - 2^s for j = 2^s mod 2^(s+1)) has distinct senders and distinct receivers, and
at least one of each: every rank sends at most one transfer and receives at most one. On a port machine (`ports`) whose every pair of ranks loads the same single
port class, of bandwidth B, the round then takes α + V / (2^y(s) · B), and the schedule
Σ_s of that: a sum in closed form in m (SymPy), compared with the fitted form at n = 2^m.
Anything else raises `Unproved` naming the line.
"""

from __future__ import annotations

import sympy

from ...errors import Span
from ...language import statements as st
from ...language import syntax as ast
from ...session import Session
from .portloads import Unproved

M = sympy.Symbol("m", integer=True, positive=True)


def _where(span: Span | None) -> str:
    return f"{span.source.path}:{span.line}: " if span is not None else ""


class _Group:
    """The collective's ranks (or a name for them)."""


class _Bounded:
    """An index built from a rank j: below 2^exponent."""

    def __init__(self, exponent: sympy.Expr) -> None:
        self.exponent = exponent


class Reader:
    """The rounds of one schedule: (count, V-fraction of each transfer as a function of the
    round variable, the variable, its range)."""

    def __init__(self, session: Session) -> None:
        self.functions = session.program.functions
        self.rounds: list[tuple[sympy.Symbol, sympy.Expr, sympy.Expr, sympy.Expr]] = []
        self.names = 0
        self.active: list[tuple[sympy.Symbol, None, sympy.Expr, sympy.Expr]] = []  # round loop
        self.kinds: set[str] = set()  # "exchange", "tree"

    def fail(self, node, what: str) -> Unproved:
        return Unproved(f"{_where(node.span)}{what} is outside the power-of-two exchanges "
                        "read in m")

    def value(self, e: ast.Expr, env: dict) -> object:
        """An integer as a SymPy expression in m and the round variables, a `_Group`, a
        region's fraction (a SymPy number or expression), or a `_Bounded` index."""
        if isinstance(e, ast.Number) and e.unit is None and e.value.denominator == 1:
            return sympy.Integer(int(e.value))
        if isinstance(e, ast.Name) and e.id in env:
            return env[e.id]
        if isinstance(e, ast.AllRegion):
            return sympy.Integer(1)
        if isinstance(e, ast.Call) and e.func == "len" and len(e.args) == 1 and \
                isinstance(self.value(e.args[0], env), _Group):
            return 2 ** M
        if isinstance(e, ast.Call) and e.func in ("log2", "ceil_log2") and len(e.args) == 1:
            inner = self.value(e.args[0], env)
            if isinstance(inner, sympy.Expr) and sympy.simplify(inner - 2 ** M) == 0:
                return M
        if isinstance(e, ast.BinOp):
            return self.binop(e, env)
        if isinstance(e, ast.Part):
            whole = sympy.Integer(1) if e.whole is None else self.value(e.whole, env)
            count, index = self.value(e.count, env), self.value(e.index, env)
            y = _exponent(count)
            if not isinstance(whole, sympy.Expr) or y is None or not isinstance(index, _Bounded):
                raise self.fail(e, "this part")
            self.require(index.exponent - y, e, "the part's index is below its count")
            return whole / 2 ** y
        raise self.fail(e, f"'{e.func}()'" if isinstance(e, ast.Call) else
                        f"'{e.id}'" if isinstance(e, ast.Name) else "this expression")

    def binop(self, e: ast.BinOp, env: dict) -> object:
        a, b = self.value(e.left, env), self.value(e.right, env)
        if isinstance(a, sympy.Expr) and isinstance(b, sympy.Expr) and e.op in "+-":
            return a + b if e.op == "+" else a - b
        if isinstance(a, sympy.Expr) and isinstance(b, sympy.Expr) and e.op in ("<<", ">>"):
            x = _exponent(a)
            if x is not None:
                self.require(-b, e, "the shift is not negative")
                self.require(b - x if e.op == ">>" else -b, e, "the shifted power stays whole")
                return 2 ** (x + b if e.op == "<<" else x - b)
        if isinstance(a, _Bounded) and isinstance(b, sympy.Expr):
            y = _exponent(b) if e.op in ("^", "//") else b if e.op == ">>" else None
            if y is not None and e.op == "^":
                self.require(y - a.exponent + 1, e, "the xor flips a bit below the bound")
                return a
            if y is not None:
                self.require(y - a.exponent, e, "the shift is at most the bound")
                return _Bounded(a.exponent - y)
        raise self.fail(e, f"the operator '{e.op}' here")

    def require(self, claim: sympy.Expr, node, what: str) -> None:
        """claim <= 0 at every m >= 1 and every round of the loop around: claim is affine
        in m and the round variable, whose ends are affine in m, so at each end it is an
        affine function of m, <= 0 for every m >= 1 exactly when it is at m = 1 and its
        slope is not positive."""
        cases: list[dict] = [{}]
        for s, _, low, high in self.active:
            cases = [{**c, s: v} for c in cases for v in (low, high)]
        for case in cases:
            at_end = sympy.expand(claim.subs(case))
            if not at_end.free_symbols <= {M} or sympy.Poly(at_end, M).degree() > 1 or \
                    at_end.subs(M, 1) > 0 or at_end.coeff(M, 1) > 0:
                raise Unproved(f"{_where(node.span)}{what}: not shown for every m")

    def sequence(self, stmts, env: dict) -> None:
        for stmt in stmts:
            if isinstance(stmt, ast.Let):
                env = {**env, stmt.name: self.value(stmt.value, env)}
            elif isinstance(stmt, st.If) and stmt.then and all(
                    isinstance(s, st.Fail) for s in stmt.then) and not stmt.orelse:
                if not _power_test(stmt.cond, env, self):
                    raise self.fail(stmt, "this precondition")
            elif isinstance(stmt, st.CallStmt):
                self.call(stmt.call, env)
            elif isinstance(stmt, st.RoundFor):
                self.round_loop(stmt, env)
            else:
                raise self.fail(stmt, _STATEMENTS.get(type(stmt), "this statement"))

    def call(self, call: ast.Call, env: dict) -> None:
        definition = self.functions.get(call.func)
        if definition is None or call.kwargs or len(call.args) > len(definition.formals or ()):
            raise self.fail(call, "this call")
        bound = {f.name: self.value(a, env) for f, a in zip(definition.formals or (), call.args)}
        for formal in definition.formals or ():
            if formal.name not in bound:
                if formal.default is None:
                    raise self.fail(call, "this call")
                bound[formal.name] = self.value(formal.default, bound)
        self.sequence(definition.body, bound)

    def round_loop(self, stmt: st.RoundFor, env: dict) -> None:
        if not isinstance(stmt.iter, ast.Range) or len(stmt.body) != 1 or not isinstance(
                stmt.body[0], st.For) or len(stmt.body[0].body) != 1:
            raise self.fail(stmt, "this round loop")
        low, high = self.value(stmt.iter.lo, env), self.value(stmt.iter.hi, env)
        self.names += 1
        s = sympy.Symbol(f"s{self.names}", integer=True)
        inner = stmt.body[0]
        if not isinstance(low, sympy.Expr) or not isinstance(high, sympy.Expr) or not (
                isinstance(inner.iter, ast.Range)):
            raise self.fail(stmt, "this round loop")
        self.active = []
        self.require(low - high - 1, stmt, "the round loop's range is not reversed")
        self.active = [(s, None, low, high)]
        outer = {**env, stmt.var: s}
        lo_j, hi_j = self.value(inner.iter.lo, outer), self.value(inner.iter.hi, outer)
        local = {**outer, inner.var: _Bounded(M)}
        body = inner.body[0]
        guarded = isinstance(body, st.If) and len(body.then) == 1 and not body.orelse
        transfer = body.then[0] if isinstance(body, st.If) and guarded else body
        guard = body.cond if isinstance(body, st.If) and guarded else None
        if not isinstance(transfer, st.Transfer) or transfer.into is not None:
            raise self.fail(transfer, _STATEMENTS.get(type(transfer), "this statement"))
        src, dst = transfer.src, transfer.dst
        if not (isinstance(src, ast.Index) and isinstance(dst, ast.Index) and all(
                isinstance(self.value(x.base, local), _Group) for x in (src, dst))
                and isinstance(src.index, ast.Name) and src.index.id == inner.var):
            raise self.fail(transfer, "a transfer other than from g[j]")
        if sympy.simplify(lo_j) != 0:
            raise self.fail(inner, "a loop over other than 0..")
        partner = dst.index
        if guard is None and sympy.simplify(hi_j - (2 ** M - 1)) == 0 and isinstance(
                partner, ast.BinOp) and partner.op == "^" and isinstance(
                partner.left, ast.Name) and partner.left.id == inner.var:
            self.value(partner, local)  # 2^e with e < m: checked
            self.kinds.add("exchange")
        else:
            self._tree_step(inner.var, s, hi_j, guard, partner, local, inner.body[0])
            self.kinds.add("tree")
        fraction = self.value(transfer.region, local)
        if not isinstance(fraction, sympy.Expr):
            raise self.fail(transfer, "this region")
        self.rounds.append((s, fraction, low, high))
        self.active = []

    def _tree_step(self, j: str, s: sympy.Symbol, hi_j, guard, partner, local, node) -> None:
        """A binomial tree's step s (0 <= s < m): `for j in 0..2^s-1: [if j + 2^s < k:] ...
        g[j + 2^s]` (senders 0..2^s-1, receivers 2^s..2^(s+1)-1) or `for j in 0..k-1: if j
        % 2^(s+1) == 2^s: ... g[j - 2^s]` (senders 2^s mod 2^(s+1), receivers 0 mod
        2^(s+1)). Either way the senders are distinct, so are the receivers, and j = 0 or
        j = 2^s sends: every round one transfer at most per rank and side, at least one."""
        def power(x: ast.Expr, e: sympy.Expr) -> bool:
            v = self.value(x, local)
            return isinstance(v, sympy.Expr) and sympy.simplify(v - 2 ** e) == 0

        def plus(x: ast.Expr, op: str) -> bool:  # j op 2^s
            return isinstance(x, ast.BinOp) and x.op == op and isinstance(x.left, ast.Name) \
                and x.left.id == j and power(x.right, s)
        up = sympy.simplify(hi_j - (2 ** s - 1)) == 0 and plus(partner, "+") and (
            guard is None or (isinstance(guard, ast.Compare) and guard.op == "<"
                              and plus(guard.left, "+") and power(guard.right, M)))
        down = sympy.simplify(hi_j - (2 ** M - 1)) == 0 and plus(partner, "-") and isinstance(
            guard, ast.Compare) and guard.op == "==" and isinstance(guard.left, ast.BinOp) \
            and guard.left.op == "%" and isinstance(guard.left.left, ast.Name) \
            and guard.left.left.id == j and power(guard.left.right, s + 1) \
            and power(guard.right, s)
        if not (up or down):
            raise self.fail(node, "a partner other than g[j ^ 2^e] or a binomial tree's"
                            if guard is None else _STATEMENTS[st.If])
        self.require(-s, node, "the step is not negative")
        self.require(s - M + 1, node, "the step is below m")


_STATEMENTS = {st.If: "an 'if' that is not a precondition (a guarded transfer)",
               st.For: "a loop outside a round loop", st.ParallelFor: "'parallel for'",
               st.RoundBlock: "a round block",
               st.Transfer: "a transfer outside a round loop"}


def _exponent(value: sympy.Expr) -> sympy.Expr | None:
    """e where value = 2^e (e a SymPy expression), else None."""
    value = sympy.powsimp(sympy.sympify(value))
    if value == 1:
        return sympy.Integer(0)
    if isinstance(value, sympy.Pow) and value.base == 2:
        return sympy.expand(value.exp)
    if value.is_Integer and value > 0 and (int(value) & (int(value) - 1)) == 0:
        return sympy.Integer(int(value).bit_length() - 1)
    return None


def _power_test(cond: ast.Expr, env: dict, reader: Reader) -> bool:
    """`k & (k - 1) != 0` with k = 2^m: false (the precondition holds)."""
    if not (isinstance(cond, ast.Compare) and cond.op == "!=" and isinstance(
            cond.right, ast.Number) and cond.right.value == 0 and isinstance(cond.left, ast.BinOp)
            and cond.left.op == "&"):
        return False
    left, right = cond.left.left, cond.left.right
    k = reader.value(left, env)
    return isinstance(right, ast.BinOp) and right.op == "-" and isinstance(
        right.left, ast.Name) and isinstance(left, ast.Name) and right.left.id == left.id \
        and isinstance(right.right, ast.Number) and right.right.value == 1 and \
        isinstance(k, sympy.Expr) and sympy.simplify(k - 2 ** M) == 0


def time_in_m(session: Session, name: str, group: str, alpha, size, bandwidth
              ) -> tuple[sympy.Expr, set[str]]:
    """The schedule's time at n = 2^m, for every m >= 1, by the lemma of the module doc,
    and the kinds of its rounds ("exchange", "tree")."""
    reader = Reader(session)
    reader.sequence(session.program.result(name).definition.body, {group: _Group()})
    total = sympy.Integer(0)
    for s, fraction, low, high in reader.rounds:
        total += sympy.summation(alpha + size * fraction / bandwidth, (s, low, high))
    return sympy.simplify(total), reader.kinds

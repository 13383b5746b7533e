"""A result schedule elaborated with one structural param kept a symbol: its transfers as
`Family`s (a transfer statement's transfers over a domain of loop variables, src, dst, round
and piece of the buffer affine in them and the param) and the `Obligation`s that make those
families the schedule's transfers at every value (indices in range, cases covering).

Only the affine class is read: ranges, lists by comprehension, topology families, `len`,
`+ - *` with a constant side, `//` and `%` by constants, `%` by a group size, parts of
regions, calls, round loops, `parallel`. Anything else (`if`, comparisons, `log2`, `min`,
XOR, `into`, ...) raises `Outside` with its source span. The semantics mirror
`elaborate/schedule.py`: statements in sequence concatenate rounds, `parallel` zips them,
a round loop makes one round per iteration, loops inside a round add transfers to it.
"""

from __future__ import annotations

from ...language import statements as st
from ...language import syntax as ast
from .affine import (
    PARAM,
    Cons,
    Lin,
    Outside,
    const,
    ge,
    lin_int,
    single,
)
from .expressions import MAX_UNROLLED, Expressions, described
from .model import (
    Domain,
    Family,
    Opaque,
    Region,
    Scope,
    Symbolic,
    SymList,
    SymRange,
)


class Elaborator(Expressions):
    """Elaborates statements of the affine class over its expressions (`Expressions`; `out`
    collects the result)."""

    def sequence(self, stmts: tuple[st.Stmt, ...], scope: Scope, time: Lin) -> Lin:
        total = Lin()
        for stmt in stmts:
            if isinstance(stmt, ast.Let):
                scope = scope.bind(stmt.name, self.eval(stmt.value, scope))
                continue
            total = total + self._statement(stmt, scope, time + total)
            if (time + total).names <= {PARAM}:
                self.out.boundaries.add(time + total)
        return total

    def _loop(self, stmt, scope: Scope) -> tuple[Lin, Lin, Scope]:
        """A loop's variable (its offset from the low end), iterations and inner scope."""
        bounds = self.eval(stmt.iter, scope)
        if not isinstance(bounds, SymRange):
            raise Outside("a loop over something other than a range", stmt.iter.span)
        lo = single(bounds.lo, stmt.iter.span, "a loop bound")
        hi = single(bounds.hi, stmt.iter.span, "a loop bound")
        self.out.require(scope.domain, [(ge(hi - lo + const(1), const(0)),)],
                         "a range is not reversed", stmt.iter.span)
        var = self.out.names.loop(stmt.var)
        inner = Scope({**scope.local, stmt.var: lin_int(Lin.var(var))}, scope.domain.loop(var, lo, hi))
        return Lin.var(var) - lo, hi - lo + const(1), inner

    def _statement(self, stmt: st.Stmt, scope: Scope, time: Lin) -> Lin:
        if isinstance(stmt, st.RoundFor):
            offset, count, inner = self._loop(stmt, scope)
            self.round_body(stmt.body, inner, time + offset)
            return count
        if isinstance(stmt, st.RoundBlock):
            self.round_body(stmt.body, scope, time)
            return const(1)
        if isinstance(stmt, (st.Transfer, st.Send)):
            self.round_body((stmt,), scope, time)
            return const(1)
        if isinstance(stmt, st.ParallelFor):
            offset, _, inner = self._loop(stmt, scope)
            rounds = self.sequence(stmt.body, inner, time)
            if rounds.names & offset.names:
                raise Outside("the branches of this 'parallel for' make different numbers of rounds",
                              stmt.span)
            return rounds
        if isinstance(stmt, st.ParallelBlock):
            lengths = [self.sequence((b,), scope, time) for b in stmt.branches]
            if any(length != lengths[0] for length in lengths):
                raise Outside("the branches of this 'parallel' may make different numbers of rounds",
                              stmt.span)
            return lengths[0] if lengths else Lin()
        if isinstance(stmt, st.For):
            offset, count, inner = self._loop(stmt, scope)
            probe = Symbolic()
            saved, self.out = self.out, probe  # the body's length first, to place its iterations
            probe.names, probe.ranks = saved.names, saved.ranks
            rounds = self.sequence(stmt.body, inner, time)
            self.out = saved
            if not rounds.is_const:  # unrolled when its count is a constant (channels, loops)
                return self._unrolled(stmt, scope, time, count)
            self.sequence(stmt.body, inner, time + offset.scale(rounds.const))
            return count.scale(rounds.const)
        if isinstance(stmt, st.CallStmt):
            return self.call(stmt.call, scope, time)
        raise Outside(f"{described(stmt)} is outside the affine class", stmt.span)

    def _unrolled(self, stmt: st.For, scope: Scope, time: Lin, count: Lin) -> Lin:
        """Iteration after iteration, each as long as it is in n."""
        if not count.is_const or count.const > MAX_UNROLLED:
            raise Outside("a sequential loop whose iterations' lengths vary with the param, "
                          f"and whose count is not a constant up to {MAX_UNROLLED}", stmt.span)
        bounds, total = self.eval(stmt.iter, scope), Lin()
        assert isinstance(bounds, SymRange)  # `_loop` read it
        lo = single(bounds.lo, stmt.iter.span, "a loop bound")
        for k in range(count.const):
            inner = scope.bind(stmt.var, lin_int(lo + const(k)))
            total = total + self.sequence(stmt.body, inner, time + total)
        return total

    def call(self, call: ast.Call, scope: Scope, time: Lin) -> Lin:
        definition = self.functions.get(call.func)
        if definition is None or call.func in self.stack:
            raise Outside(f"the call of '{call.func}' is not read symbolically", call.span)
        formals = definition.formals or ()
        if len(call.args) > len(formals):
            raise Outside(f"'{call.func}' takes fewer arguments", call.span)
        bound = {f.name: self.eval(a, scope) for f, a in zip(formals, call.args)}
        for keyword in call.kwargs:
            bound[keyword.name] = self.eval(keyword.value, scope)
        for formal in formals:
            if formal.name not in bound:
                if formal.default is None:
                    raise Outside(f"'{call.func}' needs argument '{formal.name}'", call.span)
                bound[formal.name] = self.eval(formal.default, Scope(dict(bound), scope.domain))
        self.stack.append(call.func)
        try:
            return self.sequence(definition.body, Scope(bound, scope.domain), time)
        finally:
            self.stack.pop()

    def round_body(self, stmts, scope: Scope, time: Lin) -> None:
        for stmt in stmts:
            if isinstance(stmt, ast.Let):
                scope = scope.bind(stmt.name, self.eval(stmt.value, scope))
            elif isinstance(stmt, st.For):
                _, _, inner = self._loop(stmt, scope)
                self.round_body(stmt.body, inner, time)
            elif isinstance(stmt, st.Transfer):
                self._transfer(stmt, scope, time)
            elif not isinstance(stmt, st.Send):  # bytes only: no data flow
                raise Outside(f"{described(stmt)} is outside the affine class", stmt.span)

    def _transfer(self, stmt: st.Transfer, scope: Scope, time: Lin) -> None:
        if stmt.into is not None:
            raise Outside("'into' (data moved to another place) is outside the affine class",
                          stmt.into.span)
        region = self.eval(stmt.region, scope)
        if not isinstance(region, Region):
            raise Outside("the region of this transfer is not read symbolically", stmt.region.span)
        src = self.rank(self.eval(stmt.src, scope), scope, stmt.src.span)
        dst = self.rank(self.eval(stmt.dst, scope), scope, stmt.dst.span)
        cases: list[tuple[tuple[Cons, ...], tuple[Lin, ...]]] = [
            (gs + gd, cs + cd) for gs, cs in src for gd, cd in dst]
        for guard, ends in cases:  # the elaborator refuses a transfer from a rank to itself
            d = len(ends) // 2
            self.out.require(scope.domain.guarded(guard), [
                (ge(a - b, const(1)),) for a, b in zip(ends[:d], ends[d:])] + [
                (ge(b - a, const(1)),) for a, b in zip(ends[:d], ends[d:])],
                "no transfer is from a rank to itself", stmt.span)
        for index, _ in region.chain:
            cases = [(g + p.guard, e + (p.expr,)) for g, e in cases for p in index]
        counts = tuple(count for _, count in region.chain)
        d = len(src[0][1])
        for guard, e in cases:
            self.out.families.append(Family(stmt.op, scope.domain.guarded(guard), time, e[:d],
                                            e[d:2 * d], e[2 * d:], counts, stmt.span))


__all__ = ["Domain", "Elaborator", "Family", "Opaque", "Outside", "Scope", "SymList", "Symbolic"]

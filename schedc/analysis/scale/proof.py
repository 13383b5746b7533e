"""When a fitted piece of `analysis.scale` is `proved`: the theorem of docs/scale.md
("Proof for every n"), its hypotheses each checked here for the file at hand.

A piece [a, b] (b = None: unbounded) is proved when

(H1) the schedule is in the affine class: the symbolic elaboration (`analysis.forall.
     symbolic`) reads it with n kept a symbol, and its obligations (indices in range, the
     cases of each `%` covering) hold for every n >= a (isl);
(H2) the machine is built uniformly in n, read from the topology's source: n is only the
     size of one top-level family (the copies: `host node[hosts]`, `gpu g[p]`) and the
     bound of `for v in 0..n-1` clauses whose variable only indexes that family in the
     link's ends (never its bandwidth, class, other loops or conditions); no host body,
     bandwidth or other statement mentions n; no pinned route, no shared resource
     (`uniform`: read as the elaborator reads it, lists of copies inlined and conditions
     decided; a fabric link's bandwidth may be n^k times one free of n);
(H3) it is a port machine, checked on two compiled instances, n0 and n0 + 1 for the smallest
     n0 >= 2 at which both compile (2 and 3 for the shipped files):
     every resource with a bandwidth is one direction of one link, without latency or
     window, and a port of one rank's domain (its private NIC and switch too) or of one
     group of consecutive ranks sharing a device (or one of a bundle that every route of
     the rank loads equally), or a fabric link outside every copy (each with one share)
     (`ports`); the ranks are the copies' devices where the symbolic order puts them; for
     every pair of ranks the route loads, with all the bytes, the out-ports of the source
     and the in-ports of the destination of one set of classes, depending only on whether
     the two share a copy, and across copies the fabric links of their local positions;
     a power-of-two piece is proved instead by `powers` (in m, for every n = 2^m);
(H4) the round classes derived from (H1)-(H3) for every n in [a, b] (`portloads`) are the
     fitted classes, count by count and load by load, as functions of n (SymPy);
(H5) with the other params at their values, the term of each class that the regime form
     takes is the largest of the class at every n in [a, b] (solved exactly, `ends`), and
     the regime form is the sum of those terms (SymPy).

Why (H2) and (H3) give the routes at every n: under (H2) the machine at n is n copies of
one block joined to one fabric by the same links; a route between ranks of different copies
cannot pass through a third copy (entering one means passing a device that does not
forward), so it lies in the source, the fabric and the destination, the same graph for
every pair of copies and every n; a route inside one copy lies in that copy (the host-local
rule) or, failing that, the same way. So the instances n0 and n0 + 1, where every pair of
local positions occurs both inside a copy and across two, show the route of every pair at
every n. Then (H1) and (H3) make the loads of each round exact Presburger sets in n, (H4)
makes the full formula the time at every n, and (H5) the regime form.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path

import islpy as isl
import sympy

from ...errors import SchedcError
from ...language import statements as st
from ...language import syntax as ast
from ...session import Session
from ..forall.affine import Outside
from ..forall.family import parsed_modules, symbolic_result
from ..forall.model import Symbolic
from ..forall.sets import failed_obligation
from ..forall.witness import smallest_n
from .ends import first_failure
from .pieces import Piece
from .portloads import RoundClass, Unproved, round_classes
from .ports import port_rule
from .powers import M, time_in_m
from .uniform import syntax_nodes, uniform_copies, uniform_machine, where


@dataclass(frozen=True)
class Verdict:
    argument: str | None  # proved: why
    note: str | None  # not proved: the hypothesis that fails, where


def _no_send(session: Session, body: object, seen: set[str]) -> None:
    """(H1): no `send` in the schedule or anything it calls (the symbolic elaboration reads
    data moves only, and would leave a send's bytes out)."""
    for node in syntax_nodes(body):
        if isinstance(node, st.Send):
            raise Outside("'send' (bytes without data) is not read symbolically", node.span)
        if isinstance(node, ast.Call) and node.func not in seen:
            seen.add(node.func)
            called = session.program.functions.get(node.func)
            if called is not None:
                _no_send(session, called.body, seen)


def _obligations(sym: Symbolic, start: int, param: str) -> None:
    """(H1): the elaboration's obligations hold for every n >= start."""
    failed = failed_obligation(sym, start)
    if failed is not None:
        ob, left = failed
        raise Unproved(f"{where(ob.span)}{ob.message} fails at {param} = "
                       f"{smallest_n(left.params())}")


def _matches(derived: list[RoundClass], fitted: tuple, size: sympy.Expr, alpha) -> bool:
    """(H4): the derived classes are the fitted ones, as functions of n."""
    if len(derived) != len(fitted):
        return False
    left = list(fitted)
    for c in derived:
        terms = [k * size / bw for bw, k in c.loads]
        for f in left:
            count, startup, loads = f
            if sympy.cancel(count - c.count) == 0 and sympy.cancel(startup - alpha) == 0 \
                    and len(loads) == len(terms) and all(
                        any(sympy.cancel(t - u) == 0 for u in loads) for t in terms):
                left.remove(f)
                break
        else:
            return False
    return True


def _regime_holds(piece: Piece, n: sympy.Symbol, others: dict) -> bool:
    """(H5)."""
    assert piece.regime is not None
    total = sympy.Integer(0)
    for count, startup, loads in piece.classes:
        if loads:
            values = [sympy.sympify(t).xreplace(others).xreplace({n: piece.valid_from})
                      for t in loads]
            top = max(range(len(loads)), key=lambda k: (values[k], -k))
            for k, term in enumerate(loads):
                fails = None if k == top else first_failure(
                    sympy.GreaterThan(loads[top], term, evaluate=False), n, others,
                    piece.valid_from)
                if fails is not None and (piece.valid_to is None or fails <= piece.valid_to):
                    return False
            total += count * (startup + loads[top])
        else:
            total += count * startup
    return sympy.cancel(sympy.expand(total - piece.regime)) == 0


MAX_ROUTED = 1024  # ranks of the instances whose every pair is routed


def _smallest_pair(session: Session, param: str, name: str, start: int) -> int:
    """The smallest n >= 2 (up to `start`, at most 16) at which the file compiles at n and n + 1."""
    for n in range(2, min(max(start, 2), 16) + 1):
        try:
            for m in (n, n + 1):
                session.at({param: m}).schedule(name)
            return n
        except SchedcError:
            continue
    return max(start, 2)


def _elaborated(session: Session, param: str, name: str):
    """The symbolic elaboration, the file's syntax trees parsed once per session."""
    modules = session.memo("scale-proof", "modules",
                           lambda: parsed_modules(Path(session.program.path)))
    return symbolic_result(session, param, name, modules)


_POWERS = "not proved: a power-of-two family, checked at its instances only"


def _prove_powers(session: Session, param: str, name: str, piece: Piece,
                  n: sympy.Symbol) -> Verdict:
    """A power-of-two piece, for every n = 2^m, m >= 1 (`powers`): the machine as for the
    integers (H2, and H3 read at n = 2 and 4), every pair of ranks loading the same single
    port class; the time read in m equal to the fitted form at n = 2^m."""
    try:
        copies = uniform_copies(session, param)
        if session.at({param: 2}).timing(name).cost.protocol is not None:
            raise Unproved("the time is the minimum over protocols, not one cost model")
        modules = session.memo("scale-proof", "modules",
                               lambda: parsed_modules(Path(session.program.path)))
        sym, _ = symbolic_result(session, param, name, modules, ranks_only=True)
        assert sym.ranks is not None
        rules = set()
        for at_n in (2, 4):
            rule = port_rule(session.at({param: at_n}), name, copies, sym.ranks.path,
                             sym.ranks.at(at_n))
            classes = {*(rule.same or ()), *rule.cross}
            if len(classes) != 1 or rule.fabric or rule.shares or (
                    rule.same and rule.same != rule.cross):
                raise Unproved("the pairs of ranks load other port classes than one")
            rules.add((rule.copy_coord, tuple(classes), str(rule.bandwidth[rule.cross[0]])))
        if len(rules) != 1:
            raise Unproved(f"the port rule differs between {param} = 2 and 4")
        collective = session.program.result(name).collective
        size = sympy.Add(*[sympy.Rational(c.numerator, c.denominator) * s
                           for s, c in collective.size])
        decl = next(s for m in modules for s in m.body if isinstance(s, ast.CollectiveDecl)
                    and s.span == collective.span)
        if not isinstance(decl.group, ast.Name):
            raise Unproved(f"{where(decl.span)}a power-of-two schedule is read over the "
                           "collective's ranks named by a `let`")
        total, kinds = time_in_m(session, name, decl.group.id, session.program.alpha, size,
                          rule.bandwidth[rule.cross[0]])
    except (Unproved, Outside) as exc:
        message = exc.args[0] if isinstance(exc, Unproved) else f"{where(exc.span)}{exc.message}"
        return Verdict(None, f"{_POWERS}: {message}")
    except SchedcError as exc:
        return Verdict(None, f"{_POWERS}: an instance does not compile ({exc.message})")
    assert piece.regime is not None
    fitted = sympy.expand_log(piece.regime.subs(n, 2 ** M), force=True)
    if sympy.simplify(fitted - total) != 0:
        return Verdict(None, f"{_POWERS}: the time read in m differs from the fitted form")
    step = "an exchange j <-> j xor 2^e (e < m) of one transfer each way" \
        if kinds == {"exchange"} else "a binomial tree's step j -> j + 2^s or j - 2^s " \
        "(s < m), one transfer at most per rank and side" if kinds == {"tree"} else \
        "an exchange j <-> j xor 2^e or a binomial tree's step (e, s < m), one transfer at " \
        "most per rank and side"
    return Verdict(f"powers of two: for every {param} = 2^m, m >= 1, each round {step} "
                   f"of a size read in m, "
                   f"on a port machine uniform in {copies}[...] (routes read at {param} = 2, "
                   f"4); the time summed over the rounds in m", None)


def _no_form(session: Session, param: str, name: str, piece: Piece) -> Verdict | None:
    """Why there is no form to prove (no closed form, a family other than the integers, no
    full formula), naming the hypothesis that fails where one does; None: a form to prove."""
    why = ""
    if piece.regime is None or piece.family.name != "integers" or piece.family.step != 1:
        try:
            _elaborated(session, param, name)
        except Outside as exc:
            why = f" ({where(exc.span)}{exc.message})"
    if piece.regime is None:
        return Verdict(None, "not proved: no closed form in the basis fits the compiled times, "
                       f"so there is no form to prove; the proof covers schedules affine in "
                       f"{param}{why}")
    if piece.family.name != "integers" or piece.family.step != 1:
        kind = "a power-of-two family" if piece.family.name != "integers" else \
            f"fitted over the {piece.family.label}"
        return Verdict(None, f"not proved: {kind}, checked at its instances only; the proof "
                       f"covers schedules affine in {param} over the integers{why}")
    if not piece.classes:
        # Say also which hypothesis fails, where one does: the missing full formula is
        # often its consequence (a bandwidth in n outside the argument, a loop in n).
        try:
            uniform_machine(session, param)
            _elaborated(session, param, name)
            why = ""
        except Unproved as exc:
            why = f"; and {exc.args[0]}"
        except Outside as exc:
            why = f"; and {where(exc.span)}{exc.message}"
        return Verdict(None, f"not proved: no full formula to prove{why}")
    return None


def _read_rule(session: Session, param: str, name: str, copies: str, order, scaled,
               first: int, n: sympy.Symbol):
    """The port rule read from the routes at `first` and `first + 1`: it must be the same."""
    rules = set()
    for at_n in (first, first + 1):
        at = session.at({param: at_n})
        if len(at.program.result(name).collective.ranks) > MAX_ROUTED:
            raise Unproved(f"more than {MAX_ROUTED} ranks at {param} = {at_n} to read "
                           "every route")
        # Once per collective: the schedules over one collective share their rule.
        rule = at.memo("scale-port-rule", str(at.program.result(name).collective.span),
                       partial(port_rule, at, name, copies, order.path, order.at(at_n),
                               (scaled, at_n, n)))
        rules.add((rule.copy_coord, rule.same, rule.cross, tuple(sorted(
            (k, str(v)) for k, v in rule.bandwidth.items())), tuple(
            (f.name, str(f.bandwidth), str(f.share), tuple(sorted(f.pairs)))
            for f in rule.fabric), tuple(sorted((k, str(v)) for k, v in rule.shares.items()))))
    if len(rules) != 1:
        raise Unproved(f"the port rule differs between {param} = {first} and {first + 1}")
    return rule


def _derive(session: Session, param: str, name: str, start: int, stop: int | None,
            n: sympy.Symbol):
    """The round classes derived for every n of the piece, with the port rule, the first
    size its routes were read at and the copies' family; raises what fails."""
    _no_send(session, session.program.result(name).definition.body, set())
    sym, _ = _elaborated(session, param, name)
    assert sym.ranks is not None
    _obligations(sym, start, param)
    uniform = uniform_machine(session, param)
    order = sym.ranks
    if any(not lo.is_const for lo in order.lows) or any(
            not hi.is_const for hi in order.highs[1:]):
        # Every copy must hold the same ranks at every n, so that the instances where the
        # routes are read show every pair of local positions.
        raise Unproved(f"the ranks' local positions in a copy vary with {param}")
    if session.at({param: start}).timing(name).cost.protocol is not None:
        raise Unproved("the time is the minimum over protocols, not one cost model")
    if session.program.step_rule != "sum":  # the classes' time is α + Max of the loads
        raise Unproved(f"the step cost is '{session.program.step_rule}', not a sum")
    # The routes at any two sizes with two copies or more show every pair (see the
    # module doc): the smallest that compile, so that every pair is cheap to route.
    first = _smallest_pair(session, param, name, start)
    rule = _read_rule(session, param, name, uniform.copies, order, uniform.scaled, first, n)
    return round_classes(sym, rule, start, stop, n), rule, first, uniform.copies


def prove(session: Session, param: str, name: str, piece: Piece, n: sympy.Symbol,
          others: dict, stop: int | None) -> Verdict:
    """Whether `piece` holds for every n in [valid_from, stop] (stop None: unbounded)."""
    if piece.family.name == "powers of two" and piece.regime is not None:
        return _prove_powers(session, param, name, piece, n)
    refused = _no_form(session, param, name, piece)
    if refused is not None:
        return refused
    start = piece.valid_from
    try:
        derived, rule, first, copies = _derive(session, param, name, start, stop, n)
    except Outside as exc:
        return Verdict(None, f"not proved: {where(exc.span)}{exc.message}")
    except Unproved as exc:
        return Verdict(None, f"not proved: {exc.args[0]}")
    except SchedcError as exc:
        return Verdict(None, f"not proved: an instance does not compile ({exc.message})")
    except isl.Error:
        return Verdict(None, "not proved: isl could not decide a set of the argument")
    collective = session.program.result(name).collective
    size = sympy.Add(*[sympy.Rational(c.numerator, c.denominator) * s for s, c in collective.size])
    if not _matches(derived, piece.classes, size, session.program.alpha):
        return Verdict(None, "not proved: the round classes derived for every "
                       f"{param} differ from the fitted ones")
    if not _regime_holds(piece, n, others):
        return Verdict(None, "not proved: the regime form is not the largest term of each "
                       "class over the whole piece")
    span = f"every {param} >= {start}" if stop is None else f"every {start} <= {param} <= {stop}"
    fabric = "" if not rule.fabric else (
        f" with {len(rule.fabric)} fabric resource{'s' if len(rule.fabric) > 1 else ''} "
        "shared by its copies")
    return Verdict(f"Presburger (isl): transfers affine in {param}, port machine uniform in "
                   f"{copies}[...]{fabric} (routes read at {param} = {first}, {first + 1}), "
                   f"round classes and loads exact for {span}", None)

"""`verify --for-all PARAM`: does a schedule compute its collective for every value of a
structural param? `proved` (the Presburger argument of `presburger` holds for every value
from `start` on), `refuted` (a parametric counterexample, its smallest instance compiled and
the ordinary verifier's counterexample there) or `unknown` (outside the affine class, or
beyond what the argument covers: instances verified one by one, listed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import SchedcError, SourceFile, Span, UsageError, did_you_mean
from ...files import read_sched
from ...language import syntax as ast
from ...language.parser import parse_module
from ...session import Session
from ..verify.verdict import Verdict, verdict
from .affine import PARAM, Lin, Outside, const, lin_int
from .model import Domain, Opaque, Scope, SymList
from .presburger import Bad, prove
from .symbolic import Elaborator

PROBE = range(0, 17)  # the sizes tried for the family's smallest valid one
INSTANCES = 4  # instances verified when the answer is unknown
COVERED = ("allreduce", "reduce_scatter", "allgather")  # the collectives the proof knows


@dataclass(frozen=True)
class Instance:
    n: int
    verdict: Verdict | None
    error: SchedcError | None = None


@dataclass(frozen=True)
class Refutation:
    kind: str  # missing | duplicate | conflict
    formula: str  # "for every hosts >= 2, rank ... misses ..."
    smallest: int
    instance: Verdict  # the ordinary verifier's verdict at the smallest instance (fails)


@dataclass(frozen=True)
class ForAll:
    schedule: str
    collective: str
    param: str
    start: int
    status: str  # proved | refuted | unknown
    argument: str = ""
    counterexample: Refutation | None = None
    reason: str = ""  # why unknown
    reason_span: Span | None = None
    instances: tuple[Instance, ...] = ()
    nominal: Verdict | None = None  # the ordinary verdict at the file's own values


def smallest_valid(session: Session, param: str, schedules: list[str]) -> tuple[int, list]:
    """The smallest size of PROBE at which the file compiles, and the errors below it."""
    errors: list[tuple[int, SchedcError]] = []
    for n in PROBE:
        try:
            instance = session.at({param: n})
            for name in schedules:
                instance.schedule(name)
            return n, errors
        except SchedcError as exc:
            errors.append((n, exc))
    raise UsageError(f"the family compiles at no {param} in {PROBE.start}..{PROBE.stop - 1}",
                     session.program.params[param].span)


def for_all(session: Session, param: str, schedules: list[str], start: int | None) -> list[ForAll]:
    """One `ForAll` per schedule; bad input (the param, --from) raises a positioned error."""
    program = session.program
    option = SourceFile("--for-all", param)
    if param not in program.params:
        raise UsageError(f"no param named '{param}'" + (did_you_mean(param, list(program.params),
                                                                      "params") or ""),
                         Span(option, 1, 1, 1, len(param) + 1))
    declared = program.params[param]
    if not declared.structural:
        raise UsageError(f"'{param}' is not a structural param: --for-all needs a unitless "
                         f"integer one (like 'param hosts = 2')", declared.span)
    smallest, below = smallest_valid(session, param, schedules)
    if start is None:
        start = smallest
    elif start < smallest:
        shown = str(start)
        why = dict(below).get(start)
        notes = (f"at {param} = {start}: {why.message}",) if why is not None else ()
        raise UsageError(f"--from {start} is below the family's smallest valid size, {param} = "
                         f"{smallest}", Span(SourceFile("--from", shown), 1, 1, 1, len(shown) + 1),
                         notes)
    return [_with_nominal(_one(session, param, name, start), verdict(session, name), session)
            for name in schedules]


def _with_nominal(found: ForAll, nominal: Verdict, session: Session) -> ForAll:
    """The ordinary verdict at the file's own values joins the answer; one that fails (a
    missing route, which the proof leaves to the compiled instances) refutes the family."""
    from dataclasses import replace
    if nominal.ok or found.status == "refuted":
        return replace(found, nominal=nominal)
    n = session.structural()[found.param]
    return replace(found, status="refuted", nominal=nominal,
                   counterexample=Refutation("instance", "", n, nominal))


def _one(session: Session, param: str, name: str, start: int) -> ForAll:
    result = session.program.result(name)
    kind = result.collective.kind
    base: dict[str, Any] = dict(schedule=name, collective=kind, param=param, start=start)
    if kind not in COVERED:
        return _unknown(session, base, f"the proof for every {param} covers "
                        f"{', '.join(COVERED)}; this schedule computes {kind}",
                        result.collective.span)
    try:
        sym, ranks = symbolic_result(session, param, name)
        checked = prove(sym, ranks, start, param, kind)
    except Outside as exc:
        return _unknown(session, base, f"outside the affine class: {exc.message}", exc.span)
    if checked.ok:
        return ForAll(**base, status="proved", argument=_ARGUMENT.format(
            p=param, start=start, post=_POSTCONDITION[kind]))
    if checked.inexact:
        return _unknown(session, base, "isl's transitive closure of the data flow is not exact "
                        "here", result.definition.span)
    bad = checked.bad
    assert bad is not None
    if bad.kind == "obligation":
        return _unknown(session, base, f"not shown for every {param}: {bad.message} (fails at "
                        f"{param} = {bad.smallest})", bad.span)
    instance = verdict(session.at({param: bad.smallest}), name)
    if instance.ok:  # never claim what the verifier does not confirm
        return _unknown(session, base, f"a counterexample at {param} = {bad.smallest} was not "
                        "confirmed by the verifier", result.definition.span)
    refutation = Refutation(bad.kind, _formula(bad, param), bad.smallest, instance)
    return ForAll(**base, status="refuted", counterexample=refutation)


_ARGUMENT = ("Presburger sets in {p} (isl): every round's transfers are affine in {p} and the "
             "loop indices; the data each rank holds after each round is the exact transitive "
             "closure of their data flow; for every {p} >= {start} no copy conflicts, no data "
             "that reaches a cell twice is there at the end, and {post} (other params at their "
             "values; routes on the machine are checked where the file is compiled)")
_POSTCONDITION = {
    "allreduce": "every rank ends holding every rank's data once, everywhere",
    "reduce_scatter": "rank j ends holding every rank's data once on part(j of p)",
    "allgather": "every rank ends holding rank j's data alone, once, on part(j of p)",
}


def _unknown(session: Session, base: dict[str, Any], reason: str, span: Span | None) -> ForAll:
    """Instances verified one by one; one that fails refutes the family there."""
    found = []
    for n in range(base["start"], base["start"] + INSTANCES):
        try:
            found.append(Instance(n, verdict(session.at({base["param"]: n}), base["schedule"])))
        except SchedcError as exc:
            found.append(Instance(n, None, exc))
    failed = next((i for i in found if i.verdict is not None and not i.verdict.ok), None)
    if failed is not None and failed.verdict is not None:
        return ForAll(**base, status="refuted", reason=reason, reason_span=span,
                      instances=tuple(found),
                      counterexample=Refutation("instance", "", failed.n, failed.verdict))
    return ForAll(**base, status="unknown", reason=reason, reason_span=span, instances=tuple(found))


def parsed_modules(path: Path) -> list[ast.Module]:
    """The file and everything it imports, parsed (each file once)."""
    out: list[ast.Module] = []
    seen: set[Path] = set()

    def visit(file: Path, shown: str) -> None:
        if file in seen:
            return
        seen.add(file)
        module = parse_module(read_sched(file, shown=shown))
        for stmt in module.body:
            if isinstance(stmt, ast.Import):
                visit((file.parent / stmt.path).resolve(), str(Path(shown).parent / stmt.path))
        out.append(module)
    visit(path.resolve(), str(path))
    return out


def symbolic_result(session: Session, param: str, name: str,
                    modules: list[ast.Module] | None = None, ranks_only: bool = False):
    """The schedule elaborated with `param` a symbol; `modules`: the file and its imports,
    parsed (by `parsed_modules`), when the caller has them already; `ranks_only`: the
    collective's rank order only, the schedule left unread."""
    program = session.program
    if modules is None:
        modules = parsed_modules(Path(program.path))
    lets = {s.name: s.value for m in modules for s in m.body if isinstance(s, ast.Let)}
    topology = [s for m in modules for s in m.body if isinstance(s, ast.Topology)]
    constants: dict[str, object] = {}
    for p in program.params.values():
        if not p.structural:
            constants[p.name] = Opaque(p.name)  # a quantity: never an index
        else:
            constants[p.name] = lin_int(Lin.var(PARAM) if p.name == param
                                        else const(p.nominal.numerator))
    elaborator = Elaborator(program.functions, lets, constants, topology)
    result = program.result(name)
    decl = next(s for m in modules for s in m.body
                if isinstance(s, ast.CollectiveDecl) and s.span == result.collective.span)
    group = elaborator.eval(decl.group, Scope({}, Domain()))
    if not isinstance(group, SymList) or group.order is None:
        raise Outside("the collective's ranks are not one device family or a comprehension of "
                      "one", decl.group.span)
    elaborator.out.ranks = group.order
    if ranks_only:
        return elaborator.out, group.length
    elaborator.out.rounds = elaborator.sequence(result.definition.body, Scope({}, Domain()), Lin())
    return elaborator.out, group.length


def _formula(bad: Bad, param: str) -> str:
    """`for every hosts >= 2, ...` (or `at hosts = 1, ...`): the failure in the param."""
    single = re.fullmatch(rf"{re.escape(param)} = (-?\d+)", bad.where)
    return (f"at {bad.where}" if single else f"for every {bad.where}") + f", {bad.formula}"

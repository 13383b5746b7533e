"""Compiling and checking a file: `load`, `time`, `compare`, `verify`, `emit`.

The one policy every reporting function shares lives here: `verified_timings` derives the
schedules' times and refuses (`VerificationFailed`, exit code 1 on the command line) to report
on one that does not compute its collective, unless asked not to verify.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import SchedcError
from ..limits import Limits
from .options import Options, choice, count

if TYPE_CHECKING:
    from ..analysis.verify.verdict import Verdict
    from ..cost.numeric import NumericTiming
    from ..cost.timing import Timing
    from ..session import Session

MAX_EMIT_LINES = 200_000  # formatting takes about 50 µs a line
STAGES = ("ast", "ir", "loads", "formula", "routes")


@dataclass(frozen=True)
class LoadOptions(Options):
    """The work limits of one compile (`--max-transfers`, `--max-rounds`), each at least 1:
    a limit of 0 would refuse every schedule, not lift the limit."""

    max_transfers: int = count(Limits.transfers, "--max-transfers")
    max_rounds: int = count(Limits.steps, "--max-rounds")

    @property
    def limits(self) -> Limits:
        return Limits(self.max_transfers, self.max_rounds)


def work_limits(max_transfers: int | None, max_rounds: int | None) -> Limits:
    """The `Limits` of `max_transfers` and `max_rounds` (None: the defaults), checked."""
    options: LoadOptions = LoadOptions.given(max_transfers=max_transfers, max_rounds=max_rounds)
    return options.limits


@dataclass(frozen=True)
class EmitOptions(Options):
    stage: str = choice(None, "STAGE", STAGES)
    max_lines: int = count(MAX_EMIT_LINES, "--max-lines")
    pair: tuple[str, str] | None = None  # (two device names: checked against the topology)


def load(path: str | Path, sets: Iterable[str] = (), *,
         max_transfers: int | None = LoadOptions.max_transfers,
         max_rounds: int | None = LoadOptions.max_rounds, machine: str | Path | None = None,
         ranks: str | None = None, fail: Iterable[str] = (), derate: Iterable[str] = (),
         formula: bool = True) -> Session:
    """Compile a `.sched` file with `NAME=VALUE` overrides (as `--set` takes them), or an
    MSCCL XML algorithm (`.xml`) on the `machine` of a `.sched` file; `fail` and `derate`
    change the machine first, as `--fail ITEM` and `--derate ITEM=FACTOR` do. Raises
    `SchedcError` (with `.render()` for the positioned message) on bad input.
    `formula=False` (`--no-formula`): every param is its value, so the session gives
    `numeric_times` only, and SymPy is not imported.

        >>> session = schedc.load("schedules/seed/nvlink_2x8.sched", ["B_L=300GB/s"])
        >>> session.selected()
        ['ring', 'interleaved', 'hierarchical']
    """
    from ..model.changes import Changes
    from ..session import Session
    limits = work_limits(max_transfers, max_rounds)
    return Session.open(path, tuple(sets), limits, machine, ranks,
                        Changes(tuple(fail), tuple(derate)), symbolic=formula)


def verified_timings(session: Session, names: Sequence[str], verify: bool = True) -> list[Timing]:
    """The schedules' timings, verified first unless `verify` is false (bad input has had
    its say by then, since timing compiles everything)."""
    return _verified(session, names, verify, session.timing)


def numeric_times(session: Session, schedules: Iterable[str] = (), *, verify: bool = True
                  ) -> list[NumericTiming]:
    """The named result schedules' times and traffic (default: every one of the file),
    verified first, without formulas (`time --no-formula`): what `compare` gives but the
    formulas, regimes and bottlenecks. A session loaded with `formula=False` imports no SymPy.

        >>> float(schedc.numeric_times(session, ["ring"])[0].time)
        0.0075746...
    """
    return _verified(session, session.selected(tuple(schedules)), verify,
                     session.numeric_timing)


def _verified(session: Session, names: Sequence[str], verify: bool, compute):
    if verify:  # what verification would refuse, before the compile or while it elaborates
        from ..analysis.verify.verdict import check_verifiable
        check_verifiable(session, tuple(names))
    timings = [compute(n) for n in names]
    if verify:
        from ..analysis.verify.verdict import verdicts
        failures = [v for v in verdicts(session, tuple(names)) if not v.ok]
        if failures:
            raise refusal(failures)
    return timings


def refusal(failures: list[Verdict]) -> SchedcError:
    """The refusal to report on schedules that fail verification, with their counterexamples."""
    from ..errors import VerificationFailed
    from ..render.verdict import not_reporting
    return VerificationFailed(not_reporting(failures))


def time(session: Session, schedule: str, *, verify: bool = True) -> Timing:
    """A result schedule's formula, regime form and nominal time (`.time`, a Fraction of
    seconds), as `schedc time` reports it: verified first (raises `VerificationFailed`
    with the counterexample unless `verify=False`).

        >>> float(schedc.time(session, "ring").time)
        0.0075746...
    """
    return verified_timings(session, [schedule], verify)[0]


def compare(session: Session, schedules: Iterable[str] = (), *, verify: bool = True,
            with_synthesized: bool = False) -> list[Timing]:
    """The timings of the named result schedules (default: every one of the file), verified
    first, as `schedc compare` and `schedc time` show them; `with_synthesized`: and last, the
    schedule `synthesize` writes for the file's first collective, at the chunk count that
    is fastest at the file's α.

        >>> [t.name for t in schedc.compare(session)]
        ['ring', 'interleaved', 'hierarchical']
    """
    timings = verified_timings(session, session.selected(tuple(schedules)), verify)
    if with_synthesized:
        from .synthesizing import synthesized_timing
        timings.append(synthesized_timing(session))
    return timings


def verify(session: Session, schedules: Iterable[str] = ()) -> list[Verdict]:
    """Does each named result schedule (default: all) compute its collective? One `Verdict`
    per schedule (`.ok`, and the counterexample when not).

        >>> all(v.ok for v in schedc.verify(session))
        True
    """
    from ..analysis.verify.verdict import verdicts
    return verdicts(session, tuple(schedules))


@dataclass(frozen=True)
class VerifiedFile:
    """The verdicts of one file of a `verify_files` run, or the error that stopped it."""

    path: Path
    verdicts: tuple[Verdict, ...] = ()
    error: SchedcError | None = None
    warnings: tuple = ()  # an MSCCL file's: defaults taken, executors that would refuse it


def verify_files(path: str | Path, sets: Iterable[str] = (), schedules: Iterable[str] = (),
                 *, max_transfers: int | None = LoadOptions.max_transfers,
                 max_rounds: int | None = LoadOptions.max_rounds,
                 machine: str | Path | None = None, ranks: str | None = None
                 ) -> list[VerifiedFile]:
    """`schedc verify FILE`: the verdicts of a file, or of every `.sched` file under a
    directory (files without result schedules left out; a file with bad input gives its
    error, and the others are still verified). A single file with bad input raises.

        >>> [f.path.name for f in schedc.verify_files("schedules/seed")]
        ['nvlink_2x8.sched', 'nvlink_hosts.sched', 'pcie_2x4.sched']
    """
    from ..errors import UsageError
    work_limits(max_transfers, max_rounds)  # bad limits are refused, not said per file
    path, sets, schedules = Path(path), tuple(sets), tuple(schedules)
    if path.is_dir():
        if schedules or sets:
            raise UsageError("--schedule and --set need one FILE, not a directory")
        paths = sorted(path.rglob("*.sched"))
    else:
        paths = [path]
    found = []
    for each in paths:
        try:
            session = load(each, sets, max_transfers=max_transfers, max_rounds=max_rounds,
                           machine=machine, ranks=ranks)
            verdicts = verify(session, schedules)
        except SchedcError as exc:
            if not path.is_dir():
                raise
            found.append(VerifiedFile(each, error=exc))
            continue
        if verdicts:
            found.append(VerifiedFile(each, tuple(verdicts),
                                      warnings=tuple(getattr(session.program, "warnings", ()))))
    return found


def emit(stage: str, path: str | Path, schedules: Iterable[str] = (), *, sets: Iterable[str] = (),
         pair: tuple[str, str] | None = None, max_lines: int = EmitOptions.max_lines,
         max_transfers: int | None = LoadOptions.max_transfers,
         max_rounds: int | None = LoadOptions.max_rounds,
         machine: str | Path | None = None, ranks: str | None = None,
         fail: Iterable[str] = (), derate: Iterable[str] = ()) -> str:
    """One pipeline stage of a file as text: "ast", "ir", "loads", "formula", or "routes"
    (with `pair`, only the route between two devices). An ir or loads dump longer than
    `max_lines` is refused before it is formatted.

        >>> print(schedc.emit("formula", "schedules/seed/pcie_2x4.sched", ["ring"]), end="")
        ring:
          T = 14*alpha + 14*Max(V/(8*B_L), V/(16*B_port), V/(8*B_slot))
          regime: 14*alpha + 7*V/(4*B_slot)
            while B_L >= B_slot
            while 2*B_port >= B_slot
    """
    from ..errors import UsageError
    if stage not in STAGES:  # (said as the command line's STAGE argument says it)
        raise UsageError(f"no stage {stage!r}; the stages are {', '.join(STAGES)}")
    max_lines = EmitOptions(stage, max_lines, pair).max_lines
    work_limits(max_transfers, max_rounds)  # (the ast stage compiles nothing)
    path = Path(path)
    if pair and stage != "routes":
        raise UsageError("--pair goes with `emit routes`")
    if stage == "ast":
        return _emit_ast(path)
    session = load(path, sets, max_transfers=max_transfers, max_rounds=max_rounds,
                   machine=machine, ranks=ranks, fail=fail, derate=derate)
    if pair:
        return _emit_pair(session.program.topology, pair)
    return _emit_schedules(session, stage, tuple(schedules), max_lines)


def _emit_ast(path: Path) -> str:
    """`emit ast`: the syntax tree, parsed only."""
    from ..errors import ParseError, UsageError
    from ..files import read_sched
    from ..language.parser import parse_module
    from ..render.emit import emit_ast
    if path.suffix.lower() == ".xml":
        raise UsageError("an MSCCL XML file has no syntax tree of the .sched language; "
                         "try `emit ir`")
    return emit_ast(parse_module(read_sched(path, ParseError)))


def _emit_pair(topology, pair: tuple[str, str]) -> str:
    """`emit routes --pair A B`: the route between two devices. Its errors ("no route from
    A to B", "a transfer from A to itself") are shown at the option's text, `--pair:1:1`,
    as the other options' are."""
    from ..errors import SourceFile, Span
    from ..render.emit import emit_routes
    text = f"{pair[0]} {pair[1]}"
    source = SourceFile("--pair", text)
    a, b = (_device_named(topology, name, Span(source, 1, start, 1, start + len(name)))
            for name, start in ((pair[0], 1), (pair[1], len(pair[0]) + 2)))
    return emit_routes(topology, None, [(a, b, Span(source, 1, 1, 1, len(text) + 1))])


def _emit_schedules(session: Session, stage: str, schedules: tuple[str, ...],
                    max_lines: int) -> str:
    """`emit ir|loads|formula|routes` of the chosen schedules; an ir or loads dump's lines
    are counted before anything is formatted (formatting is the slow part)."""
    from ..errors import LimitError
    from ..render import emit as dumps
    program, out, lines = session.program, [], 0
    topology = program.topology
    for name in session.selected(schedules):
        if stage in ("ir", "loads"):
            lines += dumps.line_count(stage, session.schedule(name),
                                      session.loads(name) if stage == "loads" else None)
            if lines > max_lines:
                raise LimitError(f"emit {stage} would print {lines:,} lines or more; the limit "
                                 f"is {max_lines:,} (raise it with --max-lines, or pick "
                                 "schedules with -s)")
        if stage == "routes":
            pairs = dumps.schedule_pairs(session.schedule(name), len(topology.devices))
            out.append(dumps.emit_routes(topology, name, pairs))
        elif stage == "ir":
            out.append(dumps.emit_ir(program, session.schedule(name)))
        elif stage == "loads":
            out.append(dumps.emit_loads(program, session.schedule(name), session.loads(name)))
        else:
            out.append(dumps.emit_formula(session.timing(name)))
    return "".join(out)


def _device_named(topology, name: str, span) -> int:
    from ..errors import UsageError, did_you_mean
    names = [d.name for d in topology.devices]
    if name not in names:
        raise UsageError(f"--pair: no device '{name}' in the topology" + did_you_mean(name, names),
                         span)
    return names.index(name)

"""One log's model: the schedule's closed-form time T(V; θ) as NumPy code (with protocols, the
minimum over them), the params it is fitted in, and each row's winning protocol."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import sympy

from ...errors import UsageError, did_you_mean
from ...session import Session
from ...units import RATE
from .roles import GROUPS, group_members


def schedules(schedule: str) -> list[str]:
    """`nccl` or `nccl,nccl_1`: with several, the time is the fastest of them (NCCL picks the
    fastest algorithm and chunking for each size, as its tuner does)."""
    return [s.strip() for s in schedule.split(",") if s.strip()]


def _formulas(session: Session, schedule: str) -> list:
    return [session.timing(s).cost.formula for s in schedules(schedule)]


def size_symbol(session: Session, schedule: str) -> sympy.Symbol:
    """The one param that is the collective's size (the log's size column)."""
    from .records import CalibrationError
    names = schedules(schedule)
    first = session.program.result(names[0]).collective
    for other in names[1:]:
        collective = session.program.result(other).collective
        if (collective.kind, collective.size, collective.ranks) != \
                (first.kind, first.size, first.ranks):
            raise CalibrationError(f"schedules '{names[0]}' and '{other}' compute different "
                                   "collectives; the fastest of them means nothing",
                                   collective.span)
    collective = first
    if len(collective.size) != 1 or collective.size[0][1] != 1:
        raise CalibrationError("the collective's size must be one param (e.g. 'allreduce V over "
                               "ranks') to set it from the log's sizes", collective.span)
    return collective.size[0][0]


def default_unknowns(session: Session, schedule: str) -> tuple[str, ...]:
    """Every param the time depends on but the size and the link rates (a rate is the data
    sheet's, fixed unless named with --fit)."""
    size = size_symbol(session, schedule)
    depends = {s.name for f in _formulas(session, schedule) for s in f.free_symbols}
    return tuple(p.name for p in session.program.params.values()
                 if p.symbol != size and p.name in depends and p.dim != RATE)


def check_names(session: Session, schedule: str, names: tuple[str, ...],
                anywhere: bool = False) -> tuple[str, ...]:
    """The names of `--fit` this file has (all of them unless `anywhere`: with several logs a
    name need only be in one machine file), each checked."""
    program = session.program
    size = size_symbol(session, schedule)
    depends = {s.name for f in _formulas(session, schedule) for s in f.free_symbols}
    out = []
    for k, name in enumerate(names):
        if name in names[:k]:  # one unknown each: a param twice would be two of the same
            raise UsageError(f"--fit names {name} twice")
        if name in GROUPS and name not in program.params:
            members = group_of(session, schedule, name)
            if not members and not anywhere:
                raise UsageError(f"--fit {name}: the time of '{schedule}' depends on no "
                                 f"{GROUPS[name][1]}")
            out += [n for n in members if n not in names and n not in out]
            continue
        param = program.params.get(name)
        if param is None:
            if anywhere:
                continue
            raise UsageError(f"--fit {name}: no param named '{name}'"
                             + (did_you_mean(name, list(program.params), "params") or ""))
        if param.symbol == size:
            raise UsageError(f"--fit {name}: {name} is the collective's size, set by the log")
        if name not in depends:
            raise UsageError(f"--fit {name}: the time of '{schedule}' does not depend on it")
        if param.nominal <= 0:
            raise UsageError(f"--fit {name}: its nominal value must be positive to fit it")
        out.append(name)
    return tuple(out)


def group_of(session: Session, schedule: str, group: str) -> list[str]:
    """The params of `--fit latencies` or `--fit shares` in this file (roles.GROUPS)."""
    candidates = [session.program.params[n] for n in default_unknowns(session, schedule)]
    return group_members(session, group, candidates)


class Model:
    """T(size; θ) of one schedule, θ the params `names` (the others at their nominal values)."""

    def __init__(self, session: Session, schedule: str, names: tuple[str, ...]):
        program = session.program
        names_ = schedules(schedule)
        self.size = size_symbol(session, schedule)
        self.params = [program.params[n] for n in names]
        fixed = {s: v for s, v in program.nominal.items()
                 if s != self.size and s.name not in names}
        symbols = [self.size] + [p.symbol for p in self.params]
        formulas = [session.timing(n).cost.formula for n in names_]
        formula = formulas[0] if len(formulas) == 1 else sympy.Min(*formulas)
        self.function = _lambdify(symbols, formula.xreplace(fixed))
        self.protocols = []
        for n in names_:
            timing = session.timing(n)
            label = f"{n}/" if len(names_) > 1 else ""
            self.protocols += [(label + t.name, _lambdify(symbols, t.formula.xreplace(fixed)))
                               for t in timing.cost.protocol_times]
            if not timing.cost.protocol_times and len(names_) > 1:
                self.protocols.append((n, _lambdify(symbols, timing.cost.formula.xreplace(fixed))))
        self.nominal = np.array([float(p.nominal) for p in self.params])

    def __call__(self, sizes: np.ndarray, theta: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.broadcast_to(np.asarray(self.function(sizes, *theta), dtype=float),
                                   sizes.shape)

    def winners(self, sizes: np.ndarray, theta: np.ndarray) -> list[str | None]:
        if not self.protocols:
            return [None] * len(sizes)
        return [self.protocols[k][0] for k in np.argmin(self._times(sizes, theta), axis=0)]

    def latency_shares(self, sizes: np.ndarray, theta: np.ndarray) -> list[float | None]:
        """Per size, the share of the time that is latency: the winner's time at size 0 (every
        bandwidth term is proportional to the size) over its time at the size; None where
        that is not in [0, 1]. A link held to window/latency (cost.formula) is counted as
        bandwidth: its latency is inside a term proportional to the size."""
        functions = [f for _, f in self.protocols] or [self.function]
        times = self._times(sizes, theta, functions)
        at_zero = self._times(np.zeros_like(sizes), theta, functions)
        winner = np.argmin(times, axis=0)
        columns = np.arange(len(sizes))
        with np.errstate(all="ignore"):
            shares = at_zero[winner, columns] / times[winner, columns]
        return [float(x) if np.isfinite(x) and 0 <= x <= 1 + 1e-9 else None for x in shares]

    def _times(self, sizes: np.ndarray, theta: np.ndarray, functions=None) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.stack([np.broadcast_to(np.asarray(f(sizes, *theta), dtype=float),
                                             sizes.shape)
                             for f in functions or [f for _, f in self.protocols]])


def _lambdify(symbols, expr):
    return sympy.lambdify(symbols, expr, modules="numpy")


def declared_in_library(session: Session, name: str) -> bool:
    """Declared in a file the machine file imports, not in the machine file itself."""
    param = session.program.params[name]
    return Path(param.span.source.path).resolve() != Path(session.program.path).resolve()

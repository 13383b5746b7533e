"""`predict`'s model without formulas: T(size) at the file's params, from the loads.

`Model` (model.py) lambdifies the closed form T(V; θ), which a fit needs: it evaluates it
thousands of times at other θ. `predict` evaluates it once per row at the file's own
params, and building that closed form cost most of its run: the formula with protocols,
then SymPy's Min over them put at the nominal point (3.9 s of the 8.4 s profiled for
`predict` on the H100 IB machine). `NumericModel` gives the same answers, each row's time
exactly, from the loads (`Session.numeric_timing_at`: `cost.numeric` with the size at the
row's), with the same interface as `Model` for no θ: the time, the winning protocol, the
latency's share. tests/test_numeric_commands.py checks it against `Model` on shipped files.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ...session import Session
from .model import schedules, size_symbol


class NumericModel:
    """T(size) of one schedule (or the fastest of several) at the file's params."""

    def __init__(self, session: Session, schedule: str):
        self.session = session
        self.names = schedules(schedule)
        self.size = size_symbol(session, schedule)
        self._columns: dict[Fraction, list[Fraction]] = {}
        self.protocols = self._labels()

    def _labels(self) -> list[str]:
        """The columns' names, as `Model.protocols` names them: `proto`, or with several
        schedules `schedule/proto` (a schedule without protocols: its name)."""
        several = len(self.names) > 1
        labels = []
        for name in self.names:
            timing = self.session.numeric_timing(name)
            if timing.protocol_times:
                labels += [(f"{name}/" if several else "") + p for p, _ in timing.protocol_times]
            elif several:
                labels.append(name)
        return labels

    def _times_at(self, size: Fraction) -> list[Fraction]:
        """Each column's exact time at `size` bytes (without protocols and with one
        schedule: its time, alone)."""
        if size not in self._columns:
            import sympy
            at = {self.size: sympy.Rational(size.numerator, size.denominator)}
            column = []
            for name in self.names:
                timing = self.session.numeric_timing_at(name, at)
                column += [t for _, t in timing.protocol_times] or [timing.time]
            self._columns[size] = column
        return self._columns[size]

    def exact(self, sizes: np.ndarray) -> list[Fraction]:
        """The time at each size, exactly: the least of the columns."""
        return [min(self._times_at(Fraction(float(s)))) for s in sizes]

    def __call__(self, sizes: np.ndarray, theta: np.ndarray) -> np.ndarray:
        return np.array([float(t) for t in self.exact(sizes)], dtype=float)

    def _table(self, sizes: np.ndarray) -> np.ndarray:
        return np.array([[float(t) for t in self._times_at(Fraction(float(s)))] for s in sizes],
                        dtype=float).T.reshape(-1, len(sizes))

    def winners(self, sizes: np.ndarray, theta: np.ndarray) -> list[str | None]:
        if not self.protocols:
            return [None] * len(sizes)
        return [self.protocols[k] for k in np.argmin(self._table(sizes), axis=0)]

    def latency_shares(self, sizes: np.ndarray, theta: np.ndarray) -> list[float | None]:
        """As `Model.latency_shares`: the winner's time at size 0 over its time at the size."""
        times = self._table(sizes)
        at_zero = self._table(np.zeros_like(sizes))
        winner = np.argmin(times, axis=0)
        columns = np.arange(len(sizes))
        with np.errstate(all="ignore"):
            shares = at_zero[winner, columns] / times[winner, columns]
        return [float(x) if np.isfinite(x) and 0 <= x <= 1 + 1e-9 else None for x in shares]

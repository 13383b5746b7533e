"""A wall-clock bound on symbolic work, so a hard equation is reported, not left to hang.

SymPy's algebra is pure Python, so a SIGALRM handler that raises interrupts it between two
bytecodes. The bound is one budget of seconds shared by everything run under it:

    limit = TimeLimit(10)
    with limit.running():
        ...  # raises OutOfTime once the 10 s are spent

Signals only reach the main thread; elsewhere (a library caller's worker thread) the work
runs unbounded rather than failing.
"""

from __future__ import annotations

import math
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

DEFAULT_TIMEOUT = 10.0  # seconds of symbolic work per equation
# The largest --timeout: a million seconds (11.6 days) is "no limit" for any real run, and well
# inside what setitimer takes (it overflows the platform's time_t near 9.2e18 s; NaN it refuses).
MAX_TIMEOUT = 1e6


class OutOfTime(BaseException):  # no library's `except Exception` may swallow it
    """Internal: the time limit ran out; callers turn it into a message with a span."""


class TimeLimit:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._end: float | None = None  # set when the clock first starts

    def remaining(self) -> float:
        if self._end is None:
            return self.seconds
        return self._end - time.monotonic()

    @contextmanager
    def running(self) -> Iterator[None]:
        """Run the body against the budget; nested uses share the outer alarm."""
        if self._end is None:
            self._end = time.monotonic() + self.seconds
        left = self.remaining()
        if left <= 0:
            raise OutOfTime
        if threading.current_thread() is not threading.main_thread() or \
                signal.getitimer(signal.ITIMER_REAL)[0] > 0 or \
                not math.isfinite(left) or left > MAX_TIMEOUT:
            yield  # not our thread to signal, an outer alarm armed, or no real bound asked
            return

        def _expire(signum, frame):
            raise OutOfTime

        previous = signal.signal(signal.SIGALRM, _expire)
        signal.setitimer(signal.ITIMER_REAL, left)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)

    def __str__(self) -> str:
        return f"{self.seconds:g} s"

"""Progress of long work, reported to whoever listens (the command line draws a bar).

Analyses call `ticker(label, total)` and `advance()` the ticker it returns; nothing is shown
unless a listener is installed with `listening(...)`, so library callers and tests see
nothing and pay almost nothing. Kept in the base layer: analysis never imports render.

    with listening(bar):                   # cli.progress.terminal_bar, say
        ticker = progress.ticker("bound: cuts", 120)
        for cut in cuts:
            ...
            ticker.advance()
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# A listener gets (label, done, total) after every step and (label, total, total) at the end.
Listener = Callable[[str, int, int], None]

_listener: ContextVar[Listener | None] = ContextVar("schedc_progress", default=None)


class Ticker:
    def __init__(self, label: str, total: int, listener: Listener | None) -> None:
        self.label, self.total, self.done = label, total, 0
        self._listener = listener

    def advance(self, count: int = 1) -> None:
        self.done += count
        if self._listener is not None:
            self._listener(self.label, min(self.done, self.total), self.total)

    def finish(self) -> None:
        if self._listener is not None:
            self._listener(self.label, self.total, self.total)


def ticker(label: str, total: int) -> Ticker:
    """A ticker for `total` steps of work called `label`."""
    return Ticker(label, max(total, 1), _listener.get())


@contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """Send the progress of the work in the body to `listener`."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)

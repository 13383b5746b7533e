"""A progress bar on stderr for long work: only when stderr is a terminal, and only once the
work has run for about a second (short commands print nothing extra)."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

DELAY = 1.0  # seconds of work before a bar appears
WIDTH = 30


class TerminalBar:
    def __init__(self, stream=None, delay: float = DELAY) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.delay = delay
        self.started: dict[str, float] = {}
        self.shown = False
        self.last = 0.0

    def __call__(self, label: str, done: int, total: int) -> None:
        now = time.monotonic()
        start = self.started.setdefault(label, now)
        finished = done >= total
        if finished:
            self.started.pop(label, None)
        if now - start < self.delay:
            return
        if not finished and now - self.last < 0.1:  # redraw at most ten times a second
            return
        self.last = now
        filled = WIDTH * done // total
        line = f"\r{label} [{'#' * filled}{'.' * (WIDTH - filled)}] {done:,}/{total:,}"
        self.stream.write(line + ("\n" if finished else ""))
        self.stream.flush()


@contextmanager
def progress_bar() -> Iterator[None]:
    """Show progress on stderr while the body runs, if stderr is a terminal."""
    if not sys.stderr.isatty():
        yield
        return
    from ..api import listening  # (here: `schedc --help` imports no more than click and cli)
    with listening(TerminalBar()):
        yield

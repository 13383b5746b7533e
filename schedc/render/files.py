"""Writing output files: whole or not at all, by `schedc.files`' policy (never over an input
of the run, never replacing a FIFO or a device)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ..files import write_folder, write_output

__all__ = ["write_atomically", "write_folder"]


def write_atomically(path: Path, content: str | bytes | Iterable[str | bytes]) -> None:
    """Write `content` (or its pieces, in order: a large file need not be in memory whole) to
    `path`: a regular file through a temporary file in the same folder and a rename, so a
    failure, of the disk or of the code making the pieces, leaves no partial file (and an
    existing file untouched); a FIFO or character device written through."""
    write_output(path, content)

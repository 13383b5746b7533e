"""Writing output files: whole or not at all."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from ..errors import UsageError


def write_atomically(path: Path, content: str | bytes | Iterable[str | bytes]) -> None:
    """Write `content` (or its pieces, in order: a large file need not be in memory whole) to
    `path` through a temporary file in the same folder and a rename, so a failure, of the
    disk or of the code making the pieces, leaves no partial file (and an existing file
    untouched)."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    pieces = [content] if isinstance(content, (str, bytes)) else content
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=directory)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            for piece in pieces:
                handle.write(piece.encode("utf-8") if isinstance(piece, str) else piece)
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, path)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask

"""Reading inputs and writing outputs safely: the one place that decides what a path may be.

Inputs (a `.sched` file and its imports, `--machine`, an MSCCL XML file, an nccl-tests log)
are regular files of at most `MAX_INPUT_BYTES`: a FIFO, a device or a /proc file is refused
before a byte is read, so `import "/dev/zero"` cannot fill memory.

Outputs (`-o`, `--csv`, `--plot`, `--write`) never clobber an input of the same run (the
same file, by device and inode: through symbolic and hard links too), and never replace
what is not a regular file:

- a new file, or a regular file (directly or behind symbolic links: the link's target), is
  written whole through a temporary file and a rename, so a failure leaves no partial file;
- a FIFO or a character device (`/dev/null`, `/dev/stdout`, a terminal) is opened and
  written through, never replaced;
- a directory, a block device or a socket is refused, as is a missing folder.

A run (one command line) notes its inputs and outputs in a `Run`, so an output that names an
input is refused however late the input is met (an import is checked as it is read).
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterable
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

from .errors import LoadError, SchedcError, SourceFile, Span, UsageError, decode_source
from .limits import MAX_INPUT_BYTES

Identity = tuple[int, int]  # (st_dev, st_ino): a file, whatever path names it


@dataclass
class Run:
    """The files one command line reads and writes, by identity."""

    inputs: dict[Identity, str] = field(default_factory=dict)
    outputs: dict[Identity | str, str] = field(default_factory=dict)  # str: a new file's path
    read: int = 0  # bytes of input read so far

    def add_input(self, path: str | Path, identity: Identity, span: Span | None = None) -> None:
        if identity in self.outputs:
            raise LoadError(_clobber(self.outputs[identity], str(path)), span)
        self.inputs.setdefault(identity, str(path))

    def add_output(self, path: str | Path, again: bool = False) -> None:
        """Note an output; `again`: the same output checked once more, as it is written."""
        found = _identity(path)
        if found is not None and found in self.inputs:
            raise UsageError(_clobber(str(path), self.inputs[found]))
        key: Identity | str = os.path.realpath(path) if found is None else found  # new: its name
        shared = found is not None and _is_device(path)  # /dev/null named twice
        if key in self.outputs and not shared and not (again and self.outputs[key] == str(path)):
            raise UsageError(f"{path} is named twice as an output ({self.outputs[key]}); two "
                             "outputs cannot share a file")
        self.outputs.setdefault(key, str(path))


RUN: ContextVar[Run | None] = ContextVar("schedc_run", default=None)


def _clobber(output: str, source: str) -> str:
    same = "" if output == source else f" ({source})"
    return (f"refusing to write {output}: it is an input of this run{same}; "
            "name another output file")


def _is_device(path: str | Path) -> bool:
    """A character device (/dev/null, a terminal): written through, so outputs may share it."""
    try:
        return stat.S_ISCHR(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _identity(path: str | Path) -> Identity | None:
    """The file `path` names after following symbolic links (None: nothing there)."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return info.st_dev, info.st_ino


# ---- inputs


def read_input(path: str | Path, what: str, span: Span | None = None, shown: str | None = None,
               limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of the input file `path` (`what`: "a .sched file", "an nccl-tests log"...),
    refused unless it is a regular file of at most `limit` bytes: checked on the open file,
    before reading, and again while reading (a file that grows, a /proc file whose size
    says 0)."""
    shown = str(path) if shown is None else shown
    try:  # O_NONBLOCK: opening a FIFO with no writer must not wait
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise LoadError(f"no such file: {shown}", span) from None
    except IsADirectoryError:
        raise LoadError(f"{shown} is a directory, not {what}", span) from None
    except (OSError, ValueError) as exc:
        raise LoadError(f"cannot read {shown}: {getattr(exc, 'strerror', None) or exc}",
                        span) from None
    info = os.fstat(fd)  # before fdopen, which refuses a directory with an OSError of its own
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        if stat.S_ISDIR(info.st_mode):
            raise LoadError(f"{shown} is a directory, not {what}", span)
        raise LoadError(f"{shown} is {_kind(info.st_mode)}, not {what}: inputs are "
                        "regular files", span)
    with os.fdopen(fd, "rb") as handle:
        run = RUN.get()
        budget = limit if run is None else min(limit, MAX_INPUT_BYTES - run.read)
        if info.st_size > budget:
            raise LoadError(_too_big(shown, info.st_size, budget, limit, run), span)
        if run is not None:
            run.add_input(path, (info.st_dev, info.st_ino), span)
        try:
            data = handle.read(budget + 1)
        except OSError as exc:
            raise LoadError(f"cannot read {shown}: {exc.strerror or exc}", span) from None
    if len(data) > budget:  # it grew since fstat
        raise LoadError(f"{shown} has more than {budget:,} bytes; inputs are limited to "
                        f"{_mib(limit)}", span)
    if info.st_size == 0 and data:  # /proc, /sys: a size of 0 that is not the file's
        raise LoadError(f"{shown} is a pseudo-file whose size is not known, not {what}", span)
    if run is not None:
        run.read += len(data)
    return data


def read_source(path: str | Path, what: str, error: type[SchedcError] = LoadError,
                span: Span | None = None, shown: str | None = None) -> SourceFile:
    """`read_input` decoded as UTF-8 text; a file that is not UTF-8 is `error` at the line and
    column of its first bad byte (see `errors.decode_source`)."""
    return decode_source(shown or str(path), read_input(path, what, span, shown), error)


def read_sched(path: str | Path, error: type[SchedcError] = LoadError, span: Span | None = None,
                shown: str | None = None) -> SourceFile:
    """A `.sched` file's text (`read_source`), refused before a byte is read unless the file
    it resolves to is named `.sched`: a symbolic link `x.sched` to `secret.txt`, an
    `import`, `--machine` or `--fitted` naming any other file, is refused, so an error never
    quotes a line of a file that is not schedc's (the name a user gave is not enough)."""
    shown = str(path) if shown is None else shown
    try:
        real = Path(os.path.realpath(path))
    except (OSError, ValueError) as exc:  # a NUL character in the name
        raise error(f"cannot read {shown}: {exc}", span) from None
    # (a special file, a /proc file whose size says 0, a missing one: read_input says what)
    if real.suffix != ".sched" and real.is_file() and real.stat().st_size > 0:
        through = "" if real.name == Path(shown).name else f" (it leads to {real.name})"
        raise error(f"{shown} is not a .sched file{through}: schedc reads its language only "
                    "from files named .sched", span)
    return read_source(path, "a .sched file", error, span, shown)


def _too_big(shown: str, size: int, budget: int, limit: int, run: Run | None) -> str:
    if budget < limit and run is not None:
        return (f"{shown}: the inputs of this run would exceed {_mib(MAX_INPUT_BYTES)} "
                f"({run.read:,} bytes read before it, and it has {size:,} bytes)")
    return f"{shown} has {size:,} bytes; inputs are limited to {_mib(limit)}"


def _mib(count: int) -> str:
    return f"{count / 2**20:,.0f} MiB" if count >= 2**20 else f"{count:,} bytes"


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


# ---- outputs


def check_output(path: str | Path, option: str = "") -> Path:
    """Refuse an output path before any work: one naming an input of the run or another
    output, a directory, a block device or a socket, or one in a missing or unwritable folder.
    `option`: the option naming it, when checked as the command line is parsed (without it,
    the same output is being checked again as it is written). Returns the path."""
    path = Path(path)
    name = str(path)  # (the option is not named: the path says which)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise UsageError(f"cannot write {name}: {exc.strerror or exc}") from None
    if info is None or stat.S_ISREG(info.st_mode) and not _descriptor_alias(path):
        # it is replaced through a file made beside it: that must be possible
        folder = Path(os.path.realpath(path)).parent
        if not folder.is_dir():
            raise UsageError(f"cannot write {name}: no such directory {path.parent}")
        try:
            fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", dir=folder)
        except OSError as exc:
            raise UsageError(f"cannot write {name}: {exc.strerror or exc}") from None
        os.close(fd)
        os.unlink(probe)
    elif stat.S_ISDIR(info.st_mode):
        raise UsageError(f"cannot write {name}: it is a directory")
    elif not (stat.S_ISREG(info.st_mode) or stat.S_ISFIFO(info.st_mode)
              or stat.S_ISCHR(info.st_mode)):
        raise UsageError(f"cannot write {name}: it is {_kind(info.st_mode)}")
    run = RUN.get()
    if run is not None:
        run.add_output(path, again=not option)
    return path


def check_replaced(path: str | Path, force: bool, option: str = "") -> Path:
    """`check_output`, and an existing file refused unless `force` (`-o` without
    `--force`), before any work. Returns the path."""
    path = Path(path)
    if not force and path.is_file():
        raise UsageError(f"{path} exists; --force replaces it")
    return check_output(path, option)


def write_output(path: str | Path, content: str | bytes | Iterable[str | bytes]) -> None:
    """Write `content` (or its pieces, in order: a large file need not be in memory whole) to
    the output `path` by the policy above: checked again now (an input may have been met
    since), a regular file replaced whole, a FIFO or character device written through."""
    path = Path(path)
    check_output(path)
    pieces = [content] if isinstance(content, (str, bytes)) else content
    try:
        info = os.stat(path)
    except OSError:
        info = None
    if info is not None and not stat.S_ISREG(info.st_mode):
        for stream in (sys.stdout, sys.stderr):  # (a pipe of ours: what we printed comes first)
            stream.flush()
        _write_through(path, pieces, os.O_WRONLY)
    elif info is not None and _descriptor_alias(path):  # /dev/stdout into a file
        stream = _own_stream(info)
        if stream is None:
            _write_through(path, pieces, os.O_WRONLY | os.O_APPEND)
        else:  # through our own stream, in order with what else it prints
            binary = getattr(stream, "buffer", None)
            stream.flush()
            for data in _encoded(pieces):
                binary.write(data) if binary is not None else stream.write(data.decode())
            stream.flush()
    else:  # an existing file keeps its mode; a new one gets the umask's
        mode = stat.S_IMODE(info.st_mode) if info is not None else 0o666 & ~_umask()
        _replace(Path(os.path.realpath(path)), path, pieces, mode)


def _encoded(pieces: Iterable[str | bytes]) -> Iterable[bytes]:
    return (p.encode("utf-8") if isinstance(p, str) else p for p in pieces)


def _descriptor_alias(path: Path) -> bool:
    """Whether `path` names an open descriptor (/dev/stdout, /dev/fd/N, /proc/self/fd/N), by
    itself or through symbolic links: the file behind it is another process's too."""
    current = os.path.abspath(path)
    for _ in range(40):  # the kernel's limit on a chain of links
        if current.startswith(("/proc/", "/dev/fd/")) or current in _STANDARD_STREAMS:
            return True
        if not os.path.islink(current):
            return False
        current = os.path.normpath(os.path.join(os.path.dirname(current), os.readlink(current)))
    return False


_STANDARD_STREAMS = ("/dev/stdin", "/dev/stdout", "/dev/stderr")


def _own_stream(info: os.stat_result):
    """sys.stdout or sys.stderr when `info` is the file it writes to, else None."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if os.path.samestat(info, os.fstat(stream.fileno())):
                return stream
        except (AttributeError, OSError, ValueError):  # a StringIO, a closed stream
            continue
    return None


def _write_through(path: Path, pieces: Iterable[str | bytes], flags: int) -> None:
    """Open the existing `path` (no create, no truncation) and write to it."""
    try:
        with open(os.open(path, flags), "wb", buffering=0) as handle:
            for data in _encoded(pieces):
                view = memoryview(data)
                while view:  # an unbuffered write may take part of it (a pipe)
                    view = view[handle.write(view) or 0:]
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def _replace(target: Path, shown: Path, pieces: Iterable[str | bytes], mode: int) -> None:
    """Through a temporary file beside `target` (the real file, behind any symbolic links)
    and a rename, the file then of `mode`."""
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as exc:
        raise UsageError(f"cannot write {shown}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            for data in _encoded(pieces):
                handle.write(data)
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        raise UsageError(f"cannot write {shown}: {exc.strerror or exc}") from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_output_with(path: str | Path, write, suffix: str = "") -> None:
    """For a writer that wants a file name (matplotlib's savefig): `write(temporary name)`,
    whose bytes are then written to `path` by `write_output`."""
    path = Path(path)
    check_output(path)
    fd, temporary = tempfile.mkstemp(suffix=suffix or path.suffix)
    os.close(fd)
    try:
        write(temporary)
        write_output(path, Path(temporary).read_bytes())
    finally:
        Path(temporary).unlink(missing_ok=True)


def check_output_folder(path: str | Path, force: bool) -> Path:
    """Refuse an output folder before any work: one that is a file, or in a missing folder,
    or that exists and holds anything, unless `force` (then the files written replace theirs,
    and any other file stays)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise UsageError(f"cannot write into {path}: it is not a directory")
    if path.is_dir() and any(path.iterdir()) and not force:
        raise UsageError(f"{path} exists and is not empty; give --force to replace the files "
                         "written there")
    if not Path(os.path.realpath(path)).parent.is_dir():
        raise UsageError(f"cannot write into {path}: no such directory {path.parent}")
    return path


def write_folder(path: str | Path, files: Iterable[tuple[str, Iterable[bytes]]],
                 force: bool) -> list[str]:
    """Write `files` ((name, pieces) each) into the folder `path`: all of them first into a
    new folder beside it, so an error leaves nothing; then that folder renamed to `path` when
    `path` does not exist, else (`force`) each file moved in whole. Returns the names."""
    path = check_output_folder(path, force)
    real = Path(os.path.realpath(path))
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{real.name}.", dir=real.parent))
    except OSError as exc:
        raise UsageError(f"cannot write into {path}: {exc.strerror or exc}") from None
    names: list[str] = []
    try:
        for name, pieces in files:
            if real.is_dir():  # never over an input of this run
                check_output(real / name)
            with open(staging / name, "wb") as handle:
                for data in pieces:
                    handle.write(data)
            names.append(name)
        if real.is_dir():
            for name in names:
                os.replace(staging / name, real / name)
            staging.rmdir()
        else:
            os.rename(staging, real)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise UsageError(f"cannot write into {path}: {exc.strerror or exc}") from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return names


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


__all__ = ["RUN", "Run", "SchedcError", "check_output", "check_output_folder", "read_input",
           "read_sched", "read_source", "write_folder", "write_output", "write_output_with"]

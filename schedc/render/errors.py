"""Errors as JSON (`schedc.error/1`): what a command asked for `--json` prints on stdout when
it cannot give its result; the text diagnostic still goes to stderr."""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import SchedcError
from . import schema
from .text import dump_json


def error_entry(error: SchedcError) -> dict:
    """`{file, line, col, message, notes}`; the position is null for an error without one."""
    span = error.span
    return {
        "file": span.source.path if span else None,
        "line": span.line if span else None,
        "col": span.col if span else None,
        "message": error.message,
        "notes": list(error.notes),
    }


def error_json(errors: Iterable[SchedcError]) -> str:
    return dump_json({"schema": schema.ERROR, "errors": [error_entry(e) for e in errors]})

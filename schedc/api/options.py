"""Every option of every command, defined once: a frozen dataclass per command (as xDSL's
passes hold their options), each field saying its type, range and default, and checked when
the dataclass is made (`__post_init__`), raising `UsageError` with the message the command
line prints. The API functions make one before any work, and their keyword defaults are
the fields' (`tests/test_options.py`); the command line builds its click options from the
same fields (`schedc.cli.derived`): click converts a value to the field's type, its default
and range are read from here, and the checks are these.

Imports nothing heavy: `schedc --help` reads the fields.
"""

from __future__ import annotations

from dataclasses import Field, dataclass, field, fields
from typing import Any

from ..errors import UsageError
from .arguments import above_one, byte_count, one_of, seconds, share, whole

# What a field's metadata holds under this key: an `Rule`.
RULE = "schedc.option"


@dataclass(frozen=True)
class Rule:
    """How one option is spelled and checked: `kind` is "whole" (an int from `lo` to `hi`,
    None no end), "seconds" (a time limit), "choice" (one of `choices`), "text" (a string
    a later stage reads, with its own messages), "flag" (a bool), "share" (a fraction between
    0 and 1, both excluded; 1% is 0.01), "factor" (a ratio above 1, inf: no limit), "wholes"
    (several wholes, each from `lo` to `hi`)
    or "bytes" (a size in bytes from `lo` to `hi`: a whole number, or text with a unit,
    "192MiB", as `byte_count` reads it)."""

    flag: str  # as the command line spells it: "--channels"
    kind: str
    lo: int | None = None
    hi: int | None = None
    choices: tuple[str, ...] = ()

    def check(self, value: Any) -> Any:
        """`value` checked (and made an int, a float or a tuple); None passes: not given."""
        if value is None:
            return None
        if self.kind == "whole":
            return whole(value, self.flag, self.lo, self.hi)
        if self.kind == "bytes":
            return byte_count(value, self.flag, self.lo or 0, self.hi)
        if self.kind == "wholes":
            return tuple(whole(v, self.flag, self.lo, self.hi) for v in value)
        if self.kind == "seconds":
            return seconds(value, self.flag)
        if self.kind == "choice":
            return one_of(value, self.flag, self.choices)
        if self.kind == "share":
            return share(value, self.flag)
        if self.kind == "factor":
            return above_one(value, self.flag)
        if self.kind == "flag":
            return bool(value)
        if not isinstance(value, str):
            raise UsageError(f"{self.flag} {value!r}: must be text")
        return value

    def range_text(self) -> str:
        """The range as the help shows it ("1 to 32", "at least 1"), or ""."""
        if self.kind not in ("whole", "wholes", "bytes"):
            return ""
        if self.lo is None:
            return "" if self.hi is None else f"at most {self.hi:,}"
        return f"at least {self.lo:,}" if self.hi is None else f"{self.lo:,} to {self.hi:,}"


def option(default: Any, flag: str, kind: str, lo: int | None = None, hi: int | None = None,
           choices: tuple[str, ...] = ()) -> Any:
    """A field of an options dataclass: its default and its `Rule`."""
    return field(default=default, metadata={RULE: Rule(flag, kind, lo, hi, choices)})


def count(default: int | None, flag: str, lo: int | None = 1, hi: int | None = None) -> Any:
    return option(default, flag, "whole", lo, hi)


def byte_size(default: int | None, flag: str, lo: int = 0, hi: int | None = None) -> Any:
    """A size in bytes: a whole number, or text with a unit ("192MiB")."""
    return option(default, flag, "bytes", lo, hi)


def counts(flag: str, lo: int | None = 1, hi: int | None = None) -> Any:
    return option((), flag, "wholes", lo, hi)


def time_limit(default: float, flag: str = "--timeout") -> Any:
    return option(default, flag, "seconds")


def choice(default: str | None, flag: str, choices: tuple[str, ...]) -> Any:
    return option(default, flag, "choice", choices=choices)


def text(default: str | None, flag: str) -> Any:
    return option(default, flag, "text")


def switch(flag: str) -> Any:
    return option(False, flag, "flag")


def rules(cls: type) -> dict[str, tuple[Field, Rule]]:
    """The options of an options dataclass, by field name."""
    return {f.name: (f, f.metadata[RULE]) for f in fields(cls) if RULE in f.metadata}


@dataclass(frozen=True)
class Options:
    """The base of every command's options: each field checked by its `Rule`. A field given
    None takes its default (a script's `max_transfers=None` is "the default")."""

    @classmethod
    def given(cls, **values: Any) -> Any:
        """The options of the values given; None (not given) is the field's default."""
        return cls(**{name: value for name, value in values.items() if value is not None})

    def __post_init__(self) -> None:
        for name, (spec, rule) in rules(type(self)).items():
            value = getattr(self, name)
            if value is None:
                value = spec.default
            object.__setattr__(self, name, rule.check(value))

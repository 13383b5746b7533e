"""Click options made from the API's options dataclasses (`schedc.api.options`): the type
click converts to, the default and the range in the help are read from the field, never
restated here; the checks are the API's, made when the command calls it."""

from __future__ import annotations

from typing import Any

import click

from ..api.options import rules


class Share(click.ParamType):
    """A percentage, `1%` or `1` → 0.01 (the API's "share": a fraction)."""

    name = "percent"

    def convert(self, value, param, ctx):
        if isinstance(value, float):
            return value
        try:
            return float(str(value).strip().removesuffix("%")) / 100
        except ValueError:
            self.fail(f"a percentage such as 1 or 0.5%, not {value!r}", param, ctx)


class ByteSize(click.ParamType):
    """A size in bytes as typed: a whole number (made an int) or text with a unit ("192MiB"),
    passed on as it is: the API's field reads the unit and checks the range (`byte_count`),
    so that a script and the command line meet the same refusal."""

    name = "bytes"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        text = str(value).strip()
        try:
            return int(text)
        except ValueError:
            return text


class WholeOrAuto(click.ParamType):
    """A whole number, or `auto` (None: the API picks)."""

    name = "N|auto"

    def convert(self, value, param, ctx):
        if value is None or isinstance(value, int) or value == "auto":
            return None if value == "auto" else value
        try:
            return int(value)
        except ValueError:
            self.fail(f"a whole number or 'auto', not {value!r}", param, ctx)


def _shown(default: Any, kind: str, param_type: Any) -> Any:
    """The default as it is typed on the command line."""
    if isinstance(param_type, Share):
        return f"{default * 100:g}%"
    if isinstance(param_type, WholeOrAuto) and default is None:
        return "auto"
    return default


TYPES = {"whole": int, "wholes": int, "seconds": float, "factor": float, "text": str,
         "bytes": ByteSize()}


def api_option(cls: type, name: str, *decls: str, help: str = "", param_type: Any = None,
               **extra: Any):
    """The click option of field `name` of the options dataclass `cls`: spelled by the
    field's flag (and `decls`, such as "-o"), passed to the command as `name`; its type,
    default and range come from the field. `param_type` converts a spelling the API does
    not take (a percentage, `auto`) to the field's value."""
    spec, rule = rules(cls)[name]
    kwargs: dict[str, Any] = {}
    if rule.kind == "flag":
        kwargs["is_flag"] = True
    elif rule.kind == "choice":
        kwargs["type"] = click.Choice(rule.choices)
    else:
        kwargs["type"] = param_type or TYPES.get(rule.kind, Share() if rule.kind == "share"
                                                 else str)
    if rule.kind == "wholes":
        kwargs["multiple"] = True
    # the default as the option spells it ("auto", "1%"), which click converts as it would
    # the user's text: so `--help` shows it as it is typed
    default = _shown(spec.default, rule.kind, kwargs.get("type"))
    if not (default is None or default is False or default == ()):  # (0 is a default)
        kwargs["default"], kwargs["show_default"] = default, True
    within = rule.range_text()
    if within and rule.kind == "bytes" and help.removesuffix(".").endswith(")"):
        # a size's help says its units in parentheses: the range joins them
        stop = "." if help.endswith(".") else ""
        help, within = f"{help.removesuffix('.')[:-1]}; {within}){stop}", ""
    if within:  # before the sentence's full stop
        stop = "." if help.endswith(".") else ""
        help = f"{help.removesuffix('.')} ({within}){stop}" if help else within
    return click.option(rule.flag, *decls, name, help=help, **kwargs, **extra)

"""nccl-tests' `-J FILE.json` output → tables (the text format is nccl_tests.py's): `{"version",
"args", "config": {"nthreads", "ngpus", "devices": [...]}, "results": [{"size", "count",
"type", "redop", "root", "out_of_place": {"time" | "cpu_time", "alg_bw", "bus_bw", "nwrong"}
| null, "in_place": {...}}]}` (nccl-tests src/util.cu, writeBenchmarkLinePreamble / Body)."""

from __future__ import annotations

import json
import re

from ..errors import SourceFile, Span
from ..limits import MAX_LOG_ROWS
from .nccl_tests import (
    MAX_SIZE,
    LogError,
    Measurement,
    Row,
    Table,
    collective_name,
    figure_problem,
)


def parse_json(source: SourceFile) -> tuple[Table, ...]:
    try:
        document = json.loads(source.text)
    except json.JSONDecodeError as exc:
        raise LogError(f"not valid JSON: {exc.msg}",
                       Span(source, exc.lineno, exc.colno, exc.lineno, exc.colno + 1)) from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise LogError(f"not valid JSON: {exc}", Span(source, 1, 1, 1, 2)) from None
    except RecursionError:  # the C scanner recurses per nesting level
        raise LogError(f"nested more than {MAX_JSON_DEPTH} levels deep; nccl-tests writes 4",
                       _offset_span(source, _too_deep(source.text))) from None
    top = Span(source, 1, 1, 1, 2)
    if not isinstance(document, dict) or not isinstance(document.get("results"), list):
        raise LogError("an nccl-tests JSON document is an object with a 'results' list", top)
    # Each result object's position, for errors: nccl-tests writes them as {"size":...}.
    starts = [m.start() for m in re.finditer(r'\{\s*"size"\s*:', source.text)]
    found = document.get("config")
    config: dict = found if isinstance(found, dict) else {}
    rows = []
    if len(document["results"]) > MAX_LOG_ROWS:
        raise LogError(f"{len(document['results']):,} results; a log is limited to "
                       f"{MAX_LOG_ROWS:,} rows", top)
    for k, result in enumerate(document["results"]):
        span = _offset_span(source, starts[k]) if k < len(starts) else top
        rows.append(_json_row(result, k, span))
    args = document.get("args")
    collective = (collective_name(args[0]) if isinstance(args, list) and args
                  and isinstance(args[0], str) else None)
    if not rows:
        return ()
    return (Table(tuple(rows), collective, _json_ranks(config), _json_fields(config), top),)


def _offset_span(source: SourceFile, offset: int) -> Span:
    line, col = source.position(offset)
    return Span(source, line, col, line, col + 1)


def _json_row(result: object, k: int, span: Span) -> Row:
    where = f"results[{k}]"
    if not isinstance(result, dict):
        raise LogError(f"{where} must be an object", span)
    for key in ("size", "count"):
        if not isinstance(result.get(key), int) or isinstance(result.get(key), bool) \
                or not 0 <= result[key] <= MAX_SIZE:
            raise LogError(f"{where}.{key} must be a whole number, got {result.get(key)!r}", span)
    root = result.get("root")
    root_text = str(root).strip() if root is not None else None
    if root_text is not None and not re.match(r"^-?\d+$", root_text):
        raise LogError(f"{where}.root must be a rank number, got {root!r}", span)
    placements = [_json_measurement(result.get(key), f"{where}.{key}", span)
                  for key in ("out_of_place", "in_place")]
    if placements == [None, None]:
        raise LogError(f"{where} has neither out_of_place nor in_place figures", span)
    return Row(result["size"], result["count"], str(result.get("type", "?")),
               result.get("redop") if isinstance(result.get("redop"), str) else None,
               int(root_text) if root_text is not None else None,
               placements[0], placements[1], span)


def _json_measurement(value: object, where: str, span: Span) -> Measurement | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise LogError(f"{where} must be an object or null", span)
    time_key = "time" if "time" in value else "cpu_time"
    numbers = {}
    for key in (time_key, "alg_bw", "bus_bw"):
        number = value.get(key)
        if not isinstance(number, (int, float)) or isinstance(number, bool):
            raise LogError(f"{where}.{key} must be a non-negative number, got {number!r}", span)
        try:
            problem = figure_problem("time" if key == time_key else key, float(number))
        except OverflowError:  # an integer of hundreds of digits
            problem = "must be a finite number"
        if problem:
            shown = repr(number) if len(repr(number)) < 30 else f"{len(repr(number))} digits"
            raise LogError(f"{where}.{key} {problem}, got {shown}", span)
        numbers[key] = float(number)
    wrong = value.get("nwrong")
    if isinstance(wrong, (int, float)) and not isinstance(wrong, bool):
        try:  # (the same rule as the text reader's #wrong column)
            problem = figure_problem("nwrong", float(wrong))
        except OverflowError:  # an integer of hundreds of digits
            problem = "must be a finite number"
        if problem:
            shown = repr(wrong) if len(repr(wrong)) < 30 else f"{len(repr(wrong))} digits"
            raise LogError(f"{where}.nwrong {problem}, got {shown}", span)
        return Measurement(numbers[time_key], numbers["alg_bw"], numbers["bus_bw"], float(wrong))
    return Measurement(numbers[time_key], numbers["alg_bw"], numbers["bus_bw"], None)


def _json_ranks(config: dict) -> int | None:
    devices = config.get("devices")
    threads, gpus = _count(config.get("nthreads")), _count(config.get("ngpus"))
    if isinstance(devices, list) and devices and threads and gpus:
        # One device entry per process (the first of its lines), each driving threads × gpus;
        # a count of 0 or less is ignored, as the text reader ignores a header it cannot use.
        return len(devices) * threads * gpus
    return None


def _count(value: object) -> int | None:
    """A count of the config (a whole number above 0), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 \
        else None


MAX_JSON_DEPTH = 200  # reported as the limit; json's C scanner itself recurses until ~1,000


def _too_deep(text: str) -> int:
    """The offset of the bracket opening level MAX_JSON_DEPTH + 1 (strings skipped), found
    only after the parser gave up, so a log of ordinary depth pays nothing for it."""
    depth = 0
    for match in re.finditer(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return match.start()
        elif token in "]}":
            depth -= 1
    return 0


def _json_fields(config: dict) -> tuple[tuple[str, str], ...]:
    return tuple((k, str(v)) for k, v in config.items() if not isinstance(v, (list, dict)))

"""Float output of a 10^6-point sweep: schedc's own formatter (`render.floats`) against the
library alternatives, on the same numbers, in the same window (the candidates take turns,
run after run), with the min and median of several runs and whether each gives the bytes
schedc writes today (Python's `repr` of every number: CSV rows joined by ",", JSON lists by
", ").

    PYTHONPATH=$PWD python benchmarks/floats.py [--repeat N] [--points N] [--only NAME ...]

The numbers are the seed's sweep (`sweep schedules/seed/nvlink_2x8.sched --vary
V=1KB:16GB:1000000`): the grid and each schedule's time, as `sweep --csv` and `--json`
format them. The candidates:

- schedc: `floats.csv_rows` / `floats.json_bytes` (Schubfach in NumPy array arithmetic);
- repr: Python's `repr` of each float (`floats.reference_rows`; for JSON `json.dumps`);
- numpy savetxt: `np.savetxt(fmt="%s")` (NumPy's own shortest repr of each float64);
- numpy format_float: `np.format_float_positional` / `format_float_scientific` per number,
  positional where repr is (1e-4 <= |v| < 1e16), trimmed as repr trims;
- numpy array2string: `np.array2string(floatmode="unique")` of each column (JSON only: it
  has no rows);
- orjson: `orjson.dumps` of the array (OPT_SERIALIZE_NUMPY), "," → ", " for JSON and the
  row brackets → new lines for CSV; its exponents ("1e16", "1.5e-7") and positional range
  (down to 1e-5) are not repr's;
- orjson + fix-ups: the same, then four regular-expression substitutions that rewrite those
  exponents and positional numbers as repr writes them;
- orjson + repr spliced: orjson's text split at the commas, repr's text put in place of each
  number orjson writes otherwise (|v| < 1e-4 or >= 1e16), joined again.
"""

from __future__ import annotations

import gc
import io
import json
import re
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np
from processes import ROOT, arguments, chosen

sys.path.insert(0, str(ROOT))

from schedc.render import floats  # noqa: E402

SEED = ROOT / "schedules/seed/nvlink_2x8.sched"


def sweep_columns(points: int) -> list[np.ndarray]:
    """The seed's sweep over V: the grid, then each schedule's times (as `sweep` computes them)."""
    from schedc.analysis.solve.sweep import parse_vary, sweep
    from schedc.session import Session
    session = Session.open(SEED)
    program = session.program
    timings = [session.timing(name) for name in session.selected()]
    result = sweep(program, timings, parse_vary(f"V=1KB:16GB:{points}", program), "log")
    return [np.asarray(result.values, dtype=float),
            *(np.asarray(t, dtype=float) for t in result.times.values())]


# ---- CSV rows --------------------------------------------------------------------------------


def csv_schedc(columns: list[np.ndarray]) -> bytes:
    return b"".join(floats.csv_rows(columns))


def csv_repr(columns: list[np.ndarray]) -> bytes:
    return floats.reference_rows(columns).encode()


def csv_savetxt(columns: list[np.ndarray]) -> bytes:
    out = io.BytesIO()
    np.savetxt(out, np.column_stack(columns), fmt="%s", delimiter=",")
    return out.getvalue()


def _format_float(v: float) -> str:
    """One float as repr lays it out, from NumPy's shortest-digit formatters."""
    if v == 0 or 1e-4 <= abs(v) < 1e16:
        return np.format_float_positional(v, unique=True, trim="0")
    return np.format_float_scientific(v, unique=True, trim="-", exp_digits=2)


def csv_format_float(columns: list[np.ndarray]) -> bytes:
    rows = zip(*(map(_format_float, c.tolist()) for c in columns))
    return ("\n".join(map(",".join, rows)) + "\n").encode()


def _orjson(array: np.ndarray) -> bytes:
    import orjson
    return orjson.dumps(array, option=orjson.OPT_SERIALIZE_NUMPY)


_POSITIVE_EXPONENT = re.compile(rb"e(\d)")  # orjson "1e16", repr "1e+16"
_ONE_DIGIT_EXPONENT = re.compile(rb"e-(\d)\b")  # orjson "1.5e-7", repr "1.5e-07"
_SMALL_DOTTED = re.compile(rb"([,\[]-?)0\.0000(\d)(\d+)")  # "0.000015", repr "1.5e-05"
_SMALL_DIGIT = re.compile(rb"([,\[]-?)0\.0000(\d)\b")  # "0.00001", repr "1e-05"


def _fix(text: bytes) -> bytes:
    """orjson's numbers (separated by "," after "[" or ",") rewritten as repr writes them."""
    text = _POSITIVE_EXPONENT.sub(rb"e+\1", text)
    text = _ONE_DIGIT_EXPONENT.sub(rb"e-0\1", text)
    text = _SMALL_DOTTED.sub(rb"\1\2.\3e-05", text)
    return _SMALL_DIGIT.sub(rb"\1\2e-05", text)


def _repr_where_orjson_differs(array: np.ndarray, separator: bytes) -> bytes:
    """orjson's numbers, but repr's for those it writes otherwise (|v| < 1e-4 but not 0,
    |v| >= 1e16; and every number of a row-major 2-d array, its rows flattened)."""
    flat = array.ravel()
    parts = _orjson(flat)[1:-1].split(b",")
    magnitude = np.abs(flat)
    differs = ((magnitude < 1e-4) & (magnitude > 0)) | (magnitude >= 1e16)
    for k, v in zip(np.flatnonzero(differs).tolist(), flat[differs].tolist()):
        parts[k] = repr(v).encode()
    if array.ndim == 1:
        return b"[" + separator.join(parts) + b"]"
    width = array.shape[1]
    for k in range(width - 1, len(parts), width):  # each row's last number ends its line
        parts[k] += b"\n"
    return b",".join(parts).replace(b"\n,", b"\n")


def _csv_of_orjson(text: bytes) -> bytes:
    return text[2:-2].replace(b"],[", b"\n") + b"\n"


def csv_orjson(columns: list[np.ndarray]) -> bytes:
    return _csv_of_orjson(_orjson(np.column_stack(columns)))


def csv_orjson_fixed(columns: list[np.ndarray]) -> bytes:
    return _csv_of_orjson(_fix(_orjson(np.column_stack(columns))))


def csv_orjson_spliced(columns: list[np.ndarray]) -> bytes:
    return _repr_where_orjson_differs(np.column_stack(columns), b",")


# ---- JSON lists ------------------------------------------------------------------------------


def json_schedc(columns: list[np.ndarray]) -> bytes:
    return b"\n".join(floats.json_bytes(c) for c in columns)


def json_repr(columns: list[np.ndarray]) -> bytes:
    return b"\n".join(json.dumps(c.tolist()).encode() for c in columns)


def json_array2string(columns: list[np.ndarray]) -> bytes:
    return b"\n".join(np.array2string(c, separator=", ", threshold=sys.maxsize,
                                      max_line_width=sys.maxsize, floatmode="unique").encode()
                      for c in columns)


def json_orjson(columns: list[np.ndarray]) -> bytes:
    return b"\n".join(_orjson(c).replace(b",", b", ") for c in columns)


def json_orjson_fixed(columns: list[np.ndarray]) -> bytes:
    return b"\n".join(_fix(_orjson(c)).replace(b",", b", ") for c in columns)


def json_orjson_spliced(columns: list[np.ndarray]) -> bytes:
    return b"\n".join(_repr_where_orjson_differs(c, b", ") for c in columns)


CANDIDATES: list[tuple[str, Callable[[list[np.ndarray]], bytes], Callable | None]] = [
    # (name, candidate, the reference whose bytes it must give)
    ("csv: schedc floats", csv_schedc, csv_repr),
    ("csv: repr", csv_repr, None),
    ("csv: numpy savetxt %s", csv_savetxt, csv_repr),
    ("csv: numpy format_float", csv_format_float, csv_repr),
    ("csv: orjson", csv_orjson, csv_repr),
    ("csv: orjson + fix-ups", csv_orjson_fixed, csv_repr),
    ("csv: orjson + repr spliced", csv_orjson_spliced, csv_repr),
    ("json: schedc floats", json_schedc, json_repr),
    ("json: json.dumps (repr)", json_repr, None),
    ("json: numpy array2string", json_array2string, json_repr),
    ("json: orjson", json_orjson, json_repr),
    ("json: orjson + fix-ups", json_orjson_fixed, json_repr),
    ("json: orjson + repr spliced", json_orjson_spliced, json_repr),
]


def main() -> None:
    parser = arguments(__doc__, "candidates")
    parser.set_defaults(repeat=3)
    parser.add_argument("--points", type=int, default=1_000_000, help="Points of the sweep.")
    options = parser.parse_args()
    columns = sweep_columns(options.points)
    picked = [c for c in CANDIDATES if chosen(c[0], options.only)]
    try:
        import orjson  # noqa: F401  (not one of schedc's dependencies)
    except ImportError:
        print("orjson is not installed (pip install orjson): its candidates are left out")
        picked = [c for c in picked if "orjson" not in c[0]]
    references: dict[Callable, bytes] = {}
    identical: dict[str, str] = {}
    for name, candidate, reference in picked:
        if reference is None:
            identical[name] = "(the reference)"
            continue
        if reference not in references:
            references[reference] = reference(columns)
        got, want = candidate(columns), references[reference]
        if got == want:
            identical[name] = "yes"
        else:
            a, b = got.replace(b"\n", b",").split(b","), want.replace(b"\n", b",").split(b",")
            first = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            shown = (a[first].strip(), b[first].strip()) if first < min(len(a), len(b)) else ()
            identical[name] = f"no: {shown[0].decode()} for {shown[1].decode()}" if shown \
                else "no: another length"
    del references
    walls: dict[str, list[float]] = {name: [] for name, _, _ in picked}
    gc.disable()  # the collector's passes would land on whichever candidate runs then
    for _ in range(options.repeat):
        for name, candidate, _ in picked:  # one run of each, in turn: the same window
            start = time.perf_counter()
            candidate(columns)
            walls[name].append(time.perf_counter() - start)
    gc.enable()
    print(f"{options.points:,} points x {len(columns)} columns ({options.points * len(columns):,} "
          f"numbers), {options.repeat} runs each, in turn")
    print(f"{'candidate':<28}{'min s':>8}{'median s':>10}{'points/s (min)':>16}  identical to repr")
    for name, _, _ in picked:
        low, middle = min(walls[name]), statistics.median(walls[name])
        print(f"{name:<28}{low:>8.3f}{middle:>10.3f}{options.points / low:>16,.0f}  {identical[name]}")


if __name__ == "__main__":
    main()

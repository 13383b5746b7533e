"""Python's `repr` of floats for whole arrays: the bytes `repr(float(v))` gives, 5 times faster.

Why hand-written: `benchmarks/floats.py` measured the library alternatives on the seed's
10^6-point sweep (4 columns, 4·10^6 numbers), in turns in one window, 3 runs each, on the
2-core machine at a load of about 8 (so every figure is several times its quiet value; the
ratios are what counts), min / median seconds:

    CSV rows                     min     median   bytes as schedc writes them
    this module                  3.54    4.20     yes
    repr of each number         17.2    19.0      (the reference)
    numpy savetxt "%s"          30.0    48.9      yes
    numpy format_float_*        33.2    47.1      yes (positional or scientific as repr)
    orjson                       2.02    3.47     no: 0.0000249375 for 2.49375e-05
    orjson + regex fix-ups      17.6    20.8      yes
    orjson + repr spliced in    15.8    16.1      yes
    JSON lists: this module 4.45 / 4.64; json.dumps 17.6 / 20.9; orjson 1.78 / 2.45 (not
    identical: 1e16 for 1e+16, 1.5e-7 for 1.5e-07, 0.00001 for 1e-05); orjson + fix-ups
    17.9 / 17.9; np.array2string(floatmode="unique") 3,845 points/s at 2·10^4 points, and not
    identical (one layout for the whole array: 1.00000000000e+03).

orjson alone is 1.8 times faster but writes other bytes than the `repr` digits schedc has
always written (its exponents, and positional numbers down to 1e-5); made identical, by
rewriting those numbers, it is as slow as repr, 5 times slower than this module, far from
the sweep target (10^6 points/s). So the routine stays.

How: Python's repr runs David Gay's bignum dtoa, about 0.65 µs a number on the development
machine, against about 0.13 µs here on one core. The shortest
decimal comes from `schubfach`; its 16 or 17 digits are written four at a time from a table,
trailing zeros NUL, and laid out as repr lays them out: positional for 1e-4 <= |v| < 1e16
("0.0001", "1000.0"), else "1.5e-05", "1e+16". Each number and its separator fill a slot of
four words of eight bytes (three when the block's numbers fit), the unused bytes NUL, and
the NULs are dropped at the end. The layout (the sign, where the point goes, the exponent) is
the same for a whole block of a sweep's numbers nearly always: it is then taken once, not
number by number. Zeros, subnormals, infinities and NaN are rare in a sweep: a block holding
one of the last three goes through `repr` itself.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import cache

import numpy as np

from .schubfach import shortest

__all__ = ["BLOCK", "csv_rows", "json_bytes", "json_list", "json_pieces", "reference_rows",
           "same_bits"]

BLOCK = 16_384  # numbers formatted at a time: the arrays stay in the cache
_U = np.uint64
_ZERO, _DOT = ord("0"), ord(".")
_TINY, _HUGE = np.finfo(np.float64).smallest_normal, np.finfo(np.float64).max


def reference_rows(columns: Sequence[Iterable[float]]) -> str:
    """The rows as `repr`, one per line, fields joined by commas: what `csv_rows` must equal."""
    rows = "\n".join(map(",".join, zip(*(map(repr, map(float, c)) for c in columns))))
    return rows + "\n" if rows else ""


def csv_rows(columns: Sequence[np.ndarray]) -> Iterator[bytes]:
    """The rows of equally long float columns as CSV, `repr` of each number, in pieces of
    ASCII bytes (for a file): `reference_rows`, encoded. A column with the same bits as an
    earlier one (two schedules of one formula) is formatted once."""
    arrays = [np.asarray(c, dtype=np.float64) for c in columns]
    rows = len(arrays[0]) if arrays else 0
    firsts = _first_equal(arrays)
    unique = sorted(set(firsts))
    step = max(1, BLOCK)
    newline = _U(ord(",") ^ ord("\n")) << _U(56)  # the last separator: a slot's last byte

    def piece(start: int) -> bytes:
        parts = [a[start:start + step] for a in arrays]
        slots = {j: _slots(parts[j], b",") for j in unique}
        columns = [column for column in (slots[first] for first in firsts) if column is not None]
        if len(columns) < len(firsts):  # a nan, an infinity or a subnormal: repr's block
            return reference_rows(parts).encode()
        words = np.empty((len(parts[0]), sum(c.shape[1] for c in columns)), dtype=_U)
        at = 0
        for column in columns:
            words[:, at:at + column.shape[1]] = column
            at += column.shape[1]
        words[:, -1] ^= newline
        return _text(words)

    return _in_order(piece, range(0, rows, step))


def _first_equal(arrays: Sequence[np.ndarray]) -> list[int]:
    """For each array, the index of the first one with the same length and bits."""
    firsts: list[int] = []
    for j, a in enumerate(arrays):
        firsts.append(next((i for i in range(j) if firsts[i] == i and same_bits(arrays[i], a)),
                           j))
    return firsts


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two float arrays hold the same numbers bit for bit (so -0.0 is not 0.0): the
    same text."""
    return a is b or (a.shape == b.shape and a.dtype == b.dtype == np.float64
                      and np.array_equal(a.view(_U), b.view(_U)))


def json_list(values: np.ndarray) -> str:
    """A list of floats as `json.dumps` writes it (`[1.0, 2.5e-05]`); JSON has no NaN or
    Infinity, so one raises ValueError as json.dumps(..., allow_nan=False) does."""
    return json_bytes(values).decode("ascii")


def json_bytes(values: np.ndarray) -> bytes:
    """`json_list`, as ASCII bytes."""
    return b"".join(json_pieces(values))


def json_pieces(values: np.ndarray) -> list[bytes]:
    """`json_list` as ASCII bytes, in pieces to be written one after another (no copy)."""
    values = np.asarray(values, dtype=np.float64).ravel()
    if not np.isfinite(values).all():
        raise ValueError("Out of range float values are not JSON compliant")
    block = BLOCK

    def piece(start: int) -> bytes:
        numbers = values[start:start + block]
        slots = _slots(numbers, b", ")
        if slots is None:  # a subnormal: repr's block
            return (", ".join(map(repr, numbers.tolist())) + ", ").encode()
        return _text(slots)

    pieces = [b"[", *_in_order(piece, range(0, len(values), block))]
    pieces[-1] = pieces[-1][:-2]  # the last ", " (or the "[" of an empty list)
    return [*pieces, b"]"] if len(pieces) > 1 else [b"[]"]


def _in_order(piece: Callable[[int], bytes], starts: range) -> Iterator[bytes]:
    """piece(start) for each start, in order, a few pieces ahead (memory stays bounded), on
    a thread per core (NumPy lets go of the GIL inside its loops) unless the cores are
    already busy: on the 2-core machine, 10^6 CSV rows took 0.80 s on two threads and 1.11 s
    on one at a load of 1.2, but 1.14 s against 0.93-1.09 s at a load of 2.2."""
    cores = min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                else os.cpu_count() or 1, 4)
    busy = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    workers = cores if busy < cores else 1
    if workers < 2 or len(starts) < 2:
        yield from map(piece, starts)
        return
    with ThreadPoolExecutor(workers) as pool:
        pending: deque[Future[bytes]] = deque()
        for start in starts:
            pending.append(pool.submit(piece, start))
            if len(pending) > 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def _text(words: np.ndarray) -> bytes:
    """The words' bytes in order, without the NULs."""
    return words.astype("<u8", copy=False).tobytes().translate(None, b"\0")


def _word(text: bytes) -> int:
    return int.from_bytes(text, "little")


@cache
def _tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ASCII digits of 0..9999, four to a uint64, then again with the trailing zeros NUL
    (for the last digits of a number, where repr shows none); and the exponents "e-05" of
    -400..400 (then "" at 801) with their lengths in bits."""
    four = [f"{i:04d}".encode() for i in range(10_000)]
    stripped = [text.rstrip(b"0").ljust(4, b"\0") for text in four]
    texts = [f"e{e:+03d}".encode() for e in range(-400, 401)] + [b""]
    return (np.array([_word(t) for t in four + stripped], dtype=_U),
            np.array([_word(t) for t in texts], dtype=_U),
            np.array([8 * len(t) for t in texts], dtype=_U))


POINTS = range(-4, 18)  # repr's decpt, clipped: below -3 and above 16 are scientific
NAMES = ("before0", "before1", "before2", "or0", "or1", "or2", "prefix", "shift", "exponent",
         "width")


@cache
def _layouts() -> dict[str, np.ndarray]:
    """repr's layout (format_float_short of Python/pystrtod.c, mode 'r') of the 17 digits
    (trailing zeros NUL) for each sign, decimal point position and, scientific, whether a
    digit follows the first, at row (sign 22 + point + 4) 2 + dotted: the bytes before the
    point (the rest move up one for "."), what is or-ed in ("." and the zeros of an integer
    part, "100.0"), "-" and "0.000" before, whether an exponent follows, and the most bytes
    the number takes before it."""
    rows: dict[str, list[int]] = {name: [] for name in NAMES}
    for negative in (False, True):
        for point in POINTS:
            for dotted in (False, True):
                scientific = not -3 <= point <= 16
                small = not scientific and point <= 0  # 0.000ddd
                positional = not scientific and not small  # ddd.ddd, "100.0"
                dot = point if positional else 1 if scientific and dotted else 24
                zeros = [*range(point), point + 1] if positional else []
                line = bytearray(24)
                if dot < 24:
                    line[dot] = _DOT
                for at in zeros:
                    line[at] |= _ZERO
                lead = ("-" if negative else "") + ("0." + "0" * -point if small else "")
                for i in range(3):
                    rows[f"before{i}"].append((1 << 8 * min(max(dot - 8 * i, 0), 8)) - 1)
                    rows[f"or{i}"].append(int.from_bytes(line[8 * i:8 * i + 8], "little"))
                rows["prefix"].append(_word(lead.encode()))
                rows["shift"].append(8 * len(lead))
                rows["exponent"].append(scientific)
                rows["width"].append(len(lead) + 17 + (dot < 24))  # the bytes before an exponent
    return {name: np.array(values, dtype=_U) for name, values in rows.items()}


def _slots(values: np.ndarray, separator: bytes) -> np.ndarray | None:
    """Each value's repr and then `separator` (1 or 2 bytes) in a slot of words of 8 bytes,
    NUL where unused: sign, "0.000" and the digits with the point among them from the slot's
    start, the exponent and the separator at its end. Three words when every number of the
    block fits (a layout of the whole block), else four. None if a value is neither a
    normal float nor zero (the caller uses repr)."""
    if not len(values):
        return np.zeros((0, 4), dtype=_U)
    magnitude = np.abs(values)
    if not magnitude.max() <= _HUGE:  # an infinity or a NaN
        return None
    zero = None
    if not magnitude.min() >= _TINY:
        zero = magnitude == 0
        if not ((magnitude >= _TINY) | zero).all():
            return None
        magnitude += zero  # 0 as 1.0, then set right
    digits, point, dotted = _digits(magnitude)
    if zero is not None:
        digits[0][zero], digits[1][zero], digits[2][zero], point[zero] = _ZERO, 0, 0, 1  # 0.0
    clipped = np.clip(point, POINTS[0], POINTS[-1])
    row = (clipped - POINTS[0]) * 2 + dotted
    row += np.signbit(values) * (len(POINTS) * 2)
    layout = _row_layout(row, clipped, dotted)
    line, carry = [], _U(0)
    for i in range(3):  # the digits; those from the point on move up a byte for "."
        before = digits[i] & layout["before" + str(i)]
        after = digits[i] ^ before
        line.append(before | (after << _U(8)) | carry | layout["or" + str(i)])
        carry = after >> _U(56)
    tail, bits = _tail(layout["exponent"], point, separator)  # right-aligned in the slot
    width = 3 if layout["width"].ndim == 0 and layout["width"] * 8 + bits.max() <= 192 else 4
    slots = np.empty((len(values), width), dtype=_U)
    prefix, shift = layout["prefix"], layout["shift"]
    if shift.ndim == 0 and shift == 0:  # no sign, no "0.000": the digits as they are
        slots[:, 0], slots[:, 1], slots[:, 2] = line
    else:
        slots[:, 0] = prefix | (line[0] << shift)
        slots[:, 1] = (line[1] << shift) | (line[0] >> (_U(64) - shift))
        slots[:, 2] = (line[2] << shift) | (line[1] >> (_U(64) - shift))
    if width == 3:
        slots[:, 2] |= tail << (_U(64) - bits)
    else:
        slots[:, 3] = tail << (_U(64) - bits)
    return slots


def _digits(x: np.ndarray) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """The 17 digits of each positive normal x's shortest decimal as ASCII in three words,
    trailing zeros NUL; repr's decimal point position (x = 0.DIGITS 10^point); and whether
    a digit follows the first."""
    f, k = shortest(x)
    digits_of = _tables()[0]
    long = f >= _U(10**16)  # f has 16 or 17 digits: pad it to 17
    padded = f * (_U(10) - _U(9) * long)
    point = k + 16 + long
    lead = padded // _U(10**16)
    rest = padded - lead * _U(10**16)
    high = rest // _U(10**8)
    low = rest - high * _U(10**8)
    a = high // _U(10**4)
    b = high - a * _U(10**4)
    c = low // _U(10**4)
    d = low - c * _U(10**4)
    # four digits each; a group followed by zeros only has its trailing zeros NUL (10^4 on)
    none_after_b = low == _U(0)
    a = digits_of.take(a + _U(10**4) * ((b == _U(0)) & none_after_b))
    b = digits_of.take(b + _U(10**4) * none_after_b)
    c = digits_of.take(c + _U(10**4) * (d == _U(0)))
    d = digits_of.take(d + _U(10**4))
    return [(lead + _U(_ZERO)) | (a << _U(8)) | ((b & _U(0xFF_FFFF)) << _U(40)),
            (b >> _U(24)) | (c << _U(8)) | ((d & _U(0xFF_FFFF)) << _U(40)),
            d >> _U(24)], point, rest != _U(0)


def _tail(scientific: np.ndarray, point: np.ndarray, separator: bytes
          ) -> tuple[np.ndarray | np.uint64, np.ndarray | np.uint64]:
    """The exponent ("e-05", or none) and the separator after it, as a word, and its bits
    (for each number, or one for all)."""
    _, exponents, lengths = _tables()
    after = _U(_word(separator))
    bits = _U(8 * len(separator))
    if scientific.ndim == 0 and not scientific:  # positional, all of them: no exponent
        return after, bits
    if scientific.ndim == 0 and point[0] == point.min() == point.max():  # one exponent
        at = point[0] + 399
        return exponents[at] | (after << lengths[at]), lengths[at] + bits
    exponent = 801 + scientific.astype(np.int64) * (point - 402)  # 801: none
    length = lengths.take(exponent)
    return exponents.take(exponent) | (after << length), length + bits


def _row_layout(row: np.ndarray, clipped: np.ndarray, dotted: np.ndarray
                ) -> dict[str, np.ndarray]:
    """The layout's words for each number: one row's scalars when all numbers have it, or
    differ only in being dotted (which only a scientific number shows: then only its "."
    differs, the digits after the first being NUL when there is none), else gathered."""
    layouts = _layouts()
    first, last = int(row.min()), int(row.max())
    if first // 2 != last // 2:
        return {name: table.take(row) for name, table in layouts.items()}
    layout = {name: table[last] for name, table in layouts.items()}
    if first != last and not POINTS[0] < clipped[0] < POINTS[-1]:  # "1e-05" and "1.5e-05"
        dot = layouts["or0"][last] ^ layouts["or0"][first]
        layout["or0"] = layouts["or0"][first] | (dotted * dot)
    return layout

"""Python's `repr` of floats for whole arrays: the bytes `repr(float(v))` gives, 20 times faster.

A sweep writes 10^6 rows of floats; Python's repr runs David Gay's bignum dtoa, about 0.7 µs a
number. Here the shortest decimal that reads back to the same float (the closest one when
several are as short, ties to an even digit — what repr picks) comes from Giulietti's
Schubfach algorithm ("The Schubfach way to render doubles", 2020; the method of JDK 19's
Double.toString) in 64-bit integer array arithmetic, and the digits are laid out as repr lays
them out: positional for 1e-4 <= |v| < 1e16 ("0.0001", "1000.0"), else "1.5e-05", "1e+16".
Each number is written into fixed columns of a byte matrix, the unused ones NUL, and the NULs
are dropped at the end. Zeros, subnormals, infinities and NaN are rare in a sweep: a block
holding one goes through `repr` itself.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import cache

import numpy as np

BLOCK = 16_384  # numbers formatted at a time: the arrays stay in the cache
K_MIN, K_MAX = -324, 292  # the decimal exponents k of the doubles' 2^q (10^k <= 2^q)
_U = np.uint64
_MASK_32 = _U(0xFFFF_FFFF)
_MASK_63 = _U((1 << 63) - 1)
_ZERO, _DOT, _MINUS, _PLUS, _E = (ord(c) for c in "0.-+e")


def reference_rows(columns: Sequence[Iterable[float]]) -> str:
    """The rows as `repr`, one per line, fields joined by commas: what `csv_rows` must equal."""
    rows = "\n".join(map(",".join, zip(*(map(repr, map(float, c)) for c in columns))))
    return rows + "\n" if rows else ""


def csv_rows(columns: Sequence[np.ndarray]) -> Iterator[str]:
    """The rows of equally long float columns as CSV text, `repr` of each number, in pieces:
    the same text as `reference_rows`."""
    arrays = [np.asarray(c, dtype=np.float64) for c in columns]
    rows = len(arrays[0]) if arrays else 0
    step = max(1, BLOCK // max(1, len(arrays)))
    separators = np.full(len(arrays), _word(b","), dtype=_U)
    separators[-1:] = _word(b"\n")

    def piece(start: int) -> str:
        parts = [a[start:start + step] for a in arrays]
        words = _words(np.column_stack(parts).ravel(), np.tile(separators, len(parts[0])))
        return reference_rows(parts) if words is None else _text(words)

    return _in_order(piece, range(0, rows, step))


def json_list(values: np.ndarray) -> str:
    """A list of floats as `json.dumps` writes it (`[1.0, 2.5e-05]`); JSON has no NaN or
    Infinity, so one raises ValueError as json.dumps(..., allow_nan=False) does."""
    values = np.asarray(values, dtype=np.float64).ravel()
    if not np.isfinite(values).all():
        raise ValueError("Out of range float values are not JSON compliant")
    comma = np.full(BLOCK, _word(b", "), dtype=_U)

    def piece(start: int) -> str:
        block = values[start:start + BLOCK]
        words = _words(block, comma[:len(block)])
        return ", ".join(map(repr, block.tolist())) + ", " if words is None else _text(words)

    return "[" + "".join(_in_order(piece, range(0, len(values), BLOCK)))[:-2] + "]"


def _in_order(piece: Callable[[int], str], starts: range) -> Iterator[str]:
    """piece(start) for each start, in order, made on every core the process may use (NumPy
    lets go of the GIL inside its loops) a few pieces ahead: memory stays bounded."""
    workers = min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                  else os.cpu_count() or 1, 4)
    if workers < 2 or len(starts) < 2:
        yield from map(piece, starts)
        return
    with ThreadPoolExecutor(workers) as pool:
        pending: deque[Future[str]] = deque()
        for start in starts:
            pending.append(pool.submit(piece, start))
            if len(pending) > 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def _text(words: np.ndarray) -> str:
    return words.astype("<u8", copy=False).tobytes().translate(None, b"\0").decode("ascii")


def _shortest(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(f, k) with f 10^k the shortest decimal that rounds to each positive normal x, closest
    to x among the shortest, ties to an even f (Schubfach, figure 7 of the paper)."""
    bits = x.view(_U)
    fraction = bits & _U((1 << 52) - 1)
    biased = (bits >> _U(52)).astype(np.int64)
    q = biased - 1075  # x = c 2^q
    c = fraction | _U(1 << 52)
    irregular = (fraction == 0) & (biased > 1)  # a power of two: the gap below is half
    odd = (c & _U(1)).astype(_U)
    cb = c << _U(2)
    cbl = cb - _U(2) + irregular.astype(_U)
    cbr = cb + _U(2)
    # floor(log10(2^q)) or floor(log10(3/4 2^q)); then h makes the scaled values 4 x 10^-k
    k = (q * 661_971_961_083 - np.where(irregular, 274_743_187_321, 0)) >> 41
    h = (q + ((-k * 913_124_641_741) >> 38) + 2).astype(_U)
    g1, g0 = (table[k - K_MIN] for table in _powers_of_ten())
    vb, vbl, vbr = _round_to_odd(g1, g0, [v << h for v in (cb, cbl, cbr)])
    s = vb >> _U(2)
    sp10 = (s // _U(10)) * _U(10)  # one digit fewer: the multiples of ten around s
    upin = vbl + odd <= sp10 << _U(2)
    wpin = ((sp10 + _U(10)) << _U(2)) + odd <= vbr
    uin = vbl + odd <= s << _U(2)
    win = ((s + _U(1)) << _U(2)) + odd <= vbr
    middle = (s << _U(2)) + _U(2)  # vb compared with 2 (s + t): which of s and t is closer
    away = (vb > middle) | ((vb == middle) & (s & _U(1) == _U(1)))
    # exactly one of sp10, sp10 + 10 in the interval: it; else s or t = s + 1 (the one in
    # it, or the closer)
    f = np.where(upin != wpin, sp10 + _U(10) * wpin,
                 s + np.where(uin != win, win, away))
    return f, k


@cache
def _powers_of_ten() -> tuple[np.ndarray, np.ndarray]:
    """For each k, g = floor(10^-k 2^-r) + 1 with 2^125 <= g - 1 < 2^126, split into its high
    and low 63 bits (section 9.8.3 of the paper), computed exactly with Python integers."""
    high, low = [], []
    for k in range(K_MIN, K_MAX + 1):
        e = -k
        log2 = (10**e).bit_length() - 1 if e >= 0 else -(10**-e).bit_length()  # floor(log2 10^e)
        r = log2 - 125  # beta = floor(10^e / 2^r)
        beta = (10 ** max(e, 0) << max(-r, 0)) // (10 ** max(-e, 0) << max(r, 0))
        assert 1 << 125 <= beta < 1 << 126
        g = beta + 1
        high.append(g >> 63)
        low.append(g & ((1 << 63) - 1))
    return np.array(high, dtype=_U), np.array(low, dtype=_U)


def _round_to_odd(g1: np.ndarray, g0: np.ndarray, cps: list[np.ndarray]) -> list[np.ndarray]:
    """rop(cp g 2^-127), rounded to odd (section 9.9 and figure 8 of the paper), for each cp,
    with the high halves of the 128-bit products made of 32-bit partial products."""
    g_parts = [(g & _MASK_32, g >> _U(32)) for g in (g0, g1)]
    scaled = []
    for cp in cps:
        b_lo, b_hi = cp & _MASK_32, cp >> _U(32)
        x1, y1 = (_multiply_high(a_lo, a_hi, b_lo, b_hi) for a_lo, a_hi in g_parts)
        z = ((g1 * cp) >> _U(1)) + x1  # g1 cp wraps: its low 64 bits
        scaled.append((y1 + (z >> _U(63))) | (((z & _MASK_63) + _MASK_63) >> _U(63)))
    return scaled


def _multiply_high(a_lo: np.ndarray, a_hi: np.ndarray, b_lo: np.ndarray,
                   b_hi: np.ndarray) -> np.ndarray:
    """The high 64 bits of the 128-bit products a b, given the 32-bit halves."""
    lh, hl = a_lo * b_hi, a_hi * b_lo
    carry = (((a_lo * b_lo) >> _U(32)) + (lh & _MASK_32) + (hl & _MASK_32)) >> _U(32)
    return a_hi * b_hi + (lh >> _U(32)) + (hl >> _U(32)) + carry


@cache
def _tables() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Four ASCII digits of 0..9999 (a uint64 each), their trailing zeros, the small numbers'
    prefixes "0.", "0.0", "0.00", "0.000", and the exponents "e-05" of -400..400 with lengths."""
    four = np.frombuffer("".join(f"{i:04d}" for i in range(10_000)).encode(), dtype="<u4")
    zeros = np.array([4 - len(f"{i:04d}".rstrip("0")) for i in range(10_000)], dtype=np.int64)
    prefixes = np.array([0] + [_word(("0." + "0" * z).encode()) for z in range(4)], dtype=_U)
    exponents = np.array([_word(f"e{e:+03d}".encode()) for e in range(-400, 401)], dtype=_U)
    return four.astype(_U), zeros, prefixes, exponents


def _word(text: bytes) -> int:
    return int.from_bytes(text, "little")


def _mask(size: np.ndarray) -> np.ndarray:
    """The low `size` bytes (0..8; beyond are clipped) of a word set."""
    return _masks()[np.minimum(np.maximum(size, 0), 8)]


@cache
def _masks() -> np.ndarray:
    return np.array([(1 << 8 * b) - 1 for b in range(9)], dtype=_U)


def _words(values: np.ndarray, separators: np.ndarray) -> np.ndarray | None:
    """Each value's repr followed by its separator (a word of 1-2 bytes), in 4 words of 8
    bytes, NUL where unused: sign, "0.000" and the digits with the point among them in
    three, the exponent and the separator in the fourth. None if a value is neither a
    normal float nor zero (the caller uses repr)."""
    magnitude = np.abs(values)
    zero = magnitude == 0
    if not (np.isfinite(magnitude).all()
            and ((magnitude >= np.finfo(np.float64).smallest_normal) | zero).all()):
        return None
    f, k = _shortest(np.where(zero, 1.0, magnitude))
    four, trailing, prefixes, exponents = _tables()
    long = f >= _U(10**16)  # f has 16 or 17 digits: pad it to 17
    padded = np.where(long, f, f * _U(10))
    point = k + 16 + long.astype(np.int64)  # the value is 0.DIGITS 10^point (repr's decpt)
    lead = padded // _U(10**16)
    rest = padded - lead * _U(10**16)
    high = rest // _U(10**8)
    low = rest - high * _U(10**8)
    a = high // _U(10**4)
    b = high - a * _U(10**4)
    c = low // _U(10**4)
    d = low - c * _U(10**4)
    a, b, c, d = (part.view(np.int64) for part in (a, b, c, d))  # below 10^4: indices
    count = np.where(d != 0, 17 - trailing[d], np.where(c != 0, 13 - trailing[c], np.where(
        b != 0, 9 - trailing[b], np.where(a != 0, 5 - trailing[a], 1))))
    a, b, c, d = four[a], four[b], four[c], four[d]
    digits = [(lead + _U(_ZERO)) | (a << _U(8)) | ((b & _U(0xFF_FFFF)) << _U(40)),
              (b >> _U(24)) | (c << _U(8)) | ((d & _U(0xFF_FFFF)) << _U(40)),
              d >> _U(24)]
    digits[0][zero], digits[1][zero], digits[2][zero] = _word(b"00"), 0, 0  # "0.0"
    count[zero], point[zero] = 1, 1
    scientific = (point < -3) | (point > 16)  # repr: 1e-05, 0.0001, 1e+16
    small = ~scientific & (point <= 0)
    positional = ~scientific & ~small
    shown = np.where(positional, np.maximum(count, point + 1), count)  # "100.0"
    dot = np.where(positional, point, np.where(scientific & (count > 1), 1, 24))  # 24: none
    line, carry = [], _U(0)
    for i in range(3):  # drop the digits not shown; the bytes from `dot` on move up for "."
        word = digits[i] & _mask(shown - 8 * i)
        below = _mask(dot - 8 * i)
        above = word & ~below
        line.append((word & below) | (above << _U(8)) | carry | np.where(
            dot >> 3 == i, _U(_DOT) << ((dot & 7) * 8).astype(_U), _U(0)))
        carry = above >> _U(56)
    negative = np.signbit(values)
    prefix = np.where(negative, _U(_MINUS), _U(0)) | (
        prefixes[np.where(small, 1 - point, 0)] << (8 * negative).astype(_U))
    shift = (8 * (negative + np.where(small, 2 - point, 0))).astype(_U)  # bytes before the digits
    words = np.empty((len(values), 4), dtype=_U)
    words[:, 0] = prefix | (line[0] << shift)
    words[:, 1] = (line[1] << shift) | (line[0] >> (_U(64) - shift))
    words[:, 2] = (line[2] << shift) | (line[1] >> (_U(64) - shift))
    exponent = np.where(scientific, exponents[np.clip(point - 1, -400, 400) + 400], _U(0))
    length = np.where(scientific, np.where(np.abs(point - 1) >= 100, 5, 4), 0)
    words[:, 3] = exponent | (separators << (8 * length).astype(_U))
    return words

"""Python's `repr` of floats for whole arrays: the bytes `repr(float(v))` gives, 4 times faster.

A sweep writes 10^6 rows of floats; Python's repr runs David Gay's bignum dtoa, about 0.65 µs
a number on the development machine, against about 0.17 µs here on one core. The shortest
decimal that reads back to the same float (the closest one when several are as short, ties
to an even digit: what repr picks) comes from Giulietti's Schubfach algorithm ("The Schubfach
way to render doubles", 2020; the method of JDK 19's Double.toString) in 64-bit integer array
arithmetic, and the digits are laid out as repr lays them out: positional for
1e-4 <= |v| < 1e16 ("0.0001", "1000.0"), else "1.5e-05", "1e+16". Each number is written
into four words of eight bytes, the unused bytes NUL, and the NULs are dropped at the end.
Zeros, subnormals, infinities and NaN are rare in a sweep: a block holding one of the last
three goes through `repr` itself.
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
_ZERO, _DOT = ord("0"), ord(".")


def reference_rows(columns: Sequence[Iterable[float]]) -> str:
    """The rows as `repr`, one per line, fields joined by commas: what `csv_rows` must equal."""
    rows = "\n".join(map(",".join, zip(*(map(repr, map(float, c)) for c in columns))))
    return rows + "\n" if rows else ""


def csv_rows(columns: Sequence[np.ndarray]) -> Iterator[bytes]:
    """The rows of equally long float columns as CSV, `repr` of each number, in pieces of
    ASCII bytes (for a file): `reference_rows`, encoded."""
    arrays = [np.asarray(c, dtype=np.float64) for c in columns]
    rows = len(arrays[0]) if arrays else 0
    step = max(1, BLOCK // max(1, len(arrays)))
    separators = np.full(len(arrays), _word(b","), dtype=_U)
    separators[-1:] = _word(b"\n")
    every = np.tile(separators, step)

    def piece(start: int) -> bytes:
        parts = [a[start:start + step] for a in arrays]
        words = _words(np.column_stack(parts).ravel(), every[:len(parts[0]) * len(arrays)])
        return reference_rows(parts).encode() if words is None else _text(words)

    return _in_order(piece, range(0, rows, step))


def json_list(values: np.ndarray) -> str:
    """A list of floats as `json.dumps` writes it (`[1.0, 2.5e-05]`); JSON has no NaN or
    Infinity, so one raises ValueError as json.dumps(..., allow_nan=False) does."""
    values = np.asarray(values, dtype=np.float64).ravel()
    if not np.isfinite(values).all():
        raise ValueError("Out of range float values are not JSON compliant")
    comma = np.full(BLOCK, _word(b", "), dtype=_U)

    def piece(start: int) -> bytes:
        block = values[start:start + BLOCK]
        words = _words(block, comma[:len(block)])
        return (", ".join(map(repr, block.tolist())) + ", ").encode() if words is None else (
            _text(words))

    pieces = [b"[", *_in_order(piece, range(0, len(values), BLOCK))]
    pieces[-1] = pieces[-1][:-2]  # the last ", " (or the "[" of an empty list)
    return b"".join([*pieces, b"]"]).decode("ascii") if len(pieces) > 1 else "[]"


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


def _pick(condition: np.ndarray, yes: np.ndarray, no: np.ndarray) -> np.ndarray:
    """np.where for uint64 without its branches (twice as fast on unpredictable conditions)."""
    return no + (yes - no) * condition


def _text(words: np.ndarray) -> bytes:
    """The words' bytes in order, without the NULs."""
    return words.astype("<u8", copy=False).tobytes().translate(None, b"\0")


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
    k = (q * 661_971_961_083 - irregular * 274_743_187_321) >> 41
    h = (q + ((-k * 913_124_641_741) >> 38) + 2).astype(_U)
    vb, vbl, vbr = _scaled(k - K_MIN, h, [cb, cbl, cbr], irregular)
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
    one = uin != win
    f = _pick(upin != wpin, sp10 + _U(10) * wpin, s + ((one & win) | (~one & away)))
    return f, k


def _scaled(row: np.ndarray, h: np.ndarray, cbs: list[np.ndarray],
            irregular: np.ndarray) -> list[np.ndarray]:
    """vb, vbl, vbr = rop(g cb' 2^h 2^-127) for cb' = cb, cbl, cbr. From the top 64 bits t of
    g first: g cp 2^-127 = (t cp + e) 2^-65 with 0 <= e < cp <= cbr 2^h < 2^60, so t cp alone
    gives the floor, and a non-zero remainder, unless its low 65 bits are 0 or within cbr 2^h
    of 2^65; those few (1 in 60 to 80 of a sweep's numbers) get the paper's rop from all of
    g. t cbl and t cbr are t cb minus and plus t shifted: one 128-bit product serves three."""
    top, top_lo, top_hi = (table[row] for table in _powers_of_ten()[2:])
    cp = cbs[0] << h
    hi = _multiply_high(top_lo, top_hi, cp & _MASK_32, cp >> _U(32))
    lo = top * cp  # wraps: the low 64 bits
    products = [(hi, lo)]
    for step, sign in ((h + _U(1) - irregular.astype(_U), -1), (h + _U(1), 1)):  # 2 or 1 ulp
        shifted_lo, shifted_hi = top << step, top >> (_U(64) - step)
        if sign < 0:
            products.append((hi - shifted_hi - (lo < shifted_lo), lo - shifted_lo))
        else:
            total = lo + shifted_lo
            products.append((hi + shifted_hi + (total < lo), total))
    scaled, unsure = [], np.zeros(len(row), dtype=bool)
    near = _U(0) - (cbs[2] << h)  # 2^64 - the largest cp: a low part above it may carry
    for high, low in products:
        # the low 65 bits R = (high & 1) 2^64 + low: 0 (or 2^64, needlessly) or a carry near
        unsure |= ((low >= near) & (high << _U(63)).astype(bool)) | (low == _U(0))
        scaled.append((high >> _U(1)) | _U(1))
    where = np.flatnonzero(unsure)
    if len(where):
        g1, g0 = (table[row[where]] for table in _powers_of_ten()[:2])
        exact = _round_to_odd(g1, g0, [cb[where] << h[where] for cb in cbs])
        for values, better in zip(scaled, exact):
            values[where] = better
    return scaled


@cache
def _powers_of_ten() -> tuple[np.ndarray, ...]:
    """For each k, g = floor(10^-k 2^-r) + 1 with 2^125 <= g - 1 < 2^126 (section 9.8.3 of
    the paper), computed exactly with Python integers: its high and low 63 bits, its top 64
    bits and their 32-bit halves."""
    gs = []
    for k in range(K_MIN, K_MAX + 1):
        e = -k
        log2 = (10**e).bit_length() - 1 if e >= 0 else -(10**-e).bit_length()  # floor(log2 10^e)
        r = log2 - 125  # beta = floor(10^e / 2^r)
        beta = (10 ** max(e, 0) << max(-r, 0)) // (10 ** max(-e, 0) << max(r, 0))
        assert 1 << 125 <= beta < 1 << 126
        gs.append(beta + 1)
    return tuple(np.array(part, dtype=_U) for part in (
        [g >> 63 for g in gs], [g & ((1 << 63) - 1) for g in gs], [g >> 62 for g in gs],
        [(g >> 62) & 0xFFFF_FFFF for g in gs], [g >> 94 for g in gs]))


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
    """Four ASCII digits of 0..9999 (a uint64 each), their trailing zeros, and the exponents
    "e-05" of -400..400 (then "" at 801) with their lengths."""
    four = np.frombuffer("".join(f"{i:04d}" for i in range(10_000)).encode(), dtype="<u4")
    zeros = np.array([4 - len(f"{i:04d}".rstrip("0")) for i in range(10_000)], dtype=np.int8)
    texts = [f"e{e:+03d}".encode() for e in range(-400, 401)] + [b""]
    return (four.astype(_U), zeros, np.array([_word(t) for t in texts], dtype=_U),
            np.array([len(t) for t in texts], dtype=np.int64))


LAYOUT_POINTS = range(-4, 18)  # repr's decpt, clipped: below -3 and above 16 are scientific


@cache
def _layouts() -> dict[str, np.ndarray]:
    """repr's layout (format_float_short of Python/pystrtod.c, mode 'r') for each decimal point
    position and number of significant digits, row (point + 4) 18 + count: which digits
    show before and after the point (24: none), "-" and "0.000" before; as word masks and
    words."""
    rows: dict[str, list[int]] = {name: [] for name in (
        "scientific", "before0", "before1", "before2", "after0", "after1", "after2",
        "dot0", "dot1", "dot2", "prefix", "shift")}
    for negative in (False, True):
        for point in LAYOUT_POINTS:
            for count in range(18):
                scientific = not -3 <= point <= 16
                small = not scientific and point <= 0  # 0.000ddd
                positional = not scientific and not small  # ddd.ddd, "100.0"
                shown = max(count, point + 1) if positional else count
                dot = point if positional else 1 if scientific and count > 1 else 24
                lead = ("-" if negative else "") + ("0." + "0" * -point if small else "")
                rows["scientific"].append(scientific)
                for i in range(3):
                    shown_mask = (1 << 8 * min(max(shown - 8 * i, 0), 8)) - 1
                    before = (1 << 8 * min(max(dot - 8 * i, 0), 8)) - 1  # bytes before the point
                    rows[f"before{i}"].append(shown_mask & before)
                    rows[f"after{i}"].append(shown_mask & ~before)
                    rows[f"dot{i}"].append(_DOT << 8 * (dot % 8) if dot // 8 == i else 0)
                rows["prefix"].append(_word(lead.encode()))
                rows["shift"].append(8 * len(lead))
    return {name: np.array(values, dtype=bool if name == "scientific" else _U)
            for name, values in rows.items()}


def _word(text: bytes) -> int:
    return int.from_bytes(text, "little")


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
    f, k = _shortest(magnitude + zero)  # 0 as 1.0, then set right
    four, trailing, exponents, lengths = _tables()
    long = f >= _U(10**16)  # f has 16 or 17 digits: pad it to 17
    padded = _pick(long, f, f * _U(10))
    point = k + 16 + long  # the value is 0.DIGITS 10^point (repr's decpt)
    lead = padded // _U(10**16)
    rest = padded - lead * _U(10**16)
    high = rest // _U(10**8)
    low = rest - high * _U(10**8)
    a = high // _U(10**4)
    b = high - a * _U(10**4)
    c = low // _U(10**4)
    d = low - c * _U(10**4)
    a, b, c, d = (part.view(np.int64) for part in (a, b, c, d))  # below 10^4: indices
    zeros_high = trailing[b] + (b == 0) * trailing[a]  # the trailing zero digits: 0 is 4
    count = 17 - (trailing[d] + (d == 0) * trailing[c] + (low == _U(0)) * zeros_high)
    a, b, c, d = four[a], four[b], four[c], four[d]
    digits = [(lead + _U(_ZERO)) | (a << _U(8)) | ((b & _U(0xFF_FFFF)) << _U(40)),
              (b >> _U(24)) | (c << _U(8)) | ((d & _U(0xFF_FFFF)) << _U(40)),
              d >> _U(24)]
    digits[0][zero], digits[1][zero], digits[2][zero] = _word(b"00"), 0, 0  # "0.0"
    count[zero], point[zero] = 1, 1
    layouts = _layouts()
    row = ((np.minimum(np.maximum(point, LAYOUT_POINTS[0]), LAYOUT_POINTS[-1])
            - LAYOUT_POINTS[0]) * 18 + count)
    line, carry = [], _U(0)
    for i in range(3):  # the digits shown; those from the point on move up a byte for "."
        after = digits[i] & layouts[f"after{i}"][row]
        line.append((digits[i] & layouts[f"before{i}"][row]) | (after << _U(8)) | carry
                    | layouts[f"dot{i}"][row])
        carry = after >> _U(56)
    row += np.signbit(values) * (len(LAYOUT_POINTS) * 18)
    prefix, shift = layouts["prefix"][row], layouts["shift"][row]
    words = np.empty((len(values), 4), dtype=_U)
    words[:, 0] = prefix | (line[0] << shift)
    words[:, 1] = (line[1] << shift) | (line[0] >> (_U(64) - shift))
    words[:, 2] = (line[2] << shift) | (line[1] >> (_U(64) - shift))
    exponent = 801 + layouts["scientific"][row] * (point - 402)  # 801: none
    words[:, 3] = exponents[exponent] | (separators << (lengths[exponent] * 8).astype(_U))
    return words

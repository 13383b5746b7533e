"""The shortest decimal of each of an array of doubles, in 64-bit integer array arithmetic:
Giulietti's Schubfach algorithm ("The Schubfach way to render doubles", 2020; the method of
JDK 19's Double.toString), for `floats`, which lays the digits out as Python's repr does (kept
because no library gives those bytes as fast: the figures are in `floats`' docstring).

The shortest decimal that reads back to the same float (the closest one when several are as
short, ties to an even digit) is what repr picks. Each step is one NumPy operation over the
whole block; a block without powers of two (nearly every block) skips their case.
"""

from __future__ import annotations

from functools import cache

import numpy as np

K_MIN, K_MAX = -324, 292  # the decimal exponents k of the doubles' 2^q (10^k <= 2^q)
_U = np.uint64
_MASK_32 = _U(0xFFFF_FFFF)
_MASK_63 = _U((1 << 63) - 1)


def shortest(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(f, k) with f 10^k the shortest decimal that rounds to each positive normal x, closest
    to x among the shortest, ties to an even f (Schubfach, figure 7 of the paper)."""
    bits = x.view(_U)
    fraction = bits & _U((1 << 52) - 1)
    biased = (bits >> _U(52)).view(np.int64)
    q = biased - 1075  # x = c 2^q
    cb = (fraction | _U(1 << 52)) << _U(2)
    odd = bits & _U(1)
    # a power of two (rare: a block of none skips it): the gap below is half
    irregular = (fraction == _U(0)) & (biased > 1) if (fraction == _U(0)).any() else None
    # floor(log10(2^q)) or floor(log10(3/4 2^q)); then h makes the scaled values 4 x 10^-k
    if irregular is None:
        cbl, k = cb - _U(2), (q * 661_971_961_083) >> 41
    else:
        cbl = cb - _U(2) + irregular
        k = (q * 661_971_961_083 - irregular * 274_743_187_321) >> 41
    h = (q + ((-k * 913_124_641_741) >> 38) + 2).view(_U)
    vb, vbl, vbr = _scaled(k - K_MIN, h, [cb, cbl, cb + _U(2)], irregular)
    s = vb >> _U(2)
    s4 = vb & ~_U(3)  # s << 2
    sp10 = (s // _U(10)) * _U(10)  # one digit fewer: the multiples of ten around s
    low, high = vbl + odd, vbr - odd  # the interval's ends, as the candidates << 2 compare
    sp10_4 = sp10 << _U(2)
    upin, wpin = low <= sp10_4, sp10_4 + _U(40) <= high
    uin, win = low <= s4, s4 + _U(4) <= high
    # vb against 2 (s + t) = s4 + 2: t = s + 1 is closer above, or as close when s is odd
    away = (vb & _U(3)) + (s & _U(1)) > _U(2)
    # exactly one of sp10, sp10 + 10 in the interval: it; else s or t = s + 1 (the one in
    # it, or the closer)
    f = s + (away ^ ((uin != win) & (win ^ away)))
    return f + (sp10 + _U(10) * wpin - f) * (upin != wpin), k  # arithmetic: no masked copy


def _scaled(row: np.ndarray, h: np.ndarray, cbs: list[np.ndarray],
            irregular: np.ndarray | None) -> list[np.ndarray]:
    """vb, vbl, vbr = rop(g cb' 2^h 2^-127) for cb' = cb, cbl, cbr. From the top 64 bits t of
    g first: g cp 2^-127 = (t cp + e) 2^-65 with 0 <= e < cp <= cbr 2^h < 2^60, so t cp alone
    gives the floor, and a non-zero remainder, unless its low 65 bits are 0 or within cbr 2^h
    of 2^65; those few (1 in 25 to 80 of a sweep's numbers) get the paper's rop from all of
    g. t cbl and t cbr are t cb minus and plus t shifted: one 128-bit product serves three.
    `irregular` None: no power of two among them."""
    top = _powers_of_ten()[2].take(row)
    top_lo, top_hi = top & _MASK_32, top >> _U(32)  # arithmetic: cheaper than gathers
    cp = cbs[0] << h
    hi = _multiply_high(top_lo, top_hi, cp & _MASK_32, cp >> _U(32))
    lo = top * cp  # wraps: the low 64 bits
    products = [(hi, lo)]
    up = h + _U(1)  # 2 ulp: t shifted
    shifted_lo, shifted_hi = top << up, top >> (_U(64) - up)
    if irregular is not None:  # 1 ulp below a power of two
        down = up - irregular
        below_lo, below_hi = top << down, top >> (_U(64) - down)
    else:
        below_lo, below_hi = shifted_lo, shifted_hi
    products.append((hi - below_hi - (lo < below_lo), lo - below_lo))
    total = lo + shifted_lo
    products.append((hi + shifted_hi + (total < lo), total))
    scaled, unsure = [], np.zeros(len(row), dtype=bool)
    # the low 65 bits R = (high & 1) 2^64 + low, halved: R / 2 = 0 (R 0, or 1 needlessly), or
    # at or above 2^64 - cbr 2^h / 2 - 1, where adding e < cbr 2^h may carry
    edge = _U(0) - ((cbs[2] << h) >> _U(1)) - _U(2)  # ... - 1, less 1 for the wrap of 0
    for high, low in products:
        unsure |= ((high << _U(63)) | (low >> _U(1))) - _U(1) >= edge
        scaled.append((high >> _U(1)) | _U(1))
    where = np.flatnonzero(unsure)
    if len(where):
        g1, g0 = (table.take(row.take(where)) for table in _powers_of_ten()[:2])
        exact = _round_to_odd(g1, g0, [cb.take(where) << h.take(where) for cb in cbs])
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
    """The high 64 bits of the 128-bit products a b, given the 32-bit halves, for b < 2^60
    (every cp): a_lo b_hi < 2^60 then takes the carries without overflowing."""
    lh, hl = a_lo * b_hi, a_hi * b_lo
    middle = lh + (hl & _MASK_32) + ((a_lo * b_lo) >> _U(32))
    return a_hi * b_hi + (hl >> _U(32)) + (middle >> _U(32))

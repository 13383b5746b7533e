"""Many byte records of one shape, built with NumPy: the bulk encoder of Chakra's nodes
(chakra.py). A record is a sequence of parts — constant bytes, a choice among constants, a
base-128 varint, a decimal number, a run of consecutive integers as varints, a nested
length-delimited record — each of a length that varies from record to record.

Each part is given a block of columns of a (records × width) byte matrix, as wide as its
longest instance, and a mask of the bytes each record uses there; `encode` keeps the masked
bytes, row after row (one pass of NumPy's boolean indexing). Writing whole columns is what
makes it fast: the bytes of a part sit at a different offset in every record, but at the
same column of its block.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

Fill = Callable[[np.ndarray, np.ndarray], None]  # (bytes, mask) of the part's columns


@dataclass(frozen=True)
class _Part:
    width: int
    lengths: np.ndarray  # bytes per record
    fill: Fill


_VARINT_STEPS = np.array([1 << bits for bits in range(7, 64, 7)], dtype=np.uint64)
_POWERS_OF_TEN = np.array([10**k for k in range(1, 19)], dtype=np.int64)


def varint_lengths(values: np.ndarray) -> np.ndarray:
    """Bytes of each value's varint: one, and one more per 7 bits past the first 7."""
    return np.searchsorted(_VARINT_STEPS, values.astype(np.uint64), side="right") + 1


def _varint_fill(values: np.ndarray, lengths: np.ndarray) -> Fill:
    def fill(data: np.ndarray, mask: np.ndarray) -> None:
        for j in range(data.shape[1]):
            data[:, j] = ((values >> (7 * j)) & 0x7F) | np.where(lengths > j + 1, 0x80, 0)
            mask[:, j] = lengths > j
    return fill


class Records:
    """`count` records, built by appending parts in order."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.parts: list[_Part] = []

    def lengths(self) -> np.ndarray:
        """Bytes of each record (summed when asked: parts are only ever appended, and a
        record's sum is asked of once by its parent)."""
        total = np.zeros(self.count, dtype=np.int64)
        for part in self.parts:
            total += part.lengths
        return total

    def const(self, data: bytes, present: np.ndarray | None = None) -> Records:
        """The same bytes in every record (or in those `present` marks)."""
        return self.choice([data], np.zeros(self.count, dtype=np.int64), present)

    def choice(self, options: list[bytes], index: np.ndarray,
               present: np.ndarray | None = None) -> Records:
        """options[index[r]] in record r (nothing where not `present`)."""
        sizes = np.array([len(o) for o in options], dtype=np.int64)
        lengths = sizes[index] if present is None else np.where(present, sizes[index], 0)
        width = int(sizes.max(initial=0))
        table = np.zeros((len(options) + 1, width), dtype=np.uint8)  # the last: absent
        used = np.zeros((len(options) + 1, width), dtype=bool)
        for k, option in enumerate(options):
            table[k, :len(option)] = np.frombuffer(option, np.uint8)
            used[k, :len(option)] = True
        row = index if present is None else np.where(present, index, len(options))

        def fill(data: np.ndarray, mask: np.ndarray) -> None:
            if len(options) == 1 and present is None:  # the same bytes in every row
                data[:] = table[0]
                mask[:] = True
            else:
                data[:] = table[row]
                mask[:] = used[row]
        self.parts.append(_Part(width, lengths, fill))
        return self

    def varint(self, values: np.ndarray, present: np.ndarray | None = None) -> Records:
        """Each record's value (≥ 0) as a varint (none where not `present`)."""
        lengths = varint_lengths(values)
        if present is not None:
            lengths = np.where(present, lengths, 0)
        self.parts.append(_Part(int(lengths.max(initial=0)), lengths,
                                _varint_fill(values, lengths)))
        return self

    def decimal(self, values: np.ndarray) -> Records:
        """Each record's value (≥ 0) in decimal ASCII digits."""
        digits = np.searchsorted(_POWERS_OF_TEN, values, side="right") + 1

        def fill(data: np.ndarray, mask: np.ndarray) -> None:
            powers = 10 ** np.arange(19, dtype=np.int64)
            for j in range(data.shape[1]):  # digit j from the left, where there is one
                data[:, j] = (values // powers[np.maximum(digits - 1 - j, 0)]) % 10 + 48
                mask[:, j] = digits > j
        self.parts.append(_Part(int(digits.max(initial=0)), digits, fill))
        return self

    def runs(self, first: np.ndarray, count: np.ndarray) -> Records:
        """first[r], first[r] + 1, ..., first[r] + count[r] - 1 as varints (the payload of a
        packed field of consecutive ids)."""
        most = int(count.max(initial=0))
        values = first[:, None] + np.arange(most)  # (records × most): the ids, then unused
        each = np.where(np.arange(most) < count[:, None], varint_lengths(values.ravel())
                        .reshape(values.shape), 0)
        lengths = each.sum(axis=1)
        width = int(each.max(initial=0))

        def fill(data: np.ndarray, mask: np.ndarray) -> None:
            for k in range(most):  # the k-th id of each record, in its own sub-block
                _varint_fill(values[:, k], each[:, k])(data[:, k * width:(k + 1) * width],
                                                       mask[:, k * width:(k + 1) * width])
        self.parts.append(_Part(most * width, lengths, fill))
        return self

    def nested(self, head: bytes, inner: Records, present: np.ndarray | None = None) -> Records:
        """`head`, then the varint length of `inner`'s record, then it (a length-delimited
        field); nothing where not `present` (where `inner` must be empty)."""
        size = inner.lengths()
        assert present is None or not size[~present].any(), "an absent field has no bytes"
        self.const(head, present).varint(size, present)
        self.parts += inner.parts
        return self

    def width(self) -> int:
        return sum(p.width for p in self.parts)

    def encode(self, framed: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """The records one after another, each after its length as a varint when `framed`
        (Chakra's stream); returns the bytes and where each record ends."""
        whole = Records(self.count)
        if framed:
            whole.varint(self.lengths())
        whole.parts += self.parts
        width = whole.width()
        # Column-major: a part writes whole columns, each then contiguous.
        data = np.zeros((self.count, width), dtype=np.uint8, order="F")
        mask = np.zeros((self.count, width), dtype=bool, order="F")
        at = 0
        for part in whole.parts:
            part.fill(data[:, at:at + part.width], mask[:, at:at + part.width])
            at += part.width
        return np.ascontiguousarray(data)[np.ascontiguousarray(mask)], np.cumsum(whole.lengths())

"""A buffer region as text, in the form a schedule writes it (`[3/16, 1/4) (part 3 of 16)`),
or by the chunks' own names when an imported MSCCL algorithm has separate buffers: for
`emit`, verdicts and counterexamples."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .ir import BufferLayout, Region


def region_text(region: Region | None) -> str:
    """`[1/4, 1/2)`; `-` for none, as a `send` moves a message rather than part of the buffer."""
    return "-" if region is None else f"[{region[0]}, {region[1]})"


def part_text(region: Region) -> str:
    """`[3/16, 1/4) (part 3 of 16)`: the part form too, when the region is one, as a schedule
    would have written it."""
    start, end = region
    text = region_text(region)
    width = end - start
    if width.numerator == 1 and (start / width).denominator == 1:
        return text + (" (all)" if width == 1 else f" (part {start / width} of {width.denominator})")
    return text


def buffer_text(region: Region, layout: BufferLayout | None = None) -> str:
    """`part_text`, or with separate buffers the chunks' own names (`i[3]`, `s[0..1]`)."""
    if layout is None or not layout.names:
        return part_text(region)
    first = int(region[0] * layout.chunks)  # floor: a piece inside a chunk names the chunk
    last = max(first, -int(-region[1] * layout.chunks) - 1)
    name = layout.names[first] if first == last else f"{layout.names[first]} .. {layout.names[last]}"
    whole = (region[0] * layout.chunks).denominator == 1 and (region[1] * layout.chunks).denominator == 1
    return name if whole else f"part of {name}"

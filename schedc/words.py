"""Counted nouns in messages: "1 round", "30 rounds", "1 thread block", "11 switches".

One helper, so that no message says "1 rounds" or "16 gpu":

    >>> counted(1, "round"), counted(30, "round"), counted(11, "switch")
    ('1 round', '30 rounds', '11 switches')
    >>> counted(2_000_000, "transfer"), counted(1, "thread block"), counted(2, "policy")
    ('2,000,000 transfers', '1 thread block', '2 policies')
"""

from __future__ import annotations

# English plurals the messages need that are not noun + "s".
_IRREGULAR = {"child": "children", "matrix": "matrices", "vertex": "vertices"}


def plural(noun: str) -> str:
    """The plural of `noun` (its last word inflected: "thread block" → "thread blocks")."""
    head, _, last = noun.rpartition(" ")
    if last in _IRREGULAR:
        word = _IRREGULAR[last]
    elif last.endswith(("s", "x", "z", "ch", "sh")):
        word = last + "es"
    elif last.endswith("y") and last[-2:-1] not in ("a", "e", "i", "o", "u"):
        word = last[:-1] + "ies"
    else:
        word = last + "s"
    return f"{head} {word}" if head else word


def counted(count: int, noun: str) -> str:
    """`count` (with thousands separators) and `noun`, singular for exactly one."""
    return f"{count:,} {noun if count == 1 else plural(noun)}"

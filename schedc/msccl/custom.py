"""msccl-tools' `custom` collectives that schedc knows, by the name the program gives them.

An MSCCL file says `coll="custom"` for a collective defined by the msccl-tools program that
wrote it (a `Collective` subclass with its own `init_buffers` and `check`): the file does
not say what it computes. msccl-tools writes the program's name as `<algo name>`
(msccl/language/ir.py:321 `algo_elem.set('name', program.name)`), so the name is what
identifies it. Each known one, with its postcondition from msccl-tools' own `check`
(microsoft/msccl-tools at 030a750fc56e03fb863ffe48268672d84d4cdc7b):

| name | schedc's collective | postcondition (msccl-tools' `check`) |
|---|---|---|
| `alltonext-forward` | `alltonext` | `o_r[c] = i_{r-1}[c]`, r ≥ 1 (examples/mscclang/alltonext_forward.py:28-39, `init_buffers` :12-24) |
| `alltonext-backwards` | `alltoprev` | `o_r[c] = i_{r+1}[c]`, r ≤ p-2 (examples/mscclang/alltonext_backward.py:27-37, :12-24) |

for every chunk c < nchunksperloop (msccl-tools' `chunk_factor`, times the instances). Any
other custom collective is refused by name: schedc cannot know what it must compute.
"""

from __future__ import annotations

from ..errors import ElaborationError, Span

CUSTOM = {"alltonext-forward": "alltonext", "alltonext-backwards": "alltoprev"}


def custom_collective(name: str, span: Span) -> str:
    """schedc's collective for msccl-tools' custom collective `name`, or a clear refusal."""
    if name in CUSTOM:
        return CUSTOM[name]
    known = ", ".join(f"'{n}'" for n in CUSTOM)
    raise ElaborationError(
        f"algo: coll \"custom\" is a collective defined by the program that wrote the file, and "
        f"the file does not say what it computes; schedc knows msccl-tools' {known} (by the "
        f"<algo> name), not '{name}'", span)

"""What `elaborate.structure` finds: each dependence on a structural param with its source
line, and the `Structure` of a schedule (its boundaries, period and powers of two) that
`analysis.scale` fits piece by piece."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Dependence:
    kind: str  # "boundary" | "period" | "powers of two" | "checked"
    line: str  # file:line
    text: str  # the source line, stripped
    detail: str  # what it gives: "a boundary at p = 49", "period 9", ...


@dataclass(frozen=True)
class Structure:
    """What the source says about a schedule's dependence on the param."""

    param: str
    dependences: tuple[Dependence, ...] = ()
    boundaries: tuple[int, ...] = ()  # n values where a new piece starts
    period: int = 1
    powers: bool = False

    @property
    def regular(self) -> bool:
        return not self.dependences

    @property
    def notes(self) -> tuple[str, ...]:
        """One note per source line, with what each of its dependences gives."""
        by_line: dict[tuple[str, str], list[str]] = {}
        for d in self.dependences:
            details = by_line.setdefault((d.line, d.text), [])
            if d.detail not in details:
                details.append(d.detail)
        return tuple(f"{line}: `{text}`: {'; '.join(details)}"
                     for (line, text), details in by_line.items())

    def next_start(self, n: int) -> int | None:
        return next((b for b in self.boundaries if b > n), None)

    def why(self, n: int) -> str:
        causes = [d for d in self.dependences if d.kind == "boundary" and f" {n}" in d.detail]
        shown = causes[0] if causes else None
        return (f"{self.param} = {n} is a boundary read from the source"
                + (f" ({shown.line}: `{shown.text}`)" if shown else ""))

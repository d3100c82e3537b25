"""One line of a README figure table, declared by a bench (``README_ROWS``) and filled from its stored result."""

from __future__ import annotations

import string
from dataclasses import dataclass


@dataclass(frozen=True)
class Row:
    """One line of a README table: a label and a value, both format templates over the bench's figures."""

    label: str
    template: str
    # Left out (instead of failing) when one of its figures is absent, e.g. a peer's block.
    optional: bool = False

    def fields(self) -> list[str]:
        """The figure names the label and the template read."""
        parse = string.Formatter().parse
        return [field for text in (self.label, self.template) for _, field, _, _ in parse(text) if field]


TARGET_OPS = (">=", "<=", ">", "==")
"""How a ``Target`` compares its figure with its bound."""


@dataclass(frozen=True)
class Target:
    """A bound a bench's stored figure is held to (a bench's ``TARGETS``): ``figure`` ``op`` ``bound``,
    with ``label`` saying what it means."""

    figure: str
    op: str
    bound: float | bool
    label: str

    def __post_init__(self) -> None:
        if self.op not in TARGET_OPS:
            raise ValueError(f"target {self.figure!r}: op must be one of {TARGET_OPS}, got {self.op!r}")

    def met(self, value: object) -> bool | None:
        """Whether a stored value meets the bound; None where there is no number to compare (absent, NaN, text)."""
        if isinstance(value, bool) or self.op == "==":
            return value == self.bound
        if not isinstance(value, int | float) or value != value:
            return None
        bound = float(self.bound)
        return {">=": value >= bound, "<=": value <= bound, ">": value > bound}[self.op]

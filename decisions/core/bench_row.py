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

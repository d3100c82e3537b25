"""Help texts the CLI builds when they are shown: ``decisions run --help`` lists every domain's tables."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from typer.core import TyperCommand


def _tables(domain: Any) -> tuple[str, ...]:
    """The spec tables a domain reads (its job model's ``SECTIONS``; its smoke spec's tables if that fails to load)."""
    try:
        return tuple(domain.job_model.SECTIONS)
    except Exception:  # a help text never fails: a domain whose spec cannot load shows its smoke spec's tables
        return tuple(section for section in domain.smoke_spec if section != "job")


def domain_tables() -> str:
    """One paragraph per registered domain: its job kind and the spec tables it reads."""
    from decisions.platform.registry import DOMAINS

    lines = ["Job kinds and their tables:"]
    for domain in DOMAINS:
        lines.append(f"kind = {domain.name!r}: " + " ".join(f"[{section}]" for section in _tables(domain)))
    return escape("\n\n".join(lines))


class DomainTablesCommand(TyperCommand):
    """A command whose help ends with ``domain_tables()``, built only when the help is shown."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """Add the domains' tables as the epilog, then format the help as Typer does."""
        if not self.epilog:
            self.epilog = domain_tables()
        super().format_help(ctx, formatter)

"""Figure tables generated from the stored bench results (``decisions bench report``).

Each bench module declares ``README_ROWS``: a sequence of ``Row(label, template)``, where the
template is a ``str.format`` string over the bench's figure names (``"{snapo_vs_lsmc:.4f}"``).
``render_table`` fills them from ``benchmarks/<name>.json`` under a line that says where the
figures come from (commit, date, machine, wall time, settings). In ``README.md`` and the pages
under ``docs/`` each table sits between ``<!-- bench-table: NAME -->`` and ``<!-- /bench-table -->``,
the README's list of domains between ``<!-- domains-table -->`` and ``<!-- /domains-table -->``
(``render_domains_table``: each domain's title, summary and headline figure), and its list of the
bounds the benches are held to between ``<!-- targets-table -->`` and ``<!-- /targets-table -->``
(``render_targets_table``: each bench's ``TARGETS``, met or not by its stored result). ``update_files``
rewrites those blocks and ``stale_files`` lists those that disagree with their stored JSON (the
consistency test and ``decisions bench report --check``). A figure with no stored source cannot be
rendered: a missing figure is an error, unless its row is ``optional`` (a peer block present only
where the peer is installed), in which case the row is left out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from decisions.core.bench_row import Row, Target
from decisions.errors import InputError
from decisions.platform.bench_store import BENCH_FOLDER

ROOT = BENCH_FOLDER.parent
"""The source checkout holding ``benchmarks/``, ``README.md`` and ``docs/``."""

README = ROOT / "README.md"
"""The README, whose domains table is generated, in a source checkout."""

DOCS = ROOT / "docs"
"""The documentation pages, whose figure tables are generated, in a source checkout."""

DOMAINS_BLOCK = "domains-table"
"""The key of the domains table among the generated blocks (no bench name has a hyphen)."""

TARGETS_BLOCK = "targets-table"
"""The key of the README's table of the benches' targets among the generated blocks."""

DOMAIN_PAGES = "docs/domains"
"""Where each domain's page lives, relative to the README (``docs/domains/<name>.md``)."""

_BLOCK = re.compile(
    r"(?P<open><!-- (?:bench-table: (?P<name>[a-z_]+)|(?P<fixed>domains-table|targets-table)) -->\n)(?P<body>.*?)"
    r"(?P<close><!-- /(?:bench-table|domains-table|targets-table) -->)",
    re.DOTALL,
)


def load_result(name: str, folder: Path = BENCH_FOLDER) -> dict[str, Any]:
    """The stored result ``<folder>/<name>.json`` (``bench_store.save_result``'s record).

    Raises:
        InputError: (field ``name``) no stored result, or one that is not a JSON object.
    """
    path = folder / f"{name}.json"
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        raise InputError("name", f"no stored result {path} (run `decisions bench {name} --save`)") from None
    except json.JSONDecodeError as error:
        raise InputError("name", f"{path} is not JSON: {error}") from None
    if not isinstance(record, dict) or not isinstance(record.get("figures"), dict):
        raise InputError("name", f"{path} has no 'figures' object")
    return record


def provenance(record: Mapping[str, Any]) -> str:
    """One line: where a stored result comes from (file, commit, date, machine, wall time, settings)."""
    machine = record.get("machine", {})
    commit = str(record.get("commit") or "unknown commit")
    short = _short_commit(commit)
    settings = _settings(record.get("budget"))
    if len(record.get("parts") or ()) > 1:
        return f"From `benchmarks/{record['name']}.json`, run in {len(record['parts'])} parts: " + "; ".join(
            _part_line(part) for part in record["parts"]
        ) + "."
    return (
        f"From `benchmarks/{record['name']}.json`: commit {short}, {str(record.get('date', ''))[:10]}, "
        f"{machine.get('cores', '?')} cores ({machine.get('cpu', '?')}{_load(machine)}), "
        f"{record.get('wall_seconds', '?')} s wall time, "
        f"settings: {settings}."
    )


def _short_commit(commit: str) -> str:
    """A commit's first 7 characters, keeping its ``-dirty`` mark."""
    return commit[:7] + ("-dirty" if commit.endswith("-dirty") else "")


def _settings(budget: Mapping[str, Any] | None) -> str:
    """A result's budget overrides as ``key=JSON`` pairs, or ``defaults``."""
    return ", ".join(f"{k}={json.dumps(v)}" for k, v in sorted((budget or {}).items())) or "defaults"


def _part_line(part: Mapping[str, Any]) -> str:
    """One part of a result run in parts: its commit, date, machine, wall time, settings and figure count."""
    machine = part.get("machine") or {}
    return (
        f"commit {_short_commit(str(part.get('commit') or 'unknown commit'))}, {str(part.get('date', ''))[:10]}, "
        f"{machine.get('cores', '?')} cores{_load(machine)}, {part.get('wall_seconds', '?')} s, "
        f"settings: {_settings(part.get('budget'))} ({len(part.get('figures') or [])} figures)"
    )


def _load(machine: Mapping[str, Any]) -> str:
    """``, load 6.2`` when the result recorded the machine's load average (other work slows timings)."""
    load = machine.get("load_average")
    return f", load {load}" if load is not None else ""


RowsSpec = Sequence[Row] | Callable[[Mapping[str, Any]], Sequence[Row]]
"""A bench's ``README_ROWS``: rows, or a function of the figures that builds them (to bold the best row)."""


def render_rows(figures: Mapping[str, Any], rows: RowsSpec, name: str) -> list[str]:
    """The table's markdown lines, ``| figure | value |``.

    Raises:
        InputError: (field ``figures``) a non-optional row reads a figure the result lacks.
    """
    lines = ["| figure | value |", "|---|---|"]
    for row in rows(figures) if callable(rows) else rows:
        missing = [field for field in row.fields() if field not in figures]
        if missing:
            if row.optional:
                continue
            raise InputError("figures", f"benchmarks/{name}.json lacks {missing} (row {row.label!r})")
        lines.append(f"| {row.label.format_map(figures)} | {row.template.format_map(figures)} |")
    return lines


def render_table(name: str, rows: RowsSpec, folder: Path = BENCH_FOLDER) -> str:
    """The README block of bench ``name``: its provenance line and its table."""
    record = load_result(name, folder)
    return "\n".join([provenance(record), "", *render_rows(record["figures"], rows, name)]) + "\n"


def _key(match: re.Match[str]) -> str:
    """A block's key: its bench name, ``DOMAINS_BLOCK`` or ``TARGETS_BLOCK``."""
    return match["name"] or match["fixed"]


def _rendered(text: str, tables: Mapping[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        body = tables.get(_key(match), match["body"])
        return match["open"] + body + match["close"]

    return _BLOCK.sub(replace, text)


def page_blocks(text: str) -> dict[str, str]:
    """A page's generated blocks: bench name (or ``DOMAINS_BLOCK``) -> current body."""
    return {_key(m): m["body"] for m in _BLOCK.finditer(text)}


def stale_blocks(text: str, tables: Mapping[str, str]) -> list[str]:
    """Names of the blocks whose body differs from the table rendered from the stored result."""
    return sorted(name for name, body in page_blocks(text).items() if name in tables and body != tables[name])


def update_page(tables: Mapping[str, str], page: Path) -> list[str]:
    """Rewrite one page's blocks from ``tables``; returns the names of those that changed."""
    text = page.read_text()
    changed = stale_blocks(text, tables)
    if changed:
        page.write_text(_rendered(text, tables))
    return changed


def report_files(root: Path = ROOT) -> list[Path]:
    """The pages that may hold generated blocks: ``README.md`` and every ``docs/**/*.md``."""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def block_places(files: Sequence[Path]) -> dict[str, list[Path]]:
    """Each generated block's key -> the pages holding it (each should hold it exactly once)."""
    places: dict[str, list[Path]] = {}
    for path in files:
        for match in _BLOCK.finditer(path.read_text()):
            places.setdefault(_key(match), []).append(path)
    return places


def stale_files(tables: Mapping[str, str], files: Sequence[Path]) -> list[str]:
    """``page: name`` for every block of ``files`` that disagrees with ``tables``."""
    return [f"{_page(path)}: {name}" for path in files for name in stale_blocks(path.read_text(), tables)]


def update_files(tables: Mapping[str, str], files: Sequence[Path]) -> list[str]:
    """Rewrite the blocks of every page in ``files``; returns ``page: name`` for each that changed."""
    return [f"{_page(path)}: {name}" for path in files for name in update_page(tables, path)]


def _page(path: Path) -> str:
    """A page's path relative to the checkout where it lies in it, else as given."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def headline(name: str, rows: RowsSpec, folder: Path = BENCH_FOLDER, figure: Mapping[str, str] | None = None) -> str:
    """Domain ``name``'s headline, ``label: value``, from its stored bench (or ``no stored bench``).

    ``figure`` holds the ``label`` and ``value`` templates (the domain's ``headline_figure``); without
    it, the bench's first README row.

    Raises:
        InputError: (field ``figures``) the headline reads a figure the stored result lacks.
    """
    if not (folder / f"{name}.json").exists():
        return "no stored bench"
    figures = load_result(name, folder)["figures"]
    row = Row(figure["label"], figure["value"]) if figure else None
    if row is None:
        declared = rows(figures) if callable(rows) else rows
        if not declared:
            return "no figure table"
        row = declared[0]
    missing = [field for field in row.fields() if field not in figures]
    if missing:
        raise InputError("figures", f"benchmarks/{name}.json lacks {missing} (headline {row.label!r})")
    return f"{row.label.format_map(figures)}: {row.template.format_map(figures)}"


class Listed(Protocol):
    """What the domains table reads of a domain (``decisions.kit.domain.Domain`` has it)."""

    @property
    def name(self) -> str: ...

    @property
    def title(self) -> str: ...

    @property
    def summary(self) -> str: ...

    @property
    def headline_figure(self) -> Mapping[str, str] | None: ...


def render_domains_table(
    domains: Sequence[Listed], rows_of: Callable[[str], RowsSpec], folder: Path = BENCH_FOLDER
) -> str:
    """The README's domains block: each domain's title (linking its page), summary and headline figure."""
    lines = ["| domain | what it decides | headline figure (`benchmarks/<name>.json`) |", "|---|---|---|"]
    for domain in domains:
        link = f"[{domain.title}]({DOMAIN_PAGES}/{domain.name}.md)"
        lines.append(f"| {link} | {domain.summary} | {headline(domain.name, rows_of(domain.name), folder, domain.headline_figure)} |")
    return "\n".join(lines) + "\n"


def render_targets_table(
    benches: Sequence[str], targets_of: Callable[[str], Sequence[Target]], pages: Mapping[str, Path],
    folder: Path = BENCH_FOLDER,
) -> str:
    """The README's targets block: each bench's targets (linking the page of its figure table, where
    what was tried is written), the stored value and whether it meets the bound (``not stored``: the
    stored result lacks the figure, or has no number for it)."""
    lines = ["| bench | target | stored | met |", "|---|---|---|---|"]
    for name in benches:
        targets = targets_of(name)
        if not targets:
            continue
        stored = (folder / f"{name}.json").exists()
        figures = load_result(name, folder)["figures"] if stored else {}
        page = pages.get(name)
        bench = f"[{name}]({_page(page)})" if page else name
        for target in targets:
            value = figures.get(target.figure)
            met = target.met(value)
            shown = "none" if value is None else _shown(value)
            verdict = "not stored" if met is None else ("yes" if met else "**no**")
            lines.append(f"| {bench} | {target.label}: `{target.figure}` {target.op} {_shown(target.bound)} | {shown} | {verdict} |")
    return "\n".join(lines) + "\n"


def _shown(value: object) -> str:
    """A figure as the targets table shows it: booleans as words, numbers to four significant digits."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    return str(value)

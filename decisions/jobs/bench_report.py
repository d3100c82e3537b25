"""README figure tables generated from the stored bench results (``decisions bench report``).

Each bench module declares ``README_ROWS``: a sequence of ``Row(label, template)``, where the
template is a ``str.format`` string over the bench's figure names (``"{snapo_vs_lsmc:.4f}"``).
``render_table`` fills them from ``benchmarks/<name>.json`` under a line that says where the
figures come from (commit, date, machine, wall time, settings). In ``README.md`` each table
sits between ``<!-- bench-table: NAME -->`` and ``<!-- /bench-table -->``; ``update_readme``
rewrites those blocks and ``stale_blocks`` lists those that disagree with their stored JSON
(the consistency test and ``decisions bench report --check``). A figure with no stored source
cannot be rendered: a missing figure is an error, unless its row is ``optional`` (a peer block
present only where the peer is installed), in which case the row is left out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from decisions.core.bench_row import Row
from decisions.errors import InputError
from decisions.jobs.bench_store import BENCH_FOLDER

README = BENCH_FOLDER.parent / "README.md"
"""The README whose tables are generated, in a source checkout."""

_BLOCK = re.compile(r"(<!-- bench-table: (?P<name>[a-z_]+) -->\n)(?P<body>.*?)(<!-- /bench-table -->)", re.DOTALL)


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


def _rendered(text: str, tables: Mapping[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        body = tables.get(match["name"], match["body"])
        return match.group(1) + body + match.group(4)

    return _BLOCK.sub(replace, text)


def readme_blocks(text: str) -> dict[str, str]:
    """The README's generated blocks: bench name -> current body."""
    return {m["name"]: m["body"] for m in _BLOCK.finditer(text)}


def stale_blocks(text: str, tables: Mapping[str, str]) -> list[str]:
    """Names of the blocks whose body differs from the table rendered from the stored result."""
    return sorted(name for name, body in readme_blocks(text).items() if name in tables and body != tables[name])


def update_readme(tables: Mapping[str, str], readme: Path = README) -> list[str]:
    """Rewrite the README's blocks from ``tables``; returns the names of those that changed."""
    text = readme.read_text()
    changed = stale_blocks(text, tables)
    if changed:
        readme.write_text(_rendered(text, tables))
    return changed

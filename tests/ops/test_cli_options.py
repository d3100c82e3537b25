"""The CLI's own options: ids and counts beyond the store's integers, zero or huge workers and unknown kinds
are one line naming the option (exit 2); help texts read as plain text and list every domain."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from decisions.cli import app
from decisions.store import list_runs

runner = CliRunner()

HUGE = "99999999999999999999"


def _one_line(result, field: str) -> str:
    """The single error line of a refused command (exit 2, no traceback), checked to name ``field``."""
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    assert lines[0].startswith(f"error: {field}: "), lines
    return lines[0]


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["runs", "show", HUGE], "run_id"),
        (["runs", "resume", HUGE], "run_id"),
        (["runs", "delete", "--yes", HUGE], "run_id"),
        (["runs", "show", "0"], "run_id"),
        (["runs", "list", "--limit", HUGE], "limit"),
        (["demo", "--paths", HUGE], "paths"),
        (["demo", "--paths", "0"], "paths"),
    ],
)
def test_ids_and_counts_outside_the_stores_integers_are_one_line(store: str, args: list[str], field: str) -> None:
    _one_line(runner.invoke(app, args), field)


@pytest.mark.parametrize("workers", ["0", "-1", HUGE, "100000"])
def test_workers_out_of_range_is_refused_before_the_spec_is_read(tmp_path: Path, store: str, workers: str) -> None:
    spec = tmp_path / "missing.toml"  # never read: the option is refused first
    _one_line(runner.invoke(app, ["run", str(spec), "--workers", workers]), "workers")
    assert list_runs(url=store) == []


def test_an_unknown_kind_names_kind_and_lists_the_known_ones(store: str) -> None:
    from decisions.platform.registry import names

    line = _one_line(runner.invoke(app, ["runs", "list", "--kind", "nonsense"]), "kind")
    assert "nonsense" in line and all(name in line for name in names())


def test_a_known_kind_lists_runs(store: str) -> None:
    assert runner.invoke(app, ["runs", "list", "--kind", "gas-storage"]).exit_code == 0


def _commands(command, path: tuple[str, ...] = ()):
    """Every command of the CLI with its argument path, the groups included."""
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, (*path, name))


def test_no_help_text_shows_markup_backticks() -> None:
    for path, _ in _commands(typer.main.get_command(app)):
        result = runner.invoke(app, [*path, "--help"], terminal_width=200)
        assert result.exit_code == 0, (path, result.output)
        assert "`" not in result.output, (path, result.output)


def test_run_help_lists_every_domain_and_its_tables() -> None:
    from decisions.platform.registry import DOMAINS

    text = runner.invoke(app, ["run", "--help"], terminal_width=200).output
    for domain in DOMAINS:
        assert f"kind = {domain.name!r}:" in text, text
        for section in domain.job_model.SECTIONS:
            assert f"[{section}]" in text, (domain.name, section)

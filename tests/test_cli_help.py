"""CLI help texts print bracketed words literally; ``runs list --limit`` below 1 is one input-error line."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from decisions.cli import app
from decisions.store import dispose_engines

runner = CliRunner()

HELP_COMMANDS = [[], ["run"], ["demo"], ["bench"], ["app"], ["runs"], ["runs", "list"], ["runs", "show"]]


@pytest.fixture(autouse=True)
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh SQLite store under tmp_path (never the user's)."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    monkeypatch.setenv("DECISIONS_DB_URL", url)
    dispose_engines()
    yield url
    dispose_engines()


def _help(args: list[str]) -> str:
    """The ``--help`` text of a command, unwrapped (one space between words, no box borders)."""
    result = runner.invoke(app, [*args, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    return " ".join(result.output.replace("│", " ").split())


def test_run_help_shows_the_spec_tables() -> None:
    text = _help(["run"])
    for table in ("[job]", "[scenario]", "[snapo]", "[agents]", "[optimise]", "[sweep]"):
        assert table in text, text


@pytest.mark.parametrize("args", HELP_COMMANDS, ids=lambda a: " ".join(a) or "decisions")
def test_help_keeps_bracketed_text(args: list[str]) -> None:
    """Every ``[word]`` in a command's help and parameter texts reaches the screen."""
    import typer.main

    command = typer.main.get_command(app)
    for name in args:
        command = command.commands[name]  # type: ignore[attr-defined]
    texts = [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]
    written = {m for text in texts for m in re.findall(r"\\?\[[a-z][^\[\]]*\]", text)}
    shown = _help(args)
    for bracket in written:
        assert bracket.lstrip("\\") in shown, (bracket, shown)


@pytest.mark.parametrize("limit", ["0", "-3"])
def test_runs_list_limit_below_one_is_an_input_error(limit: str) -> None:
    result = runner.invoke(app, ["runs", "list", "--limit", limit])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines == [f"error: limit: must be at least 1, got {limit}"], result.output
    assert "Traceback" not in result.output


def test_runs_list_limit_one_works() -> None:
    result = runner.invoke(app, ["runs", "list", "--limit", "1"])
    assert result.exit_code == 0, result.output

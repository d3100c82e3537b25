"""The app's Streamlit config: no usage statistics, no Deploy button, wherever the app is started from."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = (ROOT / "apps" / ".streamlit" / "config.toml", ROOT / ".streamlit" / "config.toml")
"""Beside the main script (read from any working directory) and at the repository root (the
working directory of ``streamlit run apps/Home.py``)."""

HIDES_DEPLOY = ("viewer", "minimal")
"""``client.toolbarMode`` values that hide the Deploy button."""


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: str(p.relative_to(ROOT)))
def test_config_turns_off_usage_statistics_and_the_deploy_button(path: Path) -> None:
    config = tomllib.loads(path.read_text(encoding="utf-8"))
    assert config["browser"]["gatherUsageStats"] is False
    assert config["client"]["toolbarMode"] in HIDES_DEPLOY


def test_streamlit_reads_the_script_level_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Started from an unrelated folder, Streamlit still finds ``apps/.streamlit/config.toml``."""
    config = pytest.importorskip("streamlit.config")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(config, "_main_script_path", str(ROOT / "apps" / "Home.py"))
    try:
        config.get_config_options(force_reparse=True)
        assert config.get_option("browser.gatherUsageStats") is False
        assert config.get_option("client.toolbarMode") in HIDES_DEPLOY
    finally:
        monkeypatch.undo()
        config.get_config_options(force_reparse=True)


SCRIPTS = sorted([ROOT / "apps" / "Home.py", *(ROOT / "apps" / "pages").glob("*.py")])


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_no_bare_string_but_the_docstring_at_a_scripts_top_level(script: Path) -> None:
    """Streamlit's "magic" writes a top-level bare string onto the page: a docstring after an assignment would
    show up as text above the page's title."""
    import ast

    body = ast.parse(script.read_text(encoding="utf-8")).body
    bare = [node.lineno for node in body[1:]
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)]
    assert not bare, f"{script.name}: bare strings at lines {bare}"

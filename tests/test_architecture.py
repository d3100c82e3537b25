"""The architecture's rules that `lint-imports` (`.importlinter`, run by `make lint`) cannot state.

- No module reaches another module's private names (``from decisions.x import _name`` or
  ``x._name`` on something imported from ``decisions``): a shared piece is made public.
- The platform finds a domain's pieces through the typed references of its ``Domain`` entry, never
  by importing a module named in a string.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted([*(ROOT / "decisions").rglob("*.py"), *(ROOT / "apps").rglob("*.py")])


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_reaches(path: Path, here: str | None = None) -> Iterator[str]:
    """Every private name ``path`` (module ``here``) takes from another ``decisions`` module, as ``line: what``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    here = here or _module_name(path)
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("decisions"):
            for alias in node.names:
                if _private(alias.name) and node.module != here:
                    yield f"{node.lineno}: from {node.module} import {alias.name}"
                imported.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            imported.update(a.asname or a.name.split(".")[0] for a in node.names if a.name.startswith("decisions"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr) and isinstance(node.value, ast.Name):
            if node.value.id in imported:
                yield f"{node.lineno}: {node.value.id}.{node.attr}"


def test_no_module_reaches_another_modules_private_names() -> None:
    found = {str(p.relative_to(ROOT)): hits for p in SOURCES if (hits := list(private_reaches(p)))}
    assert found == {}


def test_the_platform_dispatches_by_reference_not_by_string() -> None:
    for folder in ("kit", "platform"):
        for path in (ROOT / "decisions" / folder).rglob("*.py"):
            assert "import_module" not in path.read_text(), path


def test_the_checker_sees_a_private_reach(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("from decisions.core import nets\nfrom decisions.core.nets import _x\nnets._y\n_z = 1\n")
    assert list(private_reaches(probe, "decisions.probe")) == ["2: from decisions.core.nets import _x", "3: nets._y"]

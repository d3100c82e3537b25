"""The code's shape limits: no module over 500 lines and no function over 80 in ``decisions/`` and
``apps/``, and docstrings under a fifth of ``decisions/``'s lines (the narrative lives in the docs)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 80
MAX_DOCSTRING_SHARE = 0.20


def _modules(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))


def _docstring_lines(tree: ast.Module) -> int:
    """Lines of the module's, its classes' and its functions' docstrings."""
    lines = 0
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                lines += first.end_lineno - first.lineno + 1
    return lines


def _long_functions(path: Path, tree: ast.Module) -> list[str]:
    return [f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]


def test_no_module_or_function_is_too_long() -> None:
    long_files, long_functions = [], []
    for path in _modules("decisions", "apps"):
        text = path.read_text()
        if len(text.splitlines()) > MAX_FILE_LINES:
            long_files.append(f"{path.relative_to(ROOT)} ({len(text.splitlines())} lines)")
        long_functions += _long_functions(path, ast.parse(text))
    assert not long_files, f"modules over {MAX_FILE_LINES} lines: {long_files}"
    assert not long_functions, f"functions over {MAX_FUNCTION_LINES} lines: {long_functions}"


def test_docstrings_are_under_a_fifth_of_the_package() -> None:
    total = documented = 0
    for path in _modules("decisions"):
        text = path.read_text()
        total += len(text.splitlines())
        documented += _docstring_lines(ast.parse(text))
    assert documented / total < MAX_DOCSTRING_SHARE, f"docstrings are {documented / total:.1%} of decisions/"


def test_the_limits_see_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    source = f'def f():\n    """Doc."""\n{body}\n'
    assert len(_long_functions(ROOT / "tests" / "x.py", ast.parse(source))) == 1
    assert _docstring_lines(ast.parse(source)) == 1

"""``decisions new-domain``: a generated domain passes the conformance kit, the import contracts and the linter."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from decisions.errors import InputError
from decisions.platform.scaffold import create_domain

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _checkout(tmp_path: Path) -> Path:
    """A copy of the source checkout's code (no shipped study data, no caches)."""
    root = tmp_path / "checkout"
    ignore = shutil.ignore_patterns("__pycache__", "*.msgpack", "*.npz")
    for folder in ("decisions", "apps", "tests", "examples"):
        shutil.copytree(ROOT / folder, root / folder, ignore=ignore)
    for name in (".importlinter", "pyproject.toml"):
        shutil.copy(ROOT / name, root / name)
    return root


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600,
                          env=None if env is None else {**os.environ, **env})


PAGE_RUN = """
import sys
from pathlib import Path
from streamlit.testing.v1 import AppTest
page = next(Path("apps/pages").glob("*_Probe.py"))
sys.path.insert(0, "apps")
at = AppTest.from_file(str(page), default_timeout=120).run()
assert not at.exception, at.exception
at.button(key="run").click().run()
assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
assert at.dataframe[0].value["rule"].tolist() == ["learnt", "exact", "mean demand"]
print("page ran")
"""


def test_a_generated_domain_passes_conformance_and_the_contracts(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    made = _run([sys.executable, "-m", "decisions.cli", "new-domain", "health/probe", "--root", str(root)], root)
    assert made.returncode == 0, made.stderr
    assert (root / "decisions/health/probe/study.py").is_file() and (root / "examples/probe.toml").is_file()

    lint = _run([str(BIN / "ruff"), "check", "decisions/health/probe", "tests/health/probe", "apps/pages",
                 "decisions/platform/registry.py"], root)
    assert lint.returncode == 0, lint.stdout
    contracts = _run([str(BIN / "lint-imports"), "--no-cache"], root)
    assert contracts.returncode == 0 and "decisions.health.probe" in (root / ".importlinter").read_text(), contracts.stdout
    checks = _run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", "tests/health/probe",
                   "tests/jobs/test_conformance.py", "-k", "probe or registered"], root)
    assert checks.returncode == 0, checks.stdout[-3000:]
    assert " passed" in checks.stdout and "probe" in _run(
        [sys.executable, "-c", "from decisions.platform import registry; print(registry.names())"], root).stdout
    page = _run([sys.executable, "-c", PAGE_RUN], root,
                {"DECISIONS_DB_URL": f"sqlite:///{tmp_path / 'runs.db'}", "DECISIONS_APP_PASSWORD": ""})
    assert page.returncode == 0 and "page ran" in page.stdout, page.stderr[-3000:]


@pytest.mark.parametrize(("target", "problem"), [
    ("probe", "is not AREA/NAME"),
    ("health/Probe", "is not AREA/NAME"),
    ("lab/probe", "area 'lab' is not one of"),
    ("finance/pension", "exists already"),
])
def test_a_bad_target_is_refused_and_nothing_is_written(target: str, problem: str, tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    with pytest.raises(InputError, match=f"^domain: .*{problem}"):
        create_domain(target, root)
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before

"""Suite-wide settings: a shared JAX compilation cache and how pytest-xdist splits the work.

- Every test process (and every process a test starts: CLI subprocesses, the process-pool
  runner) shares one persistent JAX compilation cache under ``.jax_cache/`` at the project root,
  so a program compiled by one test file is read back, not compiled again, by the others.
- ``make test`` runs ``pytest -n 2 --dist loadgroup``: each test module is one group (kept on
  one worker, so its module-scoped fixtures run once), except the domain conformance kit, whose
  tests are grouped per domain so the two workers share the six domains' tiny jobs and benches.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(ROOT / ".jax_cache"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.2")

PER_DOMAIN_MODULES = ("tests/jobs/test_conformance.py",)
"""Modules whose parametrized tests form one xdist group per domain (parameter ``name``)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put each test in an xdist group: its module, or its module and domain for the conformance kit."""
    for item in items:
        group = item.nodeid.split("::")[0]
        callspec = getattr(item, "callspec", None)
        if group in PER_DOMAIN_MODULES and callspec is not None and "name" in callspec.params:
            group = f"{group}[{callspec.params['name']}]"
        item.add_marker(pytest.mark.xdist_group(group))

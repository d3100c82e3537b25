"""Suite-wide set-up: how pytest-xdist splits the suite, and JAX's caches between modules.

``make test`` runs ``pytest -n 2 --dist loadgroup``: each test module is one group (kept on
one worker, so its module-scoped fixtures run once), except the domain conformance kit, whose
tests are grouped per domain (``domain-<name>``) with the domain's modules marked ``smoke_runs``,
so that one process runs each domain's smoke bench and smoke job once for all of them (``tests/smoke_runs.py``).
xdist reads a group from the test id's ``@<group>`` suffix, and only when the group does not end
with ``]``; it writes that suffix in a way pytest 9.2 ignores, hence ``pytest<9.2``.

Every compiled XLA program stays in JAX's caches, and on CPU each one holds about seven
memory mappings of JIT code. A worker that runs half the suite compiles thousands of programs;
past the kernel's ``vm.max_map_count`` (65,530 by default) LLVM fails to map code and the
worker dies with a segmentation fault inside ``backend_compile_and_load``. So after a module,
once the worker holds more than ``MAX_MAPPINGS`` mappings, the caches are cleared, which
releases the programs' mappings (clearing after every module would recompile what the next
module shares with the last).
"""

from __future__ import annotations

import gc
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

TEST_XLA_FLAGS = "--xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false"
"""XLA flags for the suite (set before JAX loads; subprocesses inherit them). On CPU the suite's
time is mostly XLA compiling thousands of small programs, and LLVM's optimisation passes are
most of that: without them a SNAPO training step compiles about twice as fast. XLA's newer
CPU fusion emitters (MLIR) cost more compile time than the classic LLVM IR emitters: turning
them off takes another quarter off a tiny gas storage job (30 s -> 21 s). The programs
compute the same operations (no fast-math), only less optimised, and the tests' budgets are
tiny, so the suite runs in far less time. Benchmarks and real runs keep XLA's defaults; set
``DECISIONS_TEST_XLA_DEFAULTS=1`` to run the suite with them too."""

if not os.environ.get("DECISIONS_TEST_XLA_DEFAULTS") and TEST_XLA_FLAGS not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {TEST_XLA_FLAGS}".strip()

JAX_CACHE_ROOT = Path(os.environ.get("TMPDIR", "/tmp")) / "decisions-test-jax-cache"
"""Parent of each test run's persistent compilation cache (``_share_compiled_programs``)."""


def _share_compiled_programs() -> None:
    """Give the whole test run one persistent JAX compilation cache (a folder per run).

    The same small programs are compiled again and again: by both xdist workers, by the CLI
    subprocesses the tests start, and after a module that cleared the caches (below). With the
    cache each is compiled once per run and read back after. The folder is keyed by the run
    (the process that starts it: xdist's workers inherit the controller's), so a run never reads
    a stale one, and removed at its end;
    ``DECISIONS_TEST_NO_JAX_CACHE=1`` turns it off.
    """
    global _OWN_JAX_CACHE
    if os.environ.get("DECISIONS_TEST_NO_JAX_CACHE") or "JAX_COMPILATION_CACHE_DIR" in os.environ:
        return  # off, or set by the user, or by the xdist controller for its workers (they inherit it)
    _OWN_JAX_CACHE = JAX_CACHE_ROOT / f"run-{os.getpid()}"
    os.environ["JAX_COMPILATION_CACHE_DIR"] = str(_OWN_JAX_CACHE)
    os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0.1"
    os.environ["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "0"


_OWN_JAX_CACHE: Path | None = None
"""The cache folder this process made (the controller's, or a run without xdist's), removed at the end."""
_share_compiled_programs()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Remove the run's compilation cache (in the process that made it, once its workers are done)."""
    if _OWN_JAX_CACHE is not None:
        shutil.rmtree(_OWN_JAX_CACHE, ignore_errors=True)

MAX_MAPPINGS = 20_000
"""Mappings (``/proc/self/maps`` lines) above which JAX's caches are cleared after a module:
a third of the kernel's default limit, leaving room for the largest module's programs."""

SLOW_TIMEOUT_S = 3600
"""Per-test limit of the slow trainings (``-m slow``); every other test has pyproject's ``timeout``."""

PER_DOMAIN_MODULES = ("tests/jobs/test_conformance.py",)
"""Modules whose parametrized tests form one xdist group per domain (parameter ``name``)."""


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook, which reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put each test in an xdist group: its module, or its module and domain for the conformance kit;
    give the slow trainings a longer time limit.

    A module marked ``smoke_runs("<domain>")`` joins that domain's conformance group: it checks
    the smoke runs of ``tests/smoke_runs.py``, made once per process.
    """
    for item in items:
        group = item.nodeid.split("::")[0]
        callspec = getattr(item, "callspec", None)
        shares = item.get_closest_marker("smoke_runs")
        if shares is not None:
            group = f"domain-{shares.args[0]}"
        elif group in PER_DOMAIN_MODULES and callspec is not None and "name" in callspec.params:
            group = f"domain-{callspec.params['name']}"  # no "]" at the end: xdist would ignore the group
        item.add_marker(pytest.mark.xdist_group(group))
        if item.get_closest_marker("slow") is not None and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT_S))


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs() -> Iterator[None]:
    """After a module, drop JAX's compiled programs (and their JIT code mappings) if there are many."""
    yield
    import sys

    jax = sys.modules.get("jax")
    if jax is not None and _mappings() > MAX_MAPPINGS:
        jax.clear_caches()
        gc.collect()


def _mappings() -> int:
    """How many memory mappings this process holds (0 where ``/proc`` is not available)."""
    try:
        with open("/proc/self/maps", "rb") as maps:
            return sum(1 for _ in maps)
    except OSError:
        return 0


@pytest.fixture()
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh SQLite run store under ``tmp_path`` as ``DECISIONS_DB_URL``; yields its URL."""
    from decisions.store import dispose_engines

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    monkeypatch.setenv("DECISIONS_DB_URL", url)
    yield url
    dispose_engines()


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """URL of a throwaway PostgreSQL server for this session (each xdist worker starts its own, ~4 s).

    Skips, with the reason, when PostgreSQL or psycopg is not installed or the server cannot start
    (``tests/pg_server.py``); the server is stopped and its folder removed at the end.
    """
    from tests.pg_server import PgUnavailable, start_server

    try:
        server = start_server()
    except PgUnavailable as exc:
        pytest.skip(str(exc))
    try:
        yield server.url
    finally:
        from decisions.store import dispose_engines

        dispose_engines()
        server.stop()

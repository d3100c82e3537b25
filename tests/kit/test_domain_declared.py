"""``Domain.declared``: a domain decides where its package has a ``decide.py``, whose module comes with its
job and bench modules (``RunModules.decide``)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from decisions.kit.domain import DECIDE_FILE, FACTS_FILE, Domain, RunModules

FACTS = 'name = "stock"\ntitle = "Stock"\nsummary = "Buy stock."\nheadline = ["profit"]\nexample = "stock.toml"\n'
SPEC, JOB, BENCH, DECIDE = (SimpleNamespace(name=part) for part in ("spec", "job", "bench", "decide"))


def _declared(tmp_path: Path, modules: RunModules, *, decide_file: bool) -> tuple[Domain, list[int]]:
    """A domain declared from a package folder in ``tmp_path``, and the calls its ``modules`` reference got."""
    (tmp_path / FACTS_FILE).write_text(FACTS)
    if decide_file:
        (tmp_path / DECIDE_FILE).write_text("")
    calls: list[int] = []

    def heavy() -> RunModules:
        calls.append(1)
        return modules

    return Domain.declared(tmp_path / "entry.py", lambda: SPEC, heavy), calls


def test_a_package_with_a_decide_module_decides_with_the_module_its_modules_return(tmp_path: Path) -> None:
    domain, calls = _declared(tmp_path, RunModules(JOB, BENCH, DECIDE), decide_file=True)
    assert domain.decider is not None and calls == []  # nothing is imported until first use
    assert domain.decider() is DECIDE and domain.job() is JOB and domain.bench() is BENCH and len(calls) == 3


def test_a_package_without_a_decide_module_does_not_decide(tmp_path: Path) -> None:
    domain, calls = _declared(tmp_path, RunModules(JOB, BENCH), decide_file=False)
    assert domain.decider is None and domain.name == "stock" and calls == []


def test_a_decide_module_that_its_modules_leave_out_is_named(tmp_path: Path) -> None:
    domain, _ = _declared(tmp_path, RunModules(JOB, BENCH), decide_file=True)
    assert domain.decider is not None
    with pytest.raises(TypeError, match=f"has a {DECIDE_FILE} but its modules\\(\\) returns no decide module"):
        domain.decider()

"""``Domain.declared``: the facts from the ``domain.toml`` beside the entry module, and the references
imported on first use: the decide module alone, without the job and bench modules."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from decisions.kit.domain import FACTS_FILE, Domain, RunModules

FACTS = 'name = "stock"\ntitle = "Stock"\nsummary = "Buy stock."\nheadline = ["profit"]\nexample = "stock.toml"\n'
SPEC, JOB, BENCH, DECIDE = (SimpleNamespace(name=part) for part in ("spec", "job", "bench", "decide"))


def _declared(tmp_path: Path, *, decides: bool) -> tuple[Domain, list[str]]:
    """A domain declared from a package folder in ``tmp_path``, and the references called so far."""
    (tmp_path / FACTS_FILE).write_text(FACTS)
    calls: list[str] = []

    def modules() -> RunModules:
        calls.append("modules")
        return RunModules(JOB, BENCH)

    def decider() -> SimpleNamespace:
        calls.append("decide")
        return DECIDE

    return Domain.declared(tmp_path / "entry.py", lambda: SPEC, modules, decider if decides else None), calls


def test_the_decide_module_is_imported_alone_on_first_use(tmp_path: Path) -> None:
    domain, calls = _declared(tmp_path, decides=True)
    assert domain.name == "stock" and domain.decider is not None and calls == []
    assert domain.decider() is DECIDE and calls == ["decide"]  # not the job and bench modules
    assert domain.job() is JOB and domain.bench() is BENCH and calls == ["decide", "modules", "modules"]


def test_a_domain_without_a_decide_reference_does_not_decide(tmp_path: Path) -> None:
    domain, calls = _declared(tmp_path, decides=False)
    assert domain.decider is None and domain.spec() is SPEC and calls == []

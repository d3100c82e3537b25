"""Every domain plugs into the platform the same way: the conformance kit over the registry.

For each ``Domain`` of ``decisions.platform.registry``: its template modules and entry points
exist, its package imports without JAX, its example spec parses, its app page exists, a
tiny-budget job runs and is recorded, its report saves and loads back equal (from the folder
and from the run record), and its benchmark runs at a tiny budget and returns a flat JSON
object. A domain package that is not registered, or a registered domain that skips a piece,
fails here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from decisions.kit.base import JobBase
from decisions.kit.domain import Domain
from decisions.kit.report import TablesReport
from decisions.platform import registry
from decisions.platform.record import execute_recorded, load_run_report
from decisions.store import RunStatus, dispose_engines, get_run
from tests.smoke_runs import smoke_bench, smoke_run

ROOT = Path(__file__).resolve().parents[2]
DOMAINS = {domain.name: domain for domain in registry.DOMAINS}
NAMES = sorted(DOMAINS)


def test_every_domain_package_is_registered() -> None:
    """A package under decisions/<area>/<domain>/ with a job module is a domain: it must be listed."""
    packages = {
        ".".join(path.parent.relative_to(ROOT).parts)
        for path in (ROOT / "decisions").glob("*/*/job.py")
    }
    assert packages == {domain.package for domain in registry.DOMAINS}
    assert len(set(NAMES)) == len(registry.DOMAINS)


@pytest.mark.parametrize("name", NAMES)
def test_entry_points_exist(name: str) -> None:
    domain = DOMAINS[name]
    package = __import__(domain.package, fromlist=["DOMAIN"])
    assert package.DOMAIN is domain and registry.get(name) is domain
    assert issubclass(domain.job_model, JobBase) and domain.job_model.SECTIONS
    assert issubclass(domain.report_model, TablesReport) and domain.report_model.table_fields()
    assert callable(domain.spec().prepare) and callable(domain.job().run_job)
    assert callable(domain.bench().run_bench)
    for part, reference in (("spec", domain.spec), ("job", domain.job), ("bench", domain.bench)):
        assert reference().__name__ == f"{domain.package}.{part}"  # each reference imports its own module
    assert isinstance(domain.smoke_budget, dict)
    assert domain.title and domain.summary and domain.headline and all(isinstance(h, str) for h in domain.headline)
    assert domain.page is not None and (ROOT / "apps" / domain.page).is_file()


def test_domain_packages_import_without_jax() -> None:
    """The registry imports every package: each must stay light (JAX loads with the job)."""
    code = "import sys; import decisions.platform.registry; print('jax' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("name", NAMES)
def test_specs_are_validated_without_jax(name: str) -> None:
    """``prepare`` imports only the domain's light modules: a bad spec is refused before JAX loads."""
    code = (
        "import sys, tomllib; from decisions.platform.registry import get; d = get(sys.argv[1]); "
        "spec = tomllib.loads(d.example_path.read_text()); spec.pop('sweep', None); "
        "d.prepare(spec, d.example_path.parent); print(sorted(m for m in ('jax', 'flax', 'optax') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code, name], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


@pytest.mark.parametrize("name", NAMES)
def test_example_spec_parses(name: str) -> None:
    domain = DOMAINS[name]
    spec = tomllib.loads(domain.example_path.read_text())
    assert registry.spec_domain(spec) is domain
    job = domain.prepare({k: v for k, v in spec.items() if k != "sweep"}, domain.example_path.parent)
    assert isinstance(job, domain.job_model)


def _frames_equal(a: pd.DataFrame | None, b: pd.DataFrame | None) -> None:
    if a is None:
        assert b is None
        return
    pd.testing.assert_frame_equal(a, b, check_exact=True)


@pytest.mark.parametrize("name", NAMES)
def test_a_tiny_job_runs_is_recorded_and_its_report_loads_back_equal(name: str, tmp_path: Path) -> None:
    domain = DOMAINS[name]
    run = smoke_run(name)  # the smoke job, run once per process: the domain's decide tests read its folder
    job, report = run.job, run.report
    assert report.metrics and all(np.isfinite(v) for v in report.metrics.values())

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    try:
        run_id = execute_recorded(domain.name, job.name, job.config(), lambda: report, url=url,
                                  output_dir=str(tmp_path / "out"))
        record = get_run(run_id, url=url)
    finally:
        dispose_engines()
    assert record.status == RunStatus.SUCCEEDED and record.kind == domain.name
    names = {artifact.name for artifact in record.artifacts}
    assert {"report", *report.tables()} <= names

    for back in (load_run_report(domain, record), domain.report_model.load(tmp_path / "out" / f"run-{run_id}")):
        assert back.metrics == report.metrics
        for field in back.table_fields():
            _frames_equal(getattr(report, field), getattr(back, field))
        for field in back.plain_fields():
            assert getattr(back, field) == getattr(report, field), field
    if domain.decider is not None:
        try:
            _operator_loop(domain, run_id, url)
        finally:
            dispose_engines()


def _operator_loop(domain: Domain, run_id: int, url: str) -> None:
    """An asset of the domain gets the run's proposed policy, decides its example state (twice: the
    same action, and with the deployment's digest), records an outcome and reads it back in the monitor."""
    from decisions.platform.monitoring import monitor_asset
    from decisions.platform.operations import decide, deploy
    from decisions.store import create_asset, get_decision, get_run, outcomes_of, record_outcome
    from decisions.store.artifacts import report_folder
    from decisions.store.plain import plain_json

    create_asset("asset 1", domain.name, {}, url=url)
    deployment, proposal = deploy("asset 1", run_id, url=url)
    assert deployment.settings["policy"] == proposal.best.name and deployment.policy_digest
    state = domain.decider().example_state(report_folder(get_run(run_id, url=url)))
    first, again = (decide("asset 1", [state], url=url)[0] for _ in range(2))
    assert first.decision.action == again.decision.action and np.isfinite(first.decision.expected)
    assert first.decision_id is not None
    written = get_decision(first.decision_id, url=url)
    assert written.policy_digest == deployment.policy_digest and written.action == plain_json(first.decision.action)
    record_outcome(first.decision_id, {}, first.decision.expected, url=url)
    realised = outcomes_of("asset 1", url=url)
    assert [r.decision_id for r in realised] == [first.decision_id] and realised[0].residual == 0.0
    assert monitor_asset("asset 1", url=url).outcomes == 1


@pytest.mark.parametrize("name", NAMES)
def test_bench_runs_at_a_tiny_budget_and_returns_a_flat_json_object(name: str) -> None:
    figures, _ = smoke_bench(name)
    assert isinstance(figures, dict) and figures
    assert all(isinstance(key, str) for key in figures)
    assert all(value is None or isinstance(value, bool | int | float | str) for value in figures.values()), figures
    json.loads(json.dumps(figures))


_CLI_BAD_INPUT = r'''
import json, os, sys
from pathlib import Path
from typer.testing import CliRunner
from decisions.cli import app
from decisions.store import dispose_engines, list_runs

folder, url = Path(sys.argv[1]), os.environ["DECISIONS_DB_URL"]
results = []
for case in json.loads((folder / "cases.json").read_text()):
    result = CliRunner().invoke(app, ["run", str(folder / case["spec"])])
    results.append({"spec": case["spec"], "code": result.exit_code, "output": result.output})
results.append({"runs": len(list_runs(url=url)), "jax": sorted(m for m in ("jax", "flax", "optax") if m in sys.modules)})
dispose_engines()
print(json.dumps(results))
'''


def _toml(spec: dict, prefix: str = "") -> str:
    """TOML text of a spec of tables, scalars and lists (what the smoke specs hold)."""
    def value(v: object) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, list | tuple):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + "}"
        return json.dumps(v) if isinstance(v, str) else repr(v)

    scalars = [f"{k} = {value(v)}" for k, v in spec.items() if not isinstance(v, dict)]
    tables = [_toml(v, f"{prefix}{k}.") for k, v in spec.items() if isinstance(v, dict)]
    head = [f"[{prefix.rstrip('.')}]"] if prefix and scalars else []
    return "\n".join([*head, *scalars, *tables]) + "\n"


def test_bad_input_is_refused_by_the_cli_before_jax_and_before_the_store(tmp_path: Path) -> None:
    """Through ``decisions run``: a seed beyond 2**32 - 1 in every domain, bad cells and columns of the
    input files (a user's log, a forward curve, a tariff) give exit 2 and one line naming the field
    (and for a file the column or row), no run is recorded and JAX never loads."""
    cases: list[tuple[str, dict, str]] = []
    for name in NAMES:
        spec = DOMAINS[name].smoke_job()
        spec["job"]["seed"] = 2**32
        cases.append((f"{name}_seed.toml", spec, "job.seed: Input should be less than or equal to 4294967295"))
    rows = ["0,0.5,1,0,1.5,0.1"] * 12
    rows[5] = "0,1.3,1,0,1.5,0.1"
    (tmp_path / "log.csv").write_text("\n".join(["action,propensity,success,hides,revenue,ctx_a", *rows]) + "\n")
    cases.append(("utility_log.toml", {"job": {"kind": "utility"}, "logs": {"path": "log.csv"}},
                  "logs.path: propensity, row 7: 1.3 is outside (0, 1]"))
    (tmp_path / "curve.csv").write_text("date,price,Price\n2026-04-01,20,20\n2026-04-02,21,21\n")
    cases.append(("gas_curve.toml", {"job": {"kind": "gas_storage", "method": "baselines"},
                                     "scenario": {"forward_curve_csv": "curve.csv"}},
                  "scenario.forward_curve_csv: column 'Price' appears twice in the header"))
    prices = ["0.2"] * 8760
    prices[9] = "1e39"
    (tmp_path / "tariff.csv").write_text("\n".join(["price", *prices]) + "\n")
    cases.append(("building_tariff.toml", {"job": {"kind": "building"},
                                           "scenario": {"tariff": {"kind": "csv", "path": "tariff.csv"}}},
                  "scenario.tariff.path: row 11: price 1e+39 is out of range"))
    for file, spec, _ in cases:
        (tmp_path / file).write_text(_toml(spec))
    (tmp_path / "cases.json").write_text(json.dumps([{"spec": file} for file, _, _ in cases]))
    env = {**os.environ, "DECISIONS_DB_URL": f"sqlite:///{tmp_path / 'runs.db'}"}
    out = subprocess.run([sys.executable, "-c", _CLI_BAD_INPUT, str(tmp_path)], capture_output=True, text=True,
                         check=True, env=env, cwd=ROOT)
    *results, store = json.loads(out.stdout.strip().splitlines()[-1])
    for (file, _, expected), result in zip(cases, results, strict=True):
        lines = [line for line in result["output"].splitlines() if line.strip()]
        assert result["code"] == 2 and len(lines) == 1 and expected in lines[0], (file, result)
    assert store == {"runs": 0, "jax": []}

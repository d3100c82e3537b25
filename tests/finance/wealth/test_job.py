"""The wealth job layer: spec validation naming the field, and small recorded runs (shipped and freshly trained planner)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from decisions.finance.wealth import DOMAIN
from decisions.finance.wealth import job as wealth_job
from decisions.finance.wealth import study as wealth_study
from decisions.finance.wealth.bench import EXAMPLE_MULTI_GOAL
from decisions.finance.wealth.planner import load_planner, planner_training
from decisions.finance.wealth.problem import WealthProblem
from decisions.platform.record import execute_domain, execute_recorded, load_run_report
from decisions.platform.registry import get
from decisions.store import RunStatus, dispose_engines, get_run
from tests.helpers import assert_input_error
from tests.smoke_runs import smoke_run

pytestmark = pytest.mark.smoke_runs("wealth")  # the smoke job, shared; its problem: the planner's programs compile once

PROBLEM = DOMAIN.smoke_spec["problem"]
"""Two goals over six years (the registry's smoke problem)."""


def _spec(**sections: object) -> dict[str, object]:
    return {"job": {"kind": "wealth", "name": "client"}, "problem": PROBLEM, **sections}


def test_prepare_validates_the_spec(tmp_path: Path) -> None:
    job = wealth_job.prepare(_spec())
    assert job.name == "client" and job.problem.horizon == 6 and get("wealth") is DOMAIN and DOMAIN.prepare(_spec()).name == "client"
    goal = PROBLEM["goals"][0]
    for spec, field in (
        ({"problem": {**PROBLEM, "goals": [{"year": 9, "options": [{"cost": 1.0, "utility": 1.0}]}]}}, "problem.goals"),
        ({"problem": {**PROBLEM, "goals": [{"year": 2, "options": [{"cost": -1.0, "utility": 1.0}]}]}}, "problem.goals.0.options.0.cost"),
        (
            {"problem": {**PROBLEM, "goals": [{**goal, "options": [{"cost": 20.0, "utility": 10.0}, {"cost": 40.0, "utility": 5.0}]}]}},
            "problem.goals.0.options",
        ),
        ({"problem": {**PROBLEM, "market": {"covariance": [[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]]}}}, "problem.market.covariance"),
        ({"problem": {**PROBLEM, "horizon": 40, "cash_flows": None}}, "problem.horizon"),
        ({"problem": {**PROBLEM, "rho": 0.0}}, "problem.rho"),
        ({"rule": {"r1": 2.0, "r2": 1.0}}, "rule.r2"),
        ({"planner": {"path": "missing.msgpack"}}, "planner.path"),
        ({"planner": {"distill_steps": 0}}, "planner.distill_steps"),
        ({"planner": {"distill_problems": 2, "distill_rounds": 3}}, "planner.distill_rounds"),
        ({"planner": {"distill_problems": 4, "distill_rounds": 2, "distill_steps": [5]}}, "planner.distill_steps"),
        ({"planner": {"distill_steps": [5, 0]}}, "planner.distill_steps.1"),
        ({"planner": {"distill_temperature": 0}}, "planner.distill_temperature"),
        ({"evaluation": {"paths": 0}}, "evaluation.paths"),
        ({"job": {"seed": -1}}, "job.seed"),
        ({"extra": {}}, "extra"),
    ):
        assert_input_error(wealth_job.prepare, {**_spec(), **spec}, tmp_path, field=field)


def test_a_small_recorded_job_reports_every_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    try:
        # the registry's smoke job (shipped planner, DP, 500 paths), run once per process, recorded: its report
        # is read back from the record
        smoke = smoke_run(DOMAIN.name)
        run_id = execute_recorded(DOMAIN.name, smoke.job.name, smoke.job.config(), lambda: smoke.report, url=url,
                                  output_dir=str(tmp_path / "out"))
        record = get_run(run_id, url=url)
        assert record.status == RunStatus.SUCCEEDED and record.kind == DOMAIN.name
        written = {a.name: Path(a.path) for a in record.artifacts}
        assert {"comparison", "goals", "plan", "wealth_fan", "chart"} <= set(written)
        report = load_run_report(DOMAIN, record)  # equal to run_job's report (tests/jobs/test_conformance.py)
        assert report.metrics == record.latest_metrics()
        assert list(report.comparison["policy"]) == ["dp", "planner", "funding_rule"]
        assert report.metrics["planner_vs_dp"] > 0.9 and report.metrics["plan_ms"] > 0
        assert report.metrics["dp_value"] == pytest.approx(report.metrics["expected_utility_dp"], rel=0.05)
        goals = report.goals
        funded = goals.groupby("goal")[["dp", "planner", "funding_rule"]].sum()
        np.testing.assert_allclose(funded.to_numpy(), 1.0, atol=1e-9)  # each goal's options (incl. not funded) sum to 1
        assert set(report.wealth_fan["policy"]) == {"dp", "planner", "funding_rule"} and (report.wealth_fan["p95"] >= report.wealth_fan["p5"]).all()
        assert {"dp_portfolio", "planner_portfolio"} <= set(report.plan.columns)
        assert written["chart"].stat().st_size > 0
        assert pd.read_csv(written["plan"]).shape == report.plan.shape

        trained = wealth_job.prepare(
            _spec(planner={"train_problems": 32, "train_steps": 256 * 32 * 2}, evaluation={"paths": 500, "dp": False})
        )
        run_id = execute_domain(DOMAIN, trained, url=url)
        record = get_run(run_id, url=url)
        assert record.status == RunStatus.SUCCEEDED and "dp_value" not in record.latest_metrics()
        paths = {a.name: Path(a.path) for a in record.artifacts}
        assert load_planner(paths["planner"]).policy.hidden == (256, 256)
        # the job refines on problems drawn from the training family; two small ones here, on a
        # coarse DP grid (rho 1.5: 380 nodes, not 770), so that the DP labels them in a second
        # (test_distill covers the labels themselves)
        small = [WealthProblem.parse({**EXAMPLE_MULTI_GOAL, "initial_wealth": w, "rho": 1.5}) for w in (100.0, 60.0)]
        monkeypatch.setattr(wealth_study, "sample_problems", lambda count, family, market: small[:count])
        refined = wealth_job.prepare(
            _spec(planner={"distill_problems": 2, "distill_rounds": 2, "distill_steps": [10, 20]}, evaluation={"paths": 500, "dp": False})
        )
        run_id = execute_domain(DOMAIN, refined, url=url)
        record = get_run(run_id, url=url)
        assert record.status == RunStatus.SUCCEEDED and record.latest_metrics()["planner_distill_greedy_regret"] >= 0
        planner_file = next(Path(a.path) for a in record.artifacts if a.name == "planner")
        assert load_planner(planner_file).joint
        assert planner_training(planner_file)["stages"][-1]["problems"] == 2
    finally:
        dispose_engines()

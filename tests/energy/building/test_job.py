"""The building job end to end on a tiny budget: report contents, explanations, recording, reload."""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np
import pandas as pd
import pytest

from decisions.core.agents import ppo
from decisions.energy.building import DOMAIN, replay
from decisions.energy.building import job as building_job
from decisions.energy.building import spec as building_spec
from decisions.energy.building import study as building_study
from decisions.energy.building.agents import AgentName, seed_params
from decisions.errors import InputError
from decisions.platform.record import execute_domain
from decisions.store import RunStatus, dispose_engines, get_run
from tests.helpers import with_sections
from tests.smoke_runs import smoke_bench, smoke_run

pytestmark = pytest.mark.smoke_runs("building")  # the one-seed PPO job is the conformance kit's tiny job


def _spec(**overrides) -> dict:
    spec = {
        "job": {"kind": "building", "name": "tiny", "seed": 0},
        "scenario": {"buildings": [1], "relative_reward": True},
        "agents": {"names": ["ppo", "sac"], "seeds": 2, "on_policy_steps": 10_752, "off_policy_steps": 5_000},
    }
    return with_sections(spec, **overrides)


@pytest.fixture(scope="module")
def report():
    return building_job.run_job(building_spec.prepare(_spec()))


def _ids(table) -> list[tuple[str, int | None]]:
    return [(c, None if s is pd.NA else int(s)) for c, s in zip(table["controller"], table["seed"], strict=True)]


def test_kpi_table_has_baselines_and_every_seed(report) -> None:
    assert _ids(report.kpis) == [
        ("no_battery", None), ("rule_based", None), ("perfect_foresight", None),
        ("ppo", 0), ("ppo", 1), ("sac", 0), ("sac", 1),
    ]
    assert str(report.kpis["seed"].dtype) == "Int64"
    baselines = building_study.baseline_kpis(report.kpis)
    assert baselines.loc["no_battery", "cost"] == 1.0
    assert baselines.loc["perfect_foresight", "saving_fraction_of_lp"] == pytest.approx(1.0)
    assert list(building_study.seed_kpis(report.kpis, "sac")["seed"]) == [0, 1]
    # no controller beats the perfect-foresight LP
    assert (report.kpis["cost_usd"] >= baselines.loc["perfect_foresight", "cost_usd"] - 1e-6).all()
    assert list(report.agents.index) == ["ppo", "sac"]
    assert report.agents.loc["ppo", "family"] == "on-policy"
    assert report.metrics["best_agent_saving_vs_lp"] == pytest.approx(report.agents["saving_vs_lp_mean"].max())


def test_explanations_cover_every_feature_group(report) -> None:
    assert report.explained in {("ppo", 0), ("ppo", 1), ("sac", 0), ("sac", 1)}
    agent, seed = report.explained
    assert report.agents.loc[agent, "explained_seed"] == seed
    assert {"calendar", "price now", "price forecasts", "state of charge", "load and PV"} <= set(report.importance["group"])
    assert (report.importance["importance"] >= 0).all()
    assert 0.0 <= report.metrics["surrogate_fidelity_agreement"] <= 1.0
    assert "value" in report.rules or "->" in report.rules
    assert set(report.forecast_sensitivity["feature"]) >= {"price_6h_usd_per_kwh", "price_24h_usd_per_kwh"}


def test_hourly_table_holds_every_controller_on_the_held_out_window(report) -> None:
    hourly = report.hourly
    assert list(dict.fromkeys(_ids(hourly))) == _ids(report.kpis)
    assert set(hourly["month"]) == {9, 10, 11, 12}
    sizes = hourly.groupby(["controller", "seed"], dropna=False).size()
    assert sizes.nunique() == 1


def test_the_rule_based_row_is_the_benchs_building_1_figure(report) -> None:
    """The job scores the rule-based controller on the home and window the bench reports for building 1."""
    figures, _ = smoke_bench("building")
    assert report.metrics["saving_vs_lp_rule_based"] == pytest.approx(figures["saving_vs_lp_rule_based"], rel=1e-9)


def test_execute_records_run_and_saved_policy_gives_the_same_actions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The smoke job (one PPO seed), recorded: the run's policy file acts as the policy the job trained.

    The job's report is the conformance kit's run of the same job (``smoke_run``), not trained again."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    smoke = smoke_run("building")
    jobs = []  # the jobs execute_domain ran: the smoke job, once

    def run_job(job: object, **kwargs: object) -> object:
        jobs.append(job)
        return smoke.report

    monkeypatch.setattr(building_job, "run_job", run_job)  # execute_domain looks it up when it runs
    try:
        spec = _spec(agents={"names": ["ppo"], "seeds": 1}, evaluation={"explain": False})
        del spec["agents"]["off_policy_steps"]  # no off-policy agent: prepare refuses it
        job = building_spec.prepare(spec)
        assert {**job.config(), "name": "smoke"} == smoke.job.config(), (
            "this job is no longer the smoke job: run it here instead of reusing smoke_run"
        )
        run_id = execute_domain(DOMAIN, job, url=url)
        assert [j.config() for j in jobs] == [job.config()]
        record = get_run(run_id, url=url)
        assert record.status == RunStatus.SUCCEEDED
        metrics = record.latest_metrics()
        assert metrics["saving_vs_lp_ppo"] is not None and metrics["lp_saving_usd"] > 0
        paths = {a.name: Path(a.path) for a in record.artifacts}
        assert paths["chart"].stat().st_size > 10_000
        policy, params = ppo.load_policy(paths["policy_ppo_seed0"])
        trained = smoke.report.policies["ppo"]  # the policy the run trained, before it was saved and loaded back
        obs = jax.random.normal(jax.random.PRNGKey(3), (16, 27))
        key = jax.random.PRNGKey(0)
        expected = jax.vmap(lambda o: trained.policy(seed_params(trained, 0), o, key))(obs)
        np.testing.assert_array_equal(np.asarray(jax.vmap(lambda o: policy(params, o, key))(obs)), np.asarray(expected))
    finally:
        dispose_engines()


def test_replaying_the_explained_seed_gives_the_recorded_trajectory_and_explanation(report) -> None:
    agent, seed = report.explained
    job = building_spec.prepare(_spec())
    result = report.policies[agent]
    trajectory = replay.simulate_policy(job.scenario, agent, result.policy, seed_params(result, seed))
    recorded = report.hourly[(report.hourly["controller"] == agent) & (report.hourly["seed"] == seed).fillna(False)]
    np.testing.assert_array_equal(trajectory.to_frame()["soc"].to_numpy(), recorded["soc"].to_numpy())
    again = replay.explain_policy(
        agent, seed, result.policy, seed_params(result, seed), trajectory, random_seed=job.seed,
        max_depth=job.evaluation.tree_depth,
    )
    pd.testing.assert_frame_equal(again.importance(), report.importance)
    assert again.explanation.surrogate.rules == report.rules
    lines, local = again.why(10)
    assert lines[0].startswith("Action:") and len(local.table) == len(again.explanation.feature_names)


def test_policy_names_are_made_from_the_pair_and_found_among_artifacts(tmp_path: Path) -> None:
    assert replay.seed_name("ppo", 2) == "ppo_seed2" and replay.policy_artifact(AgentName.SAC, 0) == "policy_sac_seed0"
    assert replay.is_continuous("sac") and not replay.is_continuous(AgentName.DQN)
    with pytest.raises(InputError, match=r"^policy: the policy file of ppo_seed1 is not on disk \(not recorded\)"):
        replay.policy_path({}, "ppo", 1)
    (tmp_path / "x.msgpack").write_bytes(b"")
    assert replay.policy_path({"policy_ppo_seed1": str(tmp_path / "x.msgpack")}, "ppo", 1) == tmp_path / "x.msgpack"
    with pytest.raises(InputError, match=r"^controller: dqn_seed0 is not a continuous-action"):
        replay.replay_seed(building_spec.prepare(_spec()), "dqn", 0, {})
    with pytest.raises(InputError, match=r"^scenario\.buildings"):
        building_job.recorded_job({**building_spec.prepare(_spec()).config(), "scenario": {"buildings": [18]}})


def test_prepare_names_bad_fields() -> None:
    with pytest.raises(InputError, match=r"^agents\.names"):
        building_spec.prepare(_spec(agents={"names": ["ppo", "alphago"]}))
    with pytest.raises(InputError, match=r"^agents\.seeds:"):
        building_spec.prepare(_spec(agents={"seeds": 0}))
    with pytest.raises(InputError, match=r"^scenario\.buildings"):
        building_spec.prepare(_spec(scenario={"buildings": [18]}))
    with pytest.raises(InputError, match=r"^agents\.names: dqn"):
        building_spec.prepare(_spec(scenario={"buildings": "district"}, agents={"names": ["dqn"]}))
    with pytest.raises(InputError, match=r"^bogus:"):
        building_spec.prepare({**_spec(), "bogus": {}})
    assert AgentName("ppo").on_policy and not AgentName("sac").on_policy

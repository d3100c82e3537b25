"""The building job end to end on a tiny budget: report contents, explanations, recording, reload."""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np
import pytest

from decisions.core.agents import ppo
from decisions.energy.building import job as building_job
from decisions.energy.building.agents import AgentName, seed_params
from decisions.errors import InputError
from decisions.store import RunStatus, dispose_engines, get_run


def _spec(**overrides) -> dict:
    spec = {
        "job": {"kind": "building", "name": "tiny", "seed": 0},
        "scenario": {"buildings": [1], "relative_reward": True},
        "agents": {"names": ["ppo", "sac"], "seeds": 2, "on_policy_steps": 10_752, "off_policy_steps": 5_000},
    }
    for section, values in overrides.items():
        spec[section] = {**spec.get(section, {}), **values}
    return spec


@pytest.fixture(scope="module")
def report():
    return building_job.run_job(building_job.prepare(_spec()))


def test_kpi_table_has_baselines_and_every_seed(report) -> None:
    rows = set(report.kpis.index)
    assert {"no_battery", "rule_based", "perfect_foresight"} <= rows
    assert {"ppo_seed0", "ppo_seed1", "sac_seed0", "sac_seed1"} <= rows
    assert report.kpis.loc["no_battery", "cost"] == 1.0
    assert report.kpis.loc["perfect_foresight", "saving_fraction_of_lp"] == pytest.approx(1.0)
    # no controller beats the perfect-foresight LP
    assert (report.kpis["cost_usd"] >= report.kpis.loc["perfect_foresight", "cost_usd"] - 1e-6).all()
    assert list(report.agents.index) == ["ppo", "sac"]
    assert report.agents.loc["ppo", "family"] == "on-policy"
    assert report.metrics["best_agent_saving_vs_lp"] == pytest.approx(report.agents["saving_vs_lp_mean"].max())


def test_explanations_cover_every_feature_group(report) -> None:
    assert report.explained in {"ppo_seed0", "ppo_seed1", "sac_seed0", "sac_seed1"}
    assert {"calendar", "price now", "price forecasts", "state of charge", "load and PV"} <= set(report.importance["group"])
    assert (report.importance["importance"] >= 0).all()
    assert 0.0 <= report.metrics["surrogate_fidelity_agreement"] <= 1.0
    assert "value" in report.rules or "->" in report.rules
    assert set(report.forecast_sensitivity["feature"]) >= {"price_6h_usd_per_kwh", "price_24h_usd_per_kwh"}


def test_hourly_table_holds_every_controller_on_the_held_out_window(report) -> None:
    hourly = report.hourly
    assert set(hourly["controller"]) == set(report.kpis.index)
    assert set(hourly["month"]) == {9, 10, 11, 12}
    sizes = hourly.groupby("controller").size()
    assert sizes.nunique() == 1


def test_execute_records_run_and_saved_policy_gives_the_same_actions(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    try:
        job = building_job.prepare(
            _spec(agents={"names": ["ppo"], "seeds": 1}, evaluation={"explain": False})
        )
        run_id = building_job.execute(job, url=url)
        record = get_run(run_id, url=url)
        assert record.status == RunStatus.SUCCEEDED
        metrics = record.latest_metrics()
        assert metrics["saving_vs_lp_ppo"] is not None and metrics["lp_saving_usd"] > 0
        paths = {a.name: Path(a.path) for a in record.artifacts}
        assert paths["chart"].stat().st_size > 10_000
        policy, params = ppo.load_policy(paths["policy_ppo_seed0"])
        trained = building_job.run_job(job).policies["ppo"]  # same seed: same training
        obs = jax.random.normal(jax.random.PRNGKey(3), (16, 27))
        key = jax.random.PRNGKey(0)
        expected = jax.vmap(lambda o: trained.policy(seed_params(trained, 0), o, key))(obs)
        np.testing.assert_array_equal(np.asarray(jax.vmap(lambda o: policy(params, o, key))(obs)), np.asarray(expected))
    finally:
        dispose_engines()


def test_prepare_names_bad_fields() -> None:
    with pytest.raises(InputError, match=r"^agents\.names"):
        building_job.prepare(_spec(agents={"names": ["ppo", "alphago"]}))
    with pytest.raises(InputError, match=r"^agents\.seeds:"):
        building_job.prepare(_spec(agents={"seeds": 0}))
    with pytest.raises(InputError, match=r"^scenario\.buildings"):
        building_job.prepare(_spec(scenario={"buildings": [18]}))
    with pytest.raises(InputError, match=r"^agents\.names: dqn"):
        building_job.prepare(_spec(scenario={"buildings": "district"}, agents={"names": ["dqn"]}))
    with pytest.raises(InputError, match=r"^bogus:"):
        building_job.prepare({**_spec(), "bogus": {}})
    assert AgentName("ppo").on_policy and not AgentName("sac").on_policy

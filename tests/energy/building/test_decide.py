"""The building's decide contract on the smoke run's saved folder: candidates, loading, deciding."""

from __future__ import annotations

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.energy.building import DOMAIN
from decisions.energy.building import decide as building_decide
from decisions.energy.building.deployable import load_scenario
from decisions.energy.building.env import BuildingEnv
from decisions.energy.building.forecast_error import bill_forecast
from decisions.energy.building.hour_state import observations
from decisions.energy.building.replay import load_policy
from decisions.energy.building.scenario import Split
from tests import decide_contract as contract

pytestmark = pytest.mark.smoke_runs("building")  # the conformance kit's smoke run, shared

run_folder = contract.smoke_folder("building")
ppo = contract.loaded_policy(building_decide, "ppo", name="ppo")
_state = functools.partial(contract.state, building_decide)  # the run's example state with changes


def test_candidates_are_the_agents_and_one_hour_baselines(run_folder: Path) -> None:
    offered = contract.offered(DOMAIN, building_decide, run_folder, ["ppo", "rule_based", "no_battery"])
    assert all(c.score_name == "saving_fraction_of_lp" for c in offered.values())
    assert offered["ppo"].learnt and not offered["rule_based"].learnt
    assert offered["no_battery"].score == 0.0


def test_decides_the_example_hour_like_the_environment(run_folder: Path, ppo: building_decide.BuildingPolicy) -> None:
    example = _state(run_folder)
    (decision,) = building_decide.decide(ppo, [example])
    fraction = decision.action["battery"]
    assert len(fraction) == 1 and -1.0 <= fraction[0] <= 1.0
    assert decision.alternative["policy"] == "rule_based"
    assert set(decision.reasons["attributions"]) >= {"state of charge", "price now", "price forecasts"}
    # the environment at the example's row, batteries half-charged, is the same observation and bill
    scenario = load_scenario(run_folder)
    env, params = BuildingEnv.from_scenario(scenario, Split.EVAL)
    row = scenario.eval_window().start_hour + 17
    _, start = env.reset_at(row, params)
    start = start.replace(energy=0.5 * start.capacity)
    obs = env._observe(start, params)
    np.testing.assert_allclose(observations([example])[0], np.asarray(obs), rtol=1e-5, atol=1e-5)
    policy, weights = load_policy("ppo", run_folder / "ppo_seed0.msgpack")
    action = policy(weights, obs, jax.random.PRNGKey(0))
    assert fraction[0] == pytest.approx(float(jnp.clip(action[0], -1, 1)), abs=1e-5)
    # the hour's net load after the action (and left idle) is the environment's, its bill priced under
    # the forecast's errors at that hour
    net = [float(env.step(jax.random.PRNGKey(0), start, a, params)[5]["net_load"].sum()) for a in (action, jnp.zeros(1))]
    (billed, idle), low, high = bill_forecast(np.array(net), np.array([example.price_usd_per_kwh] * 2),
                                              ppo.feed_in_price, np.array([example.hour] * 2), ppo.errors)
    assert decision.expected == pytest.approx(float(billed), abs=1e-4)
    assert decision.value == pytest.approx(float(idle - billed), abs=1e-4)
    assert decision.interval == pytest.approx((float(low[0]), float(high[0])), abs=1e-4)


def test_same_state_same_action_and_batches_answer_in_order(
    run_folder: Path, ppo: building_decide.BuildingPolicy
) -> None:
    states = [_state(run_folder, soc=[soc], price_usd_per_kwh=price)
              for soc, price in ((0.1, 0.22), (0.9, 0.54), (0.5, 0.4))]
    singles, _ = contract.decided_alone_and_together(building_decide, ppo, [states[0], *states, states[0]], abs=1e-5)
    assert len({tuple(d.action["battery"]) for d in singles}) > 1


def test_bad_states_are_refused_naming_the_field(run_folder: Path, ppo: building_decide.BuildingPolicy) -> None:
    contract.assert_bad_state_refused(building_decide, run_folder, lambda state: state.pop("hour"), "state.hour")
    contract.assert_bad_state_refused(building_decide, run_folder, {"soc": [1.5]}, "state.soc.0")
    contract.refused(building_decide.decide, ppo, [_state(run_folder, load_kwh=[1.0, 2.0])], field="state.load_kwh")


def test_unknown_policy_and_unusable_run_are_refused(run_folder: Path, tmp_path: Path) -> None:
    contract.assert_unknown_policies_refused(building_decide, run_folder, "sac")
    contract.refused(building_decide.load, contract.copied_run(run_folder, tmp_path, only=["kpis.csv"]), "rule_based",
                     field="run", starts="it saved no deployment")


def test_baselines_answer_as_their_controllers(run_folder: Path) -> None:
    idle = building_decide.load(run_folder, "no_battery")
    (decision,) = building_decide.decide(idle, [_state(run_folder)])
    assert decision.action == {"battery": [0.0], "in_words": ["hold"]} and decision.value == 0.0
    assert decision.alternative["policy"] == "rule_based" and decision.alternative["value"] > 0

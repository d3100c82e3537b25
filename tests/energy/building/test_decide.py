"""The building's decide contract on the smoke run's saved folder: candidates, loading, deciding."""

from __future__ import annotations

import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.energy.building import DOMAIN
from decisions.energy.building import decide as building_decide
from decisions.energy.building.deployable import load_scenario
from decisions.energy.building.env import BuildingEnv
from decisions.energy.building.hour_state import observations
from decisions.energy.building.replay import load_policy
from decisions.energy.building.scenario import Split
from decisions.errors import InputError
from tests.helpers import saved_smoke_run

# Each module trains its own smoke run; the default suite covers every domain's decide through the
# conformance kit's operator loop (tests/jobs/test_conformance.py) on its tiny recorded run.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return saved_smoke_run(DOMAIN, tmp_path_factory.mktemp("building_run"))


@pytest.fixture(scope="module")
def ppo(run_folder: Path) -> building_decide.BuildingPolicy:
    return building_decide.load(run_folder, "ppo")


def _state(run_folder: Path, **changes: object) -> building_decide.HourState:
    return building_decide.STATE_MODEL.parse({**building_decide.example_state(run_folder), **changes})


def test_the_domain_registers_its_decider() -> None:
    assert DOMAIN.decider is not None and DOMAIN.decider() is building_decide


def test_candidates_are_the_agents_and_one_hour_baselines(run_folder: Path) -> None:
    offered = {c.name: c for c in building_decide.candidates(run_folder, {})}
    assert list(offered) == ["ppo", "rule_based", "no_battery"]
    assert all(math.isfinite(c.score) and c.score_name == "saving_fraction_of_lp" for c in offered.values())
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
    billed = env.step(jax.random.PRNGKey(0), start, action, params)[5]["cost"]
    idle = env.step(jax.random.PRNGKey(0), start, jnp.zeros(1), params)[5]["cost"]
    assert decision.expected == pytest.approx(float(billed), abs=1e-4)
    assert decision.value == pytest.approx(float(idle - billed), abs=1e-4)


def test_same_state_same_action_and_batches_answer_in_order(
    run_folder: Path, ppo: building_decide.BuildingPolicy
) -> None:
    states = [_state(run_folder, soc=[soc], price_usd_per_kwh=price)
              for soc, price in ((0.1, 0.22), (0.9, 0.54), (0.5, 0.4))]
    singles = [building_decide.decide(ppo, [s])[0] for s in states]
    batch = building_decide.decide(ppo, [states[0], *states, states[0]])
    assert [d.action for d in batch] == [singles[0].action, *(d.action for d in singles), singles[0].action]
    assert [d.expected for d in batch[1:4]] == pytest.approx([d.expected for d in singles], abs=1e-5)
    assert building_decide.decide(ppo, [states[1]])[0].action == singles[1].action
    assert len({tuple(d.action["battery"]) for d in singles}) > 1


def test_bad_states_are_refused_naming_the_field(run_folder: Path, ppo: building_decide.BuildingPolicy) -> None:
    example = building_decide.example_state(run_folder)
    with pytest.raises(InputError, match=r"^state\.hour"):
        building_decide.STATE_MODEL.parse({k: v for k, v in example.items() if k != "hour"})
    with pytest.raises(InputError, match=r"^state\.soc"):
        building_decide.STATE_MODEL.parse({**example, "soc": [1.5]})
    with pytest.raises(InputError, match=r"^state\.load_kwh"):
        building_decide.decide(ppo, [_state(run_folder, load_kwh=[1.0, 2.0])])


def test_unknown_policy_and_unusable_run_are_refused(run_folder: Path, tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^policy: 'sac'"):
        building_decide.load(run_folder, "sac")
    (tmp_path / "kpis.csv").write_text((run_folder / "kpis.csv").read_text())
    with pytest.raises(InputError, match=r"^run: it saved no deployment"):
        building_decide.load(tmp_path, "rule_based")


def test_baselines_answer_as_their_controllers(run_folder: Path) -> None:
    idle = building_decide.load(run_folder, "no_battery")
    (decision,) = building_decide.decide(idle, [_state(run_folder)])
    assert decision.action == {"battery": [0.0], "in_words": ["hold"]} and decision.value == 0.0
    assert decision.alternative["policy"] == "rule_based" and decision.alternative["value"] > 0

"""Parity of ``CompEnv`` with mobile-env, and the parity verdict's power to fail.

Three levels:

- step level: from mobile-env's own states (positions, connections) and actions, our step
  gives the same reward (to float32 precision) and the same connections, for every step of
  an episode of each scenario and policy;
- mobility: a ``CompEnv`` episode running free from mobile-env's reset, given only the random
  waypoints mobile-env draws, keeps its users within ``parity.POSITION_TOLERANCE_M`` of
  mobile-env's and its rewards, connections and observations equal; a 5 % faster walk or a
  larger roaming area fails the check;
- episode level: mobile-env and our simulator draw different random trajectories, so mean
  episode returns are compared statistically. In the default suite (16 small episodes, too few
  to bound the difference within the tolerance): Welch's two-sided test must not reject equal
  means at the 0.1 % level, and the difference of means must be below ``parity.RETURN_TOLERANCE``
  (8 return units). At the bench's budget (slow tests) the bench's verdict must pass: the whole
  99 % interval of the difference within the tolerance. The verdict itself is checked on
  synthetic returns (it fails on a shift beyond the tolerance and on too few episodes) and,
  slow, on a perturbed network (users roaming the whole large map). Seeds are fixed, so the
  tests are deterministic.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from decisions.telecom.comp.sim.network import SCENARIOS
from decisions.telecom.comp.study import parity

EPISODES = {"small": 16, "medium": 6, "large": 3}
ALPHA = 1e-3

needs_mobile_env = pytest.mark.skipif(
    not parity.mobile_env_installed(), reason="mobile-env is not installed (pip install 'mobile-env>=2.1')"
)


def test_the_return_verdict_passes_equivalent_samples_and_fails_shifted_or_short_ones() -> None:
    rng = np.random.default_rng(0)
    ours = rng.normal(0.0, 13.0, 512)  # the spread of the small max-SNR returns
    same = parity.compare_samples(ours, rng.normal(0.0, 13.0, 96))
    assert same["pass"] and same["diff_ci"][0] > -parity.RETURN_TOLERANCE, same
    shifted = parity.compare_samples(ours, rng.normal(-12.0, 13.0, 96))  # mobile-env 12 units lower
    assert not shifted["pass"] and shifted["diff"] > parity.RETURN_TOLERANCE, shifted
    few = parity.compare_samples(ours, rng.normal(0.0, 13.0, 3))  # no significant difference, but no bound either
    assert not few["pass"] and few["p_value"] > 0.05, few
    # a small real difference, tightly bounded, is parity even though a test of equality rejects it
    tight = parity.compare_samples(rng.normal(2.0, 1.0, 4000), rng.normal(0.0, 1.0, 4000))
    assert tight["pass"] and tight["p_value"] < 1e-6, tight
    assert not parity.compare_samples(rng.normal(2.0, 1.0, 4000), rng.normal(0.0, 1.0, 4000), tolerance=1.0)["pass"]
    with pytest.raises(ValueError, match="at least two"):
        parity.compare_samples(ours, np.array([1.0]))


@needs_mobile_env
@pytest.mark.parametrize("scenario", ["small", "medium", "large"])
@pytest.mark.parametrize("policy", ["max_snr", "random"])
def test_step_level_and_mobility_parity(scenario: str, policy: str) -> None:
    result = parity.step_parity(scenario, policy, seed=7, steps=100 if scenario == "small" else 40)
    assert result["max_reward_error"] < 1e-5
    assert result["connection_mismatches"] == 0
    assert result["obs_max_error"] < 1e-4
    assert result["mobility_max_position_error_m"] < parity.POSITION_TOLERANCE_M
    assert result["mobility_max_reward_error"] < 1e-5 and result["mobility_obs_max_error"] < 1e-4
    assert result["mobility_connection_mismatches"] == 0 and result["roam_area_error_m"] == 0.0
    assert parity.step_parity_passes(result)


@needs_mobile_env
def test_the_mobility_check_fails_on_a_faster_walk_or_a_larger_roaming_area() -> None:
    params = SCENARIOS["small"]()
    faster = parity.step_parity("small", "max_snr", seed=7, steps=30,
                                params=params.replace(user_velocity=params.user_velocity * 1.05))
    assert faster["mobility_max_position_error_m"] > 1.0 and not parity.step_parity_passes(faster)
    assert faster["max_reward_error"] < 1e-5  # the step itself, from mobile-env's positions, still agrees
    wider = parity.step_parity("small", "max_snr", seed=7, steps=5,
                               params=params.replace(size=jnp.asarray([260.0, 260.0])))
    assert wider["roam_area_error_m"] == pytest.approx(60.0) and not parity.step_parity_passes(wider)


@needs_mobile_env
@pytest.mark.parametrize(
    "scenario",
    # mobile-env's medium and large episodes take seconds each in Python: those two are slow tests
    ["small", pytest.param("medium", marks=pytest.mark.slow), pytest.param("large", marks=pytest.mark.slow)],
)
@pytest.mark.parametrize("policy", ["max_snr", "random"])
def test_mean_episode_returns_agree(scenario: str, policy: str) -> None:
    # mobile-env's few episodes carry most of the difference's variance: 64 of ours are plenty beside
    # the small scenario's 16
    n_sim = 64 if scenario == "small" else 256
    result = parity.compare(scenario, policy, n_mobile=EPISODES[scenario], n_sim=n_sim, seed=0)
    assert result["p_value_z"] > ALPHA, result
    assert abs(result["diff"]) < parity.RETURN_TOLERANCE, result


@needs_mobile_env
@pytest.mark.slow  # the bench's parity budget: minutes of mobile-env episodes
@pytest.mark.parametrize("scenario", ["small", "medium", "large"])
@pytest.mark.parametrize("policy", ["max_snr", "random"])
def test_mean_episode_returns_are_equivalent_at_the_bench_budget(scenario: str, policy: str) -> None:
    from decisions.telecom.comp.study.parity_figures import PARITY_EPISODES

    result = parity.compare(scenario, policy, n_mobile=PARITY_EPISODES[scenario], n_sim=512, seed=0)
    assert result["pass"], result


@needs_mobile_env
@pytest.mark.slow  # eight mobile-env episodes of the large scenario
def test_the_return_verdict_fails_when_users_roam_the_whole_large_map() -> None:
    from decisions.telecom.comp.study.parity_figures import PARITY_EPISODES

    params = SCENARIOS["large"]()
    wrong = params.replace(size=jnp.asarray([300.0, 300.0]))  # mobile-env's users roam only 200 x 200 m of it
    result = parity.compare("large", "max_snr", n_mobile=PARITY_EPISODES["large"], n_sim=512, seed=0, params=wrong)
    assert not result["pass"], result

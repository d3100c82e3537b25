"""Parity of ``CompEnv`` with mobile-env (skipped when mobile-env is not installed).

Two levels:

- step level: from mobile-env's own states (positions, connections) and actions, our step
  gives the same reward (to float32 precision) and the same connections, for every step of
  an episode of each scenario and policy;
- episode level: mobile-env and our simulator draw different random trajectories, so mean
  episode returns are compared statistically. Tolerance: Welch's two-sided test must not
  reject equal means at the 0.1 % level, and the difference of means must be below 8 return
  units (8 % of the 100-step horizon; the max-SNR and random policies differ by ~40 units,
  and running users on the full map instead of mobile-env's 200 x 200 m movement area moves
  the large max-SNR return by ~11). Seeds are fixed, so the test is deterministic.
"""

from __future__ import annotations

import pytest

pytest.importorskip("mobile_env", reason="mobile-env is not installed (pip install 'mobile-env>=2.1')")

from decisions.telecom.comp import parity  # noqa: E402

EPISODES = {"small": 16, "medium": 6, "large": 3}
TOLERANCE = 8.0
ALPHA = 1e-3


@pytest.mark.parametrize("scenario", ["small", "medium", "large"])
@pytest.mark.parametrize("policy", ["max_snr", "random"])
def test_step_level_parity(scenario: str, policy: str) -> None:
    result = parity.step_parity(scenario, policy, seed=7, steps=100 if scenario == "small" else 40)
    assert result["max_reward_error"] < 1e-5
    assert result["connection_mismatches"] == 0
    assert result["obs_max_error"] < 1e-4


@pytest.mark.parametrize(
    "scenario",
    # mobile-env's medium and large episodes take seconds each in Python: those two are slow tests
    ["small", pytest.param("medium", marks=pytest.mark.slow), pytest.param("large", marks=pytest.mark.slow)],
)
@pytest.mark.parametrize("policy", ["max_snr", "random"])
def test_mean_episode_returns_agree(scenario: str, policy: str) -> None:
    result = parity.compare(scenario, policy, n_mobile=EPISODES[scenario], n_sim=256, seed=0)
    assert result["p_value_z"] > ALPHA, result
    assert abs(result["diff"]) < TOLERANCE, result

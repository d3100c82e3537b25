"""Warm starts of the CoMP PPO policies (``comp.warm_start``): cloned demonstrators before PPO."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.core.agents import ppo
from decisions.telecom.comp.policies import experts
from decisions.telecom.comp.policies import warm_start as warm
from decisions.telecom.comp.policies.experts import expert_config, train_expert
from decisions.telecom.comp.policies.heuristics import SERVING_SET_POLICIES
from decisions.telecom.comp.policies.multitask import MULTITASK_ENV, train_multitask
from decisions.telecom.comp.policies.rollouts import ENV, EXPERT_ENV, rollout, task_policy
from decisions.telecom.comp.sim.catalog import FEATURE_DIM, JOINT_TRAINING_TASKS
from decisions.telecom.comp.sim.constants import MAX_USERS
from decisions.telecom.comp.sim.env import hide_links
from decisions.telecom.comp.study.budget import StudyBudget

TASK = min(JOINT_TRAINING_TASKS, key=lambda t: (t.n_cells, t.n_users))
"""The smallest joint-transmission training task."""


def test_demonstrations_are_what_each_ppo_policy_sees_and_the_demonstrator_did() -> None:
    obs, actions = warm.demonstrations([TASK], "max_snr", 2, seed=3)
    steps = int(TASK.params().episode_length)
    assert obs.shape == (2 * steps, ENV.obs_size) and actions.shape == (2 * steps, MAX_USERS)
    np.testing.assert_array_equal(obs, np.asarray(hide_links(jnp.asarray(obs))))  # an expert's view: no link flags
    recorded = rollout(TASK, SERVING_SET_POLICIES["max_snr"], jax.random.split(jax.random.PRNGKey(3), 2), record=True)
    np.testing.assert_array_equal(actions, recorded["action"].reshape(-1, MAX_USERS))
    with_features, _ = warm.demonstrations([TASK, TASK], "max_snr", 1, seed=3, task_features=True)
    assert with_features.shape == (2 * steps, ENV.obs_size + FEATURE_DIM)


def test_a_policy_cloned_from_max_snr_acts_like_it() -> None:
    obs, actions = warm.demonstrations([TASK], "max_snr", 4, seed=0)
    config = expert_config()
    initial = warm.cloned_params(EXPERT_ENV, config, obs, actions, seed=0, steps=200, batch_size=64)
    policy = ppo.make_agent(EXPERT_ENV, config).policy
    keys = jax.random.split(jax.random.PRNGKey(11), 2)  # other episodes than the demonstrations'
    greedy = rollout(TASK, SERVING_SET_POLICIES["max_snr"], keys, record=True)["action"]
    mask = np.asarray(TASK.params().user_mask, bool)

    def agreement(params: dict) -> float:
        acted = rollout(TASK, task_policy((policy, params), observe_links=False), keys, record=True)["action"]
        return float(np.mean(acted[..., mask] == greedy[..., mask]))

    assert agreement(initial) > 0.9 > agreement(policy.init(jax.random.PRNGKey(0)))


def test_experts_and_the_multitask_ppo_start_from_the_clone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warm, "WARM_EPISODES", 1)
    # the cloning is the test above's; what is tested here is what reaches it and PPO
    monkeypatch.setattr(warm, "cloned_params", lambda env, config, obs, actions, **_: {"obs": obs.shape, "env": env})
    given: list = []
    monkeypatch.setattr(experts.ppo, "train", lambda env, config, **kwargs: given.append((env, kwargs["initial"])))
    train_expert(TASK, 1, warm_start="max_snr")
    train_expert(TASK, 1)
    train_multitask([TASK, TASK], 1, warm_start="max_snr")
    (env_a, cloned), (_, scratch), (env_m, multitask) = given
    assert env_a is EXPERT_ENV and scratch is None and env_m is MULTITASK_ENV
    steps = int(TASK.params().episode_length)
    assert cloned == {"obs": (steps, ENV.obs_size), "env": EXPERT_ENV}
    assert multitask == {"obs": (2 * steps, ENV.obs_size + FEATURE_DIM), "env": MULTITASK_ENV}


def test_unknown_warm_starts_name_the_field() -> None:
    with pytest.raises(ValueError, match="^warm_start: "):
        train_expert(TASK, 1, warm_start="oracle")
    with pytest.raises(ValueError, match="^warm_start: "):
        StudyBudget(warm_start="oracle")
    with pytest.raises(ValueError, match="^warm_start: "):
        warm.demonstrator("none")

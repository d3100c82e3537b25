"""Behaviour cloning of an actor-critic's actor (``onpolicy.clone.behaviour_clone``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.core.agents.onpolicy.clone import behaviour_clone
from decisions.core.agents.onpolicy.policy import ActorCriticPolicy


def _policy(nvec: tuple[int, ...] = (), num_actions: int = 3, box: bool = False) -> ActorCriticPolicy:
    return ActorCriticPolicy(
        obs_shape=(4,), obs_categories=0, num_actions=0 if box else (sum(nvec) or num_actions),
        action_shape=(1,) if box else ((len(nvec),) if nvec else ()), action_low=(-1.0,) if box else (),
        action_high=(1.0,) if box else (), action_dtype="float32" if box else "int32", hidden=(32,),
        activation="tanh", log_std_init=0.0, action_nvec=nvec,
    )  # fmt: skip


def _demonstrations(n: int = 2_000) -> tuple[np.ndarray, np.ndarray]:
    """Observations on a scale far from 1 (the statistics must normalise them) and a rule to copy."""
    obs = np.asarray(jax.random.normal(jax.random.PRNGKey(1), (n, 4))) * 50.0 + 20.0
    return obs, np.argmax(obs[:, :3], axis=1)


def test_a_cloned_actor_takes_the_demonstrated_actions() -> None:
    policy = _policy()
    obs, actions = _demonstrations()
    params, losses = behaviour_clone(policy, obs, actions, key=jax.random.PRNGKey(0), steps=600, batch_size=128)
    assert losses.shape == (600,) and float(losses[-50:].mean()) < 0.5 * float(losses[:50].mean())
    np.testing.assert_allclose(np.asarray(params["obs_stats"].mean), obs.mean(axis=0), rtol=1e-3)
    greedy = np.asarray(jax.vmap(lambda o: policy(params, o, jax.random.PRNGKey(0)))(jnp.asarray(obs)))
    assert np.mean(greedy == actions) > 0.9


def test_multi_discrete_components_are_cloned_each() -> None:
    policy = _policy(nvec=(3, 2))
    obs, first = _demonstrations()
    actions = np.stack([first, (obs[:, 3] > 20.0).astype(np.int64)], axis=1)
    params, _ = behaviour_clone(policy, obs, actions, key=jax.random.PRNGKey(0), steps=600, batch_size=128)
    greedy = np.asarray(jax.vmap(lambda o: policy(params, o, jax.random.PRNGKey(0)))(jnp.asarray(obs)))
    assert greedy.shape == actions.shape and np.mean(np.all(greedy == actions, axis=1)) > 0.85


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"policy": _policy(box=True)}, "policy: .*discrete"),
        ({"actions": np.zeros(3, np.int32)}, "obs, actions: need the same positive count"),
        ({"steps": 0}, "steps: must be >= 1"),
        ({"batch_size": 0}, "batch_size: must be >= 1"),
        ({"learning_rate": 0.0}, "learning_rate: must be > 0"),
    ],
)
def test_bad_demonstrations_or_budgets_name_the_argument(kwargs: dict, words: str) -> None:
    obs, actions = _demonstrations(16)
    args = {"policy": _policy(), "obs": obs, "actions": actions, "key": jax.random.PRNGKey(0), "steps": 2, **kwargs}
    with pytest.raises(ValueError, match=words):
        behaviour_clone(**args)

"""Behaviour cloning of an actor-critic's actor: ``behaviour_clone`` fits it to demonstrated
actions by maximum likelihood (the critic is left to PPO), the ``initial`` params ``ppo.train``
fine-tunes. Why: ``docs/notes/core.md``.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import Array

from decisions.core.agents.onpolicy.policy import ActorCriticPolicy

__all__ = ["behaviour_clone"]

PyTree = Any


def behaviour_clone(
    policy: ActorCriticPolicy,
    obs: Array | np.ndarray,
    actions: Array | np.ndarray,
    *,
    key: Array,
    steps: int = 2_000,
    batch_size: int = 512,
    learning_rate: float = 1e-3,
    normalize_obs: bool = True,
) -> tuple[PyTree, Array]:
    """Fresh params of ``policy`` whose actor imitates ``actions`` on ``obs``.

    Args:
        policy: a discrete actor-critic description.
        steps: Adam steps on minibatches of ``batch_size`` pairs drawn with replacement.
        normalize_obs: fit observation statistics to ``obs``.

    Returns:
        ``(params, losses)``: ``{"net", "obs_stats"}`` for ``ppo.train(..., initial=params)`` and
        the mean negative log-likelihood per step.

    Raises:
        ValueError: continuous actions, mismatched or empty arrays, a non-positive budget.
    """
    if not policy.discrete:
        raise ValueError("policy: behaviour cloning here needs discrete actions")
    obs = jnp.asarray(obs)
    actions = jnp.asarray(actions)
    if obs.shape[0] == 0 or obs.shape[0] != actions.shape[0]:
        raise ValueError(f"obs, actions: need the same positive count, got {obs.shape[0]} and {actions.shape[0]}")
    for name, value in (("steps", steps), ("batch_size", batch_size)):
        if int(value) < 1:
            raise ValueError(f"{name}: must be >= 1, got {value}")
    if not learning_rate > 0:
        raise ValueError(f"learning_rate: must be > 0, got {learning_rate}")
    raw = actions.reshape(actions.shape[0], -1).astype(jnp.int32)
    if not policy.action_nvec:
        raw = raw[:, 0]
    return _fit(policy, obs, raw, key, int(steps), int(batch_size), float(learning_rate), bool(normalize_obs))


@partial(jax.jit, static_argnums=(0, 4, 5, 6, 7))
def _fit(
    policy: ActorCriticPolicy,
    obs: Array,
    raw: Array,
    key: Array,
    steps: int,
    batch_size: int,
    learning_rate: float,
    normalize_obs: bool,
) -> tuple[PyTree, Array]:
    """The jitted fit: statistics from every observation, then ``steps`` Adam steps in one scan."""
    k_init, k_batches = jax.random.split(key)
    params = policy.init(k_init, normalize_obs)
    features = policy.encode(obs)
    stats = params["obs_stats"].update(features) if normalize_obs else params["obs_stats"]
    x = stats.normalize(features)
    optimiser = optax.adam(learning_rate)

    def nll(net: PyTree, idx: Array) -> Array:
        dist = policy.network.apply(net, x[idx], method="actor")
        return -jnp.mean(policy.log_prob(dist, raw[idx]))

    def step(carry: tuple[PyTree, Any], k: Array) -> tuple[tuple[PyTree, Any], Array]:
        net, opt_state = carry
        idx = jax.random.randint(k, (batch_size,), 0, x.shape[0])
        loss, grads = jax.value_and_grad(nll)(net, idx)
        updates, opt_state = optimiser.update(grads, opt_state, net)
        return (optax.apply_updates(net, updates), opt_state), loss

    (net, _), losses = jax.lax.scan(
        step, (params["net"], optimiser.init(params["net"])), jax.random.split(k_batches, steps)
    )
    return {"net": net, "obs_stats": stats}, losses

"""Generalised advantage estimation and the policy-gradient loss of the on-policy agents.

- ``gae``: generalised advantage estimation as a reverse ``lax.scan`` that keeps
  ``terminated`` (no bootstrap) and ``truncated`` (bootstrap from ``V(final_obs)``) apart.
- ``surrogate_loss`` / ``gradient_step``: the clipped (PPO) or plain (A2C) policy-gradient
  loss with value and entropy terms, and one optimiser step on it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from jax import Array

from decisions.core.agents.onpolicy.config import OnPolicyConfig
from decisions.core.agents.onpolicy.policy import ActorCriticPolicy

__all__ = ["Batch", "gae", "gradient_step", "surrogate_loss"]

PyTree = Any


def gae(
    rewards: Array,
    values: Array,
    next_values: Array,
    terminated: Array,
    truncated: Array,
    gamma: float,
    gae_lambda: float,
) -> tuple[Array, Array]:
    """Generalised advantage estimates over a rollout (leading time axis), as a reverse scan.

    ``next_values[t]`` is the value of the observation that step ``t`` really produced
    (``V(info["final_obs"])`` under ``AutoResetEnv``). A terminated step does not bootstrap
    (``delta = r - V``); a truncated one bootstraps from ``next_values``; both stop the
    recursion, so advantages never leak across episodes::

        delta_t = r_t + gamma (1 - terminated_t) next_values_t - values_t
        A_t = delta_t + gamma lambda (1 - (terminated_t | truncated_t)) A_{t+1},  A_T = 0

    Returns:
        ``(advantages, returns)`` with ``returns = advantages + values``, both ``(T, ...)``.
    """
    dtype = values.dtype
    not_terminated = 1.0 - terminated.astype(dtype)
    not_done = 1.0 - (terminated | truncated).astype(dtype)
    deltas = rewards + gamma * not_terminated * next_values - values

    def backward(carry: Array, step: tuple[Array, Array]) -> tuple[Array, Array]:
        delta, cont = step
        advantage = delta + gamma * gae_lambda * cont * carry
        return advantage, advantage

    _, advantages = jax.lax.scan(backward, jnp.zeros_like(values[0]), (deltas, not_done), reverse=True)
    return advantages, advantages + values


class Batch(NamedTuple):
    """Flattened rollout transitions for the update (leading axis: transitions)."""

    obs: Array  # (B, F) normalised features the actions were chosen on
    action: Array  # (B,) int32 or (B, d) raw Gaussian samples
    log_prob: Array  # (B,) log-probability under the rollout policy
    advantage: Array  # (B,)
    target: Array  # (B,) value target (GAE return)
    mask: Array | None = None  # (B, num_actions) bool valid actions (masked logits), or None: all valid


def surrogate_loss(
    net: PyTree,
    policy: ActorCriticPolicy,
    batch: Batch,
    config: OnPolicyConfig,
    clip_eps: float | None,
    value_clip: float | None = None,
) -> tuple[Array, dict[str, Array]]:
    """Policy-gradient loss with value and entropy terms.

    ``policy_loss = -mean(min(r A, clip(r, 1 - eps, 1 + eps) A))`` with the probability ratio
    ``r``; with ``clip_eps=None`` it is ``-mean(r A)``, whose gradient at ``r = 1`` is the
    plain (A2C) policy gradient ``-mean(grad log pi A)``. The total is
    ``policy_loss + value_coef * 0.5 mean((V - target)^2) - entropy_coef * entropy``. With
    ``value_clip`` the value term is PPO2's clipped one, ``0.5 mean(max((V - target)^2,
    (V_old + clip(V - V_old, -value_clip, value_clip) - target)^2))`` with the rollout's values
    ``V_old = target - advantage``. With ``batch.mask`` the log-probabilities and the entropy
    are those of the masked distribution (``ActorCriticPolicy.mask_logits``), the one the
    actions were sampled from.

    Returns:
        ``(loss, metrics)`` with ``policy_loss``, ``value_loss``, ``entropy``, ``approx_kl``
        (``mean(r - 1 - log r)``) and ``clip_fraction``.
    """
    dist, value = policy.network.apply(net, batch.obs)
    if batch.mask is not None:
        dist = policy.mask_logits(dist, batch.mask)
    log_prob = policy.log_prob(dist, batch.action)
    entropy = jnp.mean(policy.entropy(dist))
    advantage = batch.advantage
    if config.normalize_advantages:
        advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
    log_ratio = log_prob - batch.log_prob
    ratio = jnp.exp(log_ratio)
    if clip_eps is None:
        surrogate, clipped = ratio * advantage, jnp.zeros_like(ratio)
    else:
        surrogate = jnp.minimum(
            ratio * advantage, jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * advantage
        )
        clipped = (jnp.abs(ratio - 1.0) > clip_eps).astype(ratio.dtype)
    policy_loss = -jnp.mean(surrogate)
    value_loss = 0.5 * jnp.mean(_value_error(value, batch, value_clip))
    loss = policy_loss + config.value_coef * value_loss - config.entropy_coef * entropy
    metrics = {
        "policy_loss": policy_loss,
        "value_loss": value_loss,
        "entropy": entropy,
        "approx_kl": jnp.mean(ratio - 1.0 - log_ratio),
        "clip_fraction": jnp.mean(clipped),
    }
    return loss, metrics


def _value_error(value: Array, batch: Batch, value_clip: float | None) -> Array:
    """Squared value errors, or PPO2's clipped ones (the larger of the plain and the clipped error)."""
    error = jnp.square(value - batch.target)
    if value_clip is None:
        return error
    old = batch.target - batch.advantage
    clipped = old + jnp.clip(value - old, -value_clip, value_clip)
    return jnp.maximum(error, jnp.square(clipped - batch.target))


def gradient_step(
    net: PyTree,
    opt_state: PyTree,
    batch: Batch,
    *,
    policy: ActorCriticPolicy,
    optimizer: optax.GradientTransformation,
    config: OnPolicyConfig,
    clip_eps: float | None,
    value_clip: float | None = None,
) -> tuple[PyTree, PyTree, dict[str, Array]]:
    """One optimiser step on ``surrogate_loss``; metrics gain ``grad_norm`` (before clipping)."""
    grads, metrics = jax.grad(surrogate_loss, has_aux=True)(net, policy, batch, config, clip_eps, value_clip)
    updates, opt_state = optimizer.update(grads, opt_state, net)
    return optax.apply_updates(net, updates), opt_state, {**metrics, "grad_norm": optax.global_norm(grads)}

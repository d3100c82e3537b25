"""The off-policy agent's protocol (``OffPolicyAgent``), its policies' base (``NetworkPolicy``), the
observation helpers both use and the two steps of their updates (``gradient_update``, ``polyak_update``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any, ClassVar, Protocol, Self

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from jax import Array

from decisions.core.agents.common import Policy, RunningStats, initial_stats
from decisions.core.agents.offpolicy.config import OffPolicyConfig
from decisions.core.agents.offpolicy.io import load_policy_as
from decisions.core.agents.policy_file import PolicyDescription
from decisions.core.agents.replay import Transition

__all__ = ["NetworkPolicy", "OffPolicyAgent", "flatten_obs", "gradient_update", "normalize", "polyak_update"]

PyTree = Any


class OffPolicyAgent(Protocol):
    """What an off-policy agent supplies to the shared loop (a hashable, frozen object).

    Its methods get float32 observations flattened to ``(..., obs_dim)`` and normalised, and
    actions in the agent's stored form (``env_action`` maps them to the environment's).
    """

    kind: ClassVar[str]
    config: OffPolicyConfig
    policy: Policy

    def init(self, key: Array, obs: Array) -> PyTree:
        """Initial agent training state (networks, targets, optimiser states) for one observation."""
        ...

    def example_action(self) -> Array:
        """One stored action (shape and dtype only)."""
        ...

    def random_action(self, key: Array, num: int) -> Array:
        """``num`` uniformly random stored actions."""
        ...

    def explore(self, state: PyTree, obs: Array, key: Array, frac: Array) -> Array:
        """Exploratory stored actions for a batch of observations; ``frac`` is training progress in [0, 1]."""
        ...

    def env_action(self, action: Array) -> Array:
        """Stored actions (batched) to the environment's action space."""
        ...

    def update(self, state: PyTree, batch: Transition, key: Array) -> tuple[PyTree, dict[str, Array]]:
        """One gradient update on a replay batch; returns the new state and scalar metrics."""
        ...

    def schedule_metrics(self, state: PyTree, frac: Array) -> dict[str, Array]:
        """Scalar metrics of the schedules at progress ``frac`` (e.g. epsilon)."""
        ...

    def policy_params(self, state: PyTree) -> dict[str, PyTree]:
        """The network params the deterministic policy needs (observation statistics are added)."""
        ...


class NetworkPolicy(PolicyDescription):
    """Base of the off-policy agents' deterministic policies: one network on flattened, normalised
    observations, params ``{params_key: weights, "obs_stats": RunningStats}``."""

    kind: ClassVar[str]
    params_key: ClassVar[str]
    obs_shape: tuple[int, ...]

    @property
    def network(self) -> nn.Module:
        """The network the params' ``params_key`` entry belongs to."""
        raise NotImplementedError

    def init(self, key: Array, normalize_obs: bool = True) -> PyTree:
        """Fresh params: random network weights and empty (or identity) observation statistics."""
        weights = self.network.init(key, jnp.zeros((math.prod(self.obs_shape),), jnp.float32))
        return {self.params_key: weights, "obs_stats": initial_stats(self.obs_shape, normalize_obs)}

    def features(self, params: PyTree, obs: Array) -> Array:
        """One observation (or a batch) normalised with the params' statistics and flattened for the network."""
        return normalize(params["obs_stats"], jnp.asarray(obs), self.obs_shape)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> tuple[Self, PyTree]:
        """``(policy, params)`` of this class written by ``offpolicy.save_policy``.

        Raises:
            ValueError: the file is not a saved policy of this ``kind``.
        """
        return load_policy_as(path, cls)


def flatten_obs(obs: Array, obs_shape: tuple[int, ...]) -> Array:
    """``(..., *obs_shape)`` to float32 ``(..., prod(obs_shape))`` (what the networks take)."""
    lead = obs.shape[: obs.ndim - len(obs_shape)]
    return obs.reshape((*lead, math.prod(obs_shape))).astype(jnp.float32)


def normalize(stats: RunningStats, obs: Array, obs_shape: tuple[int, ...]) -> Array:
    """Normalise raw observations with ``stats`` and flatten them for the networks."""
    return flatten_obs(stats.normalize(obs.astype(jnp.float32)), obs_shape)


def gradient_update(
    optimizer: optax.GradientTransformation,
    loss_fn: Callable[[PyTree], tuple[Array, Any]],
    params: PyTree,
    opt_state: optax.OptState,
) -> tuple[PyTree, optax.OptState, Array, Any]:
    """One ``optimizer`` step on ``loss_fn(params) -> (loss, aux)``: ``(params, opt_state, loss, aux)``
    after it (``loss`` and ``aux`` at the params before it)."""
    (loss, aux), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss, aux


def polyak_update(config: OffPolicyConfig, updates: Array, target: PyTree, online: PyTree) -> PyTree:
    """The target params after gradient update number ``updates``: moved ``tau`` of the way to the
    online ones every ``target_update_interval`` updates, else unchanged."""
    coef = jnp.where(updates % config.target_update_interval == 0, config.tau, 0.0)
    return jax.tree.map(lambda t, p: t + coef * (p - t), target, online)

"""What an off-policy agent supplies to the shared loop (``OffPolicyAgent``), and the observation helpers.

An agent is a small frozen dataclass holding its config and its deterministic policy; the
loop (``offpolicy.loop``) does the rest. Observations reach the agent flattened and
normalised (``normalize``); its policies use the same helper when they act.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Protocol

import jax
import jax.numpy as jnp
from jax import Array

from decisions.core.agents.common import Policy, RunningStats
from decisions.core.agents.offpolicy.config import OffPolicyConfig
from decisions.core.agents.replay import Transition

__all__ = ["OffPolicyAgent", "flatten_obs", "normalize", "polyak_update"]

PyTree = Any


class OffPolicyAgent(Protocol):
    """What an off-policy agent supplies to the shared loop (a hashable, frozen object).

    Observations reaching these methods are float32, flattened to ``(..., obs_dim)`` and
    already normalised; actions are in the agent's *stored* form (see ``env_action``).

    Attributes:
        kind: checkpoint tag and progress task name, e.g. ``"dqn"``.
        config: the agent's configuration (an ``OffPolicyConfig``).
        policy: the deterministic policy the training result returns.
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


def flatten_obs(obs: Array, obs_shape: tuple[int, ...]) -> Array:
    """``(..., *obs_shape)`` to float32 ``(..., prod(obs_shape))`` (what the networks take)."""
    lead = obs.shape[: obs.ndim - len(obs_shape)]
    return obs.reshape((*lead, math.prod(obs_shape))).astype(jnp.float32)


def normalize(stats: RunningStats, obs: Array, obs_shape: tuple[int, ...]) -> Array:
    """Normalise raw observations with ``stats`` and flatten them for the networks."""
    return flatten_obs(stats.normalize(obs.astype(jnp.float32)), obs_shape)



def polyak_update(config: OffPolicyConfig, updates: Array, target: PyTree, online: PyTree) -> PyTree:
    """The target network after gradient update number ``updates``.

    Every ``target_update_interval`` updates it moves ``tau`` of the way to the online network
    (``target += tau * (online - target)``); in between it is unchanged.

    Args:
        config: supplies ``tau`` and ``target_update_interval``.
        updates: () int32, gradient updates done, this one included.
        target: target network params.
        online: online network params (same structure).

    Returns:
        The new target params.
    """
    coef = jnp.where(updates % config.target_update_interval == 0, config.tau, 0.0)
    return jax.tree.map(lambda t, p: t + coef * (p - t), target, online)

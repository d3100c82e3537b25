"""A2C: synchronous advantage actor-critic (Mnih et al., 2016).

Each iteration collects a short rollout from ``num_envs`` auto-resetting environments,
estimates advantages with GAE (bootstrapping on truncation, not on termination) and takes
*one* gradient step on the unclipped policy gradient plus value and entropy terms. The
optimiser is RMSprop (decay 0.99, eps 1e-5, as in the A3C paper and Stable-Baselines3) by
default, or Adam with ``optimizer="adam"``. Everything but the update is shared with PPO
(``onpolicy``)::

    result = a2c.train(env, A2CConfig(total_env_steps=200_000), key=jax.random.PRNGKey(0))
    action = result.policy(result.params, obs, key)   # deterministic (argmax / clipped mean)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, ClassVar

import optax
from jax import Array

from decisions.core.agents import onpolicy
from decisions.core.agents.common import ProgressFn, TrainResult, check_choice, check_number
from decisions.core.agents.onpolicy import ActorCriticPolicy, Batch, load_policy, save_policy
from decisions.core.env import Environment

__all__ = ["A2CConfig", "load_policy", "save_policy", "train", "train_seeds"]

PyTree = Any

OPTIMIZERS = ("rmsprop", "adam")
"""Optimisers ``A2CConfig.optimizer`` may name."""


@dataclass(frozen=True)
class A2CConfig(onpolicy.OnPolicyConfig):
    """A2C configuration (fields of ``OnPolicyConfig`` with A2C defaults, plus the ones below).

    Defaults: 32 environments x 16 steps per update, RMSprop 7e-4 decaying linearly,
    entropy bonus 0.01, gradient clip 0.5.
    """

    kind: ClassVar[str] = "a2c"

    rollout_steps: int = 16
    learning_rate: float = 7e-4
    entropy_coef: float = 0.01
    optimizer_name: str = "rmsprop"
    """``"rmsprop"`` (decay 0.99) or ``"adam"``."""
    optimizer_eps: float = 1e-5
    """Epsilon of the optimiser."""

    def __post_init__(self) -> None:
        """Check the shared fields, then A2C's own."""
        super().__post_init__()
        check_choice("optimizer_name", self.optimizer_name, OPTIMIZERS)
        check_number("optimizer_eps", self.optimizer_eps, 0.0, 1.0, open_low=True)

    @property
    def updates_per_iteration(self) -> int:
        """One gradient step per rollout."""
        return 1

    def base_optimizer(self, learning_rate: optax.Schedule) -> optax.GradientTransformation:
        """RMSprop (decay 0.99) or Adam, per ``optimizer_name``."""
        if self.optimizer_name == "adam":
            return optax.adam(learning_rate, eps=self.optimizer_eps)
        return optax.rmsprop(learning_rate, decay=0.99, eps=self.optimizer_eps)

    def update(
        self,
        policy: ActorCriticPolicy,
        optimizer: optax.GradientTransformation,
        net: PyTree,
        opt_state: PyTree,
        batch: Batch,
        key: Array,
    ) -> tuple[PyTree, PyTree, dict[str, Array]]:
        """One unclipped policy-gradient step on the whole rollout."""
        net, opt_state, metrics = onpolicy.gradient_step(
            net, opt_state, batch, policy=policy, optimizer=optimizer, config=self, clip_eps=None
        )
        metrics.pop("approx_kl")  # measured before the step: always 0 for A2C
        metrics.pop("clip_fraction")
        return net, opt_state, metrics


def train(
    env: Environment[Any, Any],
    config: A2CConfig = A2CConfig(),
    *,
    key: Array,
    params: Any = None,
    progress: ProgressFn | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    initial: Any = None,
) -> TrainResult:
    """Train A2C on ``env`` (see ``onpolicy.train`` for the arguments).

    Returns:
        A ``TrainResult``: deterministic ``policy``, params ``{"net", "obs_stats"}`` and
        per-iteration metrics ``episode_return`` (NaN where no episode finished),
        ``episode_length``, ``episodes``, ``policy_loss``, ``value_loss``, ``entropy``,
        ``grad_norm``, ``learning_rate``.
    """
    return onpolicy.train(
        env, config, key=key, params=params, progress=progress, checkpoint=checkpoint, initial=initial
    )


def train_seeds(
    env: Environment[Any, Any],
    config: A2CConfig = A2CConfig(),
    *,
    keys: Array,
    params: Any = None,
    progress: ProgressFn | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
) -> TrainResult:
    """Train A2C for every key in ``keys`` at once (params and metrics gain a leading seed axis)."""
    return onpolicy.train_seeds(
        env, config, keys=keys, params=params, progress=progress, checkpoint=checkpoint
    )

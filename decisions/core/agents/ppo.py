"""PPO: proximal policy optimisation with a clipped surrogate (Schulman et al., 2017).

Each iteration collects ``rollout_steps`` steps from ``num_envs`` auto-resetting
environments, estimates advantages with GAE (bootstrapping on truncation, not on
termination) and runs ``epochs`` passes of ``minibatches`` shuffled Adam steps on the
clipped surrogate plus value and entropy terms. The whole loop is jitted
(``onpolicy.train``); ``train_seeds`` trains several seeds at once::

    result = ppo.train(env, PPOConfig(total_env_steps=200_000), key=jax.random.PRNGKey(0))
    action = result.policy(result.params, obs, key)   # deterministic (argmax / clipped mean)
    ppo.save_policy("ppo.msgpack", result); policy, params = ppo.load_policy("ppo.msgpack")

Rollout, GAE, network, loss and save/load live in ``onpolicy`` and are shared with A2C.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, ClassVar

import jax
import optax
from jax import Array

from decisions.core.agents import onpolicy
from decisions.core.agents.common import ProgressFn, TrainResult, check_int, check_number
from decisions.core.agents.onpolicy import ActorCriticPolicy, Batch, load_policy, save_policy
from decisions.core.env import Environment

__all__ = ["PPOConfig", "load_policy", "save_policy", "train", "train_seeds"]

PyTree = Any


@dataclass(frozen=True)
class PPOConfig(onpolicy.OnPolicyConfig):
    """PPO configuration (fields of ``OnPolicyConfig`` plus the ones below).

    The defaults (32 environments x 128 steps, 4 epochs of 4 minibatches of 1024, Adam 3e-4
    decaying linearly, tanh 64x64 networks, normalised observations and rewards) suit week-long
    (168-step) or year-long (365-step) control tasks with tens of observation features.
    """

    kind: ClassVar[str] = "ppo"

    clip_eps: float = 0.2
    """Clip range of the probability ratio."""
    epochs: int = 4
    """Passes over each rollout batch."""
    minibatches: int = 4
    """Minibatches per pass (must divide ``num_envs * rollout_steps``)."""
    adam_eps: float = 1e-5
    """Adam's epsilon."""

    def __post_init__(self) -> None:
        """Check the shared fields, then PPO's own."""
        super().__post_init__()
        check_number("clip_eps", self.clip_eps, 0.0, 10.0, open_low=True)
        check_int("epochs", self.epochs, 1)
        check_int("minibatches", self.minibatches, 1)
        check_number("adam_eps", self.adam_eps, 0.0, 1.0, open_low=True)
        if self.batch_size % self.minibatches:
            raise ValueError(
                f"minibatches: must divide num_envs * rollout_steps = {self.batch_size}, got {self.minibatches}"
            )

    @property
    def updates_per_iteration(self) -> int:
        """``epochs * minibatches`` Adam steps per iteration."""
        return self.epochs * self.minibatches

    def base_optimizer(self, learning_rate: optax.Schedule) -> optax.GradientTransformation:
        """Adam."""
        return optax.adam(learning_rate, eps=self.adam_eps)

    def update(
        self,
        policy: ActorCriticPolicy,
        optimizer: optax.GradientTransformation,
        net: PyTree,
        opt_state: PyTree,
        batch: Batch,
        key: Array,
    ) -> tuple[PyTree, PyTree, dict[str, Array]]:
        """``epochs`` shuffled passes of ``minibatches`` clipped-surrogate steps; metrics are averaged."""
        size = self.batch_size // self.minibatches

        def minibatch_step(
            carry: tuple[PyTree, PyTree], minibatch: Batch
        ) -> tuple[tuple[PyTree, PyTree], dict]:
            net, opt_state, metrics = onpolicy.gradient_step(
                *carry, minibatch, policy=policy, optimizer=optimizer, config=self, clip_eps=self.clip_eps
            )
            return (net, opt_state), metrics

        def epoch(carry: tuple[PyTree, PyTree], epoch_key: Array) -> tuple[tuple[PyTree, PyTree], dict]:
            order = jax.random.permutation(epoch_key, self.batch_size)
            shuffled = jax.tree_util.tree_map(
                lambda x: x[order].reshape((self.minibatches, size, *x.shape[1:])), batch
            )
            return jax.lax.scan(minibatch_step, carry, shuffled)

        (net, opt_state), metrics = jax.lax.scan(epoch, (net, opt_state), jax.random.split(key, self.epochs))
        return net, opt_state, jax.tree_util.tree_map(lambda x: x.mean(), metrics)


def train(
    env: Environment[Any, Any],
    config: PPOConfig = PPOConfig(),
    *,
    key: Array,
    params: Any = None,
    progress: ProgressFn | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    initial: Any = None,
) -> TrainResult:
    """Train PPO on ``env`` (see ``onpolicy.train`` for the arguments; ``initial`` fine-tunes given params).

    Returns:
        A ``TrainResult``: deterministic ``policy``, params ``{"net", "obs_stats"}`` and
        per-iteration metrics ``episode_return`` (NaN where no episode finished),
        ``episode_length``, ``episodes``, ``policy_loss``, ``value_loss``, ``entropy``,
        ``approx_kl``, ``clip_fraction``, ``grad_norm``, ``learning_rate``.
    """
    return onpolicy.train(
        env, config, key=key, params=params, progress=progress, checkpoint=checkpoint, initial=initial
    )


def train_seeds(
    env: Environment[Any, Any],
    config: PPOConfig = PPOConfig(),
    *,
    keys: Array,
    params: Any = None,
    progress: ProgressFn | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
) -> TrainResult:
    """Train PPO for every key in ``keys`` at once (params and metrics gain a leading seed axis)."""
    return onpolicy.train_seeds(
        env, config, keys=keys, params=params, progress=progress, checkpoint=checkpoint
    )

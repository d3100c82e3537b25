"""PPO: proximal policy optimisation with a clipped surrogate (Schulman et al., 2017).

Each iteration collects ``rollout_steps`` steps from ``num_envs`` auto-resetting
environments, estimates advantages with GAE (bootstrapping on truncation, not on
termination) and runs ``epochs`` passes of ``minibatches`` shuffled Adam steps on the
clipped surrogate plus value and entropy terms. The whole loop is jitted
(``onpolicy.train_agent``); ``train_seeds`` trains several seeds at once::

    result = ppo.train(env, PPOConfig(total_env_steps=200_000), key=jax.random.PRNGKey(0))
    action = result.policy(result.params, obs, key)   # deterministic (argmax / clipped mean)
    ppo.save_policy("ppo.msgpack", result); policy, params = ppo.load_policy("ppo.msgpack")

This module supplies ``PPOAgent`` (an ``onpolicy.OnPolicyAgent``: the update and its
optimiser); rollout, GAE, network, loss and save/load live in ``onpolicy``, shared with A2C.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import jax
import optax
from jax import Array

from decisions.core.agents.common import check_bool, check_int, check_number
from decisions.core.agents.onpolicy import ActorCriticAgent, Batch, OnPolicyConfig, gradient_step, trainers
from decisions.core.agents.onpolicy.io import load_policy, save_policy

__all__ = ["PPOAgent", "PPOConfig", "load_policy", "make_agent", "save_policy", "train", "train_seeds"]

PyTree = Any


@dataclass(frozen=True)
class PPOConfig(OnPolicyConfig):
    """PPO configuration (fields of ``OnPolicyConfig`` plus the ones below).

    The defaults (32 environments x 128 steps, 4 epochs of 4 minibatches of 1024, Adam 3e-4
    decaying linearly, tanh 64x64 networks, normalised observations and rewards) suit week-long
    (168-step) or year-long (365-step) control tasks with tens of observation features.
    """

    # Clip range of the probability ratio.
    clip_eps: float = 0.2
    # Passes over each rollout batch.
    epochs: int = 4
    # Minibatches per pass (must divide ``num_envs * rollout_steps``).
    minibatches: int = 4
    # Adam's epsilon.
    adam_eps: float = 1e-5
    # Clip the value update too: the value loss is PPO2's, the larger of the plain squared error
    # and that of the rollout's value moved at most ``clip_eps`` towards the new one.
    clip_value_loss: bool = False
    # Log the update's per-iteration metrics (``policy_loss``, ``value_loss``, ``entropy``,
    # ``approx_kl``, ``clip_fraction``, ``grad_norm``). Off, the update computes none of them and
    # the log keeps the episode statistics and ``learning_rate``; the trained params are the same.
    update_metrics: bool = True

    def __post_init__(self) -> None:
        """Check the shared fields, then PPO's own."""
        super().__post_init__()
        check_number("clip_eps", self.clip_eps, 0.0, 10.0, open_low=True)
        check_int("epochs", self.epochs, 1)
        check_int("minibatches", self.minibatches, 1)
        check_number("adam_eps", self.adam_eps, 0.0, 1.0, open_low=True)
        check_bool("clip_value_loss", self.clip_value_loss)
        check_bool("update_metrics", self.update_metrics)
        if self.batch_size % self.minibatches:
            raise ValueError(
                f"minibatches: must divide num_envs * rollout_steps = {self.batch_size}, got {self.minibatches}"
            )


@dataclass(frozen=True)
class PPOAgent(ActorCriticAgent):
    """PPO's part of the on-policy loop (an ``onpolicy.OnPolicyAgent``)."""

    kind: ClassVar[str] = "ppo"
    config_type: ClassVar[type[PPOConfig]] = PPOConfig

    config: PPOConfig

    @property
    def updates_per_iteration(self) -> int:
        """``epochs * minibatches`` Adam steps per iteration."""
        return self.config.epochs * self.config.minibatches

    def base_optimizer(self, learning_rate: optax.Schedule) -> optax.GradientTransformation:
        """Adam."""
        return optax.adam(learning_rate, eps=self.config.adam_eps)

    def update(
        self, optimizer: optax.GradientTransformation, net: PyTree, opt_state: PyTree, batch: Batch, key: Array
    ) -> tuple[PyTree, PyTree, dict[str, Array]]:
        """``epochs`` shuffled passes of ``minibatches`` clipped-surrogate steps; metrics are averaged
        (none without ``config.update_metrics``)."""
        config, policy = self.config, self.policy
        size = config.batch_size // config.minibatches
        value_clip = config.clip_eps if config.clip_value_loss else None

        def minibatch_step(
            carry: tuple[PyTree, PyTree], minibatch: Batch
        ) -> tuple[tuple[PyTree, PyTree], dict]:
            net, opt_state, metrics = gradient_step(
                *carry, minibatch, policy=policy, optimizer=optimizer, config=config, clip_eps=config.clip_eps,
                value_clip=value_clip,
            )
            # Metrics nobody reads are left out of the scan's output, so the compiler drops their work.
            return (net, opt_state), metrics if config.update_metrics else {}

        def epoch(carry: tuple[PyTree, PyTree], epoch_key: Array) -> tuple[tuple[PyTree, PyTree], dict]:
            order = jax.random.permutation(epoch_key, config.batch_size)
            shuffled = jax.tree_util.tree_map(
                lambda x: x[order].reshape((config.minibatches, size, *x.shape[1:])), batch
            )
            return jax.lax.scan(minibatch_step, carry, shuffled)

        (net, opt_state), metrics = jax.lax.scan(epoch, (net, opt_state), jax.random.split(key, config.epochs))
        return net, opt_state, jax.tree_util.tree_map(lambda x: x.mean(), metrics)


# ``make_agent(env, config, params=None)``: the ``PPOAgent`` for ``env``'s spaces (``ActorCriticAgent.for_env``).
make_agent = PPOAgent.for_env

train, train_seeds = trainers(
    PPOAgent, PPOConfig(), metrics="``policy_loss``, ``value_loss``, ``entropy``, ``approx_kl``, ``clip_fraction``"
)

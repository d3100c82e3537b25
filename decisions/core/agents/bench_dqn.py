"""The DQN half of the agents bench: our DQN against rejax's DQN with the same settings
(``DQNHyperparameters``), each trainer returning ``(train(keys), greedy policy)`` as the PPO
ones in ``bench`` do. What is equal between the two DQNs and what is not: ``docs/notes/core.md``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
from jax import Array

from decisions.core.agents import dqn
from decisions.core.agents.bench_ours import seeds_trainer, shared_settings
from decisions.core.agents.common import Policy, TrainResult, config_dict
from decisions.core.agents.gymnax_adapter import GymnaxEnv
from decisions.core.agents.rejax_peer import create_algo, seeds_train

__all__ = ["DQN_PREFIX", "DQNHyperparameters", "ours_dqn_config", "ours_dqn_trainer", "rejax_dqn_trainer"]

PyTree = Any

DQN_PREFIX = "dqn_"  # infix of the DQN figures and settings: ``<env>/dqn_ours_final_return``, ``dqn_buffer_size``


@dataclasses.dataclass(frozen=True)
class DQNHyperparameters:
    """The settings both DQNs are given, named as in ``DQNConfig``: one gradient step of
    ``batch_size`` per vector step of ``num_envs`` environments after ``learning_starts`` random
    transitions, a hard target copy every ``target_update_interval`` updates (``tau`` 1), epsilon
    decaying linearly over ``exploration_fraction`` of training, a ReLU MLP of ``hidden``
    (rejax 0.1.3's DQN fixes it at 64 x 64).

    ``loss``, ``grad_clip`` and ``bootstrap_truncated`` set ours as rejax's DQN always runs (the
    squared TD error, element-wise gradient clipping, a truncation ended as a termination); rejax
    has no such options, so other values change our side only."""

    num_envs: int = 4
    buffer_size: int = 10_000
    batch_size: int = 128
    learning_starts: int = 1_000
    learning_rate: float = 2.5e-4
    gamma: float = 0.99
    target_update_interval: int = 125
    tau: float = 1.0
    exploration_fraction: float = 0.5
    epsilon_start: float = 1.0
    epsilon_end: float = 0.05
    max_grad_norm: float = 10.0
    hidden: tuple[int, ...] = (64, 64)
    loss: str = "squared"
    grad_clip: str = "value"
    bootstrap_truncated: bool = False

    def env_steps(self, total_steps: int) -> int:
        """``total_steps`` rounded down to whole vector steps.

        Raises:
            ValueError: ``total_steps`` leaves no vector step after ``learning_starts``.
        """
        if total_steps <= self.learning_starts + self.num_envs:
            raise ValueError(
                f"dqn_total_steps: must exceed learning_starts + num_envs = {self.learning_starts + self.num_envs}, "
                f"got {total_steps}"
            )
        return (total_steps // self.num_envs) * self.num_envs

    def figures(self) -> dict[str, Any]:
        """The settings as flat figures named ``dqn_<field>`` (``hidden`` as a list)."""
        return {f"{DQN_PREFIX}{k}": v for k, v in config_dict(self).items()}


def ours_dqn_config(hp: DQNHyperparameters, env_steps: int) -> dqn.DQNConfig:
    """Our ``DQNConfig`` for ``hp`` and ``env_steps`` steps per seed: every field of ``hp`` as it is
    (``DQNConfig`` names them alike), raw observations (no normalisation), the whole training in one
    jitted chunk as rejax's one program."""
    config = dqn.DQNConfig(**shared_settings(hp, dqn.DQNConfig), total_env_steps=env_steps, normalize_obs=False)
    return dataclasses.replace(config, log_every=config.iterations)


def ours_dqn_trainer(
    env: GymnaxEnv, hp: DQNHyperparameters, env_steps: int
) -> tuple[Callable[[Array], TrainResult], Policy]:
    """Our DQN with ``hp`` for ``env_steps`` steps per seed (``ours_dqn_config``):
    ``(train(keys) -> TrainResult, policy)``, every seed trained at once."""
    return seeds_trainer(env, ours_dqn_config(hp, env_steps), dqn.make_agent, dqn.train_seeds)


def rejax_dqn_trainer(env: GymnaxEnv, hp: DQNHyperparameters, env_steps: int) -> tuple[Callable[[Array], PyTree], Policy]:
    """rejax's DQN with ``hp`` for ``env_steps`` steps per seed: ``(train(keys) -> params, policy)``.

    ``train`` is ``jax.jit(jax.vmap(algo.train))`` without rejax's in-training evaluation
    (``fill_buffer = learning_starts``, ``target_update_freq`` in environment steps,
    ``polyak = 1 - tau``, one update per vector step); ``policy`` is the greedy one.

    Raises:
        ValueError: ``hp.hidden`` is not rejax's fixed ``(64, 64)``.
    """
    from rejax import DQN

    if tuple(hp.hidden) != (64, 64):
        raise ValueError(f"hidden: rejax's DQN has 64 x 64 hidden layers, got {hp.hidden}")

    algo = create_algo(
        DQN, env, env_steps,
        num_envs=hp.num_envs,
        buffer_size=hp.buffer_size,
        fill_buffer=hp.learning_starts,
        batch_size=hp.batch_size,
        learning_rate=hp.learning_rate,
        gamma=hp.gamma,
        target_update_freq=hp.target_update_interval * hp.num_envs,
        polyak=1.0 - hp.tau,
        eps_start=hp.epsilon_start,
        eps_end=hp.epsilon_end,
        exploration_fraction=hp.exploration_fraction,
        max_grad_norm=hp.max_grad_norm,
        num_epochs=1,
        normalize_observations=False,
        agent_kwargs={"activation": "relu"},
    )
    agent = algo.agent
    train = seeds_train(algo, lambda ts: ts.q_ts.params)

    def policy(params: PyTree, obs: Array, key: Array) -> Array:
        del key
        return jnp.argmax(agent.apply(params, obs[None])[0], axis=-1).astype(jnp.int32)

    return train, policy

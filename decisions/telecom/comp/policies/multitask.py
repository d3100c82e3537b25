"""The multi-task PPO baseline of the CoMP study: one PPO policy over a bank of task networks.

``MultiTaskCompEnv`` samples a task per episode and appends the task's features to the
observation; ``train_multitask`` trains PPO on it (re-exported by ``experts``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jax import Array

from decisions.core.agents import ppo
from decisions.core.agents.common import ProgressFn, TrainResult
from decisions.core.env import Environment, Info, PRNGKey
from decisions.core.spaces import Box, MultiDiscrete
from decisions.telecom.comp.policies.experts import EXPERT_CONFIG, fit_budget
from decisions.telecom.comp.policies.rollouts import ENV, seed_key
from decisions.telecom.comp.policies.warm_start import warm_start_params
from decisions.telecom.comp.sim.catalog import FEATURE_DIM, TRAINING_TASKS, Task
from decisions.telecom.comp.sim.constants import MAX_CELLS, MAX_USERS
from decisions.telecom.comp.sim.env import CompState
from decisions.telecom.comp.sim.network import NetworkParams
from decisions.telecom.comp.sim.tasks import features_from_params


@struct.dataclass
class MultiTaskParams:
    """A bank of networks (``NetworkParams`` with a leading task axis) and the task sampling weights."""

    bank: NetworkParams
    weights: Array  # (tasks,) sampling probabilities


@struct.dataclass
class MultiTaskState:
    """The inner ``CompState`` and the index of the episode's task in the bank."""

    inner: CompState
    task: Array  # () int32


class MultiTaskCompEnv(Environment[MultiTaskState, MultiTaskParams]):
    """``CompEnv`` whose every episode runs on a task drawn from a bank; observations carry the task features.

    The observation is ``CompEnv``'s (``MAX_USERS * (2 MAX_CELLS + 1)``) followed by
    ``features_from_params`` of the episode's network (``FEATURE_DIM`` values), so one policy
    can tell tasks apart. Build params with ``make_params(tasks)``.
    """

    def __init__(self) -> None:
        self.inner = ENV

    @staticmethod
    def make_params(tasks: Sequence[Task], weights: Sequence[float] | None = None) -> MultiTaskParams:
        """Stack the tasks' networks into a bank (uniform sampling unless ``weights`` are given)."""
        tasks = list(tasks)
        if not tasks:
            raise ValueError("tasks: need at least one task")
        nets = [t.params() for t in tasks]
        bank = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *nets)
        w = np.ones(len(tasks)) if weights is None else np.asarray(weights, np.float64)
        if w.shape != (len(tasks),) or np.any(w < 0) or not np.isfinite(w).all() or w.sum() <= 0:
            raise ValueError("weights: must be non-negative, finite, one per task, not all zero")
        return MultiTaskParams(bank=bank, weights=jnp.asarray(w / w.sum(), jnp.float32))

    @property
    def default_params(self) -> MultiTaskParams:
        """All training tasks, uniformly."""
        return self.make_params(TRAINING_TASKS)

    @property
    def obs_size(self) -> int:
        """``CompEnv.obs_size + FEATURE_DIM``."""
        return self.inner.obs_size + FEATURE_DIM

    @staticmethod
    def network(params: MultiTaskParams, task: Array) -> NetworkParams:
        """The bank's network number ``task`` (traceable)."""
        return jax.tree_util.tree_map(lambda x: x[task], params.bank)

    def _obs(self, obs: Array, net: NetworkParams) -> Array:
        return jnp.concatenate([obs, features_from_params(net)])

    def reset(self, key: PRNGKey, params: MultiTaskParams) -> tuple[Array, MultiTaskState]:
        """Draw a task, then reset ``CompEnv`` on its network."""
        k_task, k_reset = jax.random.split(key)
        task = jax.random.choice(k_task, params.weights.shape[0], p=params.weights).astype(jnp.int32)
        net = self.network(params, task)
        obs, inner = self.inner.reset(k_reset, net)
        return self._obs(obs, net), MultiTaskState(inner=inner, task=task)

    def step(
        self, key: PRNGKey, state: MultiTaskState, action: Array, params: MultiTaskParams
    ) -> tuple[Array, MultiTaskState, Array, Array, Array, Info]:
        """Step ``CompEnv`` on the episode's network."""
        net = self.network(params, state.task)
        obs, inner, reward, terminated, truncated, info = self.inner.step(key, state.inner, action, net)
        return (
            self._obs(obs, net),
            MultiTaskState(inner=inner, task=state.task),
            reward,
            terminated,
            truncated,
            info,
        )

    def observation_space(self, params: MultiTaskParams) -> Box:
        """``Box(-1, 1, (obs_size,))`` (the task features lie in [0, 1])."""
        return Box(low=-1.0, high=1.0, shape=(self.obs_size,))

    def action_space(self, params: MultiTaskParams) -> MultiDiscrete:
        """``CompEnv``'s action space."""
        return MultiDiscrete((MAX_CELLS + 1,) * MAX_USERS)


MULTITASK_ENV = MultiTaskCompEnv()
"""The multi-task environment (reused so that compiled loops are cached)."""


def train_multitask(
    tasks: Sequence[Task],
    total_env_steps: int | None = None,
    seed: int = 0,
    progress: ProgressFn | None = None,
    *,
    config: ppo.PPOConfig = EXPERT_CONFIG,
    weights: Sequence[float] | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    warm_start: str = "none",
) -> TrainResult:
    """Train ONE PPO policy across ``tasks`` (the multi-task PPO baseline).

    Every training episode draws a task (uniformly, or by ``weights``); the policy sees the
    task features appended to the observation. ``task_policy``/``evaluate_policy`` append
    them automatically when evaluating the result on any task, seen or unseen.

    Returns:
        The core ``TrainResult``.
    """
    config = fit_budget(config, total_env_steps)
    params = MultiTaskCompEnv.make_params(tasks, weights)
    initial = warm_start_params(list(tasks), warm_start, MULTITASK_ENV, config, seed, task_features=True)
    return ppo.train(
        MULTITASK_ENV, config, key=seed_key(seed), params=params, progress=progress, checkpoint=checkpoint,
        initial=initial,
    )

"""The plumbing the on-policy and off-policy training loops share: the training environment stack,
strongly typed environment params, the chunk driver of the functional loops and the per-iteration
log of the host loops.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, ClassVar, Protocol

import jax
import numpy as np
from jax import Array

from decisions.core.agents.common import ProgressFn, run_chunked
from decisions.core.env import Environment
from decisions.core.host_envs import MultiAgentVecEnv, check_mask, check_obs
from decisions.core.pytrees import PyTree, strong_types
from decisions.core.wrappers import AutoResetEnv, EpisodeStatistics, VmapEnv

__all__ = ["ChunkedAgent", "HostLog", "loop_env_params", "reset_host_envs", "run_agent_chunks", "training_envs"]


def training_envs(env: Environment[Any, Any], num_envs: int) -> VmapEnv:
    """The training stack: ``num_envs`` auto-resetting copies of ``env`` with episode statistics."""
    return VmapEnv(EpisodeStatistics(AutoResetEnv(env)), num_envs)


def loop_env_params(env: Environment[Any, Any], params: PyTree | None) -> PyTree:
    """The environment params a loop runs with: ``params`` (default ``env.default_params``), strongly typed."""
    return strong_types(env.default_params if params is None else params)


class _LoopConfig(Protocol):
    @property
    def iterations(self) -> int: ...

    @property
    def log_every(self) -> int: ...


class ChunkedAgent(Protocol):
    """What ``run_agent_chunks`` reads from an agent: its checkpoint tag and its loop settings."""

    kind: ClassVar[str]

    @property
    def config(self) -> _LoopConfig: ...


def run_agent_chunks(
    agent: ChunkedAgent,
    chunk: Callable[[PyTree, int], tuple[PyTree, PyTree]],
    state: PyTree,
    *,
    key: Array,
    progress: ProgressFn | None,
    checkpoint: str | os.PathLike[str] | None,
    seeds: bool,
    task: str,
) -> tuple[PyTree, PyTree]:
    """``run_chunked`` to ``agent.config.iterations`` in chunks of its ``log_every``, the checkpoint
    tagged ``agent.kind``; ``seeds``: the chunk is vmapped over a leading seed axis."""
    config = agent.config
    return run_chunked(
        chunk, state, iterations=config.iterations, log_every=config.log_every, kind=agent.kind, config=config,
        key=key, progress=progress, task=task, checkpoint=checkpoint, seed_axis=seeds,
    )


class HostLog:
    """A host loop's per-iteration metric rows, stacked every ``log_every`` iterations (and after the
    last), when ``progress(task, iteration, iterations)`` is reported."""

    def __init__(self, config: _LoopConfig, progress: ProgressFn | None, task: str) -> None:
        self._config, self._progress, self._task = config, progress, task
        self._rows: list[dict[str, Any]] = []
        self._chunks: list[dict[str, np.ndarray]] = []

    def append(self, iteration: int, row: dict[str, Any]) -> None:
        """Add iteration ``iteration``'s (1-based) metrics."""
        self._rows.append(row)
        if iteration % self._config.log_every == 0 or iteration == self._config.iterations:
            self._chunks.append(jax.tree.map(lambda *xs: np.stack(xs), *jax.device_get(self._rows)))
            self._rows = []
            if self._progress is not None:
                self._progress(self._task, iteration, self._config.iterations)

    def log(self) -> dict[str, np.ndarray]:
        """Every metric over all iterations."""
        return {name: np.concatenate([chunk[name] for chunk in self._chunks]) for name in self._chunks[0]}


def reset_host_envs(envs: MultiAgentVecEnv, reset_key: Array, *, acting: bool) -> tuple[np.ndarray, np.ndarray]:
    """Reset host environments with a seed drawn from ``reset_key``; the checked ``(obs, mask)``
    (with ``acting``, every slot needs a valid action)."""
    obs, mask = envs.reset(int(jax.random.randint(reset_key, (), 0, 2**31 - 1)))
    return check_obs("reset obs", obs, envs), check_mask("reset mask", mask, envs, acting=acting)

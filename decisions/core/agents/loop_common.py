"""The plumbing the on-policy and off-policy training loops share.

Both loops step ``num_envs`` auto-resetting copies of the environment with episode statistics
(``training_envs``), take the environment params with strong dtypes (``loop_env_params``) and
drive their jitted chunks the same way (``run_agent_chunks``): the agent's config gives the
iteration count and the chunk length, its ``kind`` tags the checkpoint, and the run's key,
progress callback, checkpoint file and seed axis pass through unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, ClassVar, Protocol

from jax import Array

from decisions.core.agents.common import ProgressFn, run_chunked
from decisions.core.env import Environment
from decisions.core.pytrees import PyTree, strong_types
from decisions.core.wrappers import AutoResetEnv, EpisodeStatistics, VmapEnv

__all__ = ["ChunkedAgent", "loop_env_params", "run_agent_chunks", "training_envs"]


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
    """Run ``chunk`` to ``agent.config.iterations`` with ``run_chunked`` (progress, checkpoint/resume).

    Args:
        agent: supplies ``config`` (``iterations``, ``log_every``; compared on resume) and ``kind``
            (the checkpoint tag).
        chunk: ``chunk(state, n) -> (state, log)``, ``n`` iterations in one jitted call.
        state: the initial loop state.
        key: the run's key (a checkpoint written with another key is refused).
        progress: optional ``(task, done, total)`` callback, called between chunks.
        checkpoint: optional file to save after every chunk and resume from.
        seeds: the chunk is vmapped over a leading seed axis (its log leaves are ``(seeds, n, ...)``).
        task: the task name passed to ``progress``.

    Returns:
        ``(final state, log)`` with every log leaf concatenated over all iterations.
    """
    config = agent.config
    return run_chunked(
        chunk, state, iterations=config.iterations, log_every=config.log_every, kind=agent.kind, config=config,
        key=key, progress=progress, task=task, checkpoint=checkpoint, seed_axis=seeds,
    )

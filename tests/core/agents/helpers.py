"""Scaffolding the agent tests share: probe bandit, evaluation, crash and resume, run comparison, trace counts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.core.agents.common import ProgressFn, TrainResult, evaluate_episodes
from decisions.core.checkpoint import load_metadata
from tests.core.probe_envs import BanditParams, OneStepBandit

EVAL_KEY = jax.random.PRNGKey(123)

# Arm 1 is best, so a learner biased towards the last (or first) arm fails.
BANDIT = OneStepBandit(3)
BANDIT_PARAMS = BanditParams(rewards=jnp.asarray([0.2, 1.0, 0.5], jnp.float32))

ON_POLICY_METRICS = {
    "episode_return",
    "episode_length",
    "episodes",
    "policy_loss",
    "value_loss",
    "entropy",
    "grad_norm",
    "learning_rate",
}
"""The metrics of every on-policy agent's ``train`` (PPO adds its own)."""


def evaluate(
    env: Any,
    result: TrainResult,
    max_steps: int,
    params: Any = None,
    *,
    policy_params: Any = None,
    num_episodes: int = 64,
    key: jax.Array = EVAL_KEY,
) -> np.ndarray:
    """Returns of ``result``'s policy (its own params unless ``policy_params``) on ``env`` with ``params``."""
    return evaluate_episodes(
        env,
        env.default_params if params is None else params,
        result.policy,
        result.params if policy_params is None else policy_params,
        key=key,
        num_episodes=num_episodes,
        max_steps=max_steps,
    )


class Crash(Exception):
    """A simulated crash, raised from a progress callback."""


def crash_at(iteration: int = 0) -> ProgressFn:
    """A progress callback crashing at the first chunk end at or after ``iteration``."""

    def progress(task: str, done: int, total: int) -> None:
        if done >= iteration:
            raise Crash(f"simulated crash after {done} of {total}")

    return progress


def resume_after_crash(
    train: Callable[..., TrainResult], path: Path, reference: TrainResult, *, at: int = 0
) -> tuple[dict[str, Any], list[tuple[str, int, int]]]:
    """Crash ``train(checkpoint=path)`` after iteration ``at``, resume it, and check it ends as ``reference``.

    The crash comes at the first chunk end at or after ``at``. The resumed run must equal
    ``reference`` (the uninterrupted run), and a run with another ``key`` must refuse the checkpoint.

    Returns:
        The checkpoint's metadata after the crash and the progress calls of the resumed run.
    """
    with pytest.raises(Crash):
        train(checkpoint=path, progress=crash_at(at))
    crashed = load_metadata(path)
    calls: list[tuple[str, int, int]] = []
    resumed = train(checkpoint=path, progress=lambda *call: calls.append(call))
    assert_same_run(reference, resumed)
    with pytest.raises(ValueError, match="different key"):
        train(checkpoint=path, key=jax.random.PRNGKey(12345))
    return crashed, calls


def assert_same_run(a: TrainResult, b: TrainResult) -> None:
    """``a`` and ``b`` have identical params and identical metrics (the same names)."""
    for x, y in zip(jax.tree_util.tree_leaves(a.params), jax.tree_util.tree_leaves(b.params), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    assert set(a.metrics) == set(b.metrics)
    for name in a.metrics:
        np.testing.assert_array_equal(a.metrics[name], b.metrics[name], err_msg=name)


def save_and_load(agent: ModuleType, result: TrainResult, path: Path) -> tuple[Any, Any]:
    """Write ``result``'s policy with ``agent.save_policy`` and read it back (the same policy) with ``load_policy``."""
    agent.save_policy(path, result)
    policy, params = agent.load_policy(path)
    assert policy == result.policy
    return policy, params


def assert_no_retrace(
    train: Callable[..., TrainResult], env: CountsTraces, reference: TrainResult, metric: str, key: jax.Array
) -> None:
    """``train(key=key)``, compiled before for ``reference``, traces ``env`` no more and gives another ``metric``."""
    before = env.traces
    assert before > 0
    other = train(key=key)
    assert env.traces == before
    assert not np.array_equal(other.metrics[metric], reference.metrics[metric])


class CountsTraces:
    """Mixin of a probe environment counting how often ``step`` runs: under jit, only while JAX traces."""

    traces = 0

    def step(self, key, state, action, params):
        self.traces += 1
        return super().step(key, state, action, params)

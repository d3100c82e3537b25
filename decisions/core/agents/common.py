"""What every agent shares: argument checks, the result type, observation normalisation
(``RunningStats``), evaluation and ``run_chunked``, the chunked training driver with progress
and checkpoint/resume. Every agent is ``train(env, config, *, key, ...) -> TrainResult``.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pandas as pd
from flax import struct
from jax import Array

from decisions.core.checkpoint import key_fingerprint, load_metadata, load_pytree, save_pytree
from decisions.core.progress import Progress

PyTree = Any

# How a config's ``max_grad_norm`` clips the gradient (``grad_clip``): the global norm, or each element.
GRAD_CLIPS = ("global_norm", "value")

# ``progress(task, done, total)``: the platform-wide progress callback.
ProgressFn = Progress


class Policy(Protocol):
    """``policy(params, obs, key) -> action`` for one observation (vmap it for a batch)."""

    def __call__(self, params: PyTree, obs: Array, key: Array) -> Array: ...


def check_int(name: str, value: Any, minimum: int) -> None:
    """Raise ``ValueError("name: ...")`` unless ``value`` is an integer ``>= minimum``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValueError(f"{name}: must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name}: must be >= {minimum}, got {value}")


def check_number(name: str, value: Any, low: float, high: float, *, open_low: bool = False) -> None:
    """Raise ``ValueError("name: ...")`` unless ``value`` is a finite number in ``[low, high]``
    (``(low, high]`` with ``open_low``)."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.number):
        raise ValueError(f"{name}: must be a number, got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name}: must be finite, got {value!r}")
    below = value <= low if open_low else value < low
    if below or value > high:
        bracket = "(" if open_low else "["
        raise ValueError(f"{name}: must be in {bracket}{low}, {high}], got {value!r}")


def check_bool(name: str, value: Any) -> None:
    """Raise ``ValueError("name: ...")`` unless ``value`` is ``True`` or ``False``."""
    if not isinstance(value, bool):
        raise ValueError(f"{name}: must be True or False, got {value!r}")


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    """Raise ``ValueError("name: ...")`` unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name}: must be one of {', '.join(choices)}, got {value!r}")


def gradient_clip(grad_clip: str, max_grad_norm: float) -> optax.GradientTransformation:
    """The clip before an optimiser: the gradient rescaled to global norm at most ``max_grad_norm``
    (``"global_norm"``), or each element clipped to ``[-max_grad_norm, max_grad_norm]`` (``"value"``)."""
    if grad_clip == "value":
        return optax.clip(max_grad_norm)
    return optax.clip_by_global_norm(max_grad_norm)


def check_widths(name: str, value: Any) -> None:
    """Raise ``ValueError("name: ...")`` unless ``value`` is a non-empty tuple of positive integers."""
    if not isinstance(value, tuple) or not value:
        raise ValueError(f"{name}: must be a non-empty tuple of layer widths, got {value!r}")
    if any(isinstance(w, bool) or not isinstance(w, int) or w < 1 for w in value):
        raise ValueError(f"{name}: widths must be positive integers, got {value!r}")


def check_config(config: Any, config_type: type) -> None:
    """Raise ``TypeError`` unless ``config`` is a ``config_type`` (an agent's configuration)."""
    if not isinstance(config, config_type):
        raise TypeError(f"config must be a {config_type.__name__}, got {type(config).__name__}")


@struct.dataclass
class RunningStats:
    """Running mean and population variance of observations, shaped like one; ``count`` starts at a
    small epsilon."""

    mean: Array
    var: Array
    count: Array

    @classmethod
    def create(cls, shape: tuple[int, ...]) -> RunningStats:
        """Zero mean, unit variance, negligible count."""
        return cls(jnp.zeros(shape, jnp.float32), jnp.ones(shape, jnp.float32), jnp.asarray(1e-4, jnp.float32))

    def update(self, batch: Array) -> RunningStats:
        """Fold a batch ``(..., *shape)`` of observations into the statistics."""
        shape = self.mean.shape
        flat = batch.reshape((-1, *shape)).astype(jnp.float32)
        batch_mean = flat.mean(axis=0)
        batch_var = flat.var(axis=0)
        batch_count = jnp.asarray(flat.shape[0], jnp.float32)
        delta = batch_mean - self.mean
        total = self.count + batch_count
        mean = self.mean + delta * batch_count / total
        m2 = self.var * self.count + batch_var * batch_count + delta**2 * self.count * batch_count / total
        return RunningStats(mean, m2 / total, total)

    def normalize(self, obs: Array, clip: float = 10.0) -> Array:
        """``(obs - mean) / sqrt(var + 1e-8)``, clipped to ``[-clip, clip]``."""
        return jnp.clip((obs - self.mean) / jnp.sqrt(self.var + 1e-8), -clip, clip)


def identity_stats(shape: tuple[int, ...]) -> RunningStats:
    """Statistics that leave observations unchanged (mean 0, var 1): for normalisation switched off."""
    return RunningStats(jnp.zeros(shape, jnp.float32), jnp.ones(shape, jnp.float32) - 1e-8, jnp.asarray(1.0))


def initial_stats(shape: tuple[int, ...], normalize_obs: bool) -> RunningStats:
    """A fresh policy's observation statistics: empty running ones, or the identity without normalisation."""
    return RunningStats.create(shape) if normalize_obs else identity_stats(shape)


@dataclass
class TrainResult:
    """What every agent's ``train`` returns.

    ``policy`` is deterministic unless the agent says otherwise; ``params`` and the per-iteration
    ``metrics`` gain a leading seed axis when seeds train at once; ``env_steps`` is per seed.
    """

    policy: Policy
    params: PyTree
    metrics: dict[str, np.ndarray]
    train_seconds: float
    env_steps: int

    def curve(self) -> pd.DataFrame:
        """Training curves as a tidy DataFrame (``iteration``, ``seed``, one column per metric)."""
        frames = []
        for name, values in self.metrics.items():
            values = np.asarray(values)
            if values.ndim == 1:
                values = values[None]
            for seed, row in enumerate(values):
                frames.append(pd.DataFrame({"iteration": np.arange(len(row)), "seed": seed, name: row}))
        if not frames:
            return pd.DataFrame(columns=["iteration", "seed"])
        merged = frames[0]
        for frame in frames[1:]:
            merged = merged.merge(frame, on=["iteration", "seed"], how="outer")
        return merged.sort_values(["seed", "iteration"]).reset_index(drop=True)


def stack_results(results: list[TrainResult]) -> TrainResult:
    """One ``TrainResult`` with a leading seed axis from per-seed results of the same agent (seeds
    trained one after another; see ``docs/notes/core.md``)."""
    first = results[0]
    params = jax.tree_util.tree_map(lambda *xs: jax.numpy.stack(xs), *[r.params for r in results])
    metrics = {k: np.stack([np.asarray(r.metrics[k]) for r in results]) for k in first.metrics}
    return TrainResult(
        policy=first.policy,
        params=params,
        metrics=metrics,
        train_seconds=float(sum(r.train_seconds for r in results)),
        env_steps=first.env_steps,
    )


def train_in_turn(
    train_one: Callable[[int, Array, ProgressFn | None], TrainResult], keys: Array,
    progress: ProgressFn | None = None,
) -> TrainResult:
    """One seed per key trained one after another, ``train_one(seed, key, progress)``, stacked
    (``stack_results``); ``progress`` sees the seeds' steps counted together."""
    seeds = len(keys)
    results = []
    for seed, key in enumerate(keys):
        report = None
        if progress is not None:
            report = partial(_seed_progress, progress, seed, seeds)
        results.append(train_one(seed, key, report))
    return stack_results(results)


def _seed_progress(progress: ProgressFn, seed: int, seeds: int, task: str, done: int, total: int) -> None:
    progress(task, seed * total + done, seeds * total)


def make_result(policy: Policy, params: PyTree, log: dict[str, Array], env_steps: int, start: float) -> TrainResult:
    """The ``TrainResult`` of a finished loop, metrics as numpy (waits for ``params``; ``start`` is
    the ``perf_counter`` time training started)."""
    params = jax.block_until_ready(params)
    return TrainResult(
        policy=policy,
        params=params,
        metrics={name: np.asarray(value) for name, value in log.items()},
        train_seconds=time.perf_counter() - start,
        env_steps=env_steps,
    )


def config_dict(config: Any) -> dict[str, Any]:
    """The fields of a dataclass, pydantic model, mapping or plain object as a flat dict (tuples as lists)."""
    if dataclasses.is_dataclass(config):
        raw = dataclasses.asdict(config)
    elif hasattr(config, "model_dump"):
        raw = config.model_dump()
    elif isinstance(config, dict):
        raw = dict(config)
    else:
        raw = dict(vars(config))
    return _listed(raw)


def _listed(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` with each tuple value as a list, as a checkpoint's metadata stores it."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in fields.items()}


_NO_DEFAULT = object()


def _config_defaults(config: Any) -> dict[str, Any]:
    """The default of each field of a dataclass ``config`` that has one (tuples as lists), else nothing."""
    if not dataclasses.is_dataclass(config):
        return {}
    return _listed({f.name: f.default for f in dataclasses.fields(config) if f.default is not dataclasses.MISSING})


def _resume(
    path: Path, chunk: Callable[[PyTree, int], tuple[PyTree, PyTree]], state: PyTree, meta_expected: dict[str, Any],
    defaults: dict[str, Any],
) -> tuple[PyTree, list[PyTree], int]:
    """``(state, logs, done)`` restored from the checkpoint at ``path``; a config field the checkpoint
    does not name (one added since it was written) counts as its default.

    Raises:
        ValueError: the checkpoint's kind, config or key differ from ``meta_expected``.
    """
    kind = meta_expected["kind"]
    meta = load_metadata(path)
    if meta.get("kind") != kind:
        raise ValueError(f"{path}: not a {kind} checkpoint (found {meta.get('kind')!r})")
    saved = meta.get("config", {})
    differ = [k for k, v in meta_expected["config"].items()
              if (saved[k] if k in saved else defaults.get(k, _NO_DEFAULT)) != v]
    if differ:
        raise ValueError(f"{path}: checkpoint was written with a different config ({', '.join(differ)})")
    if meta.get("key") != meta_expected["key"]:
        raise ValueError(f"{path}: checkpoint was written with a different key")
    treedef = jax.tree_util.tree_structure(jax.eval_shape(lambda s: chunk(s, 1)[1], state))
    log_target = jax.tree_util.tree_unflatten(
        treedef, [jax.ShapeDtypeStruct(tuple(s), np.dtype(d)) for s, d in meta["log_shapes"]]
    )
    restored = load_pytree(path, {"state": state, "log": log_target})
    return restored["state"], [restored["log"]], int(meta["done"])


def _save(path: Path, state: PyTree, log: PyTree, done: int, meta_base: dict[str, Any]) -> None:
    """Write the loop state and the log so far to the checkpoint at ``path``."""
    leaves = jax.tree_util.tree_leaves(log)
    meta = {**meta_base, "done": done, "log_shapes": [[list(x.shape), str(x.dtype)] for x in leaves]}
    save_pytree(path, {"state": state, "log": log}, metadata=meta)


def run_chunked(
    chunk: Callable[[PyTree, int], tuple[PyTree, PyTree]],
    state: PyTree,
    *,
    iterations: int,
    log_every: int,
    kind: str,
    config: Any,
    key: Array,
    progress: ProgressFn | None = None,
    task: str = "training",
    checkpoint: str | os.PathLike[str] | None = None,
    seed_axis: bool = False,
) -> tuple[PyTree, PyTree]:
    """Drive a jitted training chunk to ``iterations``, with progress and checkpoint/resume.

    Args:
        chunk: ``chunk(state, n) -> (state, log)`` running ``n`` iterations in one jitted scan;
            log leaves have a leading ``n`` axis (after a seed axis with ``seed_axis``).
            Called with at most two distinct ``n``.
        log_every: iterations per chunk (progress and checkpoint cadence).
        kind, config, key: identify the run; a checkpoint written with others is refused.
        progress: optional ``(task, done, total)`` callback, called after each chunk.
        checkpoint: optional path written after each chunk; a restarted run resumes from it
            and ends identical to an uninterrupted one.

    Returns:
        ``(final state, log)`` with every log leaf concatenated over all iterations.

    Raises:
        ValueError: the checkpoint belongs to another kind, config or key.
    """
    if iterations <= 0 or log_every <= 0:
        raise ValueError(f"iterations and log_every must be positive, got {iterations}, {log_every}")
    path = None if checkpoint is None else Path(checkpoint)
    meta_base = {"kind": kind, "config": config_dict(config), "key": key_fingerprint(key)}
    logs: list[PyTree] = []
    done = 0
    log_axis = 1 if seed_axis else 0
    if path is not None and path.exists():
        state, logs, done = _resume(path, chunk, state, meta_base, _config_defaults(config))
    size = chunk_size(iterations, log_every)
    while done < iterations:
        n = min(size, iterations - done)
        state, log = chunk(state, n)
        jax.block_until_ready(log)  # report progress when the work is done, not when it is queued
        logs.append(log)
        done += n
        if path is not None:
            logs = [_concat(logs, log_axis)]
            _save(path, state, logs[0], done, meta_base)
        if progress is not None:
            progress(task, done, iterations)
    return state, _concat(logs, log_axis)


def iteration_steps(config: Any) -> int:
    """Environment steps of one training iteration: a rollout (on-policy) or ``train_freq`` vector steps (off-policy)."""
    if hasattr(config, "rollout_steps"):
        return int(config.batch_size)
    return int(config.train_freq * config.num_envs)


def config_checkpoint(checkpoint: Callable[..., Path | None] | None, name: str, config: Any) -> Path | None:
    """The checkpoint file ``checkpoint(name, iterations=, every=, steps_per_iteration=)`` gives for
    an agent's ``config``, or None without ``checkpoint``."""
    if checkpoint is None:
        return None
    return checkpoint(
        name, iterations=config.iterations, every=chunk_size(config.iterations, config.log_every),
        steps_per_iteration=iteration_steps(config),
    )


def chunk_size(iterations: int, log_every: int) -> int:
    """Iterations per chunk: the divisor of ``iterations`` nearest below ``log_every`` if at least
    half of it, else ``log_every`` (capped at ``iterations``)."""
    target = max(1, min(log_every, iterations))
    for size in range(target, max(1, target // 2) - 1, -1):
        if iterations % size == 0:
            return size
    return target


def _concat(logs: list[PyTree], axis: int) -> PyTree:
    if len(logs) == 1:
        return logs[0]
    return jax.tree_util.tree_map(lambda *xs: jnp.concatenate(xs, axis=axis), *logs)


def evaluate_episodes(
    env: Any,
    env_params: Any,
    policy: Policy,
    policy_params: PyTree,
    *,
    key: Array,
    num_episodes: int,
    max_steps: int,
) -> np.ndarray:
    """``(num_episodes,)`` float64 undiscounted returns of ``policy`` on an unwrapped ``env``, each
    episode ending at ``terminated | truncated`` or ``max_steps``; the same ``key``, the same episodes."""
    return np.asarray(_evaluate_jit(env, policy, max_steps, num_episodes, env_params, policy_params, key), np.float64)


@partial(jax.jit, static_argnums=(0, 1, 2, 3))
def _evaluate_jit(env, policy, max_steps, num_episodes, env_params, policy_params, key):
    def one_episode(episode_key):
        reset_key, run_key = jax.random.split(episode_key)
        obs, state = env.reset(reset_key, env_params)

        def step(carry, step_key):
            obs, state, total, alive = carry
            act_key, env_key = jax.random.split(step_key)
            action = policy(policy_params, obs, act_key)
            obs2, state2, reward, terminated, truncated, _ = env.step(env_key, state, action, env_params)
            total = total + jnp.where(alive, reward, 0.0)
            alive = alive & ~(terminated | truncated)
            return (obs2, state2, total, alive), None

        init = (obs, state, jnp.zeros((), jnp.float32), jnp.asarray(True))
        (_, _, total, _), _ = jax.lax.scan(step, init, jax.random.split(run_key, max_steps))
        return total

    return jax.vmap(one_episode)(jax.random.split(key, num_episodes))

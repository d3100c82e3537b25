"""SNAPO: smooth neural adjoint policy optimisation.

A neural policy lives inside a known differentiable simulator. The user gives
a differentiable rollout::

    value = objective(policy_params, inputs, key, temperature)   # scalar to MAXIMISE

where ``inputs`` is the pytree of everything a sensitivity may be wanted for
(forward curve, costs, limits, process parameters) and ``temperature`` drives
the smooth surrogates of the hard constraints (``core.smooth``). ``train``
fits ``policy_params`` with optax (gradient clipping, learning-rate schedule,
geometric temperature annealing); every step is one reverse pass that yields
``d value / d policy_params`` *and* ``d value / d inputs``. The loop runs in
jitted chunks of ``log_every`` steps (a ``lax.scan``), so progress can be shown
between chunks while the chunk function is compiled once and reused: a second
``train`` call with the same objective, config and shapes does not re-trace.

With ``checkpoint=path`` the loop state and the log so far are saved after
every chunk (``core.checkpoint``, atomic msgpack); a later call with the same
path, config, key and parameter structure resumes where the file left off and
ends with the same parameters and log as an uninterrupted run.
"""

from __future__ import annotations

import dataclasses
import os
import time
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple, Self

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pandas as pd
from jax import Array

from decisions.core.checkpoint import load_metadata, load_pytree, save_pytree
from decisions.core.pytrees import strong_types

PyTree = Any
Objective = Callable[[PyTree, PyTree, Array, Array], Array]
"""``objective(policy_params, inputs, key, temperature) -> scalar`` (maximised)."""

ProgressFn = Callable[[int, int, float], None]
"""``progress(steps_done, total_steps, latest_value)``, called between jitted chunks."""


@dataclass(frozen=True)
class SnapoConfig:
    """Static training configuration (hashable: it is a jit static argument)."""

    steps: int = 400
    """Number of gradient steps."""
    learning_rate: float = 3e-3
    """Peak Adam learning rate."""
    warmup_steps: int = 20
    """Linear warm-up of the learning rate before cosine decay."""
    final_lr_fraction: float = 0.05
    """Learning rate at the last step, as a fraction of the peak."""
    clip_norm: float = 1.0
    """Global gradient-norm clip applied before Adam."""
    temperature_start: float = 0.1
    """Surrogate temperature at step 0."""
    temperature_end: float = 0.005
    """Surrogate temperature at the last step (geometric annealing in between)."""
    log_every: int = 25
    """Steps per jitted chunk, i.e. how often ``progress`` is called."""

    def __post_init__(self) -> None:
        for name in ("steps", "log_every", "warmup_steps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{name}: must be an integer, got {value!r}")
        for name in ("steps", "log_every"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name}: must be positive, got {getattr(self, name)}")
        if self.warmup_steps < 0:
            raise ValueError(f"warmup_steps: must be >= 0, got {self.warmup_steps}")
        for name in ("learning_rate", "clip_norm", "temperature_start", "temperature_end"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{name}: must be a number, got {value!r}")
            if not np.isfinite(value) or value <= 0:
                raise ValueError(f"{name}: must be positive and finite, got {value!r}")
        if not isinstance(self.final_lr_fraction, int | float) or not (0.0 <= self.final_lr_fraction <= 1.0):
            raise ValueError(f"final_lr_fraction: must be in [0, 1], got {self.final_lr_fraction!r}")

    def temperature(self, step: Array) -> Array:
        """Temperature at ``step`` (geometric from start to end)."""
        frac = jnp.clip(step / max(self.steps - 1, 1), 0.0, 1.0)
        return self.temperature_start * (self.temperature_end / self.temperature_start) ** frac

    def optimizer(self) -> optax.GradientTransformation:
        """Adam with global-norm clipping and a warm-up + cosine learning-rate schedule."""
        schedule = optax.warmup_cosine_decay_schedule(
            init_value=0.0,
            peak_value=self.learning_rate,
            warmup_steps=min(self.warmup_steps, max(self.steps - 1, 0)),
            decay_steps=self.steps,
            end_value=self.learning_rate * self.final_lr_fraction,
        )
        return optax.chain(optax.clip_by_global_norm(self.clip_norm), optax.adam(schedule))


class TrainState(NamedTuple):
    """Loop state carried through the training scan."""

    params: PyTree
    opt_state: optax.OptState
    step: Array  # () int32
    key: Array  # PRNG key


class StepLog(NamedTuple):
    """Per-step training record (each field stacked to shape ``(steps,)``)."""

    value: Array
    grad_norm: Array
    temperature: Array


@dataclass
class SnapoResult:
    """What ``train`` returns.

    Attributes:
        params: trained policy parameters.
        log: per-step value, policy-gradient norm and temperature, each ``(steps,)``.
        value: smooth objective at the trained parameters (final temperature).
        sensitivities: ``d value / d inputs``, same pytree structure as ``inputs``.
        param_grad_norm: norm of ``d value / d params`` at the end (near 0 at an optimum).
        train_seconds: wall time of the training loop, compile included.
    """

    params: PyTree
    log: StepLog
    value: float
    sensitivities: PyTree
    param_grad_norm: float
    train_seconds: float

    def curve(self) -> pd.DataFrame:
        """Training curve as a tidy DataFrame with columns step, value, grad_norm, temperature."""
        return training_curve(self.log)


CURVE_COLUMNS = ("step", "value", "grad_norm", "temperature")
"""Columns of ``training_curve``."""


def training_curve(log: StepLog | None) -> pd.DataFrame:
    """A training log as a tidy DataFrame, one row per step.

    Args:
        log: the per-step log (``SnapoResult.log``), or None when there is none (a loaded policy).

    Returns:
        Columns ``step, value, grad_norm, temperature``; no rows when ``log`` is None.
    """
    if log is None:
        return pd.DataFrame(columns=list(CURVE_COLUMNS))
    return pd.DataFrame(
        {
            "step": np.arange(len(log.value)),
            "value": np.asarray(log.value),
            "grad_norm": np.asarray(log.grad_norm),
            "temperature": np.asarray(log.temperature),
        }
    )


@dataclass(kw_only=True)
class TrainedSnapo:
    """A policy network trained with SNAPO, and what its training recorded.

    A domain subclasses it, narrowing the types of ``policy`` and ``settings`` (a
    ``core.snapo_settings.SnapoSettingsBase``) and adding its own fields.

    Attributes:
        policy: the architecture (static).
        params: its parameters.
        settings: the settings it was trained with.
        log: per-step smooth value (in the value's units), gradient norm and temperature;
            None for a loaded or a directly built policy.
        train_value: smooth objective at the end of training (final temperature).
        train_seconds: wall time of training, compilation included.
    """

    policy: Any
    params: PyTree
    settings: Any
    log: StepLog | None = None
    train_value: float = float("nan")
    train_seconds: float = float("nan")

    @classmethod
    def from_result(cls, result: SnapoResult, **fields: Any) -> Self:
        """The policy ``train`` (or ``train_scaled``) returned, with its parameters, log, value and time.

        Args:
            result: the training result.
            **fields: the other fields (``policy``, ``settings``, a subclass's own).

        Returns:
            The trained policy.
        """
        return cls(params=result.params, log=result.log, train_value=result.value,
                   train_seconds=result.train_seconds, **fields)

    def training_record(self) -> dict[str, Any]:
        """What a saved policy keeps of its training (JSON): ``settings``, ``train_value``, ``train_seconds``."""
        return {
            "settings": self.settings.model_dump(mode="json"),
            "train_value": self.train_value,
            "train_seconds": self.train_seconds,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any], **fields: Any) -> Self:
        """The policy described by a saved ``training_record`` (without its training log).

        Args:
            record: the saved description holding a ``training_record``.
            **fields: the other fields (``policy``, ``params``, a subclass's own).

        Returns:
            The policy, its ``settings`` validated by the type of this class's ``settings`` field.
        """
        settings_model = typing.get_type_hints(cls)["settings"]
        return cls(
            settings=settings_model.model_validate(record["settings"]),
            train_value=float(record["train_value"]),
            train_seconds=float(record["train_seconds"]),
            **fields,
        )

    def curve(self) -> pd.DataFrame:
        """Training curve with columns ``step, value, grad_norm, temperature`` (empty if no log)."""
        return training_curve(self.log)


def value_and_sensitivities(
    objective: Objective, params: PyTree, inputs: PyTree, key: Array, temperature: float | Array
) -> tuple[Array, PyTree, PyTree]:
    """One reverse pass: the objective and its gradients to policy params and to all inputs.

    Args:
        objective: the differentiable rollout.
        params: policy parameters.
        inputs: pytree of inputs to differentiate against.
        key: PRNG key for the scenarios (fix it to compare runs on common paths).
        temperature: surrogate temperature.

    Returns:
        ``(value, d_params, d_inputs)``.
    """
    temperature = jnp.asarray(temperature, jnp.result_type(float))
    return _value_and_grads(objective, strong_types(params), strong_types(inputs), key, temperature)



@partial(jax.jit, static_argnums=(0,))
def _value_and_grads(objective: Objective, params, inputs, key, temperature):
    value, (d_params, d_inputs) = jax.value_and_grad(objective, argnums=(0, 1))(
        params, inputs, key, temperature
    )
    return value, d_params, d_inputs


def _global_norm(tree: PyTree) -> Array:
    return optax.global_norm(tree)


@partial(jax.jit, static_argnames=("objective", "config", "n_steps"))
def _train_chunk(
    state: TrainState, inputs: PyTree, *, objective: Objective, config: SnapoConfig, n_steps: int
) -> tuple[TrainState, StepLog]:
    optimizer = config.optimizer()

    def one_step(s: TrainState, _):
        key, sub = jax.random.split(s.key)
        temperature = config.temperature(s.step.astype(jnp.float32))
        value, grads = jax.value_and_grad(objective)(s.params, inputs, sub, temperature)
        ascent = jax.tree_util.tree_map(jnp.negative, grads)  # optax minimises
        updates, opt_state = optimizer.update(ascent, s.opt_state, s.params)
        params = optax.apply_updates(s.params, updates)
        log = StepLog(value=value, grad_norm=_global_norm(grads), temperature=temperature)
        return TrainState(params, opt_state, s.step + 1, key), log

    return jax.lax.scan(one_step, state, None, length=n_steps)


def _key_fingerprint(key: Array) -> list[int]:
    if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.key_data(key)
    return [int(v) for v in np.asarray(key).ravel()]


def _checkpoint_metadata(config: SnapoConfig, key: Array, done: int, log: StepLog) -> dict[str, Any]:
    return {
        "kind": "snapo.train",
        "config": dataclasses.asdict(config),
        "key": _key_fingerprint(key),
        "steps_done": done,
        "log_dtypes": [str(x.dtype) for x in log],
    }


def _resume(
    path: Path, state: TrainState, config: SnapoConfig, key: Array
) -> tuple[TrainState, list[StepLog], int]:
    """Load ``(state, [log so far], steps done)`` from ``path``, checking it belongs to this run."""
    meta = load_metadata(path)
    if meta.get("kind") != "snapo.train":
        raise ValueError(f"{path}: not a snapo.train checkpoint")
    saved = meta["config"]
    differ = [name for name, value in dataclasses.asdict(config).items() if saved.get(name) != value]
    if differ:
        raise ValueError(
            f"{path}: checkpoint was written with a different config ({', '.join(differ)}); "
            "delete it or pass another path"
        )
    if meta["key"] != _key_fingerprint(key):
        raise ValueError(f"{path}: checkpoint was written with a different key")
    done = int(meta["steps_done"])
    log_target = StepLog(*(jax.ShapeDtypeStruct((done,), np.dtype(d)) for d in meta["log_dtypes"]))
    restored = load_pytree(path, {"state": state, "log": log_target})
    return restored["state"], [restored["log"]], done


def train(
    objective: Objective,
    init_params: PyTree,
    inputs: PyTree,
    config: SnapoConfig = SnapoConfig(),
    *,
    key: Array,
    progress: ProgressFn | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
) -> SnapoResult:
    """Train a policy by gradient ascent through a differentiable simulator.

    Args:
        objective: ``objective(params, inputs, key, temperature) -> scalar`` to maximise.
            Pass the same function object across calls to reuse the compiled loop.
        init_params: initial policy parameters.
        inputs: pytree of simulator inputs (held fixed during training).
        config: training configuration.
        key: PRNG key; each step draws fresh scenarios from it.
        progress: optional callback ``(done, total, value)`` called between chunks
            (after the chunk's checkpoint is written).
        checkpoint: optional file path. After every chunk the loop state and the
            log so far are saved there; if the file exists at the start, training
            resumes from it (a finished checkpoint just returns the result). The
            caller must pass the same objective and inputs as the run that wrote it.

    Returns:
        A ``SnapoResult`` with trained params, training log and the sensitivities
        ``d value / d inputs`` at the trained params from one final reverse pass on
        a fixed key at the final temperature.

    Raises:
        ValueError: the checkpoint is corrupt, or was written with another config,
            key or parameter structure.
    """
    start = time.perf_counter()
    init_params, inputs = strong_types(init_params), strong_types(inputs)
    train_key, eval_key = jax.random.split(key)
    optimizer = config.optimizer()
    state = TrainState(init_params, optimizer.init(init_params), jnp.zeros((), jnp.int32), train_key)
    logs: list[StepLog] = []
    done = 0
    path = None if checkpoint is None else Path(checkpoint)
    if path is not None and path.exists():
        state, logs, done = _resume(path, state, config, key)
    while done < config.steps:
        n = min(config.log_every, config.steps - done)
        state, log = _train_chunk(state, inputs, objective=objective, config=config, n_steps=n)
        logs.append(log)
        done += n
        if path is not None:
            logs = [jax.tree_util.tree_map(lambda *xs: jnp.concatenate(xs), *logs)]
            meta = _checkpoint_metadata(config, key, done, logs[0])
            save_pytree(path, {"state": state, "log": logs[0]}, metadata=meta)
        if progress is not None:
            progress(done, config.steps, float(log.value[-1]))
    log = jax.tree_util.tree_map(lambda *xs: jnp.concatenate(xs), *logs)
    temperature = config.temperature(jnp.asarray(config.steps - 1, jnp.float32))
    value, d_params, d_inputs = value_and_sensitivities(
        objective, state.params, inputs, eval_key, temperature
    )
    jax.block_until_ready(d_inputs)
    return SnapoResult(
        params=state.params,
        log=log,
        value=float(value),
        sensitivities=d_inputs,
        param_grad_norm=float(_global_norm(d_params)),
        train_seconds=time.perf_counter() - start,
    )


def train_scaled(
    objective: Objective,
    init_params: PyTree,
    inputs: PyTree,
    config: SnapoConfig = SnapoConfig(),
    *,
    scale: float,
    key: Array,
    progress: ProgressFn | None = None,
) -> SnapoResult:
    """``train`` an objective normalised by ``scale``, with every figure reported in the value's units.

    A domain divides its value (currency) by a fixed scale (``stop_gradient``-ed: a liability,
    capacity x mean price) so the gradients are of order one whatever the problem's size;
    this multiplies the scale back into what it reports.

    Args:
        objective: ``objective(params, inputs, key, temperature) -> value / scale`` to maximise.
        init_params: initial policy parameters.
        inputs: pytree of simulator inputs.
        config: training configuration.
        scale: the (positive) normalisation the objective divides by.
        key: PRNG key of the training paths.
        progress: optional ``(done, total, value)`` callback between chunks, ``value`` unscaled.

    Returns:
        ``train``'s result with ``value``, ``log.value``, ``sensitivities`` and
        ``param_grad_norm`` multiplied by ``scale``.
    """
    report = None if progress is None else (lambda done, total, value: progress(done, total, value * scale))
    result = train(objective, init_params, inputs, config, key=key, progress=report)
    return dataclasses.replace(
        result,
        log=result.log._replace(value=result.log.value * scale),
        value=result.value * scale,
        sensitivities=jax.tree_util.tree_map(lambda g: g * scale, result.sensitivities),
        param_grad_norm=result.param_grad_norm * scale,
    )

"""SNAPO: smooth neural adjoint policy optimisation.

``train`` fits ``policy_params`` of a differentiable rollout ``objective(policy_params, inputs,
key, temperature)`` (maximised; ``temperature`` drives the smooth surrogates of ``core.smooth``)
with optax, in jitted chunks of ``log_every`` steps, optionally checkpointed; it returns the
sensitivities ``d value / d inputs`` from the same reverse pass. Design: ``docs/notes/core.md``.
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

from decisions.core.checkpoint import key_fingerprint, load_metadata, load_pytree, save_pytree
from decisions.core.pytrees import strong_types

PyTree = Any
# ``objective(policy_params, inputs, key, temperature) -> scalar`` (maximised).
Objective = Callable[[PyTree, PyTree, Array, Array], Array]

# ``progress(steps_done, total_steps, latest_value)``, called between jitted chunks.
ProgressFn = Callable[[int, int, float], None]


@dataclass(frozen=True)
class SnapoConfig:
    """Static training configuration (hashable: it is a jit static argument)."""

    # Number of gradient steps.
    steps: int = 400
    # Peak Adam learning rate.
    learning_rate: float = 3e-3
    # Linear warm-up of the learning rate before cosine decay.
    warmup_steps: int = 20
    # Learning rate at the last step, as a fraction of the peak.
    final_lr_fraction: float = 0.05
    # Global gradient-norm clip applied before Adam.
    clip_norm: float = 1.0
    # Surrogate temperature at step 0.
    temperature_start: float = 0.1
    # Surrogate temperature at the last step (geometric annealing in between).
    temperature_end: float = 0.005
    # Steps per jitted chunk, i.e. how often ``progress`` is called.
    log_every: int = 25

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
    """What ``train`` returns: the smooth ``value`` at the final temperature, its ``sensitivities``
    ``d value / d inputs`` (shaped like ``inputs``) and the final ``param_grad_norm`` (None and NaN
    when ``train`` was asked for the value only)."""

    params: PyTree
    log: StepLog
    value: float
    sensitivities: PyTree | None
    param_grad_norm: float
    train_seconds: float

    def curve(self) -> pd.DataFrame:
        """Training curve as a tidy DataFrame with columns step, value, grad_norm, temperature."""
        return training_curve(self.log)


# Columns of ``training_curve``.
CURVE_COLUMNS = ("step", "value", "grad_norm", "temperature")


def training_curve(log: StepLog | None) -> pd.DataFrame:
    """A training log as a DataFrame of ``CURVE_COLUMNS``, one row per step (none for no log)."""
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
    """A policy network trained with SNAPO, and what its training recorded (``log`` None when loaded).

    A domain subclasses it, narrowing ``policy`` and ``settings`` (a ``SnapoSettingsBase``).
    """

    policy: Any
    params: PyTree
    settings: Any
    log: StepLog | None = None
    train_value: float = float("nan")
    train_seconds: float = float("nan")

    @classmethod
    def from_result(cls, result: SnapoResult, **fields: Any) -> Self:
        """The policy of a ``train`` result, the other fields given by ``fields``."""
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
        """The policy of a saved ``training_record`` (no log), settings validated by this class's type."""
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
    """``(value, d_params, d_inputs)`` of the objective from one reverse pass."""
    temperature = jnp.asarray(temperature, jnp.result_type(float))
    return _value_and_grads(objective, strong_types(params), strong_types(inputs), key, temperature)



@partial(jax.jit, static_argnums=(0,))
def _value_and_grads(objective: Objective, params, inputs, key, temperature):
    value, (d_params, d_inputs) = jax.value_and_grad(objective, argnums=(0, 1))(
        params, inputs, key, temperature
    )
    return value, d_params, d_inputs


@partial(jax.jit, static_argnums=(0,))
def _value(objective: Objective, params: PyTree, inputs: PyTree, key: Array, temperature: Array) -> Array:
    return objective(params, inputs, key, temperature)


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


def _checkpoint_metadata(config: SnapoConfig, key: Array, done: int, log: StepLog) -> dict[str, Any]:
    return {
        "kind": "snapo.train",
        "config": dataclasses.asdict(config),
        "key": key_fingerprint(key),
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
    if meta["key"] != key_fingerprint(key):
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
    sensitivities: bool = True,
) -> SnapoResult:
    """Train a policy by gradient ascent through a differentiable simulator.

    Args:
        objective: maximised; the same function object reuses the compiled loop.
        key: each step draws fresh scenarios from it.
        progress: called between chunks, after the chunk's checkpoint is written.
        checkpoint: optional file saved after every chunk and resumed from when it exists;
            resume with the same objective and inputs.
        sensitivities: whether the final pass is a reverse one (the result's sensitivities and
            parameter gradient norm) or the value only (a forward pass: less to compile and run).

    Returns:
        The result: its value (and sensitivities) from one final pass at the final temperature.

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
    if not sensitivities:
        value = float(_value(objective, state.params, inputs, eval_key, temperature))
        return SnapoResult(params=state.params, log=log, value=value, sensitivities=None,
                           param_grad_norm=float("nan"), train_seconds=time.perf_counter() - start)
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
    sensitivities: bool = True,
) -> SnapoResult:
    """``train`` an objective that returns ``value / scale``, with every figure reported (and
    passed to ``progress``) multiplied back by ``scale``."""
    report = None if progress is None else (lambda done, total, value: progress(done, total, value * scale))
    result = train(objective, init_params, inputs, config, key=key, progress=report, sensitivities=sensitivities)
    return dataclasses.replace(
        result,
        log=result.log._replace(value=result.log.value * scale),
        value=result.value * scale,
        sensitivities=jax.tree_util.tree_map(lambda g: g * scale, result.sensitivities),
        param_grad_norm=result.param_grad_norm * scale,
    )

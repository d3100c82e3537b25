"""SNAPO for gas storage: train a base-stock policy through the simulator, evaluate it, differentiate it."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from functools import lru_cache, partial
from typing import Any

import jax
import jax.numpy as jnp
from jax import Array

from decisions.core.checkpoint import load_trained, save_trained
from decisions.core.pytrees import cast_leaves
from decisions.core.snapo import TrainedSnapo, train_scaled
from decisions.energy.gas_storage.params import GasStorageParams, PriceKind, to_params
from decisions.energy.gas_storage.policy import BaseStockPolicy
from decisions.energy.gas_storage.prices import draw_normals
from decisions.energy.gas_storage.scenario import Scenario
from decisions.energy.gas_storage.simulator import rollout
from decisions.energy.gas_storage.spec import SnapoSettings  # defined in the light spec module

PyTree = Any
FORMAT = "decisions.gas_storage.snapo_policy/1"


@dataclasses.dataclass(kw_only=True)
class TrainedPolicy(TrainedSnapo):
    """A trained SNAPO policy (``core.snapo.TrainedSnapo``; log and values in currency).

    Attributes:
        policy: the architecture (static).
        settings: the settings it was trained with.
    """

    policy: BaseStockPolicy
    settings: SnapoSettings


def _scales(params: GasStorageParams) -> tuple[Array, Array]:
    """``(value scale, rate scale)`` from the (stop-gradient) params: capacity x mean price, max rate."""
    p = jax.lax.stop_gradient(params)
    value_scale = p.capacity * jnp.mean(p.forward)
    rate_scale = jnp.maximum(jnp.max(p.injection_rates), jnp.max(p.withdrawal_rates))
    return value_scale, rate_scale


def _training_normals(key: Array, paths: int, params: GasStorageParams) -> Array:
    """Antithetic normals ``(paths, D - 1)`` (a single path when prices are deterministic)."""
    if params.price_kind is PriceKind.DETERMINISTIC:
        return jnp.zeros((1, params.horizon - 1), params.forward.dtype)
    half = draw_normals(key, (paths + 1) // 2, params.horizon, params.forward.dtype)
    return jnp.concatenate([half, -half])[:paths]


@lru_cache(maxsize=32)
def _objective(
    policy: BaseStockPolicy, paths: int, penalty: float
) -> Callable[[PyTree, GasStorageParams, Array, Array], Array]:
    """The SNAPO objective (cached, so repeated training reuses the compiled loop)."""

    def objective(policy_params: PyTree, inputs: GasStorageParams, key: Array, temperature: Array) -> Array:
        value_scale, rate_scale = _scales(inputs)
        normals = _training_normals(key, paths, inputs)
        values, _ = rollout(policy, policy_params, inputs, normals, tau=temperature * rate_scale, smooth=True)
        coefficients = policy.coefficients(policy_params, jax.lax.stop_gradient(inputs))  # (D, 2, K)
        return jnp.mean(values) / value_scale - penalty * temperature * jnp.mean(jnp.square(coefficients))

    return objective


def train_policy(
    scenario: Scenario,
    settings: SnapoSettings | None = None,
    *,
    key: Array | None = None,
    progress: Callable[[int, int, float], None] | None = None,
) -> TrainedPolicy:
    """Train a base-stock policy on a scenario with SNAPO.

    Args:
        settings: training settings (defaults: ``SnapoSettings()``).
        key: PRNG key of the initialisation and training paths (default: from ``settings.seed``).
        progress: optional ``progress(done, total, smooth value)`` between jitted chunks.
    """
    settings = SnapoSettings() if settings is None else settings
    key = jax.random.PRNGKey(settings.seed) if key is None else key
    init_key, train_key = jax.random.split(key)
    params = to_params(scenario)
    policy = settings.policy(stochastic=params.price_kind is not PriceKind.DETERMINISTIC)
    result = train_scaled(
        _objective(policy, settings.paths_per_step, settings.target_penalty),
        policy.init(init_key),
        params,
        settings.config(),
        scale=float(_scales(params)[0]),
        key=train_key,
        progress=progress,
        sensitivities=False,  # the policy keeps the value only: its sensitivities are computed apart
    )
    return TrainedPolicy.from_result(result, policy=policy, settings=settings)


def _cast(policy_params: PyTree, params: GasStorageParams) -> PyTree:
    """Network parameters in the dtype of the problem parameters (float64 checks)."""
    return cast_leaves(policy_params, params.forward.dtype)


@partial(jax.jit, static_argnames=("policy",))
def _hard_rollout(policy: BaseStockPolicy, policy_params: PyTree, params: GasStorageParams, normals: Array):
    return rollout(policy, policy_params, params, normals, tau=0.0, smooth=False)


def evaluate_policy(trained: TrainedPolicy, normals: Array, params: GasStorageParams) -> Array:
    """Per-path discounted values under the hard rules.

    Args:
        normals: ``(P, D - 1)`` standard normals of the evaluation paths.
    """
    return _hard_rollout(trained.policy, _cast(trained.params, params), params, normals)[0]


def values_and_moves(trained: TrainedPolicy, normals: Array, params: GasStorageParams) -> tuple[Array, Array]:
    """``evaluate_policy``'s path values ``(P,)`` and ``schedule``'s moves ``(P, D)`` from one rollout."""
    values, traj = _hard_rollout(trained.policy, _cast(trained.params, params), params, normals)
    return values, traj.moves


def schedule(trained: TrainedPolicy, params: GasStorageParams, normals: Array) -> tuple[Array, Array]:
    """Moves and inventory of the trained policy on each path, under the hard rules.

    Args:
        normals: ``(P, D - 1)`` standard normals.

    Returns:
        ``(moves, inventory)``: ``(P, D)`` net injection and ``(P, D + 1)`` inventory.
    """
    _, traj = _hard_rollout(trained.policy, _cast(trained.params, params), params, normals)
    return traj.moves, traj.inventory


def policy_value(
    trained: TrainedPolicy, params: GasStorageParams, normals: Array, *, view: GasStorageParams | None = None
) -> Array:
    """Mean hard value with the simulator on ``params`` and the policy seeing ``view`` (default ``params``).

    Args:
        normals: ``(P, D - 1)`` standard normals.
        view: the parameters the policy's features are computed from.

    Returns:
        The mean path value (scalar).
    """
    return _policy_value(trained.policy, _cast(trained.params, params), params, normals, view)


@partial(jax.jit, static_argnames=("policy",))
def _policy_value(policy, policy_params, params, normals, view):
    values, _ = rollout(policy, policy_params, params, normals, tau=0.0, smooth=False, policy_view=view)
    return jnp.mean(values)


@partial(jax.jit, static_argnames=("policy", "policy_reacts"))
def _value_and_grad(policy, policy_params, params, normals, policy_reacts):
    def value(p: GasStorageParams) -> Array:
        values, _ = rollout(
            policy, policy_params, p, normals, tau=0.0, smooth=False, hold_policy=not policy_reacts
        )
        return jnp.mean(values)

    return jax.value_and_grad(value)(params)


def sensitivities(
    trained: TrainedPolicy, params: GasStorageParams, normals: Array, *, policy_reacts: bool
) -> tuple[Array, GasStorageParams]:
    """Mean hard value and its gradient to every input, from one reverse pass.

    Args:
        params: problem parameters (the inputs differentiated against).
        normals: ``(P, D - 1)`` standard normals of the paths.
        policy_reacts: False holds the policy's decisions fixed (envelope / market delta);
            True differentiates the policy's reaction too (full pathwise derivative).

    Returns:
        ``(value, grads)`` with ``grads`` a ``GasStorageParams`` of ``d value / d input``.
    """
    return _value_and_grad(trained.policy, _cast(trained.params, params), params, normals, policy_reacts)


def save_policy(path: str | os.PathLike[str], trained: TrainedPolicy) -> None:
    """Save a trained policy (network parameters and settings) as msgpack."""
    description = {"policy": dataclasses.asdict(trained.policy), **trained.training_record()}
    save_trained(path, kind=FORMAT, description=description, params=trained.params)


def _policy_of(description: dict[str, Any]) -> BaseStockPolicy:
    arch = dict(description["policy"])
    return BaseStockPolicy(**{**arch, "hidden": tuple(arch["hidden"]), "window": tuple(arch["window"])})


def load_policy(path: str | os.PathLike[str]) -> TrainedPolicy:
    """Load a policy saved by ``save_policy`` (without its training log).

    Returns:
        The ``TrainedPolicy``, giving the same actions as the saved one.

    Raises:
        InputError: the file is corrupt or not a saved gas storage SNAPO policy (of this format version).
    """
    meta, params = load_trained(
        path, kind=FORMAT, target=lambda d: _policy_of(d).init(jax.random.PRNGKey(0)), field="policy"
    )
    return TrainedPolicy.from_record(meta, policy=_policy_of(meta), params=params)

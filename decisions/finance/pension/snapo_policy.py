"""SNAPO for pension ALM: train a policy through the simulator, evaluate it, differentiate it."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from functools import lru_cache, partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from decisions.core.checkpoint import load_trained, save_trained
from decisions.core.pytrees import cast_leaves
from decisions.core.snapo import TrainedSnapo, train_scaled
from decisions.finance.pension.assemble import to_params
from decisions.finance.pension.liabilities import initial_liability
from decisions.finance.pension.params import PensionParams
from decisions.finance.pension.policy import (
    AllocationNet,
    fixed_mix_params,
    init_policy,
    is_fixed_mix,
    with_state_gate,
)
from decisions.finance.pension.scenario import Scenario
from decisions.finance.pension.sensitivity import Sensitivities
from decisions.finance.pension.simulator import Outcome, Trajectory, draw_normals, rollout
from decisions.finance.pension.spec import PensionSnapoSettings  # defined in the light spec module

PyTree = Any
FORMAT = "decisions.finance.pension.policy/1"


@dataclasses.dataclass(kw_only=True)
class TrainedPensionPolicy(TrainedSnapo):
    """A trained pension policy, neural or fixed mix (``core.snapo.TrainedSnapo``; log and values in currency).

    Attributes:
        policy: the network (static); a fixed mix when its state gate is closed.
        settings: the settings it was trained with.
        asset_names: labels of the portfolio weights.
    """

    policy: AllocationNet
    settings: PensionSnapoSettings
    asset_names: tuple[str, ...]

    @property
    def is_fixed_mix(self) -> bool:
        """Whether the policy ignores the state (constant weights and contribution rate)."""
        return is_fixed_mix(self.params)


def _scale(params: PensionParams) -> Array:
    return initial_liability(jax.lax.stop_gradient(params))


@lru_cache(maxsize=32)
def snapo_objective(policy: AllocationNet, paths: int) -> Callable[[PyTree, PensionParams, Array, Array], Array]:
    """The SNAPO objective ``(policy_params, inputs, key, temperature) -> mean smooth value / L_0``."""

    def objective(policy_params: PyTree, inputs: PensionParams, key: Array, temperature: Array) -> Array:
        normals = draw_normals(key, paths, inputs.months, inputs.n_shocks, inputs.key_rates.dtype)
        outcome, _ = rollout(policy, policy_params, inputs, normals, tau=temperature, smooth=True)
        return jnp.mean(outcome.value) / _scale(inputs)

    return objective


def train_policy(
    scenario: Scenario | PensionParams,
    settings: PensionSnapoSettings | None = None,
    *,
    fixed_mix: bool = False,
    state_gate: tuple[float, ...] | None = None,
    key: Array | None = None,
    init_params: PyTree | None = None,
    progress: Callable[[int, int, float], None] | None = None,
) -> TrainedPensionPolicy:
    """Train a pension policy with SNAPO.

    Args:
        scenario: the validated scenario (or its params).
        settings: training settings (default ``PensionSnapoSettings()``).
        fixed_mix: train a fixed mix (constant weights and contribution rate; the network
            with its state gate closed, starting from equal weights and the mid rate).
        state_gate: which features the network sees (``policy.N_FEATURES`` zeros and ones, e.g.
            ``policy.FUNDING_AND_TIME``); default all. Ignored with ``fixed_mix`` or ``init_params``.
        key: PRNG key of the initialisation and the training paths (default from ``settings.seed``).
        init_params: optional starting parameters (default: the policy's initialisation).
        progress: optional ``progress(done, total, smooth value in currency)`` between chunks.
    """
    settings = PensionSnapoSettings() if settings is None else settings
    key = jax.random.PRNGKey(settings.seed) if key is None else key
    init_key, train_key = jax.random.split(key)
    params = scenario if isinstance(scenario, PensionParams) else to_params(scenario)
    policy = settings.network(params.n_assets)
    if init_params is not None:
        start = init_params
    elif fixed_mix:
        start = fixed_mix_params(policy, np.full(params.n_assets, 1.0 / params.n_assets), 0.5, init_key)
    else:
        start = init_policy(policy, init_key)
        if state_gate is not None:
            start = with_state_gate(start, state_gate)
    result = train_scaled(
        snapo_objective(policy, settings.paths_per_step),
        start,
        params,
        settings.config(),
        scale=float(_scale(params)),
        key=train_key,
        progress=progress,
        sensitivities=False,  # the policy keeps the value only: its sensitivities are computed apart
    )
    return TrainedPensionPolicy.from_result(result, policy=policy, settings=settings, asset_names=params.asset_names)


def cast(policy_params: PyTree, params: PensionParams) -> PyTree:
    """Policy parameters in the dtype of the problem parameters (float64 checks)."""
    return cast_leaves(policy_params, params.key_rates.dtype)


@partial(jax.jit, static_argnames=("policy",))
def _hard_rollout(
    policy: AllocationNet, policy_params: PyTree, params: PensionParams, normals: Array
) -> tuple[Outcome, Trajectory]:
    return rollout(policy, policy_params, params, normals, smooth=False)


def simulate(
    trained: TrainedPensionPolicy, params: PensionParams, normals: Array
) -> tuple[Outcome, Trajectory]:
    """Run the policy under the hard rules on given paths.

    Args:
        normals: ``(P, N, S)`` standard normals of the paths (``simulator.draw_normals``).
    """
    return _hard_rollout(trained.policy, cast(trained.params, params), params, normals)


def evaluate(trained: TrainedPensionPolicy, params: PensionParams, normals: Array) -> Array:
    """Per-path objective (currency) under the hard hinge: ``(P,)``."""
    return simulate(trained, params, normals)[0].value


@partial(jax.jit, static_argnames=("policy", "policy_reacts"))
def _value_and_grad(policy: AllocationNet, policy_params: PyTree, params: PensionParams, normals: Array, policy_reacts: bool):
    def value(p: PensionParams) -> Array:
        outcome, _ = rollout(policy, policy_params, p, normals, smooth=False, policy_reacts=policy_reacts)
        return jnp.mean(outcome.value)

    return jax.value_and_grad(value)(params)


def sensitivities(
    trained: TrainedPensionPolicy, params: PensionParams, normals: Array, *, policy_reacts: bool = True
) -> Sensitivities:
    """Mean hard objective and its gradient to every input of ``params``, from one reverse pass on ``normals``.

    ``policy_reacts`` (default) differentiates the policy's reaction to the state; False holds its
    features fixed. ``tables()`` of the result gives tidy frames per key tenor, asset parameter,
    correlation, scalar input and cohort.
    """
    value, grads = _value_and_grad(trained.policy, cast(trained.params, params), params, normals, policy_reacts)
    return Sensitivities(value=float(value), grads=grads, params=params)


def _architecture(policy: AllocationNet) -> dict[str, Any]:
    return {"n_assets": policy.n_assets, "hidden": list(policy.hidden)}


def save_policy(path: str | os.PathLike[str], trained: TrainedPensionPolicy) -> None:
    """Save a trained policy (parameters, architecture, settings) as msgpack."""
    description = {
        "architecture": _architecture(trained.policy),
        "asset_names": list(trained.asset_names),
        **trained.training_record(),
    }
    save_trained(path, kind=FORMAT, description=description, params=trained.params)


def _policy_of(description: dict[str, Any]) -> AllocationNet:
    arch = description["architecture"]
    return AllocationNet(n_assets=int(arch["n_assets"]), hidden=tuple(int(h) for h in arch["hidden"]))


def load_policy(path: str | os.PathLike[str]) -> TrainedPensionPolicy:
    """Load a policy saved by ``save_policy`` (without its training log).

    Returns:
        The ``TrainedPensionPolicy``, giving the same decisions as the saved one.

    Raises:
        InputError: the file is corrupt or not a saved pension policy (of this format version).
    """
    meta, params = load_trained(
        path, kind=FORMAT, target=lambda d: init_policy(_policy_of(d), jax.random.PRNGKey(0)), field="policy"
    )
    return TrainedPensionPolicy.from_record(
        meta, policy=_policy_of(meta), params=params, asset_names=tuple(meta["asset_names"])
    )

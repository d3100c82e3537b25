"""Pension policies: a neural network or a fixed mix, both mapping the fund's state to decisions."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from decisions.core.nets import MLP

PyTree = dict

N_FEATURES = 5
"""``[funding ratio - 1, 2 t / T - 1, 100 x (level, slope, curvature)]``."""

FUNDING_AND_TIME: tuple[float, ...] = (1.0, 1.0, 0.0, 0.0, 0.0)
"""State gate of a policy that sees the funding ratio and time but not the curve factors."""


def features(funding_ratio: Array, time_fraction: Array, factors: Array) -> Array:
    """The policy's view of the state.

    Args:
        funding_ratio: ``(...)`` assets over liabilities.
        time_fraction: ``(...)`` elapsed fraction of the horizon in ``[0, 1]``.
        factors: ``(..., 3)`` curve factors (rates, so x 100 reads in percent).
    """
    scalars = jnp.stack([funding_ratio - 1.0, 2.0 * time_fraction - 1.0], axis=-1)
    return jnp.concatenate([scalars, 100.0 * factors], axis=-1)


class AllocationNet(nn.Module):
    """MLP from state features to ``(asset logits (..., A), contribution logit (...))``.

    Attributes:
        n_assets: number of asset classes A.
        hidden: hidden layer widths.
    """

    n_assets: int
    hidden: tuple[int, ...] = (32, 32)

    @nn.compact
    def __call__(self, x: Array) -> tuple[Array, Array]:
        """Apply the network to features ``(..., N_FEATURES)``."""
        gate = self.param("state_gate", nn.initializers.ones, (N_FEATURES,))
        x = x * jax.lax.stop_gradient(gate)
        out = MLP(hidden=self.hidden, out=self.n_assets + 1, out_scale=0.01)(x)
        return out[..., : self.n_assets], out[..., self.n_assets]


def init_policy(policy: AllocationNet, key: Array) -> PyTree:
    """Initial parameters of the state-dependent policy (float32)."""
    return policy.init(key, jnp.zeros((N_FEATURES,), jnp.float32))


def fixed_mix_params(
    policy: AllocationNet, weights: np.ndarray | list[float], contribution_share: float, key: Array | None = None
) -> PyTree:
    """Parameters that make ``policy`` a fixed mix with given weights and contribution rate.

    Args:
        weights: ``(A,)`` non-negative weights summing to one (zeros become 1e-12).
        contribution_share: position of the rate in the bounds, ``(rate - min) / (max - min)``
            in ``[0, 1]`` (clipped to ``[1e-6, 1 - 1e-6]``).
        key: initialisation key of the (unused but trainable) hidden layers.
    """
    w = np.clip(np.asarray(weights, dtype=float), 1e-12, None)
    share = float(np.clip(contribution_share, 1e-6, 1.0 - 1e-6))
    params = init_policy(policy, jax.random.PRNGKey(0) if key is None else key)
    inner = dict(params["params"])
    mlp = dict(inner["MLP_0"])
    last = f"Dense_{len(policy.hidden)}"
    bias = np.concatenate([np.log(w / w.sum()), [np.log(share / (1.0 - share))]])
    mlp[last] = {
        "kernel": jnp.zeros_like(mlp[last]["kernel"]),
        "bias": jnp.asarray(bias, jnp.float32),
    }
    inner["MLP_0"] = mlp
    return with_state_gate({"params": inner}, np.zeros(N_FEATURES))


def with_state_gate(policy_params: PyTree, gate: np.ndarray | tuple[float, ...]) -> PyTree:
    """The same parameters with another state gate (which features the policy sees)."""
    inner = dict(policy_params["params"])
    inner["state_gate"] = jnp.asarray(gate, jnp.float32).reshape(N_FEATURES)
    return {"params": inner}


def is_fixed_mix(policy_params: PyTree) -> bool:
    """Whether parameters describe a fixed mix (state gate all zeros)."""
    return not bool(np.any(np.asarray(policy_params["params"]["state_gate"])))


def decide(
    policy: AllocationNet, policy_params: PyTree, x: Array, contribution_min: Array, contribution_max: Array
) -> tuple[Array, Array]:
    """Portfolio weights and contribution rate from features.

    Args:
        x: ``(..., N_FEATURES)`` features.
        contribution_max: upper bound (``>= contribution_min``).

    Returns:
        ``(weights (..., A), rate (...))``: weights >= 0 summing to 1, rate in the bounds.
    """
    logits, u = policy.apply(policy_params, x)
    weights = jax.nn.softmax(logits, axis=-1)
    rate = contribution_min + (contribution_max - contribution_min) * jax.nn.sigmoid(u)
    return weights, rate

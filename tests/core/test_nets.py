"""Tests of the flax modules and distribution helpers."""

from __future__ import annotations

import math

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.scipy.stats import norm

from decisions.core.nets import (
    MLP,
    CategoricalHead,
    GaussianHead,
    categorical_entropy,
    categorical_log_prob,
    categorical_sample,
    gaussian_entropy,
    gaussian_log_prob,
    gaussian_sample,
)


def _init_apply(module: nn.Module, x: jax.Array, seed: int = 0):
    params = module.init(jax.random.key(seed), x)
    return params, module.apply(params, x)


@pytest.mark.parametrize(("hidden", "in_shape"), [((16, 8), (5, 3)), ((), (5, 3)), ((4,), (2, 7, 3))])
def test_mlp_output_shape(hidden, in_shape):
    _, y = _init_apply(MLP(hidden=hidden, out=2), jnp.ones(in_shape))
    assert y.shape == (*in_shape[:-1], 2)


def test_mlp_is_deterministic_and_jit_matches():
    model = MLP(hidden=(32, 32), out=3, activation=nn.relu)
    x = jax.random.normal(jax.random.key(1), (10, 4))
    params, y1 = _init_apply(model, x)
    y2 = model.apply(params, x)
    y3 = jax.jit(model.apply)(params, x)
    np.testing.assert_array_equal(y1, y2)
    np.testing.assert_allclose(y1, y3, rtol=1e-5, atol=1e-6)
    params_other, _ = _init_apply(model, x, seed=1)
    assert not np.allclose(model.apply(params_other, x), y1)


def test_mlp_layer_count_and_orthogonal_init():
    model = MLP(hidden=(8, 6), out=2, hidden_scale=2.0, out_scale=0.5)
    params, _ = _init_apply(model, jnp.ones((1, 4)))
    layers = params["params"]
    assert sorted(layers) == ["Dense_0", "Dense_1", "Dense_2"]
    w0 = layers["Dense_0"]["kernel"]  # (4, 8): orthonormal rows scaled by the gain
    np.testing.assert_allclose(w0 @ w0.T, 4.0 * np.eye(4), atol=1e-5)
    w_out = layers["Dense_2"]["kernel"]  # (6, 2): orthonormal columns
    np.testing.assert_allclose(w_out.T @ w_out, 0.25 * np.eye(2), atol=1e-5)
    assert all(np.all(layers[k]["bias"] == 0.0) for k in layers)


def test_mlp_linear_when_no_hidden_and_final_activation():
    x = jax.random.normal(jax.random.key(2), (6, 3)) * 10.0
    params, y = _init_apply(MLP(hidden=(), out=2), x)
    kernel = params["params"]["Dense_0"]["kernel"]
    np.testing.assert_allclose(y, x @ kernel, rtol=1e-5, atol=1e-5)
    _, y_tanh = _init_apply(MLP(hidden=(), out=2, final_activation=jnp.tanh), x)
    np.testing.assert_allclose(y_tanh, jnp.tanh(y), rtol=1e-5, atol=1e-6)


def test_categorical_head_and_helpers():
    head = CategoricalHead(num_actions=4)
    params, logits = _init_apply(head, jnp.ones((3, 5)))
    assert logits.shape == (3, 4)
    assert float(jnp.max(jnp.abs(logits))) < 0.2  # small initial logits: near-uniform policy

    logits = jnp.array([[1.0, 2.0, 0.5], [0.0, 0.0, 0.0]])
    actions = jnp.array([1, 2])
    expected = [2.0 - math.log(math.e + math.e**2 + math.e**0.5), -math.log(3.0)]
    np.testing.assert_allclose(categorical_log_prob(logits, actions), expected, rtol=1e-6)
    np.testing.assert_allclose(categorical_entropy(logits)[1], math.log(3.0), rtol=1e-6)
    assert float(categorical_entropy(jnp.array([0.0, -1e9]))) == pytest.approx(0.0, abs=1e-6)

    samples = categorical_sample(jax.random.key(0), jnp.broadcast_to(logits[0], (4000, 3)))
    assert samples.dtype == jnp.int32 and samples.shape == (4000,)
    freq = np.bincount(np.asarray(samples), minlength=3) / 4000
    np.testing.assert_allclose(freq, jax.nn.softmax(logits[0]), atol=0.03)


@pytest.mark.parametrize("state_dependent", [False, True])
def test_gaussian_head_shapes_and_init(state_dependent):
    head = GaussianHead(action_dim=2, log_std_init=-0.5, state_dependent_std=state_dependent)
    _, (mean, log_std) = _init_apply(head, jnp.ones((7, 5)))
    assert mean.shape == log_std.shape == (7, 2)
    np.testing.assert_allclose(log_std, -0.5, atol=0.1 if state_dependent else 0.0)


def test_gaussian_helpers_match_reference():
    mean = jnp.array([[0.0, 1.0], [2.0, -1.0]])
    log_std = jnp.array([[0.0, -1.0], [0.5, 0.2]])
    x = jnp.array([[0.3, 0.8], [1.0, 0.0]])
    expected = jnp.sum(norm.logpdf(x, mean, jnp.exp(log_std)), axis=-1)
    np.testing.assert_allclose(gaussian_log_prob(mean, log_std, x), expected, rtol=1e-5)
    expected_entropy = jnp.sum(0.5 * jnp.log(2 * jnp.pi * jnp.e * jnp.exp(2 * log_std)), axis=-1)
    np.testing.assert_allclose(gaussian_entropy(log_std), expected_entropy, rtol=1e-5)

    m, ls = jnp.array([1.0, -2.0]), jnp.array([0.0, math.log(0.5)])
    samples = gaussian_sample(jax.random.key(3), jnp.broadcast_to(m, (20000, 2)), ls)
    np.testing.assert_allclose(samples.mean(axis=0), m, atol=0.03)
    np.testing.assert_allclose(samples.std(axis=0), jnp.exp(ls), atol=0.03)
    # Monte Carlo entropy: -E[log p(X)].
    mc = -float(jnp.mean(gaussian_log_prob(m, ls, samples)))
    assert mc == pytest.approx(float(gaussian_entropy(ls)), abs=0.03)

"""Time the networks' training with XLA's convolutions and with ours."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from decisions.telecom.splitfl import model


def _xla_layer(spec: model.LayerSpec, p: Any, x: jax.Array) -> jax.Array:
    """A conv layer as XLA's convolution (grouped for depthwise); other layers as ours."""
    if spec.kind != "conv":
        return _ours(spec, p, x)
    x = model.xla_conv(x, p["w"], spec.stride, x.shape[-1] if spec.depthwise else 1) + p["b"]
    return jax.nn.relu(x) if spec.relu else x


_ours = model.apply_layer


def time_step(layer: Callable[..., jax.Array], repeats: int = 20, batch: int = 32) -> tuple[float, Any]:
    """Milliseconds of one jitted loss-and-gradient pass of the ``mobilenet`` with ``layer`` as its layer
    function, and the gradients."""
    net = model.make_net("mobilenet")
    params = net.init(jax.random.PRNGKey(0))
    x = jax.random.uniform(jax.random.PRNGKey(1), (batch, *net.input_shape))
    y = jax.random.randint(jax.random.PRNGKey(2), (batch,), 0, 10)
    model.apply_layer = layer
    try:
        def loss(p: Any) -> jax.Array:
            return optax.softmax_cross_entropy_with_integer_labels(net.apply(p, x), y).mean()

        step = jax.jit(jax.grad(loss))
        grads = jax.block_until_ready(step(params))
        start = time.perf_counter()
        for _ in range(repeats):
            out = step(params)
        jax.block_until_ready(out)
        return (time.perf_counter() - start) / repeats * 1e3, grads
    finally:
        model.apply_layer = _ours


def time_round(layer: Callable[..., jax.Array], repeats: int = 5, clients: int = 10) -> tuple[float, Any]:
    """Milliseconds of one small-CNN SFL round (split 3, ``clients`` vmapped, 10 local steps of batch
    32) with ``layer`` as the layer function, and the new parameters."""
    from decisions.telecom.splitfl.split import make_round

    net = model.make_net("cnn")
    params = net.init(jax.random.PRNGKey(0))
    rng = np.random.default_rng(0)
    x = rng.random((clients, 128, *net.input_shape), np.float32)
    y = rng.integers(0, 10, (clients, 128)).astype(np.int32)
    counts = np.full(clients, 128, np.int32)
    keys = jax.random.split(jax.random.PRNGKey(1), clients)
    model.apply_layer = layer
    try:
        round_fn = make_round(net, 3, optax.sgd(0.05), 10, 32)
        new = jax.block_until_ready(round_fn(params, x, y, counts, keys)[0])
        start = time.perf_counter()
        for _ in range(repeats):
            out = round_fn(params, x, y, counts, keys)
        jax.block_until_ready(out)
        return (time.perf_counter() - start) / repeats * 1e3, new
    finally:
        model.apply_layer = _ours


def _max_diff(a: Any, b: Any) -> float:
    return max(float(jnp.abs(u - v).max()) for u, v in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True))


def main() -> None:
    """Print both timings of both networks and the largest differences."""
    xla_ms, xla_grads = time_step(_xla_layer)
    our_ms, our_grads = time_step(_ours)
    print(f"mobilenet step, batch 32: XLA grouped conv {xla_ms:.1f} ms, shifted sums {our_ms:.1f} ms "
          f"({xla_ms / our_ms:.1f}x); largest gradient difference {_max_diff(xla_grads, our_grads):.1e}")
    xla_ms, xla_params = time_round(_xla_layer)
    our_ms, our_params = time_round(_ours)
    print(f"cnn round, 10 clients vmapped: XLA conv {xla_ms:.1f} ms, patch matmul {our_ms:.1f} ms "
          f"({xla_ms / our_ms:.1f}x); largest parameter difference {_max_diff(xla_params, our_params):.1e}")


if __name__ == "__main__":
    main()

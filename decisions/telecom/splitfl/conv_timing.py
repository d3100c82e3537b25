"""Time one MobileNet training step with XLA's grouped depthwise conv and with ours.

``python -m decisions.telecom.splitfl.conv_timing`` prints the milliseconds of one forward and
backward pass (batch 32, Fashion-MNIST-sized images) both ways, and their largest gradient
difference: the reason ``model._depthwise_conv`` exists.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax

from decisions.telecom.splitfl import model


def _xla_layer(spec: model.LayerSpec, p: Any, x: jax.Array) -> jax.Array:
    """A conv layer as XLA's convolution (grouped for depthwise); other layers as ours."""
    if spec.kind != "conv":
        return _ours(spec, p, x)
    x = model.xla_conv(x, p["w"], spec.stride, x.shape[-1] if spec.depthwise else 1) + p["b"]
    return jax.nn.relu(x) if spec.relu else x


_ours = model._apply_layer


def time_step(layer: Callable[..., jax.Array], repeats: int = 20, batch: int = 32) -> tuple[float, Any]:
    """Milliseconds of one jitted loss-and-gradient pass of the ``mobilenet`` with ``layer`` as its layer
    function, and the gradients."""
    net = model.make_net("mobilenet")
    params = net.init(jax.random.PRNGKey(0))
    x = jax.random.uniform(jax.random.PRNGKey(1), (batch, *net.input_shape))
    y = jax.random.randint(jax.random.PRNGKey(2), (batch,), 0, 10)
    model._apply_layer = layer
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
        model._apply_layer = _ours


def main() -> None:
    """Print both timings and the largest gradient difference."""
    xla_ms, xla_grads = time_step(_xla_layer)
    our_ms, our_grads = time_step(_ours)
    diff = max(float(jnp.abs(a - b).max()) for a, b in zip(jax.tree.leaves(xla_grads), jax.tree.leaves(our_grads),
                                                            strict=True))
    print(f"mobilenet step, batch 32: XLA grouped conv {xla_ms:.1f} ms, shifted sums {our_ms:.1f} ms "
          f"({xla_ms / our_ms:.1f}x); largest gradient difference {diff:.1e}")


if __name__ == "__main__":
    main()

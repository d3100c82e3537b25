"""rejax, the agents bench's peer: its training of every seed at once, as the bench times it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax import Array


def seeds_train(algo: Any, params_of: Callable[[Any], Any]) -> Callable[[Array], Any]:
    """``train(keys)``: rejax ``algo`` trained on every key at once (``jax.jit(jax.vmap(algo.train))``)
    without its in-training evaluation, answering ``params_of`` its final train state."""
    vmapped = jax.jit(jax.vmap(algo.replace(eval_callback=lambda algo, ts, rng: jnp.zeros(())).train))

    def train(keys: Array) -> Any:
        ts, _ = vmapped(keys)
        return params_of(ts)

    return train

"""Scan bodies that skip the steps before a start: a batch of states answered from different days
runs one scan over the whole horizon, and the steps before the batch's earliest day cost nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax import Array

Body = Callable[[Any, Any], tuple[Any, Any]]
"""A ``lax.scan`` body: ``(carry, x) -> (carry, y)``."""


def skip_before(step: Body, start: Array | int, index: Callable[[Any], Array], *, remat: bool = False) -> Body:
    """``step`` on the scan's elements whose ``index(x)`` is at least ``start``; before it the carry
    stands still and the outputs are zeros (shaped as ``step``'s). Only the branch taken runs
    (``lax.cond``; under ``vmap`` with a batched ``start`` both would, so keep ``start`` unbatched).
    ``remat``: the step's intermediates are recomputed in the reverse pass (``jax.checkpoint``) instead
    of kept."""
    live = jax.checkpoint(step) if remat else step

    def still(carry: Any, x: Any) -> tuple[Any, Any]:
        outputs = jax.eval_shape(step, carry, x)[1]
        return carry, jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), outputs)

    def body(carry: Any, x: Any) -> tuple[Any, Any]:
        return jax.lax.cond(index(x) >= start, live, still, carry, x)

    return body

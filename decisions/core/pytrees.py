"""Small pytree helpers shared by the jitted training loops."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

PyTree = Any


def strong_types(tree: PyTree) -> PyTree:
    """Leaves as strongly typed arrays.

    Weak-typed leaves (``jnp.full(n, 0.5)``, Python floats) give a different jit signature from
    the strongly typed arrays a loop produces, so a second call would re-trace; casting the
    inputs once keeps every call on the same compiled program.
    """
    return jax.tree_util.tree_map(lambda x: jnp.asarray(x, dtype=jnp.result_type(x)), tree)

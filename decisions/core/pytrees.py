"""Small pytree helpers shared by the jitted training loops."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax.typing import DTypeLike

PyTree = Any


def strong_types(tree: PyTree) -> PyTree:
    """Leaves as strongly typed arrays.

    Weak-typed leaves (``jnp.full(n, 0.5)``, Python floats) give a different jit signature from
    the strongly typed arrays a loop produces, so a second call would re-trace; casting the
    inputs once keeps every call on the same compiled program.
    """
    return jax.tree_util.tree_map(lambda x: jnp.asarray(x, dtype=jnp.result_type(x)), tree)


def cast_leaves(tree: PyTree, dtype: DTypeLike) -> PyTree:
    """Every leaf as an array of ``dtype`` (a policy's parameters in its problem's precision).

    Args:
        tree: the pytree.
        dtype: the leaves' new dtype.

    Returns:
        The same structure with ``jnp.asarray(leaf, dtype)`` leaves.
    """
    return jax.tree_util.tree_map(lambda a: jnp.asarray(a, dtype), tree)

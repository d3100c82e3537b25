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


def fits(given: PyTree, like: PyTree, *, dtypes: bool = True) -> bool:
    """Whether ``given`` has the structure and leaf shapes (and, with ``dtypes``, dtypes) of ``like``.

    What a warm start or a fine-tune checks before taking another run's parameters; a tree that
    cannot be read as one (``None``, a leaf that is not an array) does not fit.
    """

    def signature(tree: PyTree) -> PyTree:
        return jax.tree_util.tree_map(lambda x: (jnp.shape(x), jnp.result_type(x) if dtypes else None), tree)

    try:
        return bool(jax.tree_util.tree_structure(given) == jax.tree_util.tree_structure(like)) and signature(
            given
        ) == signature(like)
    except (TypeError, ValueError):
        return False

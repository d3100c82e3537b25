"""Proof that a finite-difference check really ran in float64.

A sensitivity check compares an adjoint with central finite differences in float64, with x64
enabled only inside ``jax.enable_x64(True)``. If a float32 value slips in (a cast, a float32
constant, a program traced outside the scope), the check compares float32 numbers and its
error figure says nothing. These helpers make a check raise ``FloatingPointError`` instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend import core as jcore


def float64_array(what: str, value: Any) -> np.ndarray:
    """``value`` as a numpy array, which must be float64 (else ``FloatingPointError`` naming ``what``)."""
    out = np.asarray(value)
    if out.dtype != np.float64:
        raise FloatingPointError(f"{what} came out {out.dtype}, not float64: the check would not be a float64 one")
    return out


def float_dtypes(closed: jcore.ClosedJaxpr) -> set[np.dtype]:
    """Every floating dtype of a traced program (inputs, constants, every equation's values, nested)."""
    found: set[np.dtype] = set()

    def walk(jaxpr: jcore.Jaxpr) -> None:
        values = [*jaxpr.invars, *jaxpr.constvars, *jaxpr.outvars]
        for eqn in jaxpr.eqns:
            values.extend([*eqn.invars, *eqn.outvars])
        for v in values:
            dtype = getattr(getattr(v, "aval", None), "dtype", None)
            if dtype is not None and jnp.issubdtype(dtype, jnp.floating):
                found.add(np.dtype(dtype))
        for sub in jcore.subjaxprs(jaxpr):
            walk(sub)

    walk(closed.jaxpr)
    return found


def require_float64(what: str, dtypes: set[np.dtype]) -> None:
    """Raise ``FloatingPointError`` unless every floating dtype among ``dtypes`` is float64."""
    other = sorted(str(d) for d in dtypes if jnp.issubdtype(d, jnp.floating) and d != np.float64)
    if other:
        raise FloatingPointError(f"{what} hold {', '.join(other)} values, not only float64 (is x64 in effect?)")


def require_float64_program(what: str, fn: Callable[..., Any], *args: Any, static_argnums: tuple[int, ...] = ()) -> None:
    """Trace ``fn(*args)`` and raise unless x64 is on and every floating value in it is float64."""
    if not jax.config.jax_enable_x64:
        raise FloatingPointError(f"{what}: x64 is not in effect (run the check inside jax.enable_x64(True))")
    require_float64(f"the inputs of {what}", {np.dtype(a.dtype) for a in jax.tree_util.tree_leaves(args)
                                               if hasattr(a, "dtype")})
    require_float64(what, float_dtypes(jax.make_jaxpr(fn, static_argnums=static_argnums)(*args)))

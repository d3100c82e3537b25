"""The float64 proof of the finite-difference checks (``core.float64_check``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.core.float64_check import float64_array, require_float64_program


def test_a_float64_program_passes_inside_the_x64_scope() -> None:
    with jax.enable_x64(True):
        require_float64_program("the sum of squares", lambda x: jnp.sum(x**2), jnp.ones(3, jnp.float64))


def test_a_float32_cast_anywhere_in_the_program_raises() -> None:
    def loop(x: jax.Array) -> jax.Array:  # hidden in a scan body
        return jax.lax.scan(lambda c, v: (c + v.astype(jnp.float32).astype(jnp.float64), None), 0.0, x)[0]

    with jax.enable_x64(True), pytest.raises(FloatingPointError, match="float32"):
        require_float64_program("the scan", loop, jnp.ones(3, jnp.float64))


def test_outside_the_x64_scope_the_check_refuses() -> None:
    with pytest.raises(FloatingPointError, match="x64 is not in effect"):
        require_float64_program("the identity", lambda x: x, jnp.ones(3))


def test_a_float32_result_is_named() -> None:
    assert float64_array("ok", np.ones(2)).dtype == np.float64
    with pytest.raises(FloatingPointError, match="the Jacobian came out float32"):
        float64_array("the Jacobian", np.ones(2, np.float32))

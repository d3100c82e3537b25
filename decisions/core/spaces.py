"""Observation and action spaces for functional environments: ``Box``, ``Discrete`` and
``MultiDiscrete``, frozen dataclasses with pure, jit-able ``sample`` and ``contains`` and a
``to_gymnasium`` twin. Built from concrete params; not pytrees (pass params through ``jit``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
from jax import Array
from jax.typing import ArrayLike, DTypeLike

__all__ = ["Box", "Discrete", "MultiDiscrete", "Space"]


def _is_concrete(x: Any) -> bool:
    """Whether ``x`` holds concrete values (not a tracer) that numpy can read."""
    return not isinstance(x, jax.core.Tracer)


def _set_integer_dtype(space: Any) -> None:
    """Normalise ``space.dtype``; ``ValueError`` unless it is an integer dtype."""
    object.__setattr__(space, "dtype", np.dtype(space.dtype))
    if not jnp.issubdtype(space.dtype, jnp.integer):
        raise ValueError(f"{type(space).__name__} dtype must be an integer dtype, got {space.dtype}")


@dataclasses.dataclass(frozen=True, eq=False)
class Box:
    """A box ``[low, high]`` of arrays with a static ``shape`` and a float or integer ``dtype``.

    The bounds broadcast to ``shape`` and may be infinite for floats; integer boxes are the
    grids ``low..high`` (inclusive).
    """

    low: ArrayLike
    high: ArrayLike
    shape: tuple[int, ...]
    dtype: DTypeLike = jnp.float32

    def __post_init__(self) -> None:
        """Normalise ``shape``/``dtype`` and reject inconsistent bounds with a ``ValueError``."""
        shape = tuple(int(s) for s in self.shape)
        dtype = np.dtype(self.dtype)
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", dtype)
        if not (jnp.issubdtype(dtype, jnp.floating) or jnp.issubdtype(dtype, jnp.integer)):
            raise ValueError(f"Box dtype must be a float or integer dtype, got {dtype}")
        for name in ("low", "high"):
            bound_shape = np.shape(getattr(self, name))
            try:
                broadcast = np.broadcast_shapes(bound_shape, shape)
            except ValueError as err:
                raise ValueError(f"Box {name} of shape {bound_shape} does not broadcast to {shape}") from err
            if broadcast != shape:
                raise ValueError(f"Box {name} of shape {bound_shape} does not broadcast to {shape}")
        if _is_concrete(self.low) and _is_concrete(self.high):
            low, high = np.asarray(self.low), np.asarray(self.high)
            if np.any(np.isnan(low)) or np.any(np.isnan(high)):
                raise ValueError("Box bounds must not be NaN")
            if np.any(low > high):
                raise ValueError(f"Box low must be <= high, got low={low}, high={high}")
            if jnp.issubdtype(dtype, jnp.integer) and not (
                np.all(np.isfinite(low)) and np.all(np.isfinite(high))
            ):
                raise ValueError("an integer Box needs finite bounds")

    @property
    def is_integer(self) -> bool:
        """Whether elements are integers."""
        return bool(jnp.issubdtype(self.dtype, jnp.integer))

    def _bounds(self) -> tuple[Array, Array]:
        """``low`` and ``high`` broadcast to ``shape`` (float for float boxes)."""
        kind = self.dtype if not self.is_integer else jnp.float32
        low = jnp.broadcast_to(jnp.asarray(self.low, kind), self.shape)
        high = jnp.broadcast_to(jnp.asarray(self.high, kind), self.shape)
        return low, high

    def sample(self, key: Array) -> Array:
        """Draw an element: uniform where bounded, shifted exponential where half-bounded, normal where unbounded."""
        if self.is_integer:
            low = jnp.broadcast_to(jnp.asarray(self.low, self.dtype), self.shape)
            high = jnp.broadcast_to(jnp.asarray(self.high, self.dtype), self.shape)
            return jax.random.randint(key, self.shape, low, high + 1, dtype=self.dtype)
        low, high = self._bounds()
        k_uni, k_exp, k_norm = jax.random.split(key, 3)
        lo_fin, hi_fin = jnp.isfinite(low), jnp.isfinite(high)
        uniform = jax.random.uniform(
            k_uni, self.shape, self.dtype, jnp.where(lo_fin, low, 0.0), jnp.where(hi_fin, high, 1.0)
        )
        expo = jax.random.exponential(k_exp, self.shape, self.dtype)
        normal = jax.random.normal(k_norm, self.shape, self.dtype)
        out = jnp.where(lo_fin & hi_fin, uniform, normal)
        out = jnp.where(lo_fin & ~hi_fin, jnp.where(lo_fin, low, 0.0) + expo, out)
        out = jnp.where(~lo_fin & hi_fin, jnp.where(hi_fin, high, 0.0) - expo, out)
        # Rounding at float precision may step just outside a tight box.
        return jnp.clip(out, low, high).astype(self.dtype)

    def contains(self, x: ArrayLike) -> Array:
        """Boolean scalar: ``x`` has the box's shape, lies within its bounds and (integer boxes) is integral."""
        x = jnp.asarray(x)
        if x.shape != self.shape:
            return jnp.asarray(False)
        low, high = self._bounds()
        inside = jnp.all((x >= low) & (x <= high))
        if self.is_integer:
            inside = inside & jnp.all(x == jnp.round(x))
        return inside

    def to_gymnasium(self) -> gymnasium.spaces.Box:
        """The equivalent ``gymnasium.spaces.Box`` (needs concrete bounds)."""
        low = np.broadcast_to(np.asarray(self.low, dtype=self.dtype), self.shape)
        high = np.broadcast_to(np.asarray(self.high, dtype=self.dtype), self.shape)
        return gymnasium.spaces.Box(low=low, high=high, shape=self.shape, dtype=self.dtype)


@dataclasses.dataclass(frozen=True, eq=False)
class Discrete:
    """A choice among ``n >= 1`` actions ``0, 1, ..., n - 1`` (scalar integers)."""

    n: int
    dtype: DTypeLike = jnp.int32

    def __post_init__(self) -> None:
        """Reject a non-positive ``n`` or a non-integer dtype with a ``ValueError``."""
        if int(self.n) != self.n or self.n < 1:
            raise ValueError(f"Discrete needs a positive integer n, got {self.n!r}")
        object.__setattr__(self, "n", int(self.n))
        _set_integer_dtype(self)

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of an element: a scalar, ``()``."""
        return ()

    def sample(self, key: Array) -> Array:
        """Draw an element uniformly."""
        return jax.random.randint(key, (), 0, self.n, dtype=self.dtype)

    def contains(self, x: ArrayLike) -> Array:
        """Boolean scalar: ``x`` is a scalar integer value in ``[0, n)``."""
        x = jnp.asarray(x)
        if x.shape != ():
            return jnp.asarray(False)
        return (x >= 0) & (x < self.n) & (x == jnp.round(x))

    def to_gymnasium(self) -> gymnasium.spaces.Discrete:
        """The equivalent ``gymnasium.spaces.Discrete``."""
        return gymnasium.spaces.Discrete(self.n)


@dataclasses.dataclass(frozen=True, eq=False)
class MultiDiscrete:
    """A vector of independent choices: element ``i`` is an integer in ``[0, nvec[i])``."""

    nvec: tuple[int, ...]
    dtype: DTypeLike = jnp.int32

    def __post_init__(self) -> None:
        """Reject an empty ``nvec``, a non-positive count or a non-integer dtype with a ``ValueError``."""
        nvec = tuple(self.nvec)
        if not nvec or any(int(n) != n or n < 1 for n in nvec):
            raise ValueError(f"MultiDiscrete needs a non-empty tuple of positive integers, got {self.nvec!r}")
        object.__setattr__(self, "nvec", tuple(int(n) for n in nvec))
        _set_integer_dtype(self)

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of an element, ``(len(nvec),)``."""
        return (len(self.nvec),)

    def sample(self, key: Array) -> Array:
        """Draw each component uniformly."""
        high = jnp.asarray(self.nvec, self.dtype)
        return jax.random.randint(key, self.shape, 0, high, dtype=self.dtype)

    def contains(self, x: ArrayLike) -> Array:
        """Boolean scalar: ``x`` has shape ``(len(nvec),)`` and integer components in range."""
        x = jnp.asarray(x)
        if x.shape != self.shape:
            return jnp.asarray(False)
        high = jnp.asarray(self.nvec)
        return jnp.all((x >= 0) & (x < high) & (x == jnp.round(x)))

    def to_gymnasium(self) -> gymnasium.spaces.MultiDiscrete:
        """The equivalent ``gymnasium.spaces.MultiDiscrete``."""
        return gymnasium.spaces.MultiDiscrete(np.asarray(self.nvec), dtype=self.dtype)


# Any space an environment may declare.
Space = Box | Discrete | MultiDiscrete

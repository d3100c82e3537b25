"""``pytrees.fits``: what a warm start or a fine-tune checks before taking another run's parameters."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from decisions.core.pytrees import fits

LIKE = {"dense": {"kernel": jnp.zeros((3, 2)), "bias": jnp.zeros(2)}, "scale": jnp.float32(1.0)}


def test_fits_checks_structure_shapes_and_optionally_dtypes() -> None:
    same = {"dense": {"kernel": np.ones((3, 2), np.float32), "bias": np.ones(2, np.float32)}, "scale": np.float32(2)}
    assert fits(same, LIKE)
    as_ints = {"dense": {"kernel": np.ones((3, 2), np.int32), "bias": np.ones(2, np.int32)}, "scale": np.int32(2)}
    assert not fits(as_ints, LIKE) and fits(as_ints, LIKE, dtypes=False)
    assert not fits({**same, "scale": np.ones(2, np.float32)}, LIKE)  # another shape
    assert not fits({"dense": same["dense"]}, LIKE)  # a leaf missing
    assert not fits(None, LIKE) and not fits({"dense": "kernel", "scale": 1.0}, LIKE)

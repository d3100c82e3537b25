"""Step results shared by environments that follow the ``core.env`` contract."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from jax import Array

from decisions.core.env import Info, StepResult


def time_limit_step(obs: Array, state: Any, reward: Array, truncated: Array, info: Info) -> StepResult:
    """``Environment.step``'s result for an environment that never terminates, it only runs out of time:
    ``(obs, state, reward as float32, terminated False, truncated, info)``."""
    return obs, state, reward.astype(jnp.float32), jnp.asarray(False), truncated, info

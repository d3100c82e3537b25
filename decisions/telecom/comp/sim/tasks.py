"""CoMP tasks: the network configurations a multi-task (prompt) policy is trained and tested on.

The tasks themselves (``Task``, ``TRAINING_TASKS``, ``UNSEEN_TASKS``, ``task_by_name`` and
their constants) are defined in ``catalog``, which imports no JAX so that a job spec's task
names are checked before the simulator loads; they are re-exported here beside
``features_from_params``, ``Task.features()`` computed from traced ``NetworkParams`` inside
``jit``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import Array

from decisions.telecom.comp.sim.catalog import (
    FEATURE_DIM,
    LAYOUTS,
    MAX_TASK_CELLS,
    MAX_TASK_USERS,
    MIN_TASK_CELLS,
    MIN_TASK_USERS,
    RANDOM_LAYOUT_SIZE,
    SCHEDULER_NAMES,
    TRAINING_TASKS,
    UNSEEN_TASKS,
    Task,
    task_by_name,
)
from decisions.telecom.comp.sim.constants import MAX_CELLS, MAX_USERS
from decisions.telecom.comp.sim.network import NetworkParams

__all__ = [
    "FEATURE_DIM",
    "LAYOUTS",
    "MAX_TASK_CELLS",
    "MAX_TASK_USERS",
    "MIN_TASK_CELLS",
    "MIN_TASK_USERS",
    "RANDOM_LAYOUT_SIZE",
    "SCHEDULER_NAMES",
    "TRAINING_TASKS",
    "UNSEEN_TASKS",
    "Task",
    "features_from_params",
    "task_by_name",
]


def features_from_params(params: NetworkParams) -> Array:
    """``Task.features()`` computed from (possibly traced) ``NetworkParams``: ``(FEATURE_DIM,)`` float32."""
    counts = jnp.stack([jnp.sum(params.cell_mask) / MAX_CELLS, jnp.sum(params.user_mask) / MAX_USERS]).astype(
        jnp.float32
    )
    return jnp.concatenate(
        [counts, jax.nn.one_hot(params.scheduler, len(SCHEDULER_NAMES), dtype=jnp.float32)]
    )

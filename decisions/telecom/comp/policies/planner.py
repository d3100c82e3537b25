"""A greedy serving-set planner for ``CompEnv(action_mode="serving_set")``: a model-based demonstrator.

A step's action changes only that step's reward (users move regardless), so the planner searches each
step's reward by coordinate ascent over the users' serving-set sizes (from max-SNR, the previous step's
sizes and optionally random ones; ties to the smaller set). It reads the environment state, so it is a
reference and an optional demonstrator, not a baseline on the same information; without
proportional-fair memory its per-step optimum bounds every policy's return.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from jax import Array

from decisions.core.agents.common import check_int
from decisions.telecom.comp.sim import channel
from decisions.telecom.comp.sim.env import CompState, link_outcome, serving_set
from decisions.telecom.comp.sim.network import NetworkParams

__all__ = ["GreedyPlanner", "greedy_serving_sets", "step_utility"]


def step_utility(state: CompState, sizes: Array, params: NetworkParams) -> Array:
    """The sum over real users of the scaled utility that serving-set ``sizes`` give in ``state``.

    This is ``CompEnv.step``'s reward times the number of users, for the same action.
    """
    ok = channel.connectable(params, state.l_snr)
    conn = serving_set(state.l_snr, ok, sizes, params)
    _, _, scaled = link_outcome(state, conn, params)
    return jnp.sum(jnp.where(params.user_mask, scaled, 0.0))


def _ascent(state: CompState, params: NetworkParams, start: Array, sweeps: int) -> Array:
    """Coordinate ascent on ``step_utility`` from the sizes ``start`` (see the module docstring)."""
    n_users, n_cells = params.user_mask.shape[-1], params.cell_mask.shape[-1]
    sizes = jnp.arange(1, n_cells + 1, dtype=jnp.int32)

    def visit(action: Array, user: Array) -> tuple[Array, None]:
        trials = jax.vmap(lambda size: action.at[user].set(size))(sizes)
        values = jax.vmap(lambda trial: step_utility(state, trial, params))(trials)
        best = sizes[jnp.argmax(values)]
        return action.at[user].set(jnp.where(params.user_mask[user], best, action[user])), None

    def sweep(action: Array, _: None) -> tuple[Array, None]:
        return jax.lax.scan(visit, action, jnp.arange(n_users))[0], None

    return jax.lax.scan(sweep, start, None, length=sweeps)[0]


def greedy_serving_sets(
    state: CompState, params: NetworkParams, sweeps: int = 2, key: Array | None = None, restarts: int = 0
) -> Array:
    """Serving-set sizes found by coordinate ascent on this step's utility (see the module docstring).

    The ascent runs from max-SNR (every user on its strongest cell), from the sizes of the
    links in ``state`` (the previous step's decision: a warm start, so the search continues
    across steps) and from ``restarts`` random starts (sizes uniform in 1..3), all vmapped;
    the best end point wins (the first on ties).

    Returns:
        ``(users,)`` int32 sizes (0 for padded users; ``CompEnv.canonical_action`` clips the
        rest to each user's connectable cells).
    """
    real = params.user_mask
    starts = [
        jnp.where(real, 1, 0).astype(jnp.int32),
        jnp.where(real, jnp.maximum(jnp.sum(state.conn, axis=1), 1), 0).astype(jnp.int32),
    ]
    if restarts:
        if key is None:
            raise ValueError("key: random restarts need a PRNG key")
        random = jax.random.randint(key, (restarts, real.shape[-1]), 1, 4, dtype=jnp.int32)
        starts += list(jnp.where(real, random, 0))
    ends = jax.vmap(lambda start: _ascent(state, params, start, sweeps))(jnp.stack(starts))
    values = jax.vmap(lambda action: step_utility(state, action, params))(ends)
    return ends[jnp.argmax(values)]


@dataclass(frozen=True)
class GreedyPlanner:
    """``greedy_serving_sets`` as a ``TaskPolicy`` function; it reads the state (``reads_state``).

    ``rollouts.rollout`` passes the environment state to a function whose ``reads_state`` is
    True; the planner cannot act from an observation alone.

    Args:
        sweeps: coordinate-ascent passes over the users (>= 1).
        restarts: random starts beside the max-SNR and warm ones (>= 0; each costs as much
            as one of them).
    """

    sweeps: int = 2
    restarts: int = 0
    reads_state = True

    def __post_init__(self) -> None:
        check_int("sweeps", self.sweeps, 1)
        check_int("restarts", self.restarts, 0)

    def __call__(self, pparams: Any, obs: Array, key: Array, net: NetworkParams, state: CompState) -> Array:
        """The planner's action in ``state`` (``pparams`` and ``obs`` are unused)."""
        del pparams, obs
        return greedy_serving_sets(state, net, self.sweeps, key, self.restarts)

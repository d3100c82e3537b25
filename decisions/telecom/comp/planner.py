"""A greedy serving-set planner for ``CompEnv(action_mode="serving_set")``: a model-based demonstrator.

A step's action changes only that step's reward (and, under proportional-fair scheduling, the
users' average rates): user movement does not depend on it. So the best action of a step is
close to the one that maximises that step's reward, which the simulator computes exactly.
``greedy_serving_sets`` searches for it by coordinate ascent: visit the users in turn and give
each the serving-set size (1 to ``MAX_CELLS``) that maximises the sum of all users' scaled
utilities given everyone else's sizes; repeat for ``sweeps`` passes. Each pass evaluates
``MAX_USERS * MAX_CELLS`` candidate networks, vmapped over sizes; ties go to the smaller set.
The ascent starts from max-SNR, from the previous step's sizes (a warm start, so the search
goes on across steps) and optionally from random sizes; the best end point wins.

The planner is *privileged*: it reads the environment state (absolute SNRs, average rates),
not just the observation a learned policy sees. It is therefore a reference in the study's
evaluation (``study.REFERENCES``) and an optional demonstrator for the (Prompt-)DTs
(``StudyBudget.demonstrator = "planner"``), not a baseline that competes on the same
information.

It also bounds what any policy can reach. With a scheduler without memory (all but
proportional-fair) a step's reward depends only on the users' positions, which no action
changes, and on that step's action, so no policy's return exceeds the sum of the per-step
optima. Coordinate ascent finds the per-step optimum exactly on the 3-cell networks (checked
against exhaustive search in the tests); on larger ones it is a lower bound of it. Measured
on the 13 training tasks (32 episodes each, the study's normalisation with 1 the best of the
per-task expert and the heuristics): from max-SNR alone, mean normalised QoE 1.308 (a third
sweep: 1.310), below the multi-task PPO on the max-capacity task c5-u12, where the whole
cell goes to one user and single-user moves get stuck; with the warm start 1.333 (the
default, ``decisions run examples/comp_evaluate.toml`` reports it), and with 4 random
restarts besides 1.354, against 1.079 for the multi-task PPO.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from jax import Array

from decisions.core.agents.common import check_int
from decisions.telecom.comp import channel
from decisions.telecom.comp.env import CompState, link_outcome, serving_set
from decisions.telecom.comp.network import NetworkParams

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

    Args:
        state: the state.
        params: the network.
        sweeps: passes over the users (static).
        key: PRNG key of the random starts (needed when ``restarts > 0``).
        restarts: random starts (static).

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

    ``experts.rollout`` passes the environment state to a function whose ``reads_state`` is
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

"""Exact answers on a known finite MDP: value iteration and policy evaluation, no simulation noise."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from decisions.health.chronic.model import CONTROLLED, Mdp


class Solution(NamedTuple):
    """What value iteration gives: ``q[t, a, s]`` (-inf where not allowed), ``values[t, s]`` and
    ``policy[t, s]`` (the first best allowed action)."""

    q: jax.Array
    values: jax.Array
    policy: jax.Array


class Evaluation(NamedTuple):
    """A policy's exact value (expected total reward) and TTC curve (share controlled by visit 1..H)."""

    value: float
    ttc_curve: np.ndarray


def value_iteration(transitions: jax.Array, rewards: jax.Array, allowed: jax.Array) -> Solution:
    """Finite-horizon backward induction over ``rewards.shape[0]`` visits, restricted to the actions
    ``allowed[t, s, a]`` (``model.regime_mask``; every state needs one)."""

    def back(v_next: jax.Array, inputs: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, tuple[jax.Array, jax.Array]]:
        r_t, allowed_t = inputs
        q = jnp.where(allowed_t.T, r_t + transitions @ v_next, -jnp.inf)
        return q.max(0), (q, q.argmax(0))

    v_end = jnp.zeros(transitions.shape[1], transitions.dtype)
    v_start, (q, policy) = jax.lax.scan(back, v_end, (rewards, allowed), reverse=True)
    del v_start
    values = jnp.concatenate([q.max(1), v_end[None]])
    return Solution(q, values, policy)


value_iteration_jit = jax.jit(value_iteration)
"""``value_iteration``, compiled once per shape."""


def deployed(policy: jax.Array, allowed: jax.Array, fallback: jax.Array) -> jax.Array:
    """What a clinic carries out: ``policy[t, s, a]`` (probabilities) with the mass of the actions
    it cannot carry out (not ``allowed[t, s, a]``) moved to ``fallback[t, s]``."""
    blocked = (policy * ~allowed).sum(-1)
    return policy * allowed + blocked[..., None] * jax.nn.one_hot(fallback, policy.shape[-1])


@jax.jit
def _evaluate(mdp: Mdp, policy: jax.Array) -> tuple[jax.Array, jax.Array]:
    def forward(dist: jax.Array, inputs: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, tuple]:
        pi_t, r_t = inputs
        gain = jnp.sum(dist * jnp.sum(pi_t * r_t.T, -1))
        nxt = jnp.einsum("s,sa,ast->t", dist, pi_t, mdp.transitions)
        return nxt, (gain, nxt[CONTROLLED])

    _, (gains, controlled) = jax.lax.scan(forward, mdp.start, (policy, mdp.rewards))
    return gains.sum(), controlled


def evaluate(mdp: Mdp, policy: jax.Array) -> Evaluation:
    """The exact value and TTC curve of ``policy[t, s, a]`` (action probabilities) on ``mdp``."""
    value, controlled = _evaluate(mdp, policy)
    return Evaluation(float(value), np.asarray(controlled, np.float64))


def one_hot_policy(actions: jax.Array, n_actions: int) -> jax.Array:
    """A deterministic policy ``actions[t, s]`` as probabilities ``[t, s, a]``."""
    return jax.nn.one_hot(actions, n_actions)

"""Chronic care's deployable policies: what a run saves so a clinic's visit can be decided later
without retraining, and reading it back.

Per disease, from the cohort's logs: the kappa-weighted estimated machine's expected next control
band (and its spread) after each action in each state, and per regime each candidate's policy and
value-to-go on that machine, with the learnt policy's Q-values (its reasons).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import serialization

from decisions.health.chronic.cohort import DiseaseCohort
from decisions.health.chronic.exact import deployed, one_hot_policy
from decisions.health.chronic.model import N_ACTIONS, rewards, state_table
from decisions.health.chronic.scoring import usual_care
from decisions.health.chronic.training import (
    behaviour_cloning,
    count_transitions,
    estimated_transitions,
    solve_estimate,
)

FILE_STEM = "policies"
"""The run's artifact (``policies.msgpack``)."""

CANDIDATES = {"mb_kappa_aware": "kappa-weighted offline RL (tabular)",
              "mb_uniform_aware": "uniformly weighted offline RL (tabular)",
              "bc_kappa_aware": "kappa-weighted behaviour cloning",
              "usual_care": "usual care (intensify at 13% of uncontrolled visits)"}
"""The policies a run offers, by their method name in the study's tables."""


def _value_to_go(transitions: jax.Array, reward: jax.Array, policy: jax.Array) -> np.ndarray:
    """``v[t, s]`` of ``policy[t, s, a]`` (probabilities) on a machine, ``v[H] = 0``."""
    values = _values_before_end(transitions, reward, policy)
    return np.concatenate([np.asarray(values), np.zeros((1, transitions.shape[1]))]).astype(np.float32)


@jax.jit
def _values_before_end(transitions: jax.Array, reward: jax.Array, policy: jax.Array) -> jax.Array:
    """``v[t, s]`` for ``t < H`` (one compiled backward pass for each shape)."""

    def back(v_next: jax.Array, inputs: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        r_t, pi_t = inputs
        q = r_t + transitions @ v_next
        v = jnp.sum(pi_t * q.T, -1)
        return v, v

    end = jnp.zeros(transitions.shape[1])
    return jax.lax.scan(back, end, (reward, policy), reverse=True)[1]


def _next_band(estimate: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and spread of the next visit's band after each action in each state (``CONTROLLED``: 0)."""
    band = np.append(state_table()[:, 0], 0).astype(np.float64)
    mean = estimate @ band
    spread = np.sqrt(np.maximum(estimate @ band**2 - mean**2, 0.0))
    return mean.astype(np.float32), spread.astype(np.float32)


def disease_policies(part: DiseaseCohort, min_count: int) -> dict[str, Any]:
    """What one disease's deployment needs (see the module's docstring), as plain arrays."""
    case, logs = part.case, part.logs
    counts = count_transitions(logs)
    estimate = estimated_transitions(counts, True, min_count)
    machine = jnp.asarray(estimate)
    reward = rewards(machine, case.reward, case.horizon)
    mean, spread = _next_band(estimate)
    found: dict[str, Any] = {"band_mean": mean, "band_std": spread, "regimes": {}}
    for regime, allowed in case.masks.items():
        fallback = case.fallbacks[regime]
        learnt = {tag: solve_estimate(estimated_transitions(counts, tag == "kappa", min_count), case.reward,
                                      case.horizon, allowed) for tag in ("kappa", "uniform")}
        chosen = {"mb_kappa_aware": learnt["kappa"].policy, "mb_uniform_aware": learnt["uniform"].policy,
                  "bc_kappa_aware": behaviour_cloning(logs, True, allowed, fallback)}
        policies = {name: one_hot_policy(actions, N_ACTIONS) for name, actions in chosen.items()}
        policies["usual_care"] = usual_care(case)
        carried = {name: deployed(policy, jnp.asarray(allowed), jnp.asarray(fallback))
                   for name, policy in policies.items()}
        found["regimes"][regime] = {
            "q": np.asarray(learnt["kappa"].q, np.float32),
            "actions": {name: np.asarray(p.argmax(-1), np.int32) for name, p in carried.items()},
            "values": {name: _value_to_go(machine, reward, p) for name, p in carried.items()}}
    return found


def save_policies(path: Path, policies: dict[str, Any]) -> None:
    """Write ``{disease: disease_policies(...)}`` as msgpack (no pickle)."""
    path.write_bytes(serialization.msgpack_serialize(policies))


def load_policies(path: Path) -> dict[str, Any]:
    """Read back what ``save_policies`` wrote (numbers as numpy arrays)."""
    return serialization.msgpack_restore(path.read_bytes())


"""Chronic care's offline data: clinicians of capability kappa, their patients and the visit logs."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from decisions.health.chronic.logs import Logs
from decisions.health.chronic.model import Mdp
from decisions.health.chronic.settings import ACTIONS, Clinicians


def clinician_kappas(clinicians: Clinicians) -> np.ndarray:
    """Each clinician's capability: the first ``round(low_share * count)`` are the low group."""
    low = round(clinicians.low_share * clinicians.count)
    return np.array([clinicians.kappa_low] * low + [clinicians.kappa_high] * (clinicians.count - low), np.float32)


def _patient(key: jax.Array, machines: jax.Array, group: jax.Array, start: jax.Array, good: jax.Array,
             habit: int, kappa: jax.Array) -> tuple:
    """One patient's visits under ``machines[group, a, s, s']``: each visit the good action with
    probability ``kappa``, else the habit."""
    start_key, key = jax.random.split(key)
    s0 = jax.random.categorical(start_key, jnp.log(start))

    def visit(s: jax.Array, inputs: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, tuple]:
        good_t, k = inputs
        follow_key, next_key = jax.random.split(k)
        action = jnp.where(jax.random.uniform(follow_key) < kappa, good_t[s], habit)
        nxt = jax.random.categorical(next_key, jnp.log(machines[group, action, s]))
        return nxt, (s, action)

    last, (states, actions) = jax.lax.scan(visit, s0, (good, jax.random.split(key, good.shape[0])))
    return jnp.append(states, last), actions


@jax.jit
def _simulate(key: jax.Array, machines: jax.Array, group: jax.Array, start: jax.Array, good: jax.Array,
              habit: jax.Array, kappas: jax.Array) -> tuple:
    keys = jax.random.split(key, kappas.shape[0])
    return jax.vmap(_patient, in_axes=(0, None, 0, None, None, None, 0))(keys, machines, group, start, good, habit, kappas)


def simulate_logs(key: jax.Array, mdp: Mdp, good: jax.Array, clinicians: Clinicians, patients: int,
                  executed: Callable[[float], jax.Array] | None = None) -> Logs:
    """Visit logs of ``patients`` patients, each assigned at random to a clinician who follows ``good[t, s]``
    with probability kappa and the clinicians' habit otherwise; a patient's months move by
    ``executed(kappa)`` (the transitions as that clinician carries treatment out), or by ``mdp``'s."""
    assign_key, key = jax.random.split(key)
    kappas = clinician_kappas(clinicians)
    clinician = np.asarray(jax.random.randint(assign_key, (patients,), 0, clinicians.count))
    kappa = kappas[clinician]
    levels, group = np.unique(kappa, return_inverse=True)
    machines = (jnp.stack([executed(float(k)) for k in levels]) if executed is not None
                else mdp.transitions[None])
    group = group if executed is not None else np.zeros_like(group)
    states, actions = _simulate(key, machines, jnp.asarray(group), mdp.start, good,
                                jnp.int32(ACTIONS.index(clinicians.habit)), jnp.asarray(kappa))
    return Logs(np.asarray(states), np.asarray(actions), kappa, clinician)

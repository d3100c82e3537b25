"""Chronic care's state machines: a disease as an explicit finite MDP in JAX arrays.

A state is (band, medication step, adherent, side effect, months since intensification), plus one
absorbing state ``CONTROLLED``: the patient was in band 0 at two visits in a row (control reached
and held). Time to control (TTC) is the visit at which the patient enters it.
"""

from __future__ import annotations

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from decisions.health.chronic.settings import ACTIONS, Machine, Regime, Reward

BANDS, STEPS, RAMP = 4, 4, 3
"""Control bands (0: in target), medication steps, months-since-intensification classes."""

N_TRANSIENT = BANDS * STEPS * 2 * 2 * RAMP
CONTROLLED = N_TRANSIENT
"""Index of the absorbing state: control confirmed."""

N_STATES = N_TRANSIENT + 1
N_ACTIONS = len(ACTIONS)
INTENSIFY, HOLD, STEP_DOWN, CHECK, FOLLOW_UP = range(N_ACTIONS)


def state_index(band: int, step: int, adherent: int, side_effect: int, since: int) -> int:
    """The index of a transient state from its components."""
    return (((band * STEPS + step) * 2 + adherent) * 2 + side_effect) * RAMP + since


def state_table() -> np.ndarray:
    """The components of every transient state, ``[N_TRANSIENT, 5]`` in index order."""
    return np.array(list(itertools.product(range(BANDS), range(STEPS), range(2), range(2), range(RAMP))))


@struct.dataclass
class Mdp:
    """A finite-horizon MDP: ``transitions[a, s, s']``, ``rewards[t, a, s]`` (expected), ``start[s]``."""

    transitions: jax.Array
    rewards: jax.Array
    start: jax.Array


def _band_moves(effect: jax.Array, machine: Machine) -> tuple[jax.Array, jax.Array]:
    """The monthly chances of one band down and one band up under ``effect`` units of treatment."""
    down = jnp.clip(machine.improve_per_step * effect, 0.0, 1.0)
    up = jnp.clip(machine.worsen - machine.worsen_cut_per_step * effect, 0.0, 1.0 - down)
    return down, up


def _action_rows(action: int, machine: Machine, execution: float) -> jax.Array:
    """``P[s, s']`` of one action over the transient states, the absorbing column included; the
    treatment's effect is scaled by ``execution`` (1: carried out as the machine says)."""
    comp = jnp.asarray(state_table())
    band, step, adherent, side, since = (comp[:, i] for i in range(5))
    raised = action == INTENSIFY
    step1 = jnp.clip(step + (1 if raised else 0) - (1 if action == STEP_DOWN else 0), 0, STEPS - 1)
    intensified = raised & (step1 > step) if raised else jnp.zeros_like(step, bool)
    since1 = jnp.where(intensified, 0, jnp.minimum(since + 1, RAMP - 1))
    resolve = {STEP_DOWN: machine.step_down_resolves, CHECK: machine.check_resolves}.get(action, 0.0)
    side_now = side * (1.0 - resolve)
    boost = machine.follow_up_adheres if action == FOLLOW_UP else 0.0
    adherent_now = adherent + (1 - adherent) * boost
    ramp = jnp.asarray(machine.ramp)[since1]
    effect = execution * step1 * ramp * (adherent_now + (1.0 - adherent_now) * machine.low_adherence_effect)
    down, up = _band_moves(effect, machine)
    down = jnp.where(band == 0, 0.0, down)
    up = jnp.where(band == BANDS - 1, 0.0, up)
    bands = jax.nn.one_hot(band, BANDS) * (1 - down - up)[:, None]
    bands += jax.nn.one_hot(jnp.maximum(band - 1, 0), BANDS) * down[:, None]
    bands += jax.nn.one_hot(jnp.minimum(band + 1, BANDS - 1), BANDS) * up[:, None]
    p_side = jnp.clip(side_now * (1 - machine.side_effect_remit)
                      + (1 - side_now) * machine.side_effect_per_step * step1, 0.0, 1.0)
    p_adh = jnp.clip(adherent_now * (1 - machine.lapse - machine.lapse_side_effect * side_now)
                     + (1 - adherent_now) * machine.recover, 0.0, 1.0)
    joint = jnp.einsum("nb,nm,na,ne,nr->nbmaer", bands, jax.nn.one_hot(step1, STEPS),
                       jnp.stack([1 - p_adh, p_adh], 1), jnp.stack([1 - p_side, p_side], 1),
                       jax.nn.one_hot(since1, RAMP)).reshape(N_TRANSIENT, N_TRANSIENT)
    held = (band == 0) * bands[:, 0]
    in_band0 = jnp.asarray(state_table()[:, 0] == 0)
    joint = jnp.where((band == 0)[:, None] & in_band0[None, :], 0.0, joint)
    return jnp.concatenate([joint, held[:, None]], axis=1)


def transitions(machine: Machine, execution: float = 1.0) -> jax.Array:
    """The machine's ``P[a, s, s']`` (rows sum to 1; ``CONTROLLED`` absorbs), its treatment effects
    scaled by ``execution`` (see ``execution_factor``)."""
    absorbing = jax.nn.one_hot(CONTROLLED, N_STATES)[None, :]
    return jnp.stack([jnp.concatenate([_action_rows(a, machine, execution), absorbing]) for a in range(N_ACTIONS)])


def execution_factor(kappa: float, gap: float) -> float:
    """The share of a treatment's effect a clinician of capability ``kappa`` achieves: ``1 - gap * (1 - kappa)``
    (``gap = 0``: outcomes do not depend on who chose the action)."""
    return 1.0 - gap * (1.0 - kappa)


def start_distribution(machine: Machine) -> jax.Array:
    """The state distribution at the first visit (bands 1-3, the start step, no side effect, settled)."""
    start = np.zeros(N_STATES, np.float32)
    for band, share in enumerate(machine.start_bands, start=1):
        for adherent, p in ((1, machine.start_adherent), (0, 1.0 - machine.start_adherent)):
            start[state_index(band, machine.start_step, adherent, 0, RAMP - 1)] += share * p
    return jnp.asarray(start)


def tier_payments(reward: Reward, horizon: int) -> np.ndarray:
    """The payment for control confirmed at each visit ``1..horizon`` (0 past the last tier)."""
    pay = np.zeros(horizon, np.float32)
    for visit in range(1, horizon + 1):
        tier = next((p for t, p in zip(reward.thresholds, reward.payments, strict=True) if visit <= t), 0.0)
        pay[visit - 1] = tier
    return pay


@jax.jit
def expected_rewards(transition: jax.Array, pay: jax.Array, cost: jax.Array) -> jax.Array:
    """``r[t, a, s]`` from the machine, the tier ``pay[t]`` and the cost ``cost[a, s]`` (see ``rewards``)."""
    enter = transition[:, :, CONTROLLED].at[:, CONTROLLED].set(0.0)
    return pay[:, None, None] * enter[None] - cost[None]


@functools.lru_cache(maxsize=64)
def reward_terms(reward: Reward, horizon: int) -> tuple[jax.Array, jax.Array]:
    """The tier paid at each visit ``pay[t]`` and each action's cost in each state ``cost[a, s]``
    (the action's cost and the side effect's monthly cost, nothing once controlled); cached."""
    side = np.append(state_table()[:, 3], 0.0)
    cost = np.asarray(reward.costs())[:, None] + reward.side_effect_cost * side[None, :]
    cost[:, CONTROLLED] = 0.0
    return jnp.asarray(tier_payments(reward, horizon)), jnp.asarray(cost, jnp.float32)


def rewards(transition: jax.Array, reward: Reward, horizon: int) -> jax.Array:
    """Expected reward ``r[t, a, s]``: the tier paid on entering ``CONTROLLED`` at visit ``t + 1``,
    less the action's cost and the side effect's monthly cost (nothing once controlled)."""
    return expected_rewards(transition, *reward_terms(reward, horizon))


def build(machine: Machine, reward: Reward, horizon: int) -> Mdp:
    """The disease's MDP over ``horizon`` visits."""
    transition = transitions(machine)
    return Mdp(transition, rewards(transition, reward, horizon), start_distribution(machine))


def regime_mask(regime: Regime, horizon: int) -> np.ndarray:
    """``allowed[t, s, a]``: whether a clinic of ``regime`` can carry out action ``a`` at visit ``t`` in
    state ``s``. Months without a visit allow hold only; intensifying stops at ``regime.max_step``."""
    allowed = np.zeros((horizon, N_STATES, N_ACTIONS), bool)
    allowed[:, :, [ACTIONS.index(a) for a in regime.actions]] = True
    allowed[:, :N_TRANSIENT, INTENSIFY] &= state_table()[:, 1] < regime.max_step
    allowed[np.arange(horizon) % regime.visit_every != 0] = np.eye(N_ACTIONS, dtype=bool)[HOLD]
    return allowed


def regime_fallback(allowed: np.ndarray, preferred: tuple[int, ...]) -> np.ndarray:
    """``fallback[t, s]``: what a clinic does instead of an action it cannot carry out, the first of
    ``preferred`` allowed there, else the first allowed action."""
    order = list(dict.fromkeys([*preferred, *range(N_ACTIONS)]))
    ranked = allowed[..., order]
    return np.asarray(order)[ranked.argmax(-1)]

"""Chronic care's neural conservative offline learner: discrete CQL over the finite horizon.

A Q-network maps the features of a visit ``t`` and a state ``s`` to one value per action; it is
trained on the logged transitions by fitted Q-learning (TD target: the realised reward plus the
target network's value at ``t + 1`` of the allowed action the online network ranks best, as double
DQN; nothing after the horizon or from ``CONTROLLED``) plus the CQL penalty
``alpha * (logsumexp Q(t, s, .) - Q(t, s, a_logged))``, the logsumexp over the allowed actions (on
the transitions whose logged action is allowed), each transition weighted by 1 (uniform) or its
clinician's kappa. Every variant of one data draw (weighting x regime) trains side by side in one
compiled program.
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from decisions.core.agents.dqn import masked_argmax
from decisions.core.nets import MLP
from decisions.errors import InputError
from decisions.health.chronic.exact import one_hot_policy
from decisions.health.chronic.logs import Logs
from decisions.health.chronic.model import (
    BANDS,
    CONTROLLED,
    N_ACTIONS,
    N_STATES,
    RAMP,
    STEPS,
    reward_terms,
    state_table,
)
from decisions.health.chronic.scoring import Case
from decisions.health.chronic.settings import Neural, Reward

PyTree = Any
WEIGHTINGS = ("uniform", "kappa")
"""The transition weightings: 1 each, or the clinician's kappa."""


class Transitions(NamedTuple):
    """Every logged slot ``(t, s, a, s', r)`` with its clinician's ``kappa``; the first ``count`` are the
    observed transitions out of a transient state (the learners' data), the rest are ignored."""

    t: np.ndarray
    s: np.ndarray
    a: np.ndarray
    s1: np.ndarray
    r: np.ndarray
    kappa: np.ndarray
    count: int


def logged_rewards(logs: Logs, reward: Reward, horizon: int) -> np.ndarray:
    """The realised reward ``r[n, t]`` of every logged transition, as ``model.rewards`` defines the
    expected one: the tier paid on entering ``CONTROLLED`` at visit ``t + 1``, less the action's cost
    and the side effect's monthly cost; 0 from ``CONTROLLED`` and in unobserved slots."""
    s, a, s1 = logs.states[:, :horizon], logs.actions[:, :horizon], logs.states[:, 1:horizon + 1]
    pay, cost = (np.asarray(v) for v in reward_terms(reward, horizon))
    r = pay[None, :] * (s1 == CONTROLLED) - cost[a, s]
    return np.where(logs.learnt(), r, 0.0).astype(np.float32)


def state_features(horizon: int) -> np.ndarray:
    """The Q-network's input ``x[t, s, :]``: one-hots of the state's band, step, adherence, side effect
    and months since intensification (all 0 for ``CONTROLLED``), a controlled flag, a one-hot of ``t``."""
    comp = state_table()
    parts = [np.eye(size)[comp[:, i]] for i, size in enumerate((BANDS, STEPS, 2, 2, RAMP))]
    state = np.concatenate([np.concatenate(parts, 1), np.zeros((len(comp), 1))], 1)
    state = np.concatenate([state, np.eye(state.shape[1])[-1:]])  # CONTROLLED: the flag alone
    visit = np.eye(horizon)
    x = np.concatenate([np.broadcast_to(state[None], (horizon, N_STATES, state.shape[1])),
                        np.broadcast_to(visit[:, None], (horizon, N_STATES, horizon))], -1)
    return x.astype(np.float32)


def logged_transitions(logs: Logs, reward: Reward, horizon: int) -> Transitions:
    """The logs' transitions, the observed ones out of transient states first (in log order)."""
    n = logs.actions.shape[0]
    t = np.broadcast_to(np.arange(horizon), (n, horizon)).reshape(-1)
    s, s1 = logs.states[:, :horizon].reshape(-1), logs.states[:, 1:horizon + 1].reshape(-1)
    used = logs.learnt().reshape(-1)
    order = np.argsort(~used, kind="stable")
    kappa = np.repeat(logs.kappa.astype(np.float32), horizon)
    r = logged_rewards(logs, reward, horizon).reshape(-1)
    a = logs.actions[:, :horizon].reshape(-1)
    return Transitions(t[order], s[order], a[order], s1[order], r[order], kappa[order],
                       int(used.sum()))


def q_network(settings: Neural) -> MLP:
    """The Q-network: a ReLU MLP, features -> one value per action; its output layer starts near 0
    (kernel gain 0.01), so an action the data barely shows starts near 0, not at a random value."""
    return MLP(hidden=(settings.width,) * settings.depth, out=N_ACTIONS, activation=nn.relu, out_scale=0.01)


class _Train(NamedTuple):
    params: PyTree
    target: PyTree
    opt: optax.OptState


def _loss(params: PyTree, target: PyTree, batch: Transitions, x: jax.Array, allowed: jax.Array,
          kappa_weighted: jax.Array, settings: Neural) -> jax.Array:
    """The weighted TD (Huber) plus CQL loss of one batch under one regime's ``allowed[t, s, a]``; a
    transition whose logged action the regime rules out there adds to the TD loss only."""
    net, horizon = q_network(settings), x.shape[0]
    q = net.apply(params, x[batch.t, batch.s])
    t1 = jnp.minimum(batch.t + 1, horizon - 1)
    x1 = x[t1, batch.s1]
    best = masked_argmax(jax.lax.stop_gradient(net.apply(params, x1)), allowed[t1, batch.s1])  # double DQN
    q1 = jnp.take_along_axis(net.apply(target, x1), best[:, None], -1)[:, 0]
    going = (batch.s1 != CONTROLLED) & (batch.t + 1 < horizon)
    y = batch.r + jnp.where(going, q1, 0.0)
    q_a = jnp.take_along_axis(q, batch.a[:, None], -1)[:, 0]
    td = optax.huber_loss(q_a, jax.lax.stop_gradient(y))
    now = allowed[batch.t, batch.s]
    logged_allowed = jnp.take_along_axis(now, batch.a[:, None], -1)[:, 0]
    penalty = jnp.where(logged_allowed, jax.nn.logsumexp(jnp.where(now, q, -jnp.inf), -1) - q_a, 0.0)
    w = jnp.where(kappa_weighted, batch.kappa, 1.0)
    return jnp.sum(w * (td + settings.alpha * penalty)) / jnp.maximum(jnp.sum(w), 1e-12)


def _fit_one(key: jax.Array, data: Transitions, x: jax.Array, mask: jax.Array, kappa_weighted: jax.Array,
             settings: Neural) -> PyTree:
    """One variant's training: ``settings.steps`` Adam steps (learning rate cosine-decayed to 0) on
    batches drawn uniformly from the first ``data.count`` transitions; the target network is copied
    every ``target_update`` steps."""
    init_key, key = jax.random.split(key)
    params = q_network(settings).init(init_key, x[0, :1])
    optimizer = optax.adam(optax.cosine_decay_schedule(settings.learning_rate, settings.steps))
    loss = partial(_loss, x=x, allowed=mask, kappa_weighted=kappa_weighted, settings=settings)

    def step(state: _Train, inputs: tuple[jax.Array, jax.Array]) -> tuple[_Train, None]:
        i, k = inputs
        rows = jax.random.randint(k, (settings.batch,), 0, data.count)
        batch = Transitions(*(v[rows] for v in data[:-1]), data.count)
        grads = jax.grad(loss)(state.params, state.target, batch)
        updates, opt = optimizer.update(grads, state.opt, state.params)
        params = optax.apply_updates(state.params, updates)
        copy = (i + 1) % settings.target_update == 0
        target = jax.tree.map(lambda p, t: jnp.where(copy, p, t), params, state.target)
        return _Train(params, target, opt), None

    keys = jax.random.split(key, settings.steps)
    state = _Train(params, params, optimizer.init(params))
    state, _ = jax.lax.scan(step, state, (jnp.arange(settings.steps), keys))
    return state.params


@partial(jax.jit, static_argnames="settings")
def fit_variants(key: jax.Array, data: Transitions, x: jax.Array, masks: jax.Array, kappa_weighted: jax.Array,
                 settings: Neural) -> PyTree:
    """Train one Q-network per variant (``masks[v]``: ``allowed[t, s, a]``; ``kappa_weighted[v]``) in one program, all from
    the same initial weights and batches; their parameters, stacked on a leading variant axis."""
    return jax.vmap(lambda m, w: _fit_one(key, data, x, m, w, settings))(masks, kappa_weighted)


def q_values(params: PyTree, settings: Neural, x: jax.Array) -> jax.Array:
    """The Q-network's values ``[..., a]`` of features ``x[..., d]``."""
    return q_network(settings).apply(params, x)


@partial(jax.jit, static_argnames="settings")
def greedy_actions(params: PyTree, settings: Neural, x: jax.Array, masks: jax.Array) -> jax.Array:
    """Each variant's greedy allowed action ``[v, t, s]`` from its stacked parameters."""
    return jax.vmap(lambda p, m: masked_argmax(q_values(p, settings, x), m))(params, masks)


def device_transitions(data: Transitions) -> Transitions:
    """``data`` as JAX arrays (``count`` a traced scalar: one compiled program for any count)."""
    arrays = [jnp.asarray(v, jnp.float32 if name in ("r", "kappa") else jnp.int32)
              for name, v in zip(Transitions._fields[:-1], data[:-1], strict=True)]
    return Transitions(*arrays, jnp.int32(data.count))


def neural_policies(case: Case, logs: Logs, regimes: tuple[str, ...], settings: Neural,
                    key: jax.Array) -> dict[tuple[str, str], jax.Array]:
    """Discrete CQL's policy for each target regime: ``(method, regime) -> policy[t, s, a]`` for
    ``cql_{uniform,kappa}_{aware,naive}``; ``aware`` is trained and greedy within the target regime's
    actions, ``naive`` within the train regime's, whatever the target (deployed as is)."""
    names = list(dict.fromkeys([case.train_regime, *regimes]))
    masks = np.stack([case.masks[name] for name in names])
    transitions = logged_transitions(logs, case.reward, case.horizon)
    if transitions.count == 0:
        raise InputError("logs", "no observed visit before control: nothing to learn from")
    data = device_transitions(transitions)
    x = jnp.asarray(state_features(case.horizon))
    variant_masks = jnp.asarray(np.concatenate([masks, masks]))
    weighted = jnp.asarray(np.repeat([False, True], len(names)))
    greedy = greedy_actions(fit_variants(key, data, x, variant_masks, weighted, settings), settings, x,
                            variant_masks)
    policies: dict[tuple[str, str], jax.Array] = {}
    for w, tag in enumerate(WEIGHTINGS):
        naive = one_hot_policy(greedy[w * len(names)], N_ACTIONS)
        for regime in regimes:
            aware = greedy[w * len(names) + names.index(regime)]
            policies[(f"cql_{tag}_aware", regime)] = one_hot_policy(aware, N_ACTIONS)
            policies[(f"cql_{tag}_naive", regime)] = naive
    return policies

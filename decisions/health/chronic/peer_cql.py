"""Chronic care's peer for the neural learner: d3rlpy's ``DiscreteCQL`` on the same offline data.

d3rlpy (a ``peers`` extra) is imported inside the functions, so the domain runs without it.
"""

from __future__ import annotations

import contextlib
import io
import time
from typing import Any, NamedTuple

import jax
import numpy as np

from decisions.errors import InputError
from decisions.health.chronic.cql import logged_rewards, state_features
from decisions.health.chronic.exact import one_hot_policy
from decisions.health.chronic.logs import Logs
from decisions.health.chronic.model import CONTROLLED, N_ACTIONS, N_STATES
from decisions.health.chronic.scoring import Case
from decisions.health.chronic.settings import Neural


class Episodes(NamedTuple):
    """The logs as d3rlpy episodes, one row per observation (flags: ``terminals``, ``timeouts``)."""

    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    terminals: np.ndarray
    timeouts: np.ndarray


def peer_episodes(case: Case, logs: Logs) -> Episodes:
    """The logs' observed transitions out of transient states as d3rlpy episodes (observations:
    ``cql.state_features``). A run of such transitions ends as terminal on entering ``CONTROLLED`` or
    at the horizon (nothing more is paid); one cut short by an unobserved visit ends with its next
    state as a timeout row (action 0, reward 0: d3rlpy reads only its observation)."""
    horizon, x = case.horizon, state_features(case.horizon)
    s, s1 = logs.states[:, :horizon], logs.states[:, 1:horizon + 1]
    used = logs.learnt()
    if not used.any():
        raise InputError("logs", "no observed visit before control: nothing to learn from")
    rewards = logged_rewards(logs, case.reward, horizon)
    rows: list[tuple[np.ndarray, int, float, float, float]] = []
    for n, t in zip(*np.nonzero(used), strict=True):
        rows.append((x[t, s[n, t]], int(logs.actions[n, t]), float(rewards[n, t]), 0.0, 0.0))
        if t + 1 < horizon and used[n, t + 1]:
            continue
        if s1[n, t] == CONTROLLED or t + 1 == horizon:
            rows[-1] = (*rows[-1][:3], 1.0, 0.0)
        else:
            rows.append((x[t + 1, s1[n, t]], 0, 0.0, 0.0, 1.0))
    obs, act, rew, term, timeout = zip(*rows, strict=True)
    return Episodes(np.stack(obs), np.asarray(act, np.int64), np.asarray(rew, np.float32),
                    np.asarray(term, np.float32), np.asarray(timeout, np.float32))


def peer_policy(case: Case, logs: Logs, settings: Neural, seed: int) -> tuple[jax.Array, float]:
    """d3rlpy's ``DiscreteCQL`` trained on the logs' transitions and realised rewards with our features,
    width, depth, batch, learning rate (cosine-decayed to 0), alpha, target update interval and number
    of gradient steps, undiscounted; returns its greedy ``policy[t, s, a]`` over all five actions
    (d3rlpy has no action mask: a train-regime learner, deployed as is) and the seconds ``fit`` took
    (building its networks included).

    d3rlpy weighs every transition alike (no kappa weighting: the peer is the uniform learner), its
    TD target is double DQN's (the target network's value of the online network's best action), and
    its networks start from torch's default initialisation.
    """
    import d3rlpy

    with contextlib.redirect_stdout(io.StringIO()):  # d3rlpy logs to stdout, which `bench --json` keeps for its JSON
        return _fit(d3rlpy, case, logs, settings, seed)


def _fit(d3rlpy: Any, case: Case, logs: Logs, settings: Neural, seed: int) -> tuple[jax.Array, float]:
    from d3rlpy.logging import NoopAdapterFactory

    episodes = peer_episodes(case, logs)
    d3rlpy.seed(seed)
    dataset = d3rlpy.dataset.MDPDataset(*episodes,
                                        action_space=d3rlpy.constants.ActionSpace.DISCRETE,
                                        action_size=N_ACTIONS)
    config = d3rlpy.algos.DiscreteCQLConfig(
        learning_rate=settings.learning_rate, batch_size=settings.batch, gamma=1.0, alpha=settings.alpha,
        target_update_interval=settings.target_update,
        optim_factory=d3rlpy.optimizers.AdamFactory(
            lr_scheduler_factory=d3rlpy.optimizers.CosineAnnealingLRFactory(T_max=settings.steps)),
        encoder_factory=d3rlpy.models.VectorEncoderFactory(hidden_units=[settings.width] * settings.depth))
    algo = config.create(device="cpu:0")
    start = time.perf_counter()
    algo.fit(dataset, n_steps=settings.steps, n_steps_per_epoch=settings.steps, show_progress=False,
             logger_adapter=NoopAdapterFactory())
    seconds = time.perf_counter() - start
    x = state_features(case.horizon)
    greedy = algo.predict(x.reshape(-1, x.shape[-1])).reshape(case.horizon, N_STATES)
    return one_hot_policy(jax.numpy.asarray(greedy), N_ACTIONS), seconds

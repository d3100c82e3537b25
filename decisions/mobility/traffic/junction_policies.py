"""A run's signal policies on a junction's sensed state, without SUMO: the agents' observation and
action mask rebuilt from the detector readings (``env.fair_observation``'s layout), the agents
(DQN, PPO) compiled over a batch, and the baselines that read the same state (fixed time, queue
greedy, pedestrian-aware greedy) vectorised.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from decisions.mobility.traffic.env import CROWD_SCALE, PHASE_TIME_SCALE_S, WAIT_SCALE_S
from decisions.mobility.traffic.junctions import Junction
from decisions.mobility.traffic.trained import TrainedAgent

RULES = ("fixed", "queue_greedy", "ped_greedy")
"""The study's baselines that answer one sensed state (the others need lanes the state does not report)."""

PED_WEIGHT = 1.0
"""The pedestrian-aware greedy rule's weight of a waiting pedestrian (``controllers.PedAwareGreedy``'s default)."""


@dataclass(frozen=True)
class Readings:
    """A batch of one junction's readings: current phase ``(B,)``, seconds since its last change
    ``(B,)``, halting vehicles and their mean wait per approach ``(B, L)``, pedestrians waiting and
    the longest wait per crossing ``(B, K)``."""

    phase: np.ndarray
    since: np.ndarray
    queue: np.ndarray
    wait: np.ndarray
    crowd: np.ndarray
    longest: np.ndarray


def changes_allowed(j: Junction, r: Readings) -> np.ndarray:
    """``(B,)`` whether a change of phase takes effect now (yellow and minimum green served)."""
    return r.since >= j.yellow_s + j.min_green_s


def observation(j: Junction, r: Readings, width: int) -> np.ndarray:
    """``(B, width)`` the agents' observation (``env.fair_observation``), zero-padded to ``width``."""
    phases = len(j.phases)
    parts = [np.eye(phases)[r.phase], changes_allowed(j, r)[:, None], np.minimum(1.0, r.since / PHASE_TIME_SCALE_S)[:, None],
             np.minimum(1.0, r.queue / j.capacity), np.minimum(1.0, r.wait / WAIT_SCALE_S),
             np.minimum(1.0, r.crowd / CROWD_SCALE), np.minimum(1.0, r.longest / WAIT_SCALE_S)]
    obs = np.concatenate(parts, axis=1).astype(np.float32)
    return np.pad(obs, ((0, 0), (0, width - obs.shape[1])))


def action_mask(j: Junction, r: Readings, actions: int, max_green_s: float = 0.0) -> np.ndarray:
    """``(B, actions)`` the phases that take effect now (``env.action_masks``), padded with False."""
    phases = len(j.phases)
    current = np.eye(phases, dtype=bool)[r.phase]
    mask = np.where(changes_allowed(j, r)[:, None], True, current)
    if max_green_s > 0 and phases > 1:
        mask &= ~(current & (r.since >= max_green_s)[:, None])
    return np.pad(mask, ((0, 0), (0, actions - phases)))


def rule_scores(name: str, j: Junction, r: Readings) -> np.ndarray:
    """``(B, P)`` a greedy rule's score of each phase: halting vehicles on the approaches it serves
    (and ``PED_WEIGHT`` per pedestrian at the crossings it serves, pedestrian-aware)."""
    scores = r.queue @ j.serves.T
    if name == "ped_greedy":
        scores = scores + PED_WEIGHT * (r.crowd @ j.serves_crossing.T)
    return scores


def rule_actions(name: str, j: Junction, r: Readings) -> np.ndarray:
    """``(B,)`` the phase a rule sets now: fixed time holds a green for its programmed duration, then
    the next; a greedy rule takes the best score, ties keeping the current phase, then the phase
    with more green links, then the first (``control.choose_phase``). A change within the minimum
    green does not take effect."""
    phases = len(j.phases)
    if name == "fixed":
        chosen = np.where(r.since < j.durations_s[r.phase], r.phase, (r.phase + 1) % phases)
    else:
        scores = rule_scores(name, j, r)
        ties = scores >= scores.max(axis=1, keepdims=True) - 1e-9
        order = np.where(ties, j.green_links * phases - np.arange(phases), -np.inf)
        keep = ties[np.arange(len(r.phase)), r.phase]
        chosen = np.where(keep, r.phase, order.argmax(axis=1))
    return np.where(changes_allowed(j, r), chosen, r.phase).astype(np.int32)


def q_values(critic: TrainedAgent, obs: Any) -> Any:
    """A DQN's Q-values of a batch of observations (learning units), jit-able."""
    return critic.policy.network.apply(critic.params["q"], critic.policy.features(critic.params, obs))


def agent_actions(agent: TrainedAgent, obs: Any, mask: Any) -> Any:
    """A trained agent's greedy actions among the masked ones, jit-able."""
    if agent.kind == "ppo":
        return dataclasses.replace(agent.policy, deterministic=True)(agent.params, obs, None, mask)
    return agent.policy.masked_action(agent.params, obs, mask)


def compiled(critic: TrainedAgent, agents: dict[str, TrainedAgent]) -> Callable[[Any], dict[str, Any]]:
    """One compiled call over a batch ``(obs, {name: mask})``: the critic's Q-values (``"q"``) and each
    agent's actions (by name)."""
    import jax

    def run(inputs: tuple[Any, dict[str, Any]]) -> dict[str, Any]:
        obs, masks = inputs
        return {"q": q_values(critic, obs), **{n: agent_actions(a, obs, masks[n]) for n, a in agents.items()}}

    return jax.jit(run)

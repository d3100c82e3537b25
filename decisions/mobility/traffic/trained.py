"""A trained signal agent (its policy, params, training log and timing) and the controller that plays it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from decisions.errors import InputError
from decisions.mobility.traffic.control import BaseController
from decisions.mobility.traffic.env import action_masks
from decisions.mobility.traffic.slots import pad_row

TRAFFIC_AGENT_KEY = "traffic_agent"
"""Metadata key of a saved agent's name, scenario, timing and log in its policy file."""


@dataclass(frozen=True, eq=False)
class TrainedAgent:
    """A DQN or PPO agent trained on a scenario, with its training log and timing.

    Attributes:
        name: the agent's name in reports (``dqn_fair``, ``dqn_vehicle``, ``ppo_fair``, ...).
        scenario: the scenario's name.
        pedestrians: trained on the pedestrian net and flows.
        policy: the greedy policy (``dqn.DQNPolicy`` or ``onpolicy.ActorCriticPolicy``; act
            through :class:`AgentController`).
        params: its params (numpy leaves: network weights and observation statistics).
        log: one row per round of finished training episodes: ``env_steps`` (decisions so far),
            ``episode_return`` (mean over the slots), the learner's losses (means since the
            previous row) and, when recorded, the episodes' mean metrics (``veh_delay_mean``,
            ``ped_wait_p95``, ...).
        train_seconds: wall time of training (process start-up and compilation included).
        sim_seconds: simulated seconds of training, all simulations together.
        max_green_s: the maximum green it was trained with and acts with (s; 0: none).
    """

    name: str
    scenario: str
    pedestrians: bool
    policy: Any
    params: Any
    log: pd.DataFrame
    train_seconds: float
    sim_seconds: float
    max_green_s: int = 0

    @property
    def kind(self) -> str:
        """``"ppo"`` for an actor-critic policy, else ``"dqn"``."""
        return _policy_kind(self.policy)

    @property
    def sim_seconds_per_wall_second(self) -> float:
        """Simulated seconds of training per wall second."""
        return self.sim_seconds / self.train_seconds if self.train_seconds > 0 else math.nan

    def controller(self) -> AgentController:
        """The agent as a controller (greedy among the valid actions)."""
        return AgentController(self.policy, self.params, name=self.name, max_green_s=self.max_green_s)

    def save(self, path: str | Path) -> None:
        """Write the agent as the core's policy file, with its name, scenario, timing and log.

        ``dqn.load_policy`` (a DQN's) or ``onpolicy.load_policy`` (a PPO's) reads the file too (the
        agent's fields are one more entry of the description).
        """
        from decisions.core.agents.offpolicy import io as offpolicy_io
        from decisions.core.agents.onpolicy import io as onpolicy_io

        log = {col: [_json_value(v) for v in self.log[col]] for col in self.log.columns}
        fields = {
            "name": self.name, "scenario": self.scenario, "pedestrians": self.pedestrians,
            "train_seconds": self.train_seconds, "sim_seconds": self.sim_seconds, "log": log,
            "max_green_s": self.max_green_s,
        }  # fmt: skip
        io = onpolicy_io if self.kind == "ppo" else offpolicy_io
        io.write_policy(path, self.policy, self.params, extra={TRAFFIC_AGENT_KEY: fields})

    @classmethod
    def load(cls, path: str | Path) -> TrainedAgent:
        """Read an agent written by :meth:`save`.

        Raises:
            InputError: (``agent``, a ``ValueError``) the file is not a saved DQN or PPO policy, or not
                a traffic agent's.
        """
        import jax

        from decisions.core.agents import dqn
        from decisions.core.agents.offpolicy import io as offpolicy_io
        from decisions.core.agents.onpolicy import io as onpolicy_io
        from decisions.core.agents.policy_file import read_policy_file

        def dqn_policy(description: dict[str, Any]) -> Any:
            return offpolicy_io.policy_of(description, dqn.DQNPolicy, path=path, field="agent")

        rebuild = {onpolicy_io.POLICY_FORMAT: onpolicy_io.policy_of, offpolicy_io.POLICY_FORMAT: dqn_policy}
        policy, params, description = read_policy_file(path, rebuild, field="agent", what="a saved DQN or PPO policy")
        fields = description.get(TRAFFIC_AGENT_KEY)
        if not isinstance(fields, dict):
            raise InputError("agent", f"{path}: a policy, but not a traffic agent's (no {TRAFFIC_AGENT_KEY!r})")
        return cls(
            name=str(fields["name"]), scenario=str(fields["scenario"]), pedestrians=bool(fields["pedestrians"]),
            policy=policy, params=jax.tree.map(np.asarray, params), log=pd.DataFrame(fields["log"]),
            train_seconds=float(fields["train_seconds"]), sim_seconds=float(fields["sim_seconds"]),
            max_green_s=int(fields.get("max_green_s", 0)),
        )  # fmt: skip


def _policy_kind(policy: Any) -> str:
    from decisions.core.agents.onpolicy.policy import ActorCriticPolicy

    return "ppo" if isinstance(policy, ActorCriticPolicy) else "dqn"


def _json_value(v: Any) -> Any:
    if isinstance(v, np.integer | int):
        return int(v)
    return float(v)


class AgentController(BaseController):
    """A trained agent as a controller: per signal, the greedy action among the valid ones.

    Observations are sumo-rl's, zero-padded to the policy's width; masks are :func:`env.action_masks`
    (with the agent's ``max_green_s``) padded with False. ``policy`` is a ``dqn.DQNPolicy`` or an
    ``onpolicy.ActorCriticPolicy``; the params are kept as numpy arrays, so the controller pickles
    into a worker process.
    """

    fixed_ts = False

    def __init__(self, policy: Any, params: Any, name: str = "dqn", max_green_s: int = 0) -> None:
        import jax

        self.name = name
        self.max_green_s = int(max_green_s)
        self.kind = _policy_kind(policy)
        self.policy = policy
        self.params = jax.tree.map(np.asarray, params)
        self._device_params: Any = None

    def __getstate__(self) -> dict[str, Any]:
        """Pickle without the device copy of the params."""
        return {**self.__dict__, "_device_params": None}

    def act(self, env: Any) -> dict[str, int]:
        """The greedy valid phase of every signal."""
        import jax

        from decisions.core.agents.offpolicy.host_loop import greedy_actions
        from decisions.core.agents.onpolicy.host_loop import policy_actions

        if self._device_params is None:
            self._device_params = jax.device_put(self.params)
        width, n = self.policy.obs_shape[0], self.policy.num_actions
        ids = list(env.ts_ids)
        masks = action_masks(env, self.max_green_s)
        for ts in ids:
            if len(env.observations[ts]) > width or len(masks[ts]) > n:
                problem = f"signal {ts} does not fit the agent ({width} inputs, {n} actions)"
                raise InputError("controller", problem)
        obs = np.stack([pad_row(np.asarray(env.observations[ts], np.float32), width, 0.0) for ts in ids])
        mask = np.stack([pad_row(masks[ts], n, False) for ts in ids])
        act = policy_actions if self.kind == "ppo" else greedy_actions
        actions = act(self.policy, self._device_params, obs, mask)
        return {ts: int(a) for ts, a in zip(ids, actions, strict=True)}

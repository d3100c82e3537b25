"""Learning signal agents: the core DQN and PPO trained on sumo-rl slots, and the trained controller.

- :func:`train_dqn` trains the core DQN (``offpolicy.host_loop.train_agent_host`` with action
  masks) on ``agent.num_envs`` simulations (:mod:`.slots`), each in its own spawned process
  (libsumo: one simulation per process), one Q-network shared by every signal; :func:`train_ppo`
  trains the core PPO the same way (``onpolicy.host_loop.train_agent_host``: the invalid
  actions' logits masked when acting and in the update), one actor-critic shared by every
  signal. Both return a :class:`TrainedAgent`.
- :class:`AgentController` plays a trained agent greedily among the valid actions (with the
  maximum green it was trained with) as a :class:`controllers.Controller`, picklable so
  :func:`simulate.simulate_many` runs it in workers.

This module imports JAX only inside the functions that need it, so a spawned SUMO process starts
in a fraction of a second.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from decisions.errors import InputError
from decisions.mobility.traffic.control import BaseController
from decisions.mobility.traffic.demand import Demand
from decisions.mobility.traffic.env import action_masks
from decisions.mobility.traffic.scenarios import Scenario, get_scenario, network
from decisions.mobility.traffic.slots import RewardFn, pad_row, slot_factories

if TYPE_CHECKING:
    from decisions.core.agents.common import TrainResult
    from decisions.core.agents.dqn import DQNConfig
    from decisions.core.agents.ppo import PPOConfig
    from decisions.core.host_envs import MultiAgentVecEnv
    from decisions.mobility.traffic.spec import TrafficJob

__all__ = [
    "DEFAULT_REWARD",
    "AgentController",
    "DQNTuning",
    "PPOTuning",
    "RewardFn",
    "TrainedAgent",
    "dqn_config",
    "ppo_config",
    "train_agent",
    "train_dqn",
    "train_ppo",
]

ProgressFn = Callable[[str, int, int], None]

DEFAULT_REWARD = "diff-waiting-time"
"""sumo-rl's default reward (change of the accumulated vehicle waiting time, pedestrians ignored)."""
TRAFFIC_AGENT_KEY = "traffic_agent"
"""Metadata key of a saved agent's name, scenario, timing and log in its policy file."""


@dataclass(frozen=True)
class DQNTuning:
    """The DQN settings the job spec does not set (the spec sets steps, widths, gamma and step size).

    The defaults are those measured with the spec's defaults (20,000 decisions, gamma 0.95, step
    size 1e-3, (64, 64)): n-step 3, a shorter exploration, observation normalisation and reward
    scales 0.01-0.03 were tried on the training seeds and were not better beyond seed-to-seed noise.

    Attributes:
        learning_starts: random (valid) decisions before learning (at most a fifth of the budget).
        buffer_size: replay capacity in decisions.
        batch_size: decisions per gradient update.
        tau: Polyak step of the target network per update.
        exploration_fraction: share of training over which epsilon decays from 1.
        epsilon_end: exploration rate after the decay.
        train_freq: vector steps (every signal of every simulation decides) per iteration.
        gradient_steps: gradient updates per iteration.
        reward_scale: factor on the rewards before learning (the fair reward is minus tens of
            queued road users: scaled to about unit size).
        n_step: decisions summed into each stored transition.
        normalize_obs: normalise observations with running statistics (they are already in [0, 1]).
        huber_delta: transition of the Huber loss.
    """

    learning_starts: int = 1_000
    buffer_size: int = 50_000
    batch_size: int = 64
    tau: float = 0.01
    exploration_fraction: float = 0.3
    epsilon_end: float = 0.02
    train_freq: int = 1
    gradient_steps: int = 1
    reward_scale: float = 0.1
    n_step: int = 1
    normalize_obs: bool = False
    huber_delta: float = 1.0


def dqn_config(job: TrafficJob, num_slots: int, tuning: DQNTuning | None = None) -> DQNConfig:
    """The core ``DQNConfig`` of a job's agent on ``num_slots`` slots (signals x simulations).

    Args:
        job: the job (``agent.env_steps``, ``hidden``, ``gamma``, ``learning_rate``).
        num_slots: the slots stepped together (the config's ``num_envs``).
        tuning: the other settings (default :class:`DQNTuning`).

    Returns:
        The config; ``learning_starts`` is capped at a fifth of ``env_steps``.
    """
    from decisions.core.agents.dqn import DQNConfig

    t = tuning or DQNTuning()
    a = job.agent
    steps = max(a.env_steps, 2 * num_slots * t.train_freq)
    learning_starts = max(num_slots, min(t.learning_starts, steps // 5))
    iterations = max(1, (steps - learning_starts) // (num_slots * t.train_freq))
    return DQNConfig(
        total_env_steps=steps, num_envs=num_slots, learning_starts=learning_starts,
        buffer_size=max(t.buffer_size, num_slots), batch_size=t.batch_size, gamma=a.gamma, n_step=t.n_step,
        train_freq=t.train_freq, gradient_steps=t.gradient_steps, learning_rate=a.learning_rate, tau=t.tau,
        hidden=tuple(a.hidden), normalize_obs=t.normalize_obs, reward_scale=t.reward_scale,
        exploration_fraction=t.exploration_fraction, epsilon_end=t.epsilon_end, huber_delta=t.huber_delta,
        log_every=max(1, iterations // 20),
    )  # fmt: skip


@dataclass(frozen=True)
class PPOTuning:
    """The PPO settings the job spec does not set (the spec sets steps, widths, gamma and step size).

    Attributes:
        rollout_steps: decisions per slot collected before each update (an hour at 5 s is 720).
        epochs: passes over each rollout.
        minibatches: minibatches per pass.
        clip_eps: clip range of the probability ratio.
        entropy_coef: weight of the entropy bonus.
        gae_lambda: GAE's bias/variance trade-off.
        normalize_obs: normalise observations with running statistics.
        normalize_rewards: scale rewards by the running std of the discounted return.
    """

    rollout_steps: int = 120
    epochs: int = 4
    minibatches: int = 4
    clip_eps: float = 0.2
    entropy_coef: float = 0.01
    gae_lambda: float = 0.95
    normalize_obs: bool = True
    normalize_rewards: bool = True


def ppo_config(job: TrafficJob, num_slots: int, tuning: PPOTuning | None = None) -> PPOConfig:
    """The core ``PPOConfig`` of a job's agent on ``num_slots`` slots (signals x simulations).

    Args:
        job: the job (``agent.env_steps``, ``hidden``, ``gamma``, ``learning_rate``).
        num_slots: the slots stepped together (the config's ``num_envs``).
        tuning: the other settings (default :class:`PPOTuning`).

    Returns:
        The config: at least one rollout, the step size decaying linearly.
    """
    from decisions.core.agents.ppo import PPOConfig

    t = tuning or PPOTuning()
    a = job.agent
    batch = num_slots * t.rollout_steps
    minibatches = t.minibatches if batch % t.minibatches == 0 else 1
    iterations = max(1, a.env_steps // batch)
    return PPOConfig(
        num_envs=num_slots, rollout_steps=t.rollout_steps, total_env_steps=iterations * batch, gamma=a.gamma,
        gae_lambda=t.gae_lambda, learning_rate=a.learning_rate, entropy_coef=t.entropy_coef,
        hidden=tuple(a.hidden), normalize_obs=t.normalize_obs, normalize_rewards=t.normalize_rewards,
        clip_eps=t.clip_eps, epochs=t.epochs, minibatches=minibatches, log_every=max(1, iterations // 20),
    )  # fmt: skip


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
        """Write the agent as the core's msgpack policy file, with its name, scenario, timing and log.

        ``dqn.load_policy`` (a DQN's) or ``onpolicy.load_policy`` (a PPO's) reads the file too (the
        extra fields are metadata).
        """
        from decisions.core.agents.offpolicy.io import POLICY_FORMAT as DQN_FORMAT
        from decisions.core.agents.onpolicy.io import write_policy
        from decisions.core.checkpoint import save_pytree

        log = {col: [_json_value(v) for v in self.log[col]] for col in self.log.columns}
        extra = {
            "name": self.name, "scenario": self.scenario, "pedestrians": self.pedestrians,
            "train_seconds": self.train_seconds, "sim_seconds": self.sim_seconds, "log": log,
            "max_green_s": self.max_green_s,
        }  # fmt: skip
        policy = self.policy
        if self.kind == "ppo":
            write_policy(path, policy, self.params, extra={TRAFFIC_AGENT_KEY: extra})
            return
        meta = {"format": DQN_FORMAT, "kind": policy.kind, "policy": policy.to_dict()}
        meta[TRAFFIC_AGENT_KEY] = extra
        save_pytree(path, self.params, metadata=meta)

    @classmethod
    def load(cls, path: str | Path) -> TrainedAgent:
        """Read an agent written by :meth:`save`.

        Raises:
            ValueError: the file is not a saved DQN or PPO policy, or not a traffic agent's.
        """
        import jax

        from decisions.core.agents import dqn
        from decisions.core.agents.onpolicy import io as onpolicy_io
        from decisions.core.checkpoint import load_metadata

        meta = load_metadata(path)
        ppo = meta.get("format") == onpolicy_io.POLICY_FORMAT
        policy, params = onpolicy_io.load_policy(path) if ppo else dqn.load_policy(path)
        extra = meta.get(TRAFFIC_AGENT_KEY)
        if not isinstance(extra, dict):
            raise ValueError(f"{path}: a policy, but not a traffic agent's (no {TRAFFIC_AGENT_KEY!r})")
        return cls(
            name=str(extra["name"]), scenario=str(extra["scenario"]), pedestrians=bool(extra["pedestrians"]),
            policy=policy, params=jax.tree.map(np.asarray, params), log=pd.DataFrame(extra["log"]),
            train_seconds=float(extra["train_seconds"]), sim_seconds=float(extra["sim_seconds"]),
            max_green_s=int(extra.get("max_green_s", 0)),
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

    Observations are sumo-rl's (``env.observations``, built by the same :class:`env.FairObservation`
    as in training), zero-padded to the policy's width; masks are :func:`env.action_masks` padded
    with False. The params are held as numpy arrays and the jitted policy is rebuilt lazily, so the
    controller pickles into a worker process.

    Args:
        policy: a ``dqn.DQNPolicy`` (greedy in Q) or an ``onpolicy.ActorCriticPolicy`` (argmax of
            the masked logits).
        params: its params.
        name: the controller's name in reports.
        max_green_s: the maximum green (s; 0: none) the policy was trained with.
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


def _episode_rows(metrics: dict[str, np.ndarray], steps: np.ndarray, losses: tuple[str, ...]) -> pd.DataFrame:
    """The per-iteration training curves reduced to one row per iteration where episodes finished.

    Args:
        metrics: the loop's per-iteration metrics (``episodes``, ``episode_return``, losses).
        steps: decisions taken by the end of each iteration.
        losses: metric names averaged since the previous row.
    """
    episodes = np.asarray(metrics["episodes"])
    rows, start = [], 0
    for end in np.flatnonzero(episodes > 0):
        row = {"env_steps": int(steps[end]), "episode_return": float(metrics["episode_return"][end])}
        for name in losses:
            if name in metrics:
                row[name] = float(np.mean(np.asarray(metrics[name])[start : end + 1]))
        rows.append(row)
        start = end + 1
    return pd.DataFrame(rows, columns=["env_steps", "episode_return", *losses])


def _with_episode_metrics(log: pd.DataFrame, metric_rows: list[dict[str, Any]]) -> pd.DataFrame:
    """``log`` with the recorded episodes' mean metrics beside it, row for row."""
    if not metric_rows:
        return log
    frame = pd.DataFrame(metric_rows).drop(columns=["seed"])
    per_episode = frame.groupby("episode").mean().reset_index(drop=True)
    n = min(len(log), len(per_episode))
    return pd.concat([log.iloc[:n].reset_index(drop=True), per_episode.iloc[:n]], axis=1)


def _read_metric_rows(workdir: Path, num_envs: int) -> list[dict[str, Any]]:
    rows = []
    for i in range(num_envs):
        path = Path(workdir) / f"env{i}" / "episodes.jsonl"
        if path.is_file():
            rows += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return rows


def _learn(
    algorithm: str, tuning: Any, job: TrafficJob, envs: MultiAgentVecEnv, key: Any, progress: Any
) -> tuple[TrainResult, pd.DataFrame]:
    """Train ``algorithm`` (``"dqn"`` or ``"ppo"``) on the slots; its result and its episode log."""
    if algorithm == "ppo":
        from decisions.core.agents.onpolicy.host_loop import train_agent_host
        from decisions.core.agents.ppo import PPOAgent

        ppo = ppo_config(job, envs.num_slots, tuning)
        agent = PPOAgent.for_shapes(ppo, obs_shape=(envs.obs_dim,), num_actions=envs.num_actions)
        result = train_agent_host(agent, envs, key=key, progress=progress)
        its = np.arange(1, len(np.asarray(result.metrics["episodes"])) + 1)
        losses = ("policy_loss", "value_loss", "entropy", "approx_kl")
        return result, _episode_rows(result.metrics, its * ppo.batch_size, losses)
    from decisions.core.agents import dqn
    from decisions.core.agents.offpolicy.host_loop import train_agent_host as train_off_policy

    config = dqn_config(job, envs.num_slots, tuning)
    agent = dqn.agent_for_shapes(config, obs_shape=(envs.obs_dim,), num_actions=envs.num_actions)
    result = train_off_policy(agent, envs, key=key, progress=progress)
    its = np.arange(1, len(np.asarray(result.metrics["episodes"])) + 1)
    steps = (config.n_step - 1 + config.prefill_steps + its * config.train_freq) * config.num_envs
    return result, _episode_rows(result.metrics, steps, ("q_loss", "q_mean", "epsilon"))


def _train(
    job: TrafficJob,
    scenario: str | Scenario,
    reward: RewardFn,
    algorithm: str,
    tuning: Any,
    *,
    pedestrians: bool,
    progress: ProgressFn | None,
    name: str,
    record_metrics: bool,
    workdir: Path | None,
    cache_dir: Path | None,
) -> TrainedAgent:
    """Train one agent on ``job.agent.num_envs`` SUMO processes (:func:`train_dqn`, :func:`train_ppo`)."""
    import jax

    from decisions.core.host_envs import SubprocessVecSlots

    start = time.perf_counter()
    scenario = get_scenario(scenario)
    steps = job.agent.steps_for(scenario.name)
    job = job.model_copy(update={"agent": job.agent.model_copy(update={"env_steps": steps})})
    network(scenario, pedestrians, cache_dir)  # build the pedestrian net once, before the processes
    d = job.demand
    demand = Demand(d.train_seeds[0], d.vehicle_scale, d.depart_jitter_s, d.ped_rate_per_hour)
    own_dir = workdir is None
    base = Path(tempfile.mkdtemp(prefix="traffic-train-")) if own_dir else Path(workdir)
    num_envs = job.agent.num_envs
    try:
        factories = slot_factories(
            scenario, reward, demand, d.train_seeds, num_envs=num_envs, pedestrians=pedestrians,
            seconds=job.scenarios.seconds, workdir=base, cache_dir=cache_dir, record_metrics=record_metrics,
            max_green_s=job.agent.max_green_s,
        )  # fmt: skip
        with SubprocessVecSlots(factories) as envs:
            task = f"{scenario.name}/{name} training"
            relay = None if progress is None else (lambda _task, done, total: progress(task, done, total))
            result, log = _learn(algorithm, tuning, job, envs, jax.random.PRNGKey(job.agent.seed), relay)
            num_slots = envs.num_slots
        rows = _read_metric_rows(base, num_envs) if record_metrics else []
        log = _with_episode_metrics(log, rows)
    finally:
        if own_dir:
            shutil.rmtree(base, ignore_errors=True)
    vector_steps = result.env_steps // num_slots
    sim_seconds = float(vector_steps * scenario.delta_time * num_envs)
    return TrainedAgent(
        name=name, scenario=scenario.name, pedestrians=pedestrians, policy=result.policy,
        params=jax.tree.map(np.asarray, result.params), log=log, train_seconds=time.perf_counter() - start,
        sim_seconds=sim_seconds, max_green_s=job.agent.max_green_s,
    )  # fmt: skip


def train_agent(
    job: TrafficJob,
    scenario: str | Scenario,
    reward: RewardFn,
    *,
    algorithm: str = "dqn",
    pedestrians: bool = True,
    progress: ProgressFn | None = None,
    name: str | None = None,
    tuning: DQNTuning | PPOTuning | None = None,
    record_metrics: bool = True,
    workdir: Path | None = None,
    cache_dir: Path | None = None,
) -> TrainedAgent:
    """Train the core DQN or PPO on a scenario's training demand, one network for every signal.

    ``job.agent.num_envs`` simulations run in spawned processes (``SubprocessVecSlots``), cycling
    through ``job.demand.train_seeds`` (:func:`slots.slot_factories`) with the job's pedestrian
    rate, vehicle scale and depart jitter, ``job.scenarios.seconds`` per episode, the action
    masks carrying ``job.agent.max_green_s``. DQN: the off-policy host loop; PPO: the on-policy
    host loop, ``PPOTuning.rollout_steps`` decisions per slot, then the masked PPO update.

    Args:
        job: the job (demand, episode length, agent settings, seed).
        scenario: a registered name or a :class:`scenarios.Scenario`.
        reward: sumo-rl ``reward_fn`` (``rewards.fair_reward(...)``, ``vehicle_only_reward()`` or
            :data:`DEFAULT_REWARD`).
        algorithm: ``"dqn"`` or ``"ppo"``.
        pedestrians: train on the pedestrian net and flows.
        progress: optional ``(task, done, total)`` callback (task ``"<scenario>/<name> training"``).
        name: the agent's name (default: the algorithm's).
        tuning: settings beyond the spec's (default :class:`DQNTuning` / :class:`PPOTuning`).
        record_metrics: log each training episode's metrics (read from SUMO's tripinfo).
        workdir: the simulations' files (default: a temporary directory, removed).
        cache_dir: pedestrian-net cache.

    Returns:
        The trained agent.

    Raises:
        ValueError: an unknown ``algorithm``.
    """
    if algorithm not in ("dqn", "ppo"):
        raise ValueError(f"algorithm: expected 'dqn' or 'ppo', got {algorithm!r}")
    return _train(
        job, scenario, reward, algorithm, tuning, pedestrians=pedestrians, progress=progress,
        name=name or algorithm, record_metrics=record_metrics, workdir=workdir, cache_dir=cache_dir,
    )  # fmt: skip


def train_dqn(job: TrafficJob, scenario: str | Scenario, reward: RewardFn, **options: Any) -> TrainedAgent:
    """:func:`train_agent` with the core DQN (same options)."""
    return train_agent(job, scenario, reward, algorithm="dqn", **options)


def train_ppo(job: TrafficJob, scenario: str | Scenario, reward: RewardFn, **options: Any) -> TrainedAgent:
    """:func:`train_agent` with the core PPO (same options)."""
    return train_agent(job, scenario, reward, algorithm="ppo", **options)

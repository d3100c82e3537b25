"""Learning signal agents: the core DQN and PPO trained on sumo-rl slots, and the trained controller."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from decisions.core.progress import Progress
from decisions.mobility.traffic.demand import Demand
from decisions.mobility.traffic.scenarios import Scenario, get_scenario, network
from decisions.mobility.traffic.slots import RewardFn, slot_factories
from decisions.mobility.traffic.trained import AgentController, TrainedAgent

if TYPE_CHECKING:
    from decisions.core.agents.common import TrainResult
    from decisions.core.agents.dqn import DQNConfig
    from decisions.core.agents.ppo import PPOConfig
    from decisions.core.host_envs import MultiAgentVecEnv
    from decisions.mobility.traffic.spec import AgentSettings, DemandSettings, TrafficJob

__all__ = [
    "DEFAULT_REWARD",
    "AgentController",
    "DQNTuning",
    "PPOTuning",
    "RewardFn",
    "TrainedAgent",
    "TrainingSettings",
    "dqn_config",
    "ppo_config",
    "train_agent",
    "train_dqn",
    "train_ppo",
]

DEFAULT_REWARD = "diff-waiting-time"
"""sumo-rl's default reward (change of the accumulated vehicle waiting time, pedestrians ignored)."""


@dataclass(frozen=True)
class DQNTuning:
    """The DQN settings the job spec does not set (the spec sets steps, widths, gamma and step size).

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


def dqn_config(agent: AgentSettings, num_slots: int, tuning: DQNTuning | None = None) -> DQNConfig:
    """The core ``DQNConfig`` of an agent on ``num_slots`` slots (signals x simulations).

    Args:
        agent: the agent settings (``env_steps``, ``hidden``, ``gamma``, ``learning_rate``).
        num_slots: the slots stepped together (the config's ``num_envs``).
        tuning: the other settings (default :class:`DQNTuning`).

    Returns:
        The config; ``learning_starts`` is capped at a fifth of ``env_steps``.
    """
    from decisions.core.agents.dqn import DQNConfig

    t = tuning or DQNTuning()
    a = agent
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


def ppo_config(agent: AgentSettings, num_slots: int, tuning: PPOTuning | None = None) -> PPOConfig:
    """The core ``PPOConfig`` of an agent on ``num_slots`` slots (signals x simulations), the arguments
    as ``dqn_config``'s (``tuning`` default :class:`PPOTuning`): at least one rollout, the step size
    decaying linearly."""
    from decisions.core.agents.ppo import PPOConfig

    t = tuning or PPOTuning()
    a = agent
    batch = num_slots * t.rollout_steps
    minibatches = t.minibatches if batch % t.minibatches == 0 else 1
    iterations = max(1, a.env_steps // batch)
    return PPOConfig(
        num_envs=num_slots, rollout_steps=t.rollout_steps, total_env_steps=iterations * batch, gamma=a.gamma,
        gae_lambda=t.gae_lambda, learning_rate=a.learning_rate, entropy_coef=t.entropy_coef,
        hidden=tuple(a.hidden), normalize_obs=t.normalize_obs, normalize_rewards=t.normalize_rewards,
        clip_eps=t.clip_eps, epochs=t.epochs, minibatches=minibatches, log_every=max(1, iterations // 20),
    )  # fmt: skip


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


@dataclass(frozen=True)
class TrainingSettings:
    """What training reads from a job: the agent, the training demand and the episode length.

    Attributes:
        agent: the agent's settings (steps, widths, gamma, step size, simulations, maximum green, seed).
        demand: the demand settings (``train_seeds``, pedestrian rate, vehicle scale, depart jitter).
        seconds: simulated seconds per episode (``None``: the scenario's window).
    """

    agent: AgentSettings
    demand: DemandSettings
    seconds: int | None = None

    @classmethod
    def of(cls, job: TrafficJob) -> TrainingSettings:
        """The training settings of a prepared job."""
        return cls(job.agent, job.demand, job.scenarios.seconds)


def _learn(
    algorithm: str, tuning: Any, settings: AgentSettings, envs: MultiAgentVecEnv, key: Any, progress: Any
) -> tuple[TrainResult, pd.DataFrame]:
    """Train ``algorithm`` (``"dqn"`` or ``"ppo"``) on the slots; its result and its episode log."""
    if algorithm == "ppo":
        from decisions.core.agents.onpolicy.host_loop import train_agent_host
        from decisions.core.agents.ppo import PPOAgent

        ppo = ppo_config(settings, envs.num_slots, tuning)
        agent = PPOAgent.for_shapes(ppo, obs_shape=(envs.obs_dim,), num_actions=envs.num_actions)
        result = train_agent_host(agent, envs, key=key, progress=progress)
        its = np.arange(1, len(np.asarray(result.metrics["episodes"])) + 1)
        losses = ("policy_loss", "value_loss", "entropy", "approx_kl")
        return result, _episode_rows(result.metrics, its * ppo.batch_size, losses)
    from decisions.core.agents import dqn
    from decisions.core.agents.offpolicy.host_loop import train_agent_host as train_off_policy

    config = dqn_config(settings, envs.num_slots, tuning)
    agent = dqn.agent_for_shapes(config, obs_shape=(envs.obs_dim,), num_actions=envs.num_actions)
    result = train_off_policy(agent, envs, key=key, progress=progress)
    its = np.arange(1, len(np.asarray(result.metrics["episodes"])) + 1)
    steps = (config.n_step - 1 + config.prefill_steps + its * config.train_freq) * config.num_envs
    return result, _episode_rows(result.metrics, steps, ("q_loss", "q_mean", "epsilon"))


def _train(
    settings: TrainingSettings,
    scenario: str | Scenario,
    reward: RewardFn,
    algorithm: str,
    tuning: Any,
    *,
    pedestrians: bool,
    progress: Progress | None,
    name: str,
    record_metrics: bool,
    workdir: Path | None,
    cache_dir: Path | None,
) -> TrainedAgent:
    """Train one agent on ``settings.agent.num_envs`` SUMO processes (:func:`train_agent`)."""
    import jax

    from decisions.core.host_envs import SubprocessVecSlots

    start = time.perf_counter()
    scenario = get_scenario(scenario)
    agent = settings.agent.model_copy(update={"env_steps": settings.agent.steps_for(scenario.name)})
    network(scenario, pedestrians, cache_dir)  # build the pedestrian net once, before the processes
    d = settings.demand
    demand = Demand(d.train_seeds[0], d.vehicle_scale, d.depart_jitter_s, d.ped_rate_per_hour)
    own_dir = workdir is None
    base = Path(tempfile.mkdtemp(prefix="traffic-train-")) if own_dir else Path(workdir)
    num_envs = agent.num_envs
    try:
        factories = slot_factories(
            scenario, reward, demand, d.train_seeds, num_envs=num_envs, pedestrians=pedestrians,
            seconds=settings.seconds, workdir=base, cache_dir=cache_dir, record_metrics=record_metrics,
            max_green_s=agent.max_green_s,
        )  # fmt: skip
        with SubprocessVecSlots(factories) as envs:
            task = f"{scenario.name}/{name} training"
            relay = None if progress is None else (lambda _task, done, total: progress(task, done, total))
            result, log = _learn(algorithm, tuning, agent, envs, jax.random.PRNGKey(agent.seed), relay)
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
        sim_seconds=sim_seconds, max_green_s=agent.max_green_s,
    )  # fmt: skip


def train_agent(
    settings: TrainingSettings,
    scenario: str | Scenario,
    reward: RewardFn,
    *,
    algorithm: str = "dqn",
    pedestrians: bool = True,
    progress: Progress | None = None,
    name: str | None = None,
    tuning: DQNTuning | PPOTuning | None = None,
    record_metrics: bool = True,
    workdir: Path | None = None,
    cache_dir: Path | None = None,
) -> TrainedAgent:
    """Train the core DQN or PPO on a scenario's training demand, one network shared by every signal.

    ``settings.agent.num_envs`` simulations run in spawned processes, cycling through
    ``demand.train_seeds`` (:func:`slots.slot_factories`); ``reward`` is a sumo-rl ``reward_fn`` or
    :data:`DEFAULT_REWARD`; ``tuning`` defaults to :class:`DQNTuning` / :class:`PPOTuning`;
    ``progress`` gets ``("<scenario>/<name> training", done, total)``; ``record_metrics`` logs each
    training episode's metrics; ``workdir`` (default: a temporary directory) holds the simulations'
    files. Raises ``ValueError`` for an ``algorithm`` other than ``"dqn"`` or ``"ppo"``.
    """
    if algorithm not in ("dqn", "ppo"):
        raise ValueError(f"algorithm: expected 'dqn' or 'ppo', got {algorithm!r}")
    return _train(
        settings, scenario, reward, algorithm, tuning, pedestrians=pedestrians, progress=progress,
        name=name or algorithm, record_metrics=record_metrics, workdir=workdir, cache_dir=cache_dir,
    )  # fmt: skip


def train_dqn(job: TrafficJob, scenario: str | Scenario, reward: RewardFn, **options: Any) -> TrainedAgent:
    """:func:`train_agent` with the core DQN on a job's training settings (same options)."""
    return train_agent(TrainingSettings.of(job), scenario, reward, algorithm="dqn", **options)


def train_ppo(job: TrafficJob, scenario: str | Scenario, reward: RewardFn, **options: Any) -> TrainedAgent:
    """:func:`train_agent` with the core PPO on a job's training settings (same options)."""
    return train_agent(TrainingSettings.of(job), scenario, reward, algorithm="ppo", **options)

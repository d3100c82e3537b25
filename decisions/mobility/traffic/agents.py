"""Learning signal agents: sumo-rl as host slots, the core DQN trained on them, and the trained controller.

- :class:`SumoSlots` is one sumo-rl simulation as a ``core.host_envs.MultiAgentVecEnv``: one slot
  per traffic signal, observations (:class:`env.FairObservation`) zero-padded to the widest
  signal's, masks from :func:`env.action_masks` padded with False. When the episode ends (sumo-rl
  reports ``__all__`` done at the end time: a truncation) it optionally appends the episode's
  metrics to a JSON-lines file, then starts the next episode on the next training demand seed of
  its cycle (a new :func:`env.prepare_episode` and environment per episode).
- :func:`train_dqn` trains the core DQN (``offpolicy.host_loop.train_agent_host`` with action
  masks) on ``agent.num_envs`` simulations, each in its own spawned process (libsumo: one
  simulation per process), one Q-network shared by every signal; it returns a :class:`TrainedAgent`.
- :class:`AgentController` plays a trained agent greedily among the valid actions as a
  :class:`controllers.Controller`, picklable so :func:`simulate.simulate_many` runs it in workers.

This module imports JAX only inside the functions that need it, so a spawned SUMO process starts
in a fraction of a second.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from decisions.errors import InputError
from decisions.mobility.traffic.control import BaseController
from decisions.mobility.traffic.demand import Demand
from decisions.mobility.traffic.env import action_masks, make_env, pending_depart_delays, prepare_episode
from decisions.mobility.traffic.metrics import episode_metrics
from decisions.mobility.traffic.scenarios import Scenario, get_scenario, network

if TYPE_CHECKING:
    from decisions.core.agents.dqn import DQNConfig, DQNPolicy
    from decisions.mobility.traffic.spec import TrafficJob

__all__ = [
    "DEFAULT_REWARD",
    "AgentController",
    "DQNTuning",
    "SlotSource",
    "SumoSlots",
    "TrainedAgent",
    "dqn_config",
    "slot_factories",
    "sumo_slots",
    "train_dqn",
]

ProgressFn = Callable[[str, int, int], None]
RewardFn = Callable[[Any], float] | str
"""A sumo-rl ``reward_fn``: a picklable callable of a ``TrafficSignal`` or the name of a built-in."""

DEFAULT_REWARD = "diff-waiting-time"
"""sumo-rl's default reward (change of the accumulated vehicle waiting time, pedestrians ignored)."""
TRAFFIC_AGENT_KEY = "traffic_agent"
"""Metadata key of a saved agent's name, scenario, timing and log in its policy file."""


@dataclass(frozen=True)
class SlotSource:
    """What one :class:`SumoSlots` simulates (picklable: sent to its process).

    Attributes:
        scenario: the scenario.
        reward: sumo-rl ``reward_fn`` of every signal.
        demand: the demand draw; its ``seed`` is replaced by each episode's seed.
        seeds: the demand seeds to cycle through.
        workdir: directory for the episodes' files (each episode's subfolder is removed after it).
        first: index in ``seeds`` of the first episode's seed.
        stride: step through ``seeds`` from one episode to the next.
        pedestrians: simulate the pedestrian net and flows.
        seconds: episode length (None: the scenario's window).
        cache_dir: pedestrian-net cache.
        metrics_file: append each finished episode's metrics here (JSON lines), or None.
    """

    scenario: Scenario
    reward: RewardFn
    demand: Demand
    seeds: tuple[int, ...]
    workdir: Path
    first: int = 0
    stride: int = 1
    pedestrians: bool = True
    seconds: int | None = None
    cache_dir: Path | None = None
    metrics_file: Path | None = None

    def seed(self, episode: int) -> int:
        """The demand seed of episode ``episode`` (0-based)."""
        return self.seeds[(self.first + episode * self.stride) % len(self.seeds)]


def _pad(x: np.ndarray, width: int, fill: Any) -> np.ndarray:
    out = np.full(width, fill, dtype=x.dtype)
    out[: x.shape[0]] = x
    return out


class SumoSlots:
    """One sumo-rl simulation as a ``MultiAgentVecEnv``: one slot per traffic signal.

    The first episode starts at construction (to read the signals, observation widths and action
    counts); ``reset`` hands it out, later calls start the next episode. Every slot acts at every
    step (sumo-rl's signals decide together every ``delta_time`` s). Rewards are each signal's
    sumo-rl ``reward_fn``. Episodes end by time only (``truncated``; never ``terminated``).
    Only one ``SumoSlots`` may run per process (libsumo).

    Args:
        source: what to simulate.

    Attributes:
        ts_ids: the signals, in slot order.
        num_slots: number of signals.
        obs_dim: widest observation.
        num_actions: most green phases of a signal.
        episode: episodes started so far.
    """

    def __init__(self, source: SlotSource) -> None:
        if not source.seeds:
            raise InputError("demand.train_seeds", "needs at least one demand seed")
        self.source = source
        self.episode = 0
        self._env: Any = None
        self._spec: Any = None
        self._fresh = self._start()
        env = self._env
        self.ts_ids: list[str] = list(env.ts_ids)
        self._dims = [int(env.traffic_signals[ts].observation_space.shape[0]) for ts in self.ts_ids]
        self._n = [int(env.traffic_signals[ts].num_green_phases) for ts in self.ts_ids]
        self.num_slots = len(self.ts_ids)
        self.obs_dim = max(self._dims)
        self.num_actions = max(self._n)

    def _start(self) -> dict[str, np.ndarray]:
        """Prepare and start the next episode; returns sumo-rl's first observations."""
        src = self.source
        seed = src.seed(self.episode)
        d = src.demand
        demand = Demand(seed, d.vehicle_scale, d.depart_jitter_s, d.ped_rate_per_hour)
        self._spec = prepare_episode(
            src.scenario, demand, Path(src.workdir) / f"episode-{self.episode}",
            pedestrians=src.pedestrians, seconds=src.seconds, cache_dir=src.cache_dir,
        )  # fmt: skip
        self._env = make_env(self._spec, reward=src.reward)
        self.episode += 1
        self._obs = dict(self._env.reset())
        return self._obs

    def _rows(self) -> tuple[np.ndarray, np.ndarray]:
        masks = action_masks(self._env)
        obs = np.stack([_pad(np.asarray(self._obs[ts], np.float32), self.obs_dim, 0.0) for ts in self.ts_ids])
        mask = np.stack([_pad(masks[ts], self.num_actions, False) for ts in self.ts_ids])
        return obs, mask

    def _finish(self, *, record: bool) -> None:
        """Close the running episode, record its metrics (when asked and ``record``) and remove its files."""
        src, spec, env = self.source, self._spec, self._env
        record = record and src.metrics_file is not None
        pending = pending_depart_delays(env) if record else []
        env.close()
        self._env = None
        if record:
            metrics = episode_metrics(spec.tripinfo, pending)
            row = {"episode": self.episode - 1, "seed": spec.demand.seed, **metrics}
            with Path(src.metrics_file).open("a") as fh:
                fh.write(json.dumps(row) + "\n")
        shutil.rmtree(spec.tripinfo.parent, ignore_errors=True)

    def reset(self, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """Start an episode (the seed is unused: demand seeds come from the source's cycle).

        Returns:
            ``(obs, mask)``: float32 ``(num_slots, obs_dim)`` and bool ``(num_slots, num_actions)``.
        """
        del seed
        if self._fresh is None:
            if self._env is not None:
                self._finish(record=False)
            self._start()
        self._fresh = None
        return self._rows()

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, ...]:
        """Act at every signal; on the episode's end, start the next one (module docstring).

        Args:
            actions: int ``(num_slots,)`` green-phase indices.

        Returns:
            ``(obs, mask, reward, terminated, truncated, final_obs, final_mask)`` (``host_envs.SlotStep``).
        """
        actions = np.asarray(actions)
        if actions.shape != (self.num_slots,):
            raise ValueError(f"actions: expected shape ({self.num_slots},), got {actions.shape}")
        for i, n in enumerate(self._n):
            if not 0 <= actions[i] < n:
                raise ValueError(f"actions: signal {self.ts_ids[i]} has {n} phases, got {actions[i]}")
        self._fresh = None
        act = {ts: int(a) for ts, a in zip(self.ts_ids, actions, strict=True)}
        obs, rewards, dones, _ = self._env.step(act)
        self._obs.update(obs)
        reward = np.asarray([rewards.get(ts, 0.0) for ts in self.ts_ids], np.float32)
        final_obs, final_mask = now_obs, now_mask = self._rows()
        ended = bool(dones["__all__"])
        if ended:
            self._finish(record=True)
            self._start()
            now_obs, now_mask = self._rows()
        truncated = np.full(self.num_slots, ended)
        terminated = np.zeros(self.num_slots, bool)
        return now_obs, now_mask, reward, terminated, truncated, final_obs, final_mask

    def close(self) -> None:
        """Close the running simulation (its metrics are not recorded: the episode is unfinished)."""
        if self._env is not None:
            self._finish(record=False)


def sumo_slots(source: SlotSource) -> SumoSlots:
    """A :class:`SumoSlots` (the picklable factory, with ``partial``, of ``SubprocessVecSlots``)."""
    return SumoSlots(source)


def slot_factories(
    scenario: Scenario,
    reward: RewardFn,
    demand: Demand,
    seeds: Sequence[int],
    *,
    num_envs: int,
    pedestrians: bool,
    seconds: int | None,
    workdir: Path,
    cache_dir: Path | None = None,
    record_metrics: bool = False,
) -> list[Callable[[], SumoSlots]]:
    """``num_envs`` picklable factories whose simulations share out the training seeds.

    Simulation ``i``'s ``k``-th episode uses ``seeds[(i + k * num_envs) % len(seeds)]``, so the
    simulations running together use distinct seeds and every seed comes round equally often.

    Args:
        scenario: the scenario.
        reward: sumo-rl ``reward_fn``.
        demand: the demand (its seed is replaced).
        seeds: the training demand seeds.
        num_envs: simulations (processes).
        pedestrians: simulate the pedestrian net and flows.
        seconds: episode length (None: the scenario's window).
        workdir: simulation ``i`` works in ``workdir/env<i>``.
        cache_dir: pedestrian-net cache.
        record_metrics: each simulation appends its episodes' metrics to ``workdir/env<i>/episodes.jsonl``.

    Returns:
        The factories (for ``core.host_envs.SubprocessVecSlots``).
    """
    factories = []
    for i in range(num_envs):
        folder = Path(workdir) / f"env{i}"
        source = SlotSource(
            scenario, reward, demand, tuple(int(s) for s in seeds), folder, first=i, stride=num_envs,
            pedestrians=pedestrians, seconds=seconds, cache_dir=cache_dir,
            metrics_file=folder / "episodes.jsonl" if record_metrics else None,
        )  # fmt: skip
        factories.append(partial(sumo_slots, source))
    return factories


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


@dataclass(frozen=True, eq=False)
class TrainedAgent:
    """A DQN trained on a scenario, with its training log and timing.

    Attributes:
        name: the agent's name in reports (``dqn_fair``, ``dqn_vehicle``, ...).
        scenario: the scenario's name.
        pedestrians: trained on the pedestrian net and flows.
        policy: the greedy policy (``dqn.DQNPolicy``; act through :class:`AgentController`).
        params: its params (numpy leaves: Q-network weights and observation statistics).
        log: one row per round of finished training episodes: ``env_steps`` (decisions so far),
            ``episode_return`` (mean over the slots), ``q_loss``, ``q_mean``, ``epsilon`` (means
            since the previous row) and, when recorded, the episodes' mean metrics
            (``veh_delay_mean``, ``ped_wait_p95``, ...).
        train_seconds: wall time of training (process start-up and compilation included).
        sim_seconds: simulated seconds of training, all simulations together.
    """

    name: str
    scenario: str
    pedestrians: bool
    policy: DQNPolicy
    params: Any
    log: pd.DataFrame
    train_seconds: float
    sim_seconds: float

    @property
    def sim_seconds_per_wall_second(self) -> float:
        """Simulated seconds of training per wall second."""
        return self.sim_seconds / self.train_seconds if self.train_seconds > 0 else math.nan

    def controller(self) -> AgentController:
        """The agent as a controller (greedy among the valid actions)."""
        return AgentController(self.policy, self.params, name=self.name)

    def save(self, path: str | Path) -> None:
        """Write the agent as the core's msgpack policy file, with its name, scenario, timing and log.

        ``dqn.load_policy`` reads the file too (the extra fields are metadata).
        """
        from decisions.core.agents.offpolicy.io import POLICY_FORMAT
        from decisions.core.checkpoint import save_pytree

        log = {col: [_json_value(v) for v in self.log[col]] for col in self.log.columns}
        extra = {
            "name": self.name, "scenario": self.scenario, "pedestrians": self.pedestrians,
            "train_seconds": self.train_seconds, "sim_seconds": self.sim_seconds, "log": log,
        }  # fmt: skip
        policy = self.policy
        meta = {"format": POLICY_FORMAT, "kind": policy.kind, "policy": policy.to_dict()}
        meta[TRAFFIC_AGENT_KEY] = extra
        save_pytree(path, self.params, metadata=meta)

    @classmethod
    def load(cls, path: str | Path) -> TrainedAgent:
        """Read an agent written by :meth:`save`.

        Raises:
            ValueError: the file is not a saved DQN policy, or not a traffic agent's.
        """
        import jax

        from decisions.core.agents.dqn import load_policy
        from decisions.core.checkpoint import load_metadata

        policy, params = load_policy(path)
        extra = load_metadata(path).get(TRAFFIC_AGENT_KEY)
        if not isinstance(extra, dict):
            raise ValueError(f"{path}: a DQN policy, but not a traffic agent's (no {TRAFFIC_AGENT_KEY!r})")
        return cls(
            name=str(extra["name"]), scenario=str(extra["scenario"]), pedestrians=bool(extra["pedestrians"]),
            policy=policy, params=jax.tree.map(np.asarray, params), log=pd.DataFrame(extra["log"]),
            train_seconds=float(extra["train_seconds"]), sim_seconds=float(extra["sim_seconds"]),
        )  # fmt: skip


def _json_value(v: Any) -> Any:
    if isinstance(v, np.integer | int):
        return int(v)
    return float(v)


class AgentController(BaseController):
    """A trained DQN as a controller: per signal, the greedy action among the valid ones.

    Observations are sumo-rl's (``env.observations``, built by the same :class:`env.FairObservation`
    as in training), zero-padded to the policy's width; masks are :func:`env.action_masks` padded
    with False. The params are held as numpy arrays and the jitted policy is rebuilt lazily, so the
    controller pickles into a worker process.

    Args:
        policy: a ``dqn.DQNPolicy``.
        params: its params.
        name: the controller's name in reports.
    """

    fixed_ts = False

    def __init__(self, policy: DQNPolicy, params: Any, name: str = "dqn") -> None:
        import jax

        self.name = name
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

        if self._device_params is None:
            self._device_params = jax.device_put(self.params)
        width, n = self.policy.obs_shape[0], self.policy.num_actions
        ids = list(env.ts_ids)
        masks = action_masks(env)
        for ts in ids:
            if len(env.observations[ts]) > width or len(masks[ts]) > n:
                problem = f"signal {ts} does not fit the agent ({width} inputs, {n} actions)"
                raise InputError("controller", problem)
        obs = np.stack([_pad(np.asarray(env.observations[ts], np.float32), width, 0.0) for ts in ids])
        mask = np.stack([_pad(masks[ts], n, False) for ts in ids])
        actions = greedy_actions(self.policy, self._device_params, obs, mask)
        return {ts: int(a) for ts, a in zip(ids, actions, strict=True)}


def _episode_log(
    metrics: dict[str, np.ndarray], config: DQNConfig, metric_rows: list[dict[str, Any]]
) -> pd.DataFrame:
    """The per-iteration training curves reduced to one row per round of finished episodes."""
    episodes = np.asarray(metrics["episodes"])
    its = np.arange(1, len(episodes) + 1)
    steps = (config.n_step - 1 + config.prefill_steps + its * config.train_freq) * config.num_envs
    rows, start = [], 0
    for end in np.flatnonzero(episodes > 0):
        row = {"env_steps": int(steps[end]), "episode_return": float(metrics["episode_return"][end])}
        for name in ("q_loss", "q_mean", "epsilon"):
            if name in metrics:
                row[name] = float(np.mean(np.asarray(metrics[name])[start : end + 1]))
        rows.append(row)
        start = end + 1
    log = pd.DataFrame(rows, columns=["env_steps", "episode_return", "q_loss", "q_mean", "epsilon"])
    if metric_rows:
        frame = pd.DataFrame(metric_rows).drop(columns=["seed"])
        per_episode = frame.groupby("episode").mean().reset_index(drop=True)
        n = min(len(log), len(per_episode))
        log = pd.concat([log.iloc[:n].reset_index(drop=True), per_episode.iloc[:n]], axis=1)
    return log


def _read_metric_rows(workdir: Path, num_envs: int) -> list[dict[str, Any]]:
    rows = []
    for i in range(num_envs):
        path = Path(workdir) / f"env{i}" / "episodes.jsonl"
        if path.is_file():
            rows += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return rows


def train_dqn(
    job: TrafficJob,
    scenario: str | Scenario,
    reward: RewardFn,
    *,
    pedestrians: bool = True,
    progress: ProgressFn | None = None,
    name: str = "dqn",
    tuning: DQNTuning | None = None,
    record_metrics: bool = True,
    workdir: Path | None = None,
    cache_dir: Path | None = None,
) -> TrainedAgent:
    """Train the core DQN on a scenario's training demand, one network for every signal.

    ``job.agent.num_envs`` simulations run in spawned processes (``SubprocessVecSlots``), cycling
    through ``job.demand.train_seeds`` (:func:`slot_factories`) with the job's pedestrian rate,
    vehicle scale and depart jitter, ``job.scenarios.seconds`` per episode.

    Args:
        job: the job (demand, episode length, agent settings, seed).
        scenario: a registered name or a :class:`scenarios.Scenario`.
        reward: sumo-rl ``reward_fn`` (``rewards.fair_reward(...)``, ``vehicle_only_reward()`` or
            :data:`DEFAULT_REWARD`).
        pedestrians: train on the pedestrian net and flows.
        progress: optional ``(task, done, total)`` callback (task ``"<scenario>/<name> training"``).
        name: the agent's name.
        tuning: DQN settings beyond the spec's (default :class:`DQNTuning`).
        record_metrics: log each training episode's metrics (read from SUMO's tripinfo).
        workdir: the simulations' files (default: a temporary directory, removed).
        cache_dir: pedestrian-net cache.

    Returns:
        The trained agent.
    """
    import jax

    from decisions.core.agents import dqn
    from decisions.core.agents.offpolicy.host_loop import train_agent_host
    from decisions.core.host_envs import SubprocessVecSlots

    start = time.perf_counter()
    scenario = get_scenario(scenario)
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
        )  # fmt: skip
        with SubprocessVecSlots(factories) as envs:
            config = dqn_config(job, envs.num_slots, tuning)
            agent = dqn.agent_for_shapes(config, obs_shape=(envs.obs_dim,), num_actions=envs.num_actions)
            task = f"{scenario.name}/{name} training"
            relay = None if progress is None else (lambda _task, done, total: progress(task, done, total))
            result = train_agent_host(agent, envs, key=jax.random.PRNGKey(job.agent.seed), progress=relay)
        rows = _read_metric_rows(base, num_envs) if record_metrics else []
        log = _episode_log(result.metrics, config, rows)
    finally:
        if own_dir:
            shutil.rmtree(base, ignore_errors=True)
    vector_steps = config.env_steps // config.num_envs
    sim_seconds = float(vector_steps * scenario.delta_time * num_envs)
    return TrainedAgent(
        name=name, scenario=scenario.name, pedestrians=pedestrians, policy=result.policy,
        params=jax.tree.map(np.asarray, result.params), log=log, train_seconds=time.perf_counter() - start,
        sim_seconds=sim_seconds,
    )  # fmt: skip

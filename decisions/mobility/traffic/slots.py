"""sumo-rl simulations as host slots for the core's agents."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from decisions.errors import InputError
from decisions.mobility.traffic.demand import Demand
from decisions.mobility.traffic.env import action_masks, make_env, pending_depart_delays, prepare_episode
from decisions.mobility.traffic.metrics import episode_metrics
from decisions.mobility.traffic.scenarios import Scenario

__all__ = ["RewardFn", "SlotSource", "SumoSlots", "pad_row", "slot_factories", "sumo_slots"]

RewardFn = Callable[[Any], float] | str
"""A sumo-rl ``reward_fn``: a picklable callable of a ``TrafficSignal`` or the name of a built-in."""


def pad_row(x: np.ndarray, width: int, fill: Any) -> np.ndarray:
    """``x`` (1-D) padded with ``fill`` to ``width`` entries."""
    out = np.full(width, fill, dtype=x.dtype)
    out[: x.shape[0]] = x
    return out


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
        max_green_s: the agents' maximum green (s; 0: none), applied through the action masks.
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
    max_green_s: int = 0

    def seed(self, episode: int) -> int:
        """The demand seed of episode ``episode`` (0-based)."""
        return self.seeds[(self.first + episode * self.stride) % len(self.seeds)]


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
        masks = action_masks(self._env, self.source.max_green_s)
        obs = np.stack(
            [pad_row(np.asarray(self._obs[ts], np.float32), self.obs_dim, 0.0) for ts in self.ts_ids]
        )
        mask = np.stack([pad_row(masks[ts], self.num_actions, False) for ts in self.ts_ids])
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
    max_green_s: int = 0,
) -> list[Callable[[], SumoSlots]]:
    """``num_envs`` picklable factories (for ``SubprocessVecSlots``) whose simulations share out ``seeds``.

    Simulation ``i``'s ``k``-th episode uses ``seeds[(i + k * num_envs) % len(seeds)]``, so the
    simulations running together use distinct seeds and every seed comes round equally often.
    Simulation ``i`` works in ``workdir/env<i>`` and, with ``record_metrics``, appends its episodes'
    metrics to ``episodes.jsonl`` there; ``seconds=None`` is the scenario's window; ``max_green_s``
    (0: none) reaches the action masks.
    """
    factories = []
    for i in range(num_envs):
        folder = Path(workdir) / f"env{i}"
        source = SlotSource(
            scenario, reward, demand, tuple(int(s) for s in seeds), folder, first=i, stride=num_envs,
            pedestrians=pedestrians, seconds=seconds, cache_dir=cache_dir,
            metrics_file=folder / "episodes.jsonl" if record_metrics else None, max_green_s=max_green_s,
        )  # fmt: skip
        factories.append(partial(sumo_slots, source))
    return factories

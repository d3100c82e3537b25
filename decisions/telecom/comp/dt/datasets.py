"""Offline CoMP trajectories per task (``OfflineDataset``), for the (Prompt-)DTs.

``generate_dataset`` rolls out behaviour policies for whole episodes (jitted, vmapped, in chunks);
``default_behaviours`` gives the usual mix (expert, noisy expert, max-SNR, top-2, random). One ``.npz``
per task, never pickled: ``obs`` ``(N, T, MAX_USERS, F)``, ``actions`` ``(N, T, MAX_USERS)`` (canonical
serving-set sizes), ``rewards`` and ``qoe`` ``(N, T)``, ``behaviour`` ``(N,)``, the masks, the task's
features and fields, and optionally ``baseline_rewards`` ``(N, T)`` for advantage conditioning.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

import jax
import numpy as np

from decisions.telecom.comp.policies.heuristics import SERVING_SET_POLICIES as POLICIES
from decisions.telecom.comp.policies.rollouts import (
    OBS_FEATURES,
    epsilon_noisy,
    policy_seed,
    rollout,
    task_policy,
)
from decisions.telecom.comp.sim.catalog import FEATURE_DIM, Task
from decisions.telecom.comp.sim.constants import MAX_CELLS, MAX_USERS

__all__ = [
    "ARRAYS",
    "OfflineDataset",
    "default_behaviours",
    "generate_dataset",
    "returns_to_go",
    "task_dataset",
]

CHUNK_EPISODES = 256
"""Episodes per jitted rollout call (bounds memory: 256 x 100 x 810 float32 = 83 MB)."""

ARRAYS: tuple[str, ...] = (
    "obs",
    "actions",
    "rewards",
    "qoe",
    "behaviour",
    "user_mask",
    "cell_mask",
    "task_features",
    "n_cells",
    "n_users",
    "scheduler",
    "layout_seed",
    "layout",
)
"""The arrays of a dataset file, in ``OfflineDataset`` field order."""
EPISODE_ARRAYS: tuple[str, ...] = ("obs", "actions", "rewards", "qoe", "behaviour", "baseline_rewards")
"""The arrays with one entry per episode (``baseline_rewards`` may be None)."""
OPTIONAL_ARRAYS: tuple[str, ...] = ("channel", "baseline_rewards")
"""Arrays a file may lack: ``channel`` (then ``"mobile_env"``) and ``baseline_rewards`` (then None)."""


@dataclass(frozen=True, eq=False)
class OfflineDataset:
    """Offline trajectories of one task (see the module docstring for every array)."""

    obs: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    qoe: np.ndarray
    behaviour: np.ndarray
    user_mask: np.ndarray
    cell_mask: np.ndarray
    task_features: np.ndarray
    n_cells: int
    n_users: int
    scheduler: str
    layout_seed: int
    layout: str = "random"
    channel: str = "mobile_env"
    baseline_rewards: np.ndarray | None = None

    def __post_init__(self) -> None:
        """Validate (see ``validate``)."""
        self.validate()

    @property
    def episodes(self) -> int:
        """Number of episodes ``N``."""
        return int(self.rewards.shape[0])

    @property
    def horizon(self) -> int:
        """Steps per episode ``T``."""
        return int(self.rewards.shape[1])

    @property
    def task(self) -> Task:
        """The task the data comes from."""
        return Task(self.n_cells, self.n_users, self.scheduler, self.layout_seed, self.layout, self.channel)

    def returns(self) -> np.ndarray:
        """``(N,)`` float64 undiscounted episode returns."""
        return self.rewards.astype(np.float64).sum(axis=1)

    def returns_to_go(self, gamma: float = 1.0) -> np.ndarray:
        """``(N, T)`` float32 returns-to-go of ``rewards``."""
        return returns_to_go(self.rewards, gamma)

    def select(self, behaviour: str) -> OfflineDataset:
        """The episodes of one behaviour policy."""
        return self.take(np.flatnonzero(self.behaviour == behaviour))

    def take(self, episodes: np.ndarray | Sequence[int]) -> OfflineDataset:
        """The given episodes (indices into the first axis), in that order."""
        index = np.asarray(episodes, dtype=np.int64)
        arrays = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in EPISODE_ARRAYS:
            if arrays[name] is not None:
                arrays[name] = arrays[name][index]
        return OfflineDataset(**arrays)

    def advantage_view(self) -> OfflineDataset:
        """The dataset with each reward replaced by its gain over ``baseline_rewards`` in the same state
        (what an advantage-conditioned model learns from; ``ValueError`` without them)."""
        if self.baseline_rewards is None:
            raise ValueError("baseline_rewards: this dataset was recorded without a baseline")
        return replace(self, rewards=(self.rewards - self.baseline_rewards).astype(np.float32))

    def validate(self) -> None:
        """Check every array's type, shape and dtype and the task (``ValueError("<array>: ...")``)."""

        def arr(name: str, ndim: int, kind: str) -> np.ndarray:
            value = getattr(self, name)
            if not isinstance(value, np.ndarray):
                raise ValueError(f"{name}: must be a numpy array, got {type(value).__name__}")
            if value.ndim != ndim:
                raise ValueError(f"{name}: must have {ndim} dimensions, got shape {value.shape}")
            if value.dtype.kind != kind or (kind in "fi" and value.dtype.itemsize != 4):
                want = {"f": "float32", "i": "int32", "b": "bool", "U": "unicode"}[kind]
                raise ValueError(f"{name}: must be {want}, got {value.dtype}")
            return value

        obs = arr("obs", 4, "f")
        n, t = obs.shape[:2]
        if obs.shape[2:] != (MAX_USERS, OBS_FEATURES):
            raise ValueError(f"obs: expected shape (N, T, {MAX_USERS}, {OBS_FEATURES}), got {obs.shape}")
        expected = {
            "actions": (n, t, MAX_USERS),
            "rewards": (n, t),
            "qoe": (n, t),
            "behaviour": (n,),
            "user_mask": (MAX_USERS,),
            "cell_mask": (MAX_CELLS,),
            "task_features": (FEATURE_DIM,),
        }
        kinds = {
            "actions": "i",
            "rewards": "f",
            "qoe": "f",
            "behaviour": "U",
            "user_mask": "b",
            "cell_mask": "b",
        }
        kinds["task_features"] = "f"
        for name, shape in expected.items():
            value = arr(name, len(shape), kinds[name])
            if value.shape != shape:
                raise ValueError(f"{name}: expected shape {shape}, got {value.shape}")
        if self.baseline_rewards is not None:
            value = arr("baseline_rewards", 2, "f")
            if value.shape != (n, t) or not np.isfinite(value).all():
                raise ValueError(f"baseline_rewards: expected finite values of shape {(n, t)}, got {value.shape}")
        if self.actions.size and (self.actions.min() < 0 or self.actions.max() > MAX_CELLS):
            raise ValueError(f"actions: must lie in [0, {MAX_CELLS}]")
        for name in ("rewards", "qoe", "obs"):
            if not np.isfinite(getattr(self, name)).all():
                raise ValueError(f"{name}: must be finite")
        try:
            task = self.task
        except ValueError as err:  # a bad scalar: the message names it
            raise ValueError(str(err)) from None
        if not np.array_equal(self.user_mask, np.arange(MAX_USERS) < task.n_users):
            raise ValueError(f"user_mask: does not match n_users = {task.n_users}")
        if not np.array_equal(self.cell_mask, np.arange(MAX_CELLS) < task.n_cells):
            raise ValueError(f"cell_mask: does not match n_cells = {task.n_cells}")
        if not np.allclose(self.task_features, task.features()):
            raise ValueError("task_features: do not match the task")

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the dataset as one compressed ``.npz`` file (numpy arrays only, no pickle)."""
        arrays = {name: np.asarray(getattr(self, name)) for name in ARRAYS}
        arrays["scheduler"] = np.asarray(self.scheduler, dtype=np.str_)
        arrays["layout"] = np.asarray(self.layout, dtype=np.str_)
        arrays["channel"] = np.asarray(self.channel, dtype=np.str_)
        if self.baseline_rewards is not None:
            arrays["baseline_rewards"] = np.asarray(self.baseline_rewards, np.float32)
        arrays["n_cells"] = np.asarray(self.n_cells, np.int64)
        arrays["n_users"] = np.asarray(self.n_users, np.int64)
        arrays["layout_seed"] = np.asarray(self.layout_seed, np.int64)
        with open(path, "wb") as f:
            np.savez_compressed(f, **arrays)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> OfflineDataset:
        """Read and validate a file written by ``save`` (never pickled; ``ValueError("<array>: ...")``)."""
        with np.load(path, allow_pickle=False) as data:
            present = set(data.files)
            for name in ARRAYS:
                if name not in present:
                    raise ValueError(f"{name}: missing from {os.fspath(path)}")
            arrays = {}
            optional = [name for name in OPTIONAL_ARRAYS if name in present]  # absent from files written before them
            for name in (*ARRAYS, *optional):
                try:
                    arrays[name] = data[name]
                except ValueError as err:  # e.g. an object array, which would need pickle
                    raise ValueError(f"{name}: unreadable without pickle ({err})") from None
        scalars: dict[str, Any] = {}
        for name in ("n_cells", "n_users", "layout_seed"):
            value = arrays.pop(name)
            if value.shape != () or value.dtype.kind not in "iu":
                raise ValueError(f"{name}: must be an integer scalar, got {value.dtype} {value.shape}")
            scalars[name] = int(value)
        for name in ("scheduler", "layout", "channel"):
            if name not in arrays:
                continue
            value = arrays.pop(name)
            if value.shape != () or value.dtype.kind != "U":
                raise ValueError(f"{name}: must be a unicode scalar, got {value.dtype} {value.shape}")
            scalars[name] = str(value)
        return cls(**arrays, **scalars)


def returns_to_go(rewards: np.ndarray, gamma: float = 1.0) -> np.ndarray:
    """float32 returns-to-go along the last axis, ``sum_{k >= t} gamma^(k - t) rewards[..., k]``."""
    r = np.asarray(rewards, np.float64)
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma: must be in [0, 1], got {gamma!r}")
    if gamma == 1.0:
        return np.flip(np.cumsum(np.flip(r, -1), -1), -1).astype(np.float32)
    out = np.empty_like(r)
    acc = np.zeros(r.shape[:-1])
    for t in range(r.shape[-1] - 1, -1, -1):
        acc = r[..., t] + gamma * acc
        out[..., t] = acc
    return out.astype(np.float32)


def default_behaviours(expert: Any = None, *, epsilon: float = 0.3) -> dict[str, Any]:
    """The usual behaviour mix: ``expert`` and ``expert_eps<epsilon>`` (if an expert is given),
    ``max_snr``, ``top2``, ``random`` and ``max_snr_eps<epsilon>``.
    """
    out: dict[str, Any] = {}
    if expert is not None:
        out["expert"] = task_policy(expert)
        out[f"expert_eps{epsilon:g}"] = epsilon_noisy(expert, epsilon)
    out["max_snr"] = POLICIES["max_snr"]
    out["top2"] = POLICIES["top2"]
    out["random"] = POLICIES["random"]
    out[f"max_snr_eps{epsilon:g}"] = epsilon_noisy(POLICIES["max_snr"], epsilon)
    return out


def generate_dataset(
    task: Task,
    policies: Mapping[str, Any],
    episodes_per_policy: int | Mapping[str, int],
    seed: int = 0,
    baseline: Any = None,
) -> OfflineDataset:
    """The ``OfflineDataset`` of every behaviour policy on ``task``, ``episodes_per_policy`` whole
    episodes each (grouped by policy); episode keys derive from ``seed`` and the policy's name."""
    if not policies:
        raise ValueError("policies: need at least one behaviour policy")
    counts = (
        dict(episodes_per_policy)
        if isinstance(episodes_per_policy, Mapping)
        else dict.fromkeys(policies, episodes_per_policy)
    )
    for name in policies:
        n = counts.get(name)
        if n is None or isinstance(n, bool) or int(n) != n or n < 1:
            raise ValueError(f"episodes_per_policy: must be a positive integer for {name!r}, got {n!r}")
    net = task.params()
    base = jax.random.PRNGKey(seed)
    parts: dict[str, list[np.ndarray]] = {"obs": [], "actions": [], "rewards": [], "qoe": [], "baseline": []}
    names: list[str] = []
    for name, policy in policies.items():
        n = int(counts[name])
        keys = jax.random.split(jax.random.fold_in(base, policy_seed(name)), n)
        for start in range(0, n, CHUNK_EPISODES):
            out = rollout(net, policy, keys[start : start + CHUNK_EPISODES], record=True, baseline=baseline)
            n, t = out["reward"].shape
            parts["obs"].append(out["obs"].reshape(n, t, MAX_USERS, OBS_FEATURES).astype(np.float32))
            parts["actions"].append(out["action"])
            parts["rewards"].append(out["reward"])
            parts["qoe"].append(out["qoe"])
            parts["baseline"].append(out.get("baseline_reward"))
        names += [name] * n
    return task_dataset(
        task, np.concatenate(parts["obs"]), np.concatenate(parts["actions"]), np.concatenate(parts["rewards"]),
        np.concatenate(parts["qoe"]), names, None if baseline is None else np.concatenate(parts["baseline"]),
    )


def task_dataset(
    task: Task,
    obs: np.ndarray,
    actions: np.ndarray,
    rewards: np.ndarray,
    qoe: np.ndarray,
    behaviour: Sequence[str],
    baseline_rewards: np.ndarray | None = None,
) -> OfflineDataset:
    """An ``OfflineDataset`` of ``task`` from its episode arrays (module docstring; ``obs`` as
    ``(N, T, MAX_USERS, F)`` or flat ``(N, T, MAX_USERS * F)``), each episode's behaviour name and
    optionally the baseline's rewards in the same states."""
    net = task.params()
    n, t = np.shape(rewards)
    return OfflineDataset(
        obs=np.asarray(obs, np.float32).reshape(n, t, MAX_USERS, OBS_FEATURES),
        actions=np.asarray(actions, np.int32),
        rewards=np.asarray(rewards, np.float32),
        qoe=np.asarray(qoe, np.float32),
        behaviour=np.asarray(list(behaviour), dtype=np.str_),
        user_mask=np.asarray(net.user_mask, bool),
        cell_mask=np.asarray(net.cell_mask, bool),
        task_features=task.features(),
        n_cells=task.n_cells,
        n_users=task.n_users,
        scheduler=task.scheduler,
        layout_seed=task.layout_seed,
        layout=task.layout,
        channel=task.channel,
        baseline_rewards=None if baseline_rewards is None else np.asarray(baseline_rewards, np.float32),
    )

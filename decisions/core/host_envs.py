"""Host environments for the host loops: simulators outside JAX, numpy in and out.

``MultiAgentVecEnv`` is the protocol (slots stepped together, auto-reset, action masks), with the
checks and ``EpisodeTracker`` the loops use; ``GymVecSlots`` and ``SubprocessVecSlots`` adapt
gymnasium environments and per-process simulators. No JAX import, so spawned processes start fast.
"""

from __future__ import annotations

import multiprocessing
import traceback
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol, runtime_checkable

import gymnasium
import numpy as np

__all__ = [
    "EpisodeTracker",
    "GymVecSlots",
    "MultiAgentVecEnv",
    "SlotStep",
    "SubprocessVecSlots",
    "check_mask",
    "check_obs",
    "check_sizes",
    "check_step",
    "run_episodes",
]

class SlotStep(NamedTuple):
    """What ``MultiAgentVecEnv.step`` returns (any 7-tuple in this order is accepted)."""

    obs: np.ndarray  # (slots, obs_dim) float32, next observations; a new episode's first where one ended
    mask: np.ndarray  # (slots, num_actions) bool, actions valid in ``obs``
    reward: np.ndarray  # (slots,) float32
    terminated: np.ndarray  # (slots,) bool, a terminal state was reached (no bootstrap)
    truncated: np.ndarray  # (slots,) bool, the episode was cut (bootstraps from ``final_obs``)
    final_obs: np.ndarray  # (slots, obs_dim) float32, the observation the step produced (== obs where no episode ended)
    final_mask: np.ndarray  # (slots, num_actions) bool, actions valid in ``final_obs`` (== mask where no episode ended)


@runtime_checkable
class MultiAgentVecEnv(Protocol):
    """Host environments as ``num_slots`` slots stepped together (gymnasium vector-env semantics).

    A slot is one controlled agent of one environment copy; observations are padded to
    ``obs_dim``, actions to ``num_actions`` (padded ones invalid in the masks). Every slot acts
    at every step; an ended episode is reset in the same ``step``, the finished step's
    observation and mask in ``final_obs`` / ``final_mask``.
    """

    num_slots: int
    obs_dim: int
    num_actions: int

    def reset(self, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """Start every slot's episode from ``seed``; ``(obs, mask)``, float32 and bool rows per slot."""
        ...

    def step(self, actions: np.ndarray) -> SlotStep:
        """Act in every slot (``actions``: int ``(slots,)`` action indices), auto-resetting ended episodes."""
        ...

    def close(self) -> None:
        """Release the simulators."""
        ...


def check_sizes(
    envs: MultiAgentVecEnv, *, num_envs: int, obs_shape: tuple[int, ...], num_actions: int | None
) -> None:
    """Check that an agent built for ``num_envs`` slots, ``obs_shape`` and ``num_actions`` (None:
    unchecked) fits ``envs``.

    Raises:
        ValueError: a size differs (the message starts with the field's name).
    """
    if num_envs != envs.num_slots:
        raise ValueError(f"num_envs: the config has {num_envs}, the environments have {envs.num_slots} slots")
    if tuple(obs_shape) != (envs.obs_dim,):
        raise ValueError(f"obs_shape: the agent's is {obs_shape}, the environments' ({envs.obs_dim},)")
    if num_actions is not None and num_actions != envs.num_actions:
        raise ValueError(f"num_actions: the agent has {num_actions}, the environments' masks {envs.num_actions}")


def check_obs(name: str, x: Any, envs: MultiAgentVecEnv) -> np.ndarray:
    """``x`` as float32 ``(slots, obs_dim)`` observations; ``ValueError`` (naming ``name``) on another shape."""
    x = np.asarray(x)
    if x.shape != (envs.num_slots, envs.obs_dim):
        raise ValueError(f"{name}: expected shape (slots, obs_dim) = {(envs.num_slots, envs.obs_dim)}, got {x.shape}")
    return x.astype(np.float32, copy=False)


def check_mask(name: str, x: Any, envs: MultiAgentVecEnv, *, acting: bool) -> np.ndarray:
    """``x`` as a bool ``(slots, num_actions)`` mask; ``ValueError`` on another shape or dtype.

    With ``acting``, also on a slot without a valid action.
    """
    x = np.asarray(x)
    if x.shape != (envs.num_slots, envs.num_actions):
        shape = (envs.num_slots, envs.num_actions)
        raise ValueError(f"{name}: expected shape (slots, num_actions) = {shape}, got {x.shape}")
    if x.dtype != np.bool_:
        raise ValueError(f"{name}: must be a bool array, got {x.dtype}")
    if acting and not x.any(axis=1).all():
        raise ValueError(f"{name}: slots {np.flatnonzero(~x.any(axis=1)).tolist()} have no valid action")
    return x


def check_step(out: Any, envs: MultiAgentVecEnv, masked: bool) -> SlotStep:
    """What ``envs.step`` returned as a checked ``SlotStep``; with ``masked`` every slot needs a
    valid next action.

    Raises:
        ValueError: a field is missing or has the wrong shape or dtype (the message names it).
    """
    if len(out) != len(SlotStep._fields):
        raise ValueError(f"step: must return {len(SlotStep._fields)} arrays {SlotStep._fields}, got {len(out)}")
    out = SlotStep(*out)
    flags = {}
    for name in ("reward", "terminated", "truncated"):
        x = np.asarray(getattr(out, name))
        if x.shape != (envs.num_slots,):
            raise ValueError(f"step {name}: expected shape (slots,) = {(envs.num_slots,)}, got {x.shape}")
        flags[name] = x.astype(np.float32 if name == "reward" else np.bool_, copy=False)
    return SlotStep(
        obs=check_obs("step obs", out.obs, envs),
        mask=check_mask("step mask", out.mask, envs, acting=masked),
        final_obs=check_obs("step final_obs", out.final_obs, envs),
        final_mask=check_mask("step final_mask", out.final_mask, envs, acting=False),
        **flags,
    )


class EpisodeTracker:
    """Undiscounted return and length of each slot's running episode, handed back when it ends."""

    def __init__(self, num_slots: int) -> None:
        self.returns = np.zeros(num_slots, np.float32)
        self.lengths = np.zeros(num_slots, np.int32)

    def step(self, reward: np.ndarray, done: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Add one vector step's rewards; returns ``(returns, lengths)`` of the episodes that ended (``done``)."""
        self.returns = self.returns + reward
        self.lengths = self.lengths + 1
        ended = self.returns[done], self.lengths[done]
        self.returns = np.where(done, np.float32(0), self.returns)
        self.lengths = np.where(done, np.int32(0), self.lengths)
        return ended


def run_episodes(
    envs: MultiAgentVecEnv,
    act: Callable[[np.ndarray, np.ndarray], Any],
    *,
    seed: int,
    episodes_per_slot: int = 1,
    max_steps: int = 100_000,
) -> np.ndarray:
    """float64 ``(slots, episodes_per_slot)`` undiscounted returns of each slot's first episodes under
    ``act(obs, mask) -> actions``; NaN for those unfinished after ``max_steps`` vector steps."""
    obs, mask = envs.reset(seed)
    returns = np.full((envs.num_slots, episodes_per_slot), np.nan)
    running, count = np.zeros(envs.num_slots), np.zeros(envs.num_slots, np.int64)
    for _ in range(max_steps):
        if np.all(count >= episodes_per_slot):
            break
        out = SlotStep(*envs.step(np.asarray(act(obs, mask))))
        running += out.reward
        for slot in np.flatnonzero(out.terminated | out.truncated):
            if count[slot] < episodes_per_slot:
                returns[slot, count[slot]] = running[slot]
            count[slot] += 1
            running[slot] = 0.0
        obs, mask = out.obs, out.mask
    return returns


def _pad(x: np.ndarray, width: int, fill: Any) -> np.ndarray:
    """``x`` ``(..., w)`` padded with ``fill`` to ``(..., width)``."""
    pad = np.full((*x.shape[:-1], width - x.shape[-1]), fill, x.dtype)
    return np.concatenate([x, pad], axis=-1)


class GymVecSlots:
    """Gymnasium environments with ``Discrete`` actions in this process as a ``MultiAgentVecEnv``,
    one slot each: observations flattened and zero-padded, action ``i`` is ``start + i``, masked
    by ``info["action_mask"]`` where given.

    Raises:
        ValueError: no environment, or an action space that is not ``Discrete``.
    """

    def __init__(self, envs: gymnasium.Env | Sequence[gymnasium.Env]) -> None:
        self.envs = [envs] if isinstance(envs, gymnasium.Env) else list(envs)
        if not self.envs:
            raise ValueError("envs: needs at least one environment")
        for env in self.envs:
            if not isinstance(env.action_space, gymnasium.spaces.Discrete):
                raise ValueError(f"envs: needs Discrete action spaces, got {env.action_space}")
        self._n = [int(env.action_space.n) for env in self.envs]
        self.num_slots = len(self.envs)
        self.obs_dim = max(gymnasium.spaces.flatdim(env.observation_space) for env in self.envs)
        self.num_actions = max(self._n)

    @classmethod
    def make(cls, env_id: str, **kwargs: Any) -> GymVecSlots:
        """One ``gymnasium.make(env_id, **kwargs)`` environment (a picklable factory with ``partial``)."""
        return cls(gymnasium.make(env_id, **kwargs))

    def _row(self, slot: int, obs: Any, info: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        env, n = self.envs[slot], self._n[slot]
        flat = np.asarray(gymnasium.spaces.flatten(env.observation_space, obs), np.float32)
        mask = np.zeros(self.num_actions, bool)
        mask[:n] = np.asarray(info["action_mask"], bool) if "action_mask" in info else True
        return _pad(flat, self.obs_dim, 0.0), mask

    def reset(self, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """Reset environment ``i`` with ``seed + i``; returns ``(obs, mask)``."""
        rows = [self._row(i, *env.reset(seed=seed + i)) for i, env in enumerate(self.envs)]
        return np.stack([r[0] for r in rows]), np.stack([r[1] for r in rows])

    def step(self, actions: np.ndarray) -> SlotStep:
        """Step every environment with its action index, resetting those whose episode ended."""
        actions = np.asarray(actions)
        if actions.shape != (self.num_slots,):
            raise ValueError(f"actions: expected shape ({self.num_slots},), got {actions.shape}")
        fields: list[tuple[Any, ...]] = []
        for i, env in enumerate(self.envs):
            if not 0 <= actions[i] < self._n[i]:
                raise ValueError(f"actions: slot {i} has {self._n[i]} actions, got {actions[i]}")
            obs, reward, terminated, truncated, info = env.step(int(env.action_space.start) + int(actions[i]))
            final_obs, final_mask = now_obs, now_mask = self._row(i, obs, info)
            if terminated or truncated:
                now_obs, now_mask = self._row(i, *env.reset())
            fields.append((now_obs, now_mask, reward, terminated, truncated, final_obs, final_mask))
        obs, mask, reward, terminated, truncated, final_obs, final_mask = zip(*fields, strict=True)
        return SlotStep(
            np.stack(obs), np.stack(mask), np.asarray(reward, np.float32), np.asarray(terminated, bool),
            np.asarray(truncated, bool), np.stack(final_obs), np.stack(final_mask),
        )

    def close(self) -> None:
        """Close every environment."""
        for env in self.envs:
            env.close()


def _worker(conn: Any, make_env: Callable[[], MultiAgentVecEnv]) -> None:
    """A ``SubprocessVecSlots`` process: build the environment, send its sizes, then serve method calls."""
    try:
        env = make_env()
        conn.send((True, (env.num_slots, env.obs_dim, env.num_actions)))
        while True:
            method, args = conn.recv()
            try:
                conn.send((True, tuple(getattr(env, method)(*args) or ())))
            except Exception:  # reported to the parent, which raises
                conn.send((False, traceback.format_exc()))
            if method == "close":
                return
    except Exception:
        conn.send((False, traceback.format_exc()))
    finally:
        conn.close()


class SubprocessVecSlots:
    """Picklable ``MultiAgentVecEnv`` factories each run in a spawned process, stepped in parallel.

    The slots are the factories' in order, padded to the widest; part ``j`` resets with
    ``seed`` + its first slot. Use it as a context manager or call ``close``.

    Raises:
        RuntimeError: a process failed (its traceback in the message).
    """

    def __init__(self, make_env_fns: Sequence[Callable[[], MultiAgentVecEnv]]) -> None:
        context = multiprocessing.get_context("spawn")
        self._conns, self._procs = [], []
        for make_env in make_env_fns:
            parent, child = context.Pipe()
            proc = context.Process(target=_worker, args=(child, make_env), daemon=True)
            proc.start()
            child.close()
            self._conns.append(parent)
            self._procs.append(proc)
        try:
            sizes = [self._receive(i) for i in range(len(self._conns))]
        except Exception:
            self.close()
            raise
        slots = [s[0] for s in sizes]
        self._first = np.cumsum([0, *slots])
        self.num_slots = int(self._first[-1])
        self.obs_dim = max(s[1] for s in sizes)
        self.num_actions = max(s[2] for s in sizes)

    def _receive(self, i: int) -> Any:
        try:
            ok, value = self._conns[i].recv()
        except (EOFError, OSError) as error:
            self._procs[i].join(timeout=5)
            code = self._procs[i].exitcode
            raise RuntimeError(f"environment process {i} ended without answering (exit code {code})") from error
        if not ok:
            raise RuntimeError(f"environment process {i} failed:\n{value}")
        return value

    def _call(self, method: str, args: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        for conn, a in zip(self._conns, args, strict=True):
            conn.send((method, a))
        return [self._receive(i) for i in range(len(self._conns))]

    def _widen(self, parts: list[tuple[Any, ...]]) -> list[np.ndarray]:
        """Concatenate the parts' arrays field by field, padding observations and masks."""
        out = []
        for field in zip(*parts, strict=True):
            arrays = [np.asarray(x) for x in field]
            if arrays[0].ndim == 2:
                width = self.obs_dim if arrays[0].dtype != np.bool_ else self.num_actions
                arrays = [_pad(x, width, x.dtype.type(0)) for x in arrays]
            out.append(np.concatenate(arrays))
        return out

    def reset(self, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """Reset every part (part ``j`` with ``seed`` + its first slot); returns ``(obs, mask)``."""
        obs, mask = self._widen(self._call("reset", [(seed + int(f),) for f in self._first[:-1]]))
        return obs, mask

    def step(self, actions: np.ndarray) -> SlotStep:
        """Send each part its slots' actions, then gather the results."""
        actions = np.asarray(actions)
        if actions.shape != (self.num_slots,):
            raise ValueError(f"actions: expected shape ({self.num_slots},), got {actions.shape}")
        parts = [(actions[a:b],) for a, b in zip(self._first[:-1], self._first[1:], strict=True)]
        return SlotStep(*self._widen(self._call("step", parts)))

    def close(self) -> None:
        """Close the environments and end the processes, all at once (idempotent)."""
        for conn, proc in zip(self._conns, self._procs, strict=True):
            try:
                if proc.is_alive():
                    conn.send(("close", ()))
            except OSError:
                pass
        for conn, proc in zip(self._conns, self._procs, strict=True):
            try:
                if proc.is_alive():
                    conn.recv()
            except (OSError, EOFError):
                pass
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
            conn.close()
        self._conns, self._procs = [], []

    def __enter__(self) -> SubprocessVecSlots:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

"""Experience replay for off-policy agents: a jittable circular buffer and n-step transitions.

- ``ReplayBuffer``: a fixed-capacity circular buffer of any pytree of arrays (a
  ``flax.struct`` dataclass, so it is carried through ``lax.scan``, vmapped over seeds and
  checkpointed like any other state). ``add`` writes a batch, overwriting the oldest
  entries once full; ``sample`` draws a batch uniformly (with replacement) among the
  filled slots.
- ``Transition``: what the off-policy agents store: ``(obs, action, reward, next_obs,
  discount)``, where ``discount`` already folds in ``gamma ** k`` and the termination flag,
  so the bootstrap target is always ``reward + discount * V(next_obs)``.
- ``NStepWindow``: a per-environment sliding window of the last ``n`` one-step transitions
  that turns them into n-step transitions. Each step pushes the newest transition and emits
  the n-step transition that *starts* ``n - 1`` steps earlier, cut at the first episode end
  inside the window. ``terminated`` stops bootstrapping (``discount = 0``); a truncation
  bootstraps from the real final observation (``info["final_obs"]`` of ``AutoResetEnv``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from flax import struct
from jax import Array

__all__ = ["NStepWindow", "ReplayBuffer", "Transition"]

PyTree = Any


class Transition(NamedTuple):
    """One stored (possibly n-step) transition; leaves gain leading batch axes when batched.

    Attributes:
        obs: observation the action was taken in (raw, not normalised).
        action: action taken (as the agent stores it).
        reward: discounted sum of the rewards of the (up to ``n``) steps, float32.
        next_obs: observation to bootstrap from (the true final observation on an episode end).
        discount: ``gamma ** k`` for ``k`` steps taken, times ``0`` if the last one terminated.
    """

    obs: Array
    action: Array
    reward: Array
    next_obs: Array
    discount: Array


@struct.dataclass
class ReplayBuffer:
    """A fixed-capacity circular buffer of pytrees, pure and jittable.

    Build it with ``ReplayBuffer.create(example, capacity)``. The capacity is the leading axis
    of every ``data`` leaf (inside ``vmap`` over seeds, the per-seed one).

    Attributes:
        data: the storage, a pytree like the stored items with a leading ``capacity`` axis.
        position: () int32, the slot the next item is written to.
        size: () int32, the number of filled slots (at most ``capacity``).
    """

    data: PyTree
    position: Array
    size: Array

    @classmethod
    def create(cls, example: PyTree, capacity: int) -> ReplayBuffer:
        """An empty buffer for items shaped like ``example``.

        Args:
            example: one item (a pytree of arrays, no batch axis); only shapes and dtypes are used.
            capacity: number of items kept (static, >= 1).

        Returns:
            An empty buffer (zero-filled storage).

        Raises:
            ValueError: ``capacity`` is not a positive integer.
        """
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
            raise ValueError(f"capacity: must be a positive integer, got {capacity!r}")
        data = jax.tree.map(lambda x: jnp.zeros((capacity, *jnp.shape(x)), jnp.result_type(x)), example)
        return cls(data=data, position=jnp.zeros((), jnp.int32), size=jnp.zeros((), jnp.int32))

    @property
    def capacity(self) -> int:
        """Number of slots (static: the leading axis of the storage)."""
        return int(jax.tree.leaves(self.data)[0].shape[0])

    def add(self, batch: PyTree) -> ReplayBuffer:
        """Write a batch of items at the current position, wrapping around (oldest overwritten).

        Args:
            batch: items with the stored structure and a leading batch axis ``B <= capacity``.

        Returns:
            The updated buffer (``position`` advanced by ``B`` modulo the capacity).

        Raises:
            ValueError: the batch is larger than the buffer.
        """
        count = int(jax.tree.leaves(batch)[0].shape[0])
        capacity = self.capacity
        if count > capacity:
            raise ValueError(f"batch of {count} items does not fit a buffer of capacity {capacity}")
        index = (self.position + jnp.arange(count, dtype=jnp.int32)) % capacity
        data = jax.tree.map(lambda store, x: store.at[index].set(x.astype(store.dtype)), self.data, batch)
        return ReplayBuffer(
            data=data,
            position=(self.position + count) % capacity,
            size=jnp.minimum(self.size + count, capacity).astype(jnp.int32),
        )

    def sample(self, key: Array, batch_size: int) -> PyTree:
        """Draw ``batch_size`` items uniformly, with replacement, among the filled slots.

        Args:
            key: PRNG key.
            batch_size: number of items (static).

        Returns:
            A pytree of the stored structure with a leading ``batch_size`` axis. On an empty
            buffer it returns copies of the zero-filled slot 0: add before sampling.
        """
        index = jax.random.randint(key, (batch_size,), 0, jnp.maximum(self.size, 1))
        return jax.tree.map(lambda store: store[index], self.data)


@struct.dataclass
class NStepWindow:
    """The last ``n`` one-step transitions of each of ``E`` environments, oldest first.

    Every leaf has leading axes ``(E, n)``. Push one step of all environments with ``push``;
    ``transition`` gives the n-step transition starting at the oldest step. After ``n - 1``
    pushes from an empty window every emitted transition is valid.

    Attributes:
        obs: observations the actions were taken in.
        action: actions.
        reward: float32 rewards.
        next_obs: observations each step led to (the final ones on an episode end).
        terminated: bool, the step reached a terminal state (no bootstrap).
        done: bool, the step ended the episode (terminated or truncated).
    """

    obs: Array
    action: Array
    reward: Array
    next_obs: Array
    terminated: Array
    done: Array

    @classmethod
    def create(cls, obs: Array, action: Array, num_envs: int, n: int) -> NStepWindow:
        """An empty window shaped for one observation ``obs`` and one action ``action``.

        Args:
            obs: an example observation (no batch axis).
            action: an example action (no batch axis), in the dtype the agent stores.
            num_envs: number of environments ``E``.
            n: window length (the n of n-step returns, >= 1).

        Returns:
            A zero-filled window.
        """

        def zeros(x: Array, dtype: Any = None) -> Array:
            return jnp.zeros((num_envs, n, *jnp.shape(x)), dtype or jnp.result_type(x))

        return cls(
            obs=zeros(obs),
            action=zeros(action),
            reward=zeros(jnp.float32(0)),
            next_obs=zeros(obs),
            terminated=zeros(jnp.bool_(False)),
            done=zeros(jnp.bool_(False)),
        )

    def push(
        self, obs: Array, action: Array, reward: Array, next_obs: Array, terminated: Array, truncated: Array
    ) -> NStepWindow:
        """Drop the oldest step and append the newest one (each argument has a leading ``E`` axis)."""
        new = NStepWindow(
            obs=obs,
            action=action,
            reward=reward.astype(jnp.float32),
            next_obs=next_obs,
            terminated=terminated,
            done=terminated | truncated,
        )
        return jax.tree.map(
            lambda old, x: jnp.concatenate([old[:, 1:], x[:, None].astype(old.dtype)], axis=1), self, new
        )

    def transition(self, gamma: float | Array) -> Transition:
        """The n-step transitions starting at the oldest step of each environment.

        Rewards are summed with discount ``gamma`` up to and including the first step that
        ends the episode (or the newest step); the bootstrap observation and the termination
        flag are those of that last step.

        Args:
            gamma: discount factor.

        Returns:
            A ``Transition`` with a leading ``E`` axis.
        """
        n = self.done.shape[1]
        not_done = 1.0 - self.done.astype(jnp.float32)
        # alive[k] = 1 while no earlier step in the window ended the episode.
        alive = jnp.cumprod(
            jnp.concatenate([jnp.ones_like(not_done[:, :1]), not_done[:, :-1]], axis=1), axis=1
        )
        powers = jnp.asarray(gamma, jnp.float32) ** jnp.arange(n, dtype=jnp.float32)
        reward = jnp.sum(alive * powers * self.reward, axis=1)
        last = (jnp.sum(alive, axis=1) - 1).astype(jnp.int32)  # index of the last included step

        def at_last(x: Array) -> Array:
            index = last.reshape((-1, 1) + (1,) * (x.ndim - 2))
            return jnp.take_along_axis(x, index, axis=1)[:, 0]

        terminated = at_last(self.terminated)
        discount = jnp.asarray(gamma, jnp.float32) ** (last + 1).astype(jnp.float32)
        discount = jnp.where(terminated, 0.0, discount)
        return Transition(
            obs=self.obs[:, 0],
            action=self.action[:, 0],
            reward=reward,
            next_obs=at_last(self.next_obs),
            discount=discount,
        )

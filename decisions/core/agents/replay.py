"""Experience replay for off-policy agents: a jittable circular ``ReplayBuffer`` of pytrees, the
stored ``Transition`` and ``NStepWindow``, which turns one-step transitions into n-step ones (a
termination stops bootstrapping, a truncation bootstraps from the real final observation).
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
    """One stored (possibly n-step) transition; the bootstrap target is ``reward + discount * V(next_obs)``.

    ``obs`` is raw; ``reward`` the discounted sum over the steps; ``discount`` is ``gamma ** k``
    for ``k`` steps taken, 0 if the last one terminated.
    """

    obs: Array
    action: Array
    reward: Array
    next_obs: Array
    discount: Array


@struct.dataclass
class ReplayBuffer:
    """A fixed-capacity circular buffer of pytrees, pure and jittable (``create(example, capacity)``).

    ``data`` leaves have a leading ``capacity`` axis; ``position`` is the next slot written,
    ``size`` the filled slots.
    """

    data: PyTree
    position: Array
    size: Array

    @classmethod
    def create(cls, example: PyTree, capacity: int) -> ReplayBuffer:
        """An empty, zero-filled buffer for items shaped like ``example`` (no batch axis).

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
        """Write a batch (leading axis) at the current position, overwriting the oldest items.

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
        """Draw ``batch_size`` items uniformly, with replacement, among the filled slots (slot 0 when empty)."""
        index = jax.random.randint(key, (batch_size,), 0, jnp.maximum(self.size, 1))
        return jax.tree.map(lambda store: store[index], self.data)


@struct.dataclass
class NStepWindow:
    """The last ``n`` one-step transitions of each of ``E`` environments, oldest first (axes ``(E, n)``).

    ``transition`` gives the n-step transition starting at the oldest step, valid after ``n - 1``
    pushes; ``done`` is terminated or truncated.
    """

    obs: Array
    action: Array
    reward: Array
    next_obs: Array
    terminated: Array
    done: Array

    @classmethod
    def create(cls, obs: Array, action: Array, num_envs: int, n: int) -> NStepWindow:
        """A zero-filled window shaped for one example observation and action (no batch axis)."""

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
        """The n-step transitions starting at the oldest step of each environment, summed up to the
        first step ending the episode (or the newest), bootstrapping from that step."""
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

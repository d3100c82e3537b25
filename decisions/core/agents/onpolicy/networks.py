"""The flax networks of the on-policy agents: separate actor and critic, flat or over a set of units."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import flax.linen as nn
import jax.numpy as jnp
from jax import Array

from decisions.core import nets
from decisions.core.agents.onpolicy.config import ACTIVATIONS

__all__ = ["ActorCritic", "SetActorCritic"]


def _encoder(hidden: tuple[int, ...], act: Callable[[Array], Array]) -> nets.MLP:
    """``hidden[:-1]`` layers to a width of ``hidden[-1]``, activated at the output too (gain sqrt 2)."""
    *inner, last = hidden
    return nets.MLP(tuple(inner), last, act, final_activation=act, out_scale=math.sqrt(2.0))


class _TwoNetworks(nn.Module):
    """Base of the on-policy networks: an actor and a critic of ``hidden`` widths and ``activation``
    (a subclass defines ``actor`` and ``value``); calling it gives both."""

    hidden: tuple[int, ...]
    activation: str

    def __call__(self, x: Array) -> tuple[Any, Array]:
        """``(actor(x), value(x))``: distribution parameters and state values for features ``x``."""
        return self.actor(x), self.value(x)

    def actor(self, x: Array) -> Any:
        """The policy's distribution parameters for features ``x``."""
        raise NotImplementedError

    def value(self, x: Array) -> Array:
        """State values ``(...)`` for features ``x``."""
        raise NotImplementedError


class ActorCritic(_TwoNetworks):
    """Separate actor and critic MLPs on the same observation features; a categorical head of
    ``num_actions``, or a Gaussian of ``action_dim`` when it is 0."""

    num_actions: int
    action_dim: int
    log_std_init: float

    def setup(self) -> None:
        """Build the actor torso and head and the critic."""
        act = ACTIVATIONS[self.activation]
        self.torso = _encoder(self.hidden, act)
        if self.num_actions > 0:
            self.head = nets.CategoricalHead(self.num_actions)
        else:
            self.head = nets.GaussianHead(self.action_dim, log_std_init=self.log_std_init)
        self.critic = nets.MLP(self.hidden, 1, act, out_scale=1.0)

    def actor(self, x: Array) -> Any:
        """Logits ``(..., n)`` or ``(mean, log_std)``, each ``(..., d)``."""
        return self.head(self.torso(x))

    def value(self, x: Array) -> Array:
        """State values ``(...)``."""
        return self.critic(x)[..., 0]


class SetActorCritic(_TwoNetworks):
    """Actor and critic over a set of exchangeable units (see ``OnPolicyConfig.unit_width``).

    Input ``x = [rows (units x unit_width), global features]``. Actor: a per-unit encoder MLP
    on ``[row, global]`` gives ``h_i``; the mean and max of the ``h_i`` over units give a
    context ``c``; a per-unit head MLP on ``[h_i, c]`` gives unit ``i``'s logits, and the
    logits of all units are concatenated (a ``MultiDiscrete`` head of ``units`` equal
    components). Critic: its own encoder, the same pooling, an MLP to the value. All
    weights are shared over units.

    The encoder is ``MLP(hidden[:-1], hidden[-1])``; the heads have one hidden layer of ``hidden[-1]``.
    """

    units: int
    unit_width: int
    choices: int

    def setup(self) -> None:
        """Build the encoders and heads."""
        act = ACTIVATIONS[self.activation]
        last = self.hidden[-1]
        self.actor_encoder = _encoder(self.hidden, act)
        self.actor_head = nets.MLP((last,), self.choices, act, out_scale=0.01)
        self.critic_encoder = _encoder(self.hidden, act)
        self.critic_head = nets.MLP((last,), 1, act, out_scale=1.0)

    def _rows(self, x: Array) -> Array:
        lead = x.shape[:-1]
        rows = x[..., : self.units * self.unit_width].reshape(*lead, self.units, self.unit_width)
        glob = jnp.broadcast_to(x[..., None, self.units * self.unit_width :], (*lead, self.units, x.shape[-1] - self.units * self.unit_width))
        return jnp.concatenate([rows, glob], axis=-1)

    @staticmethod
    def _pool(h: Array) -> Array:
        return jnp.concatenate([jnp.mean(h, axis=-2), jnp.max(h, axis=-2)], axis=-1)

    def actor(self, x: Array) -> Array:
        """Concatenated per-unit logits ``(..., units * choices)``."""
        h = self.actor_encoder(self._rows(x))
        context = jnp.broadcast_to(self._pool(h)[..., None, :], (*h.shape[:-1], 2 * h.shape[-1]))
        logits = self.actor_head(jnp.concatenate([h, context], axis=-1))
        return logits.reshape(*logits.shape[:-2], self.units * self.choices)

    def value(self, x: Array) -> Array:
        """State values ``(...)``."""
        return self.critic_head(self._pool(self.critic_encoder(self._rows(x))))[..., 0]

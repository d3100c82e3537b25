"""The capability-aware split-point agent: a committee of the core's DQNs with a majority vote."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from jax import Array

from decisions.core.agents import dqn
from decisions.core.agents.common import ProgressFn, TrainResult, train_in_turn
from decisions.core.agents.policy_file import params_like
from decisions.core.checkpoint import load_trained, save_trained
from decisions.core.env import Environment
from decisions.errors import InputError


@dataclass(frozen=True)
class Committee:
    """M DQN members voting on each decision.

    Attributes:
        policy: the members' (shared) greedy ``DQNPolicy`` description.
        params: the members' params, stacked on a leading member axis.
        train_seconds: wall time of training (0 for a loaded committee).
    """

    policy: dqn.DQNPolicy
    params: Any
    train_seconds: float = 0.0

    @property
    def members(self) -> int:
        """Number of members M."""
        return int(jax.tree.leaves(self.params)[0].shape[0])

    def q_values(self, obs: Array) -> Array:
        """``(M, A)`` Q-values of one observation (``(M, ..., A)`` for a batch)."""

        def one(params: Any) -> Array:
            return self.policy.network.apply(params["q"], self.policy.features(params, obs))

        return jax.vmap(one)(self.params)

    def act(self, obs: Array, allowed: Array | None = None) -> Array:
        """The committee's action for one observation (or a batch): majority vote, ties to the highest mean Q.

        Args:
            obs: the observation(s).
            allowed: optional bool ``(..., A)``: the actions the members may vote for (``vote``).
        """
        return vote(self.q_values(obs), allowed)


def vote(q: Array, allowed: Array | None = None) -> Array:
    """Majority vote over the leading member axis of Q-values ``(M, ..., A)``, ties to the highest mean Q.

    Args:
        q: the members' Q-values.
        allowed: optional bool ``(..., A)``: each member votes for its best allowed action (at least one
            must be allowed).

    Returns:
        int32 actions of shape ``q.shape[1:-1]``.
    """
    if allowed is not None:
        q = jnp.where(allowed, q, -jnp.inf)
    num_actions = q.shape[-1]
    votes = jnp.sum(jax.nn.one_hot(jnp.argmax(q, axis=-1), num_actions), axis=0)
    mean_q = jnp.mean(q, axis=0)
    top = votes == jnp.max(votes, axis=-1, keepdims=True)
    return jnp.argmax(jnp.where(top, mean_q, -jnp.inf), axis=-1).astype(jnp.int32)


def train_committee(
    env: Environment[Any, Any],
    config: dqn.DQNConfig,
    *,
    members: int,
    key: Array,
    progress: ProgressFn | None = None,
) -> Committee:
    """A committee of ``members`` (>= 1, else ``InputError`` on ``agent.committee``) DQNs trained on
    ``env`` one after another (``common.train_in_turn``: vmapping the seeds can wedge XLA's CPU thread pool).

    Each member has its own seed split from ``key``; ``config`` is the core DQN's settings;
    ``progress(task, done, total)`` is optional and counts the members' steps together.
    """
    if members < 1:
        raise InputError("agent.committee", f"must be at least 1, got {members}")

    def train_one(_member: int, member_key: Array, report: ProgressFn | None) -> TrainResult:
        return dqn.train(env, config, key=member_key, progress=report)

    result = train_in_turn(train_one, jax.random.split(key, members), progress)
    assert isinstance(result.policy, dqn.DQNPolicy)
    return Committee(result.policy, result.params, result.train_seconds)


COMMITTEE_FORMAT = "decisions.splitfl_committee/1"
"""Kind tag (name and format version) of the files written by ``save_committee``."""


def save_committee(path: str | os.PathLike[str], committee: Committee) -> None:
    """Write a committee to ``path`` (a trained file: stacked params, described by the member count and policy)."""
    description = {"members": committee.members, "policy": committee.policy.to_dict()}
    save_trained(path, kind=COMMITTEE_FORMAT, description=description, params=committee.params)


def _stacked_params(description: dict[str, Any]) -> Any:
    """The structure of a described committee's params: one member's, on a leading member axis."""
    one = params_like(dqn.DQNPolicy.from_dict(description["policy"]))
    members = int(description["members"])
    return jax.tree.map(lambda a: jax.ShapeDtypeStruct((members, *a.shape), a.dtype), one)


def load_committee(path: str | os.PathLike[str]) -> Committee:
    """Read a committee written by ``save_committee``.

    Raises:
        InputError: (``agent.path``) the file is missing or not a committee.
    """
    try:
        description, params = load_trained(
            path, kind=COMMITTEE_FORMAT, target=_stacked_params, field="agent.path", what="a split-point committee"
        )
    except FileNotFoundError as exc:
        raise InputError("agent.path", f"cannot read a committee from {path}: {exc}") from exc
    return Committee(dqn.DQNPolicy.from_dict(description["policy"]), params)

"""Saved actor-critic policies: msgpack files of the network weights, observation statistics and description."""

from __future__ import annotations

import os
from typing import Any

from decisions.core.agents.common import TrainResult
from decisions.core.agents.onpolicy.policy import ActorCriticPolicy
from decisions.core.agents.policy_file import one_seed, read_params
from decisions.core.checkpoint import load_metadata, save_pytree

__all__ = ["POLICY_FORMAT", "load_policy", "save_policy", "write_policy"]

PyTree = Any

# Tag in the metadata of files written by ``save_policy``.
POLICY_FORMAT = "decisions.actor_critic_policy/1"


def save_policy(
    path: str | os.PathLike[str], result: TrainResult, *, seed: int | None = None, extra: dict[str, Any] | None = None
) -> None:
    """Write a trained actor-critic policy (weights, observation statistics, description) as msgpack.

    ``seed`` picks one of a ``train_seeds`` result; ``extra`` is more JSON-able metadata.

    Raises:
        ValueError: the params carry a seed axis and no ``seed`` was given.
    """
    policy = result.policy
    if not isinstance(policy, ActorCriticPolicy):
        raise TypeError(f"not an actor-critic result (policy is {type(policy).__name__})")
    write_policy(path, policy, one_seed(policy, result.params, seed), extra=extra)


def write_policy(
    path: str | os.PathLike[str], policy: ActorCriticPolicy, params: PyTree, *, extra: dict[str, Any] | None = None
) -> None:
    """Write ``policy`` and its ``params`` (one seed's) as msgpack, readable by ``load_policy``.

    For params refined outside an agent's ``train`` (e.g. by distillation).
    """
    save_pytree(path, params, metadata={**(extra or {}), "format": POLICY_FORMAT, "policy": policy.to_dict()})


def load_policy(path: str | os.PathLike[str]) -> tuple[ActorCriticPolicy, PyTree]:
    """``(policy, params)`` written by ``save_policy``.

    Raises:
        ValueError: the file is not a saved actor-critic policy.
    """
    meta = load_metadata(path)
    if meta.get("format") != POLICY_FORMAT:
        raise ValueError(f"{path}: not a saved actor-critic policy")
    return read_params(path, ActorCriticPolicy.from_dict(meta["policy"]))

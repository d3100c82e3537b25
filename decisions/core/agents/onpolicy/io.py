"""Saved actor-critic policies: trained files of the network weights, observation statistics and description."""

from __future__ import annotations

import os
from typing import Any

from decisions.core.agents.common import TrainResult
from decisions.core.agents.onpolicy.policy import ActorCriticPolicy
from decisions.core.agents.policy_file import one_seed, read_policy_file, write_policy_file

__all__ = ["POLICY_FORMAT", "load_policy", "policy_of", "read_policy", "save_policy", "write_policy"]

PyTree = Any

# Kind tag (name and format version) of the files written by ``save_policy``.
POLICY_FORMAT = "decisions.actor_critic_policy/1"


def save_policy(
    path: str | os.PathLike[str], result: TrainResult, *, seed: int | None = None, extra: dict[str, Any] | None = None
) -> None:
    """Write a trained actor-critic policy (weights, observation statistics, description) as msgpack.

    ``seed`` picks one of a ``train_seeds`` result; ``extra`` is more JSON-able description.

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
    write_policy_file(path, kind=POLICY_FORMAT, policy=policy, params=params, extra=extra)


def policy_of(description: dict[str, Any]) -> ActorCriticPolicy:
    """The policy a saved actor-critic policy's description holds."""
    return ActorCriticPolicy.from_dict(description["policy"])


def read_policy(
    path: str | os.PathLike[str], *, field: str = "policy"
) -> tuple[ActorCriticPolicy, PyTree, dict[str, Any]]:
    """``(policy, params, description)`` written by ``save_policy`` (the description holds the extra).

    Raises:
        FileNotFoundError: the file does not exist.
        InputError: (``field``, a ``ValueError``) the file is not a saved actor-critic policy.
    """
    return read_policy_file(path, {POLICY_FORMAT: policy_of}, field=field, what="a saved actor-critic policy")


def load_policy(path: str | os.PathLike[str]) -> tuple[ActorCriticPolicy, PyTree]:
    """``(policy, params)`` written by ``save_policy``.

    Raises:
        InputError: (a ``ValueError``) the file is not a saved actor-critic policy.
    """
    policy, params, _ = read_policy(path)
    return policy, params

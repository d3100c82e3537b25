"""Saved off-policy policies: msgpack files of the weights, observation statistics, kind and description."""

from __future__ import annotations

import os
from typing import Any, TypeVar

from decisions.core.agents.common import TrainResult
from decisions.core.agents.policy_file import one_seed, read_params
from decisions.core.checkpoint import load_metadata, save_pytree

__all__ = ["POLICY_FORMAT", "load_policy_as", "save_policy"]

PyTree = Any
PolicyT = TypeVar("PolicyT")

# Tag in the metadata of files written by ``save_policy``.
POLICY_FORMAT = "decisions.offpolicy_policy/1"


def save_policy(path: str | os.PathLike[str], result: TrainResult, *, seed: int | None = None) -> None:
    """Write a trained off-policy agent's policy (weights, observation statistics, description) as msgpack.

    ``seed`` picks one of a ``train_seeds`` result.

    Raises:
        ValueError: the params carry a seed axis and no ``seed`` was given.
    """
    policy = result.policy
    if not hasattr(policy, "to_dict") or not hasattr(policy, "kind"):
        raise TypeError(f"not an off-policy agent's result (policy is {type(policy).__name__})")
    params = one_seed(policy, result.params, seed)
    metadata = {"format": POLICY_FORMAT, "kind": policy.kind, "policy": policy.to_dict()}
    save_pytree(path, params, metadata=metadata)


def load_policy_as(path: str | os.PathLike[str], policy_type: type[PolicyT]) -> tuple[PolicyT, PyTree]:
    """Read a policy written by ``save_policy``, checking it is a ``policy_type`` (e.g. ``DQNPolicy``).

    Returns ``(policy, params)``.

    Raises:
        ValueError: the file is not a saved policy of that kind, or its params do not match it.
    """
    meta = load_metadata(path)
    if meta.get("format") != POLICY_FORMAT or meta.get("kind") != policy_type.kind:
        raise ValueError(f"{path}: not a saved {policy_type.kind} policy (found {meta.get('kind')!r})")
    return read_params(path, policy_type.from_dict(meta["policy"]))

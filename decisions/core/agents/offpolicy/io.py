"""Saved off-policy policies: trained files of the weights, observation statistics, kind and description."""

from __future__ import annotations

import os
from typing import Any, Protocol, Self, TypeVar

from decisions.core.agents.common import TrainResult
from decisions.core.agents.policy_file import DescribedPolicy, one_seed, read_policy_file, write_policy_file
from decisions.errors import InputError

__all__ = ["POLICY_FORMAT", "load_policy_as", "policy_of", "read_policy_as", "save_policy", "write_policy"]

PyTree = Any


class KindedPolicy(DescribedPolicy, Protocol):
    """An off-policy agent's policy: a described policy with its agent's ``kind`` (``"dqn"``, ...)."""

    kind: str

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Rebuild a policy from ``to_dict``'s output."""
        ...


PolicyT = TypeVar("PolicyT", bound=KindedPolicy)

# Kind tag (name and format version) of the files written by ``save_policy``.
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
    write_policy(path, policy, one_seed(policy, result.params, seed))


def write_policy(
    path: str | os.PathLike[str], policy: KindedPolicy, params: PyTree, *, extra: dict[str, Any] | None = None
) -> None:
    """Write ``policy`` and its ``params`` (one seed's), with ``extra`` JSON-able description, readable
    by ``load_policy_as``."""
    extra = {**(extra or {}), "kind": policy.kind}
    write_policy_file(path, kind=POLICY_FORMAT, policy=policy, params=params, extra=extra)


def policy_of(
    description: dict[str, Any], policy_type: type[PolicyT], *, path: Any = "", field: str = "policy"
) -> PolicyT:
    """The ``policy_type`` policy a saved off-policy policy's description holds.

    Raises:
        InputError: (``field``) the description holds another agent's policy.
    """
    if description.get("kind") != policy_type.kind:
        found = description.get("kind")
        raise InputError(field, f"{path}: not a saved {policy_type.kind} policy (found {found!r})")
    return policy_type.from_dict(description["policy"])


def read_policy_as(
    path: str | os.PathLike[str], policy_type: type[PolicyT], *, field: str = "policy"
) -> tuple[PolicyT, PyTree, dict[str, Any]]:
    """``(policy, params, description)`` written by ``save_policy``, checking it is a ``policy_type``.

    Raises:
        FileNotFoundError: the file does not exist.
        InputError: (``field``, a ``ValueError``) not a saved policy of that kind, or params that do not match it.
    """

    def rebuild(description: dict[str, Any]) -> PolicyT:
        return policy_of(description, policy_type, path=path, field=field)

    what = f"a saved {policy_type.kind} policy"
    return read_policy_file(path, {POLICY_FORMAT: rebuild}, field=field, what=what)


def load_policy_as(path: str | os.PathLike[str], policy_type: type[PolicyT]) -> tuple[PolicyT, PyTree]:
    """Read a policy written by ``save_policy``, checking it is a ``policy_type`` (e.g. ``DQNPolicy``).

    Returns ``(policy, params)``.

    Raises:
        InputError: (a ``ValueError``) the file is not a saved policy of that kind, or its params do not match it.
    """
    policy, params, _ = read_policy_as(path, policy_type)
    return policy, params

"""What saving and loading a trained policy share, for every agent family.

A saved policy is a trained file (``core.checkpoint.save_trained``): the params of one seed under
its family's kind tag, described by ``{"policy": PolicyDescription.to_dict(), **extra}``, so that
loading needs nothing but the file. Each family (``onpolicy.io``, ``offpolicy.io``) keeps its own
kind and checks; this module holds the steps they share.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from typing import Any, Protocol, Self, TypeVar

import jax
from jax import Array

from decisions.core.checkpoint import read_trained, save_trained

__all__ = [
    "DescribedPolicy",
    "PolicyDescription",
    "one_seed",
    "params_like",
    "read_policy_file",
    "write_policy_file",
]

PyTree = Any


class DescribedPolicy(Protocol):
    """A policy that a file can rebuild: a description and the params it initialises."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-able description."""
        ...

    def init(self, key: Array, normalize_obs: bool = True) -> PyTree:
        """Fresh params (their structure is what a file's params are read into)."""
        ...


PolicyT = TypeVar("PolicyT", bound=DescribedPolicy)


class PolicyDescription:
    """Mixin of the frozen-dataclass policies: a JSON-able description that a policy file stores."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-able description (``from_dict`` inverts it)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Rebuild a policy from ``to_dict``'s output."""
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})


def one_seed(policy: DescribedPolicy, params: PyTree, seed: int | None) -> PyTree:
    """The params of seed ``seed`` of a training result (``None`` for params without a seed axis).

    Raises:
        ValueError: the params still carry a seed axis (no ``seed`` given).
    """
    if seed is not None:
        params = jax.tree_util.tree_map(lambda x: x[seed], params)
    expected = jax.eval_shape(policy.init, jax.random.PRNGKey(0))
    if jax.tree_util.tree_leaves(params)[0].shape != jax.tree_util.tree_leaves(expected)[0].shape:
        raise ValueError("seed: the params have a seed axis; pass seed= to choose one")
    return params


def params_like(policy: DescribedPolicy) -> PyTree:
    """The structure, shapes and dtypes of ``policy``'s params (no values)."""
    return jax.eval_shape(policy.init, jax.random.PRNGKey(0))


def write_policy_file(
    path: str | os.PathLike[str],
    *,
    kind: str,
    policy: DescribedPolicy,
    params: PyTree,
    extra: dict[str, Any] | None = None,
) -> None:
    """Write ``params`` (one seed's) under ``kind``, described by ``{**extra, "policy": policy.to_dict()}``.

    Raises:
        ValueError: ``extra`` uses the key ``"format"`` or is not JSON-serialisable.
    """
    description = {**(extra or {}), "policy": policy.to_dict()}
    save_trained(path, kind=kind, description=description, params=params)


def read_policy_file(
    path: str | os.PathLike[str],
    rebuild: Mapping[str, Callable[[dict[str, Any]], PolicyT]],
    *,
    field: str = "policy",
    what: str = "",
) -> tuple[PolicyT, PyTree, dict[str, Any]]:
    """``(policy, params, description)`` of a policy file of one of ``rebuild``'s kinds, each mapped
    to how its description rebuilds the policy (which may raise ``InputError``).

    Raises:
        FileNotFoundError: the file does not exist.
        InputError: (``field``) one line naming the path: corrupt, another kind or version, or
            params that do not match the policy (``what`` ends a wrong kind's line).
    """
    kinds = {kind: (lambda d, make=make: params_like(make(d))) for kind, make in rebuild.items()}
    found = read_trained(path, kinds=kinds, field=field, what=what)
    return rebuild[found.kind](found.description), found.params, found.description

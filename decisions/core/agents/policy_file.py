"""What saving and loading a trained policy share, for every agent family.

A saved policy is one msgpack file (``core.checkpoint``): the params of one seed, and in its
metadata a format tag and the policy's JSON-able description (``PolicyDescription.to_dict``),
so that loading needs nothing but the file. Each family (``onpolicy.io``, ``offpolicy.io``)
keeps its own format tag and checks; this module holds the steps they share.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Protocol, Self, TypeVar

import jax
from jax import Array

from decisions.core.checkpoint import load_pytree

__all__ = ["DescribedPolicy", "PolicyDescription", "one_seed", "read_params"]

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


def read_params(path: str | os.PathLike[str], policy: PolicyT) -> tuple[PolicyT, PyTree]:
    """``(policy, params)`` from a policy file whose metadata describes ``policy``."""
    return policy, load_pytree(path, jax.eval_shape(policy.init, jax.random.PRNGKey(0)))

"""Our side of the agents bench: our agent's config from the bench's settings (the fields named
alike pass as they are), and its training of every seed at once, as ``rejax_peer`` is the peer's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

from jax import Array

from decisions.core.agents.common import Policy, TrainResult

__all__ = ["seeds_trainer", "shared_settings"]

Config = TypeVar("Config")
Env = TypeVar("Env")


def shared_settings(settings: Any, config_type: type) -> dict[str, Any]:
    """The fields of the dataclass ``settings`` that the dataclass ``config_type`` has too, by name,
    as keyword arguments for ``config_type`` (a list value as a tuple: configs are hashable)."""
    names = {field.name for field in dataclasses.fields(config_type)}
    shared = (field.name for field in dataclasses.fields(settings) if field.name in names)
    return {name: _hashable(getattr(settings, name)) for name in shared}


def _hashable(value: Any) -> Any:
    """``value``, a list as a tuple."""
    return tuple(value) if isinstance(value, list) else value


def seeds_trainer(
    env: Env,
    config: Config,
    make_agent: Callable[[Env, Config], Any],
    train_seeds: Callable[..., TrainResult],
) -> tuple[Callable[[Array], TrainResult], Policy]:
    """Our agent with ``config`` on ``env``: ``(train(keys) -> TrainResult, policy)``.

    ``train`` trains one seed per key at once in one call of ``train_seeds(env, config, keys=keys)``;
    ``policy`` is the greedy policy of the agent ``make_agent(env, config)``, for one seed's params.
    """
    policy = make_agent(env, config).policy

    def train(keys: Array) -> TrainResult:
        return train_seeds(env, config, keys=keys)

    return train, policy

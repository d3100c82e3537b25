"""The ``train`` / ``train_seeds`` pair every agent module exports, made once from its ``make_agent``.

Both entry points only build the agent for the environment's spaces and hand it to the
family's loop (``onpolicy.train_agent`` or ``offpolicy.train_agent``), so an agent module gets
them from ``agent_trainers`` instead of writing them out, through its family's ``trainers``
(which words the docstrings for the family)::

    train, train_seeds = agent_trainers(make_agent, PPOConfig(), train_agent, returns="...")
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable
from typing import Any, TypeVar

from jax import Array

from decisions.core.agents.common import ProgressFn, TrainResult
from decisions.core.env import Environment

__all__ = ["agent_trainers"]

PyTree = Any
ConfigT = TypeVar("ConfigT")

_TRAIN_DOC = """Train {name} on ``env``.

Args:
    env: an unwrapped environment (pass the same object and config again to reuse the
        compiled loop).
    config: the {name} configuration (default ``{config}()``).
    key: PRNG key of the run.
    params: the environment's params (default ``env.default_params``).
    progress: optional ``(task, done, total)`` callback, called between jitted chunks.
    checkpoint: optional file; the loop state is saved there after every chunk and a call
        with the same arguments resumes from it, ending as an uninterrupted run would.
    **options: {options}

Returns:
{returns}

Raises:
    TypeError: the type of ``config`` is not ``{config}``.
    ValueError: the environment's spaces do not suit {name} (see ``make_agent``), or the
        checkpoint belongs to another run.
"""

_TRAIN_SEEDS_DOC = """Train {name} for every key in ``keys`` at once (one vmapped loop).

Args:
    env: an unwrapped environment.
    config: the {name} configuration, shared by all seeds (default ``{config}()``).
    keys: ``(seeds,)`` typed keys or ``(seeds, 2)`` raw keys, one per seed.
    params: the environment's params, shared by all seeds (default ``env.default_params``).
    progress: optional ``(task, done, total)`` callback, called between jitted chunks.
    checkpoint: optional file to save after every chunk and resume from (all seeds in one file).

Returns:
    A ``TrainResult`` as ``train``'s, whose params and metrics carry a leading seed axis.

Raises:
    TypeError, ValueError: as ``train``.
"""


def agent_trainers(
    make_agent: Callable[[Environment[Any, Any], ConfigT, PyTree | None], Any],
    default_config: ConfigT,
    train_agent: Callable[..., TrainResult],
    *,
    returns: str,
    options_doc: str = "none (the agent takes no further option).",
) -> tuple[Callable[..., TrainResult], Callable[..., TrainResult]]:
    """An agent module's ``train`` and ``train_seeds``: ``make_agent``, then the family's loop.

    Args:
        make_agent: ``make_agent(env, config, params) -> agent``; checks the config's type and
            the environment's spaces.
        default_config: the configuration used when a call gives none; its class names the
            agent in the docstrings (``PPOConfig``: PPO) and its module is the agent module.
        train_agent: the family's loop, ``train_agent(agent, env, *, key, params, progress,
            checkpoint, seeds, **options)``.
        returns: what ``train``'s ``TrainResult`` holds (policy, params, metrics), for its
            docstring (one paragraph, re-wrapped).
        options_doc: the further keyword arguments ``train`` passes on to the loop, for its docstring.

    Returns:
        ``(train, train_seeds)``, attributed to the agent module.
    """
    config_name = type(default_config).__name__

    def train(
        env: Environment[Any, Any], config: ConfigT = default_config, *, key: Array,
        params: PyTree | None = None, progress: ProgressFn | None = None,
        checkpoint: str | os.PathLike[str] | None = None, **options: Any,
    ) -> TrainResult:
        agent = make_agent(env, config, params)
        return train_agent(
            agent, env, key=key, params=params, progress=progress, checkpoint=checkpoint, seeds=False, **options
        )

    def train_seeds(
        env: Environment[Any, Any], config: ConfigT = default_config, *, keys: Array,
        params: PyTree | None = None, progress: ProgressFn | None = None,
        checkpoint: str | os.PathLike[str] | None = None,
    ) -> TrainResult:
        agent = make_agent(env, config, params)
        return train_agent(agent, env, key=keys, params=params, progress=progress, checkpoint=checkpoint, seeds=True)

    fields = {
        "name": config_name.removesuffix("Config"),
        "config": config_name,
        "options": options_doc,
        "returns": textwrap.fill(
            " ".join(returns.split()), 92, initial_indent="    ", subsequent_indent="    ", break_on_hyphens=False
        ),
    }
    for function, doc in ((train, _TRAIN_DOC), (train_seeds, _TRAIN_SEEDS_DOC)):
        function.__doc__ = doc.format(**fields)
        function.__module__ = type(default_config).__module__
        function.__qualname__ = function.__name__
    return train, train_seeds
